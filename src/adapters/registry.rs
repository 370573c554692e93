//! The one list of adapters. Each line of `adapters!` below names an [`AdapterKind`] variant
//! (the id bindings and events carry) and the `'static` `Adapter` value it stands for; the
//! macro makes the enum, [`AdapterKind::ALL`] and the kind → adapter map
//! (`AdapterKind::adapter`) from that one list, so registering an adapter is one line and no
//! kind can exist without its adapter.

use super::adapter::Adapter;
use super::{claude_code, codex, command, gemini_cli, mock};

macro_rules! adapters {
    ($($(#[$doc:meta])* $kind:ident => $adapter:expr,)+) => {
        /// Which adapter runs a role's turn: the id that bindings, events and `/swap` lines carry,
        /// spelled as its adapter's name (see [`AdapterKind::as_str`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum AdapterKind {
            $($(#[$doc])* $kind,)+
        }

        impl AdapterKind {
            /// Every adapter, in the order they are listed to people.
            pub const ALL: &[AdapterKind] = &[$(AdapterKind::$kind,)+];

            /// The adapter this id stands for.
            pub(crate) fn adapter(self) -> &'static dyn Adapter {
                match self {
                    $(AdapterKind::$kind => &$adapter,)+
                }
            }
        }
    };
}

adapters! {
    /// The built-in deterministic adapter: needs no agent CLI and no network.
    Mock => mock::Mock,
    /// Anthropic's Claude Code CLI (`claude -p`).
    ClaudeCode => claude_code::ClaudeCode,
    /// `OpenAI`'s Codex CLI (`codex exec`).
    Codex => codex::Codex,
    /// Google's Gemini CLI (`gemini -p`).
    GeminiCli => gemini_cli::GeminiCli,
    /// Any argv template, prompt on stdin.
    Command => command::Command,
}

/// The adapter spelled `name`, if there is one.
pub(crate) fn find(name: &str) -> Option<AdapterKind> {
    AdapterKind::ALL
        .iter()
        .copied()
        .find(|kind| kind.adapter().name() == name)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{AdapterKind, find};

    #[test]
    fn every_adapter_is_found_by_its_own_name() {
        for &kind in AdapterKind::ALL {
            assert_eq!(find(kind.adapter().name()), Some(kind));
        }
    }

    /// Per-adapter facts live in the adapter's module: no production code outside `src/adapters`
    /// names one adapter's kind (tests may, to say which adapter they expect).
    #[test]
    fn no_adapter_is_named_outside_its_module() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        let mut dirs = vec![src.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path == src.join("adapters") {
                    continue;
                }
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let is_tests = path.file_name().is_some_and(|name| name == "tests.rs");
                if is_tests || path.extension().is_none_or(|ext| ext != "rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let production = text.split("#[cfg(test)]").next().unwrap_or_default();
                for kind in AdapterKind::ALL {
                    let named = format!("AdapterKind::{kind:?}");
                    if production.contains(&named) {
                        found.push(format!("{}: {named}", path.display()));
                    }
                }
            }
        }
        assert!(
            found.is_empty(),
            "ask the adapter (src/adapters/adapter.rs) instead: {found:#?}"
        );
    }
}
