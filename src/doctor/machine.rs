//! The machine: a Chromium that starts (execution QA needs it), a crumb home that can be written
//! with room to spare, and the limits every agent shares (argument size, open files).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::qa::browser::launch::Chromium;
use crate::qa::browser::locate;

/// Free space below which the crumb home is a problem (sessions keep logs, games, screenshots).
pub(crate) const MIN_FREE_BYTES: u64 = 200 * 1024 * 1024;
/// An open-files limit below this cannot hold a browser and an agent CLI at once.
pub(crate) const MIN_OPEN_FILES: u64 = 256;
/// How long Chromium gets to start.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Serialize)]
pub(crate) struct ChromiumCheck {
    pub path: Option<PathBuf>,
    pub starts: bool,
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// Find Chromium and start it headless once, the way QA does.
pub(crate) fn chromium() -> ChromiumCheck {
    let exe = match locate::locate() {
        Ok(exe) => exe,
        Err(why) => {
            return ChromiumCheck {
                path: None,
                starts: false,
                version: None,
                error: Some(why.to_string()),
                fix: Some(locate::INSTALL_HINT.to_owned()),
            };
        }
    };
    let started = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|runtime| {
            runtime.block_on(async {
                match tokio::time::timeout(CHROMIUM_TIMEOUT, Chromium::launch(&exe)).await {
                    Err(_) => Err(format!("did not start within {CHROMIUM_TIMEOUT:?}")),
                    Ok(Err(why)) => Err(why.to_string()),
                    Ok(Ok(browser)) => {
                        let version = browser.version.clone();
                        browser.shutdown().await;
                        Ok(version)
                    }
                }
            })
        });
    match started {
        Ok(version) => ChromiumCheck {
            path: Some(exe),
            starts: true,
            version,
            error: None,
            fix: None,
        },
        Err(error) => ChromiumCheck {
            path: Some(exe),
            starts: false,
            version: None,
            error: Some(error),
            fix: Some(
                "Chromium is installed but does not start headless: run it by hand with --headless=new to see why, or point CRUMB_CHROMIUM at another build".to_owned(),
            ),
        },
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct HomeCheck {
    pub path: PathBuf,
    pub writable: bool,
    pub free_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// Write (and remove) a probe file in the crumb home, and measure the free space there.
pub(crate) fn home(root: &Path) -> HomeCheck {
    let probe = root.join(format!(".doctor-{}", std::process::id()));
    let written = std::fs::create_dir_all(root)
        .and_then(|()| std::fs::write(&probe, b"crumb doctor"))
        .and_then(|()| std::fs::remove_file(&probe));
    let free_bytes = nix::sys::statvfs::statvfs(root).ok().map(|stats| {
        stats
            .blocks_available()
            .saturating_mul(stats.fragment_size())
    });
    let error = match (&written, free_bytes) {
        (Err(e), _) => Some(format!("cannot write in {}: {e}", root.display())),
        (Ok(()), Some(free)) if free < MIN_FREE_BYTES => Some(format!(
            "only {} MiB free in {}",
            free / (1024 * 1024),
            root.display()
        )),
        _ => None,
    };
    let fix = error.as_ref().map(|_| {
        "free some space or point CRUMB_HOME (or --home) at a writable folder with room".to_owned()
    });
    HomeCheck {
        path: root.to_path_buf(),
        writable: written.is_ok(),
        free_bytes,
        error,
        fix,
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Limits {
    /// `ARG_MAX`: the most bytes of argv + environment a process can start with.
    pub arg_max: Option<u64>,
    pub open_files_soft: Option<u64>,
    pub open_files_hard: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// The shared limits.
pub(crate) fn limits() -> Limits {
    let arg_max = nix::unistd::sysconf(nix::unistd::SysconfVar::ARG_MAX)
        .ok()
        .flatten()
        .and_then(|n| u64::try_from(n).ok());
    let (soft, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_or((None, None), |(soft, hard)| (Some(soft), Some(hard)));
    let fix = soft.filter(|soft| *soft < MIN_OPEN_FILES).map(|soft| {
        format!("the open-files limit is {soft}: raise it with `ulimit -n 4096` before crumb run")
    });
    Limits {
        arg_max,
        open_files_soft: soft,
        open_files_hard: hard,
        fix,
    }
}
