//! The environment an agent process gets: who it is, where its session is, and `crumb` itself on
//! `PATH`, so `printf '{…}' | crumb event` works from inside any agent CLI.

use std::ffi::OsString;
use std::path::PathBuf;

/// The identity and location variables of one spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEnv {
    pub session_dir: PathBuf,
    pub session_id: String,
    pub transcript: PathBuf,
    /// The role being run (`CRUMB_ACTOR`).
    pub actor: String,
    pub harness: String,
    pub provider: String,
    pub model: Option<String>,
    /// Directory holding the `crumb` executable, prepended to `PATH` (and `<dir>/crumb` is
    /// `CRUMB_BIN`, which survives a login shell resetting `PATH`).
    pub crumb_dir: Option<PathBuf>,
}

impl AgentEnv {
    /// The variables to set, given the `PATH` the child would otherwise inherit.
    pub fn vars(&self, inherited_path: Option<&OsString>) -> Vec<(OsString, OsString)> {
        let mut vars: Vec<(OsString, OsString)> = vec![
            (
                "CRUMB_SESSION_DIR".into(),
                self.session_dir.clone().into_os_string(),
            ),
            ("CRUMB_SESSION_ID".into(), self.session_id.clone().into()),
            (
                "CRUMB_TRANSCRIPT_PATH".into(),
                self.transcript.clone().into_os_string(),
            ),
            ("CRUMB_ACTOR".into(), self.actor.clone().into()),
            ("CRUMB_HARNESS".into(), self.harness.clone().into()),
            ("CRUMB_PROVIDER".into(), self.provider.clone().into()),
        ];
        if let Some(model) = &self.model {
            vars.push(("CRUMB_MODEL".into(), model.clone().into()));
        }
        if let Some(dir) = &self.crumb_dir {
            vars.push(("CRUMB_BIN".into(), dir.join("crumb").into_os_string()));
            let rest = inherited_path
                .map(std::env::split_paths)
                .into_iter()
                .flatten();
            if let Ok(path) = std::env::join_paths(std::iter::once(dir.clone()).chain(rest)) {
                vars.push(("PATH".into(), path));
            }
        }
        vars
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crumb_dir_goes_first_on_path() {
        let env = AgentEnv {
            session_dir: "/s".into(),
            session_id: "01J".into(),
            transcript: "/s/transcript.jsonl".into(),
            actor: "builder".into(),
            harness: "codex".into(),
            provider: "openai".into(),
            model: None,
            crumb_dir: Some("/opt/crumb/bin".into()),
        };
        let vars = env.vars(Some(&OsString::from("/usr/bin:/bin")));
        let get = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        assert_eq!(get("PATH"), Some("/opt/crumb/bin:/usr/bin:/bin".into()));
        assert_eq!(get("CRUMB_ACTOR"), Some("builder".into()));
        assert_eq!(get("CRUMB_MODEL"), None);
        assert_eq!(
            env.vars(None)
                .iter()
                .find(|(k, _)| k == "PATH")
                .map(|(_, v)| v.clone()),
            Some("/opt/crumb/bin".into())
        );
    }
}
