//! Finding a Chromium to run. No download: a missing browser is reported, never worked around.

use std::path::{Path, PathBuf};

/// Environment variable naming the Chromium executable; when set it is the only candidate.
pub(crate) const CHROMIUM_ENV: &str = "CRUMB_CHROMIUM";

/// Executable names looked up on `PATH`, in order.
const CANDIDATES: [&str; 4] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// How to get a browser, shown whenever none is found.
pub(crate) const INSTALL_HINT: &str = "install Debian's Chromium with `apt-get install chromium` (or run ./scripts/ensure-chromium.sh), or set CRUMB_CHROMIUM=/path/to/chromium";

/// Why no browser can run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("CRUMB_CHROMIUM={0} is not an executable file; {INSTALL_HINT}")]
    BadOverride(String),
    #[error(
        "no Chromium found on PATH (looked for chromium, chromium-browser, google-chrome, google-chrome-stable); {INSTALL_HINT}"
    )]
    NotFound,
}

/// The Chromium executable to use: `$CRUMB_CHROMIUM` if set, else the first candidate on `PATH`.
pub fn locate() -> Result<PathBuf, Unavailable> {
    locate_with(
        std::env::var_os(CHROMIUM_ENV).as_deref(),
        std::env::var_os("PATH").as_deref(),
    )
}

/// [`locate`] with the environment passed in (testable without touching the process env).
pub(crate) fn locate_with(
    override_path: Option<&std::ffi::OsStr>,
    path_var: Option<&std::ffi::OsStr>,
) -> Result<PathBuf, Unavailable> {
    if let Some(explicit) = override_path.filter(|v| !v.is_empty()) {
        let p = PathBuf::from(explicit);
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(Unavailable::BadOverride(p.display().to_string()))
        };
    }
    let dirs: Vec<PathBuf> = path_var
        .map(|v| std::env::split_paths(v).collect())
        .unwrap_or_default();
    CANDIDATES
        .iter()
        .flat_map(|name| dirs.iter().map(move |d| d.join(name)))
        .find(|p| is_executable(p))
        .ok_or(Unavailable::NotFound)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn an_explicit_override_is_the_only_candidate() {
        let err = locate_with(
            Some(OsStr::new("/nonexistent/chromium")),
            Some(OsStr::new("/usr/bin")),
        )
        .unwrap_err();
        assert!(matches!(err, Unavailable::BadOverride(_)));
        assert!(err.to_string().contains("apt-get install chromium"));
    }

    #[test]
    fn an_empty_path_finds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            locate_with(None, Some(dir.path().as_os_str())),
            Err(Unavailable::NotFound)
        );
    }
}
