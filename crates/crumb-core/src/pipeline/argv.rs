//! Argv of the `command` adapter: which elements are paths, and resolving them against the folder
//! of the file that declared them (a pipeline, a preset, `.crumb/config.yaml`), so a program runs
//! the same from the session folder as it would from the declaring file's folder.

use std::path::Path;

use crate::pipeline::lexical_path::normalize;

/// Whether an argv element is a file path: it contains `/` and is neither an option (`-x`,
/// `--flag=a/b`) nor a placeholder (`{prompt_file}`). A bare name (`python3`) is looked up on
/// `PATH` by the operating system instead.
pub fn is_path(arg: &str) -> bool {
    arg.contains('/') && !arg.starts_with('-') && !arg.contains('{')
}

/// `argv` with every relative path element joined onto `base` (normalised, so `..` steps are
/// gone); absolute paths and other elements are kept as written.
pub fn resolve(argv: &[String], base: &Path) -> Vec<String> {
    argv.iter()
        .map(|arg| {
            if is_path(arg) && !Path::new(arg).is_absolute() {
                normalize(&base.join(arg)).to_string_lossy().into_owned()
            } else {
                arg.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_resolved_and_the_rest_kept() {
        let argv: Vec<String> = [
            "python3",
            "../agents/w.py",
            "--out=a/b",
            "{prompt_file}",
            "/bin/x",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            resolve(&argv, Path::new("/repo/pipelines")),
            [
                "python3",
                "/repo/agents/w.py",
                "--out=a/b",
                "{prompt_file}",
                "/bin/x"
            ]
        );
    }

    proptest::proptest! {
        #[test]
        fn resolving_keeps_length_and_non_paths(argv in proptest::collection::vec("[a-z./{}-]{0,12}", 0..6)) {
            let resolved = resolve(&argv, Path::new("/base/dir"));
            proptest::prop_assert_eq!(resolved.len(), argv.len());
            for (written, out) in argv.iter().zip(&resolved) {
                if is_path(written) {
                    proptest::prop_assert!(out.starts_with('/'));
                } else {
                    proptest::prop_assert_eq!(written, out);
                }
            }
        }
    }
}
