//! `file:` URIs as the client names documents, and the paths the compiler reads.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_types::Uri;

/// The path of a `file:` URI, percent-decoded and lexically normalised; `None` for any other
/// scheme (an untitled buffer has no folder to resolve templates against).
pub(crate) fn to_path(uri: &Uri) -> Option<PathBuf> {
    let text = uri.as_str().strip_prefix("file://")?;
    let text = text.strip_prefix("localhost").unwrap_or(text);
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            decoded.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
            i += 3;
            continue;
        }
        decoded.push(bytes[i]);
        i += 1;
    }
    let path = PathBuf::from(String::from_utf8(decoded).ok()?);
    path.is_absolute().then(|| normalize(&path))
}

/// The `file:` URI of an absolute path, with the characters a URI may not hold escaped.
pub(crate) fn from_path(path: &Path) -> Option<Uri> {
    let mut text = String::from("file://");
    for byte in path.to_str()?.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&byte) {
            text.push(char::from(byte));
        } else {
            let _ = write!(text, "%{byte:02X}");
        }
    }
    Uri::from_str(&text).ok()
}

pub(crate) use crumb_core::pipeline::lexical_path::normalize;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_through_uris() {
        let path = Path::new("/tmp/a dir/pipe%line.yaml");
        let uri = from_path(path).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/a%20dir/pipe%25line.yaml");
        assert_eq!(to_path(&uri).unwrap(), path);
        let other = Uri::from_str("untitled:Untitled-1").unwrap();
        assert_eq!(to_path(&other), None);
        let dotted = Uri::from_str("file:///p/pipelines/../templates/./b.j2").unwrap();
        assert_eq!(to_path(&dotted).unwrap(), Path::new("/p/templates/b.j2"));
    }
}
