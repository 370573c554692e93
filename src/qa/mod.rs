//! Execution QA: declared checks run against real artifacts (static checks, commands, headless Chromium).
//!
//! Entry point: [`runner::run`] takes a compiled [`crate::pipeline::table::QaSpec`] and a
//! [`runner::QaRequest`] and always returns a [`report::QaReport`] — a timeout, a missing browser or
//! a panicking check end as results (failing, or could not run), never as a missing one. [`report::QaReport::to_draft`]
//! turns it into the `qa.result` event (`from: system`, `parent_event_id` = the build,
//! `metadata.tool = "qa-check-effect@v1"`, `deterministic: true`).
//!
//! # Check kinds
//!
//! | kind | passes when | finding codes |
//! |---|---|---|
//! | `file` | the path is a regular file inside the artifacts folder, within `min_size`/`max_size` | `missing_file`, `not_a_file`, `too_small`, `too_large`, `path_escape` |
//! | `max_bytes` | the files matching `glob` (`*` stops at `/`) exist and total at most `limit` | `no_match`, `over_budget`, `path_escape`, `bad_glob`, `tree_too_large`, `tree_too_deep` |
//! | `html` | the page scans cleanly and has `<!doctype html>`, a viewport meta tag, a script (inline or `src`); local `src` files exist | `parse_error`, `missing_doctype`, `missing_viewport`, `missing_script`, `script_not_found`, `not_utf8`, `too_large` |
//! | `command` | `argv` (no shell) run in `cwd` (inside the artifacts) exits with `expect_exit` before its timeout; its process group is killed on timeout | `unexpected_exit`, `command_timeout`, `spawn_failed`, `empty_argv`, `path_escape` |
//! | `browser` | the entry loads in headless Chromium, `wait_for` appears, the declared keys and clicks are sent, and after `settle` none of the `fail_on` signals fired and the canvas is not one colour | `console_error`, `page_error`, `failed_request`, `blocked_request`, `selector_missing`, `blank_canvas`, `no_canvas`, `navigation_timeout`, `main_thread_blocked`, `chromium_unavailable`, `browser_launch_failed`, `browser_error`, `browser_pool_busy` |
//! | `ac_predicates` | every predicate of the spec holds (each in a fresh browser context, booted like the browser check, `action` then `predicate` polled until truthy or `timeout_ms`) | `ac_failed`, `ac_not_run`, `invalid_predicate`, `chromium_unavailable` |
//!
//! # Statuses and the exit code
//!
//! A check ends `pass`, `fail`, `skipped` (nothing to check, e.g. no predicates), `unavailable`
//! (it could not run: no Chromium, a launch that failed or timed out, a lost `DevTools`
//! connection, a page that never loaded while it still answered, a browser slot that stayed
//! busy), `error` (the check crashed) or `timeout`. The run's `status` (`data.status` of the
//! `qa.result`) is `fail` when any blocking check failed, crashed or timed out or the whole run
//! hit `qa.timeout` (a genuine failure wins: the artifact is known bad), else `error` when a
//! blocking check could not run (`data.error` says why), else `pass`. `exec_exit_code` is 0, 1
//! (fail), 2 (the run timed out) or 3 (could not run). A run that could not run says nothing about
//! the artifact: the engine retries it (`qa.retry`) and never routes it as a failed build.
//! Without a browser every AC is `SKIP` with the reason and the `ac_predicates` check is
//! `unavailable` — never a pass: an acceptance criterion nobody could verify is not met.
//!
//! # Browser slots
//!
//! At most N browsers run QA at once on a machine, across every crumb process of the user
//! ([`runner::pool`]: file locks under `$CRUMB_HOME/run/`, N = `$CRUMB_BROWSER_SLOTS` or the CPU
//! count). A run waits for a slot before its browser checks start, and their timeouts start
//! when it has one; the report's `browser_slot` says which slot it held and when.
//!
//! # Network
//!
//! Artifacts are served from `127.0.0.1:<ephemeral>`; Chromium resolves no name except that
//! literal, sends everything else to a dead loopback proxy and may not use non-proxied UDP
//! (WebRTC). Every request to another origin is reported as `blocked_request`.

pub mod browser;
pub(crate) mod command_check;
/// Path confinement lives in the core, shared with the Studio and the template loader.
pub(crate) use crate::fs::confine;
pub(crate) mod file_check;
pub(crate) mod html_check;
pub(crate) mod html_scan;
pub(crate) mod predicate;
pub(crate) mod report;
pub(crate) mod runner;
pub(crate) mod size_budget;
