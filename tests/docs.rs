//! The documents hold together: every relative link in README.md, ARCHITECTURE.md,
//! CONTRIBUTING.md, CHANGELOG.md and `docs/` names a file that exists (and its `#anchor` a
//! heading of that file, slugged as GitHub does), every page of `docs/` is in the book's
//! `SUMMARY.md`, and every `crumb <command> --flag` quoted in their code is one the CLI has.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::CommandFactory;

use crate::support::repo_root;

/// The documents a reader meets, relative to the repository root.
fn documents() -> Vec<PathBuf> {
    let root = repo_root();
    let mut docs: Vec<PathBuf> = [
        "README.md",
        "ARCHITECTURE.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let mut folders = vec![PathBuf::from("docs")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(root.join(&folder)).expect("docs/ is readable") {
            let name = folder.join(entry.expect("a docs/ entry").file_name());
            if root.join(&name).is_dir() {
                folders.push(name);
            } else if name.extension().is_some_and(|e| e == "md") {
                docs.push(name);
            }
        }
    }
    docs.sort();
    docs
}

/// A Markdown file cut into what links and headings can live in (prose, with code spans blanked
/// out) and what commands are quoted in (code spans and fenced blocks).
struct Markdown {
    prose: String,
    code: Vec<String>,
}

impl Markdown {
    fn parse(text: &str) -> Markdown {
        let mut prose = String::new();
        let mut code = Vec::new();
        let mut fence: Option<&str> = None;
        for line in text.lines() {
            let trimmed = line.trim_start();
            let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
            match (fence, marker) {
                (None, Some(m)) => fence = Some(m),
                (Some(open), Some(m)) if open == m => fence = None,
                (Some(_), _) => code.push(line.to_owned()),
                (None, None) => {
                    prose.push_str(line);
                    prose.push('\n');
                }
            }
        }
        // Inline code spans: a run of backticks up to the next run of the same length.
        let bytes = prose.as_bytes();
        let mut blanked = String::with_capacity(prose.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] != b'`' {
                let next = prose[i..].find('`').map_or(prose.len(), |n| i + n);
                blanked.push_str(&prose[i..next]);
                i = next;
                continue;
            }
            let run = prose[i..].bytes().take_while(|&b| b == b'`').count();
            let ticks = "`".repeat(run);
            let body_start = i + run;
            let close = prose[body_start..]
                .match_indices(ticks.as_str())
                .map(|(at, _)| body_start + at)
                .find(|&at| {
                    bytes[at - 1] != b'`'
                        && prose[at..].bytes().take_while(|&b| b == b'`').count() == run
                });
            let Some(close) = close else {
                blanked.push_str(&prose[i..body_start]);
                i = body_start;
                continue;
            };
            code.push(prose[body_start..close].replace('\n', " "));
            // Keep the line structure, so headings after a span are still at a line start.
            blanked.extend(
                prose[i..close + run]
                    .chars()
                    .map(|c| if c == '\n' { '\n' } else { ' ' }),
            );
            i = close + run;
        }
        Markdown {
            prose: blanked,
            code,
        }
    }

    /// The targets of the prose's inline links and images, and of reference definitions.
    fn link_targets(&self) -> Vec<String> {
        let mut targets = Vec::new();
        let mut rest = self.prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            let target = rest[..end].split_whitespace().next().unwrap_or_default();
            targets.push(target.trim_matches(['<', '>']).to_owned());
        }
        for line in self.prose.lines() {
            if let Some((label, target)) = line.trim_start().split_once("]: ")
                && label.starts_with('[')
                && !label.contains(']')
            {
                targets.push(target.trim().to_owned());
            }
        }
        targets
    }
}

/// The anchors GitHub gives the headings of a Markdown text (read outside fences, code spans
/// included).
fn anchors(raw: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fence = false;
    for line in raw.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = !fence;
            continue;
        }
        if fence {
            continue;
        }
        let hashes = line.bytes().take_while(|&b| b == b'#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let base = slug(&line[hashes..]);
            let mut anchor = base.clone();
            let mut n = 0;
            while seen.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            seen.insert(anchor);
        }
    }
    seen
}

/// GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// What is wrong with the links of `text`, a document at `doc` (relative to `root`).
fn link_problems(root: &Path, doc: &Path, text: &str) -> Vec<String> {
    let markdown = Markdown::parse(text);
    let own_anchors = anchors(text);
    let folder = doc.parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    for target in markdown.link_targets() {
        if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        let anchors = if path.is_empty() {
            own_anchors.clone()
        } else {
            let file = root.join(folder).join(path);
            if !file.exists() {
                problems.push(format!(
                    "{}: link to `{target}`: no such file",
                    doc.display()
                ));
                continue;
            }
            if anchor.is_none() || file.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let linked = std::fs::read_to_string(&file).expect("a linked document is readable");
            anchors(&linked)
        };
        if let Some(anchor) = anchor
            && !anchors.contains(anchor)
        {
            problems.push(format!(
                "{}: link to `{target}`: no heading has the anchor `#{anchor}`",
                doc.display()
            ));
        }
    }
    problems
}

