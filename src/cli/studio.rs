//! `crumb studio`: serve the local web console until Ctrl-C.
//!
//! Binds loopback by default; a non-loopback `--bind` needs `--allow-remote` and prints a
//! warning, because anyone who can reach the port can read every session. Exit codes
//! ([`crate::exit_codes`]): `SUCCESS` after a clean shutdown, `FAILURE` when the ports cannot be
//! bound, `USAGE_ERROR` for a refused `--bind` or an unusable crumb home.

use crate::fs::stdout::outln;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use super::error::{CommandError, ExitStatus};
use crate::home::CrumbHome;
use crate::studio::{StudioConfig, serve};

/// Arguments of `crumb studio`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Port of the console (the game preview uses the next free port).
    #[arg(long, default_value_t = 7321)]
    pub port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Crumb home to read sessions from (default: `$CRUMB_HOME`, else `~/.crumb`).
    #[arg(long)]
    pub home: Option<PathBuf>,
    /// Do not open a browser.
    #[arg(long)]
    pub no_open: bool,
    /// Allow a non-loopback --bind: whoever has the printed token can read every session and
    /// instruct its agents.
    #[arg(long)]
    pub allow_remote: bool,
    /// A host name (optionally `name:port`) remote browsers reach Studio by; any other `Host`
    /// header is refused (DNS rebinding). Repeatable.
    #[arg(long = "allow-host", value_name = "HOST")]
    pub allow_hosts: Vec<String>,
}

pub(crate) fn run(args: &Args) -> Result<ExitStatus, CommandError> {
    if !args.bind.is_loopback() && !args.allow_remote {
        return Err(CommandError::usage(format!(
            "refusing to bind {} without --allow-remote (Studio shows every session to whoever can reach it)",
            args.bind
        )));
    }
    let home = match args.home.clone() {
        Some(dir) => CrumbHome::at(dir),
        None => CrumbHome::from_env()?,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| CommandError::failure("cannot start").because(err))?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, args.port))
            .await
            .map_err(|err| {
                CommandError::failure(format!("cannot listen on {}:{}", args.bind, args.port))
                    .because(err)
            })?;
        let preview = tokio::net::TcpListener::bind(SocketAddr::new(args.bind, 0))
            .await
            .map_err(|err| CommandError::failure("cannot open the preview port").because(err))?;
        let port = listener.local_addr().map_or(args.port, |a| a.port());
        let mut config = StudioConfig::new(home);
        config.allow_remote = args.allow_remote;
        config.allow_hosts.clone_from(&args.allow_hosts);
        let mut url = format!("http://127.0.0.1:{port}/");
        if args.allow_remote {
            let name = args.allow_hosts.first().map_or_else(|| "127.0.0.1".to_owned(), |h| h.split(':').next().unwrap_or(h).to_owned());
            url = format!("http://{name}:{port}/?token={}", config.token);
            eprintln!(
                "crumb studio: WARNING: listening on {}:{port}; anyone who has this address with its token can read \
                 every session and instruct its agents, which may run shell commands on this machine. Only the \
                 host names loopback{} are answered.",
                args.bind,
                args.allow_hosts
                    .iter()
                    .flat_map(|h| [", ", h.as_str()])
                    .collect::<String>()
            );
        }
        outln!("crumb studio: {url}");
        outln!("  sessions from {}", config.home.root().display());
        outln!("  press Ctrl-C to stop");
        if !args.no_open && std::env::var_os("CRUMB_NO_OPEN").is_none() {
            open_browser(&url);
        }
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
            eprintln!("crumb studio: shutting down");
        };
        serve(listener, preview, config, shutdown)
            .await
            .map_err(CommandError::failure_from)?;
        Ok(ExitStatus::SUCCESS)
    })
}

/// Best effort: hand the URL to the desktop's opener, if there is one.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let _ = crate::process::command::blocking(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}
