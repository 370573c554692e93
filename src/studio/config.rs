//! What a Studio server needs to know: where sessions live, its write token, and its timings.

use std::path::PathBuf;
use std::time::Duration;

use crate::home::CrumbHome;

/// Configuration of one Studio server.
#[derive(Debug, Clone)]
pub struct StudioConfig {
    pub home: CrumbHome,
    /// The per-process secret every write must carry (`X-Crumb-Token`); the page is served with it.
    pub token: String,
    /// The server was bound to a non-loopback address on purpose: every request, reads included,
    /// needs the token, and `Host` must still be loopback or one of `allow_hosts`.
    pub allow_remote: bool,
    /// Extra `Host` names (`--allow-host`) the server answers to, e.g. `studio.lan`.
    pub allow_hosts: Vec<String>,
    /// Interval between SSE heartbeat comments.
    pub heartbeat: Duration,
    /// How often a watched transcript is checked for appends.
    pub poll_interval: Duration,
    /// How often the sessions-list stream rescans the home.
    pub list_interval: Duration,
    /// The `crumb` executable new sessions are started with (defaults to this process's binary).
    pub crumb_exe: Option<PathBuf>,
    /// Directory new sessions run in (their project); defaults to the server's working directory.
    pub project_dir: Option<PathBuf>,
}

impl StudioConfig {
    /// Defaults for `home` with a fresh random token.
    pub fn new(home: CrumbHome) -> Self {
        StudioConfig {
            home,
            token: new_token(),
            allow_remote: false,
            allow_hosts: Vec::new(),
            heartbeat: Duration::from_secs(15),
            poll_interval: Duration::from_millis(20),
            list_interval: Duration::from_secs(1),
            crumb_exe: None,
            project_dir: None,
        }
    }
}

/// A fresh unguessable token: 160 random bits from two ULIDs' random parts, hashed.
pub(crate) fn new_token() -> String {
    let mut seed = Vec::with_capacity(36);
    for _ in 0..2 {
        seed.extend_from_slice(&ulid::Ulid::new().0.to_le_bytes());
    }
    seed.extend_from_slice(&std::process::id().to_le_bytes());
    let mut token = crumb_core::digest::sha256_hex(&seed);
    token.truncate(40);
    token
}