/// What is wrong with the `crumb` commands quoted in the code of `text`: a subcommand the CLI does
/// not have, or a `--flag` that subcommand does not take.
fn command_problems(doc: &Path, text: &str) -> Vec<String> {
    let mut cli = crumb::cli::Cli::command();
    cli.build();
    let mut problems = Vec::new();
    for code in Markdown::parse(text).code {
        for command in quoted_commands(&code) {
            let mut words = command.split_whitespace();
            let Some(name) = words.next() else { continue };
            let (target, args) = if name.starts_with("--") {
                (&cli, command.as_str())
            } else if let Some(sub) = cli.find_subcommand(name) {
                (sub, &command[name.len()..])
            } else {
                problems.push(format!(
                    "{}: `crumb {name}` is not a subcommand (in `{}`)",
                    doc.display(),
                    code.trim()
                ));
                continue;
            };
            for flag in flags(args) {
                let known = target.get_arguments().any(|a| {
                    a.get_long() == Some(flag.as_str())
                        || a.get_all_aliases()
                            .is_some_and(|all| all.contains(&flag.as_str()))
                });
                if !known {
                    problems.push(format!(
                        "{}: `crumb {}` has no `--{flag}` (in `{}`)",
                        doc.display(),
                        target.get_name(),
                        code.trim()
                    ));
                }
            }
        }
    }
    problems
}

/// Each `crumb <word> …` in a piece of code, from the word after `crumb` to the end of that
/// command (a pipe, `;`, `&&`, a `#` comment or the next `crumb`).
fn quoted_commands(code: &str) -> Vec<String> {
    let starts: Vec<usize> = code
        .match_indices("crumb ")
        .map(|(at, _)| at)
        .filter(|&at| {
            let before = &code[..at];
            // Not a word's tail (`~/.crumb`), nor a flag's value (`cargo test -p crumb`).
            before
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || "_-./$".contains(c)))
                && before
                    .split_whitespace()
                    .next_back()
                    .is_none_or(|word| !word.starts_with('-'))
        })
        .collect();
    let mut commands = Vec::new();
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(code.len());
        let mut command = code[start + "crumb ".len()..end].replace("\\|", "/");
        for stop in ["|", ";", "&&", " #"] {
            if let Some(at) = command.find(stop) {
                command.truncate(at);
            }
        }
        let first = command.trim_start();
        let word_ok = first
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '-');
        if word_ok {
            // The subcommand is one lower-case word; what follows it is its arguments.
            let word_end = first
                .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
                .unwrap_or(first.len());
            commands.push(format!("{} {}", &first[..word_end], &first[word_end..]));
        }
    }
    commands
}

