//! The `--home` flag several commands take.

use std::path::Path;

use super::error::CommandError;
use crate::home::CrumbHome;

/// The crumb home: `--home`, else `$CRUMB_HOME`, else `~/.crumb`.
pub(crate) fn resolve(flag: Option<&Path>) -> Result<CrumbHome, CommandError> {
    match flag {
        Some(path) => Ok(CrumbHome::at(path)),
        None => Ok(CrumbHome::from_env()?),
    }
}
