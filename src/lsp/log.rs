//! The server's log: stderr, which every client shows as the server's output and which never
//! mixes with the protocol on stdout.

pub(crate) fn error(message: &str) {
    eprintln!("crumb lsp: error: {message}");
}

pub(crate) fn info(message: &str) {
    eprintln!("crumb lsp: {message}");
}