/// The long options in a command's arguments: outside quotes, before a lone `--`.
fn flags(args: &str) -> Vec<String> {
    let Ok(words) = shell_words::split(args) else {
        return Vec::new(); // not shell-shaped (a placeholder, an ellipsis): nothing to judge
    };
    words
        .iter()
        .map(|w| {
            w.trim_start_matches('[')
                .trim_end_matches([']', ',', '.', ')'])
        })
        .take_while(|w| *w != "--")
        .filter_map(|w| w.strip_prefix("--"))
        .map(|f| f.split('=').next().unwrap_or_default().to_owned())
        .filter(|f| f.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
        .collect()
}

/// What `check` finds wrong in each document, gathered.
fn over_documents(check: impl Fn(&Path, &str) -> Vec<String>) -> Vec<String> {
    let root = repo_root();
    documents()
        .iter()
        .flat_map(|doc| {
            let text = std::fs::read_to_string(root.join(doc)).expect("a document is readable");
            check(doc, &text)
        })
        .collect()
}

#[test]
fn every_relative_link_names_a_file_and_a_heading() {
    let root = repo_root();
    let problems = over_documents(|doc, text| link_problems(&root, doc, text));
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_quoted_crumb_command_and_flag_exists() {
    let problems = over_documents(command_problems);
    assert!(
        problems.is_empty(),
        "commands the CLI does not have:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_page_of_docs_is_in_the_book() {
    let summary = std::fs::read_to_string(repo_root().join("docs/SUMMARY.md")).expect("SUMMARY");
    let listed: BTreeSet<String> = Markdown::parse(&summary)
        .link_targets()
        .into_iter()
        .collect();
    let missing: Vec<_> = documents()
        .into_iter()
        .filter_map(|doc| {
            let page = doc
                .strip_prefix("docs")
                .ok()?
                .to_string_lossy()
                .into_owned();
            (page != "SUMMARY.md" && !listed.contains(&page)).then_some(page)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs pages the book leaves out (add them to docs/SUMMARY.md): {missing:?}"
    );
}

/// The checks themselves fail on what they are meant to catch.
#[test]
fn the_checks_catch_a_broken_link_and_a_made_up_command() {
    let text = "# A page\n\n## The `command` contract\n\n\
        [fine](../README.md) [fine too](#the-command-contract) [fine](cli.md#bindings)\n\
        [gone](no-such-page.md) [no heading](#nowhere) [wrong anchor](cli.md#no-such-heading)\n\
        `[not a link](inside-code.md)` and `crumb frobnicate` and `crumb run p.yaml --no-such-flag`\n\
        `cargo test -p crumb --test main` and `~/.crumb run` are not crumb commands\n\n\
        ```\ncrumb validate --format json pipelines/   # fine\n[not a link](in-a-fence.md)\n```\n";
    let doc = Path::new("docs/synthetic.md");
    let links = link_problems(&repo_root(), doc, text);
    assert_eq!(links.len(), 3, "{links:#?}");
    assert!(
        links[0].contains("`no-such-page.md`: no such file"),
        "{links:#?}"
    );
    assert!(links[1].contains("`#nowhere`"), "{links:#?}");
    assert!(links[2].contains("`#no-such-heading`"), "{links:#?}");
    let commands = command_problems(doc, text);
    assert_eq!(commands.len(), 2, "{commands:#?}");
    assert!(commands[0].contains("`crumb frobnicate` is not a subcommand"));
    assert!(commands[1].contains("`crumb run` has no `--no-such-flag`"));
    assert_eq!(
        slug(" Proving a pipeline: `crumb check`"),
        "proving-a-pipeline-crumb-check"
    );
}

/// Files of this repository a document names in a code span (`src/runtime/session_dir.rs`):
/// those spans that start with one of the tree's top folders and hold nothing but a path.
fn named_paths(text: &str) -> Vec<String> {
    const TOP: &[&str] = &[
        "src/",
        "crates/",
        "tests/",
        "benches/",
        "examples/",
        "scripts/",
        "studio/",
        "docs/",
        "pipelines/",
        "presets/",
    ];
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| TOP.iter().any(|top| span.starts_with(top)))
        .filter(|span| {
            span.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c))
        })
        .map(str::to_owned)
        .collect()
}

fn path_problems(root: &Path, doc: &Path, text: &str) -> Vec<String> {
    named_paths(text)
        .into_iter()
        .filter(|path| !root.join(path).exists())
        .map(|path| format!("{}: `{path}` does not exist", doc.display()))
        .collect()
}

#[test]
fn every_file_the_documents_name_exists() {
    let root = repo_root();
    // The changelog names files as they were when each entry was written.
    let problems = over_documents(|doc, text| {
        if doc == Path::new("CHANGELOG.md") {
            Vec::new()
        } else {
            path_problems(&root, doc, text)
        }
    });
    assert!(
        problems.is_empty(),
        "files the documents name that are not in the tree:\n{}",
        problems.join("\n")
    );
    let caught = path_problems(
        &root,
        Path::new("docs/synthetic.md"),
        "`src/lib.rs` is here, `src/no_such_file.rs` is not, `src/<role>.rs` is a placeholder",
    );
    assert_eq!(caught.len(), 1, "{caught:#?}");
}

/// Where module `segments` of a crate lives: `<root>/<a>/<b>.rs` or `<root>/<a>/<b>/mod.rs`.
fn module_file(root: &Path, segments: &[&str]) -> Option<PathBuf> {
    let base = segments.iter().fold(root.to_path_buf(), |p, s| p.join(s));
    [base.with_extension("rs"), base.join("mod.rs")]
        .into_iter()
        .find(|p| p.is_file())
}

/// Whether the item path `a::b::Item` (from a crate root: the core's or the `crumb` crate's)
/// names a module, or an item defined or re-exported in the module before it.
fn item_exists(repo: &Path, path: &str) -> bool {
    let segments: Vec<&str> = path.split("::").collect();
    ["crates/crumb-core/src", "src"].iter().any(|root| {
        let root = repo.join(root);
        if module_file(&root, &segments).is_some() {
            return true;
        }
        let (item, module) = segments.split_last().expect("a path has segments");
        let Some(file) = module_file(&root, module) else {
            return false;
        };
        let text = std::fs::read_to_string(file).unwrap_or_default();
        text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| {
                w[1] == *item
                    && [
                        "fn", "struct", "enum", "trait", "type", "mod", "const", "use",
                    ]
                    .contains(&w[0])
            })
            || text.contains(&format!("{item},"))
            || text.contains(&format!("{item};"))
            || text.contains(&format!("{item}}}"))
            || text.contains(&format!(" {item} =>"))
    })
}

/// The module paths ARCHITECTURE.md's tables and glossary point a newcomer at.
#[test]
fn every_module_path_the_architecture_names_exists() {
    let repo = repo_root();
    let text = std::fs::read_to_string(repo.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let missing: Vec<String> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| {
            const TOP: &[&str] = &[
                "adapters",
                "batch",
                "cli",
                "doctor",
                "engine",
                "export",
                "fs",
                "home",
                "pipeline",
                "process",
                "qa",
                "runtime",
                "studio",
                "transcript",
                "vocab",
            ];
            span.split_once("::")
                .is_some_and(|(top, _)| TOP.contains(&top))
                && span
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
        })
        .filter(|span| !item_exists(&repo, span))
        .map(str::to_owned)
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what the code does not have: {missing:?}"
    );
    assert!(!item_exists(&repo, "engine::no_such_module"));
    assert!(!item_exists(&repo, "engine::guards::no_such_fn"));
}
