//! Execution QA: declared checks run against real artifacts (static checks, commands, headless Chromium).
//!
//! Entry point: [`runner::run`] takes a compiled [`crate::pipeline::table::QaSpec`] and a
//! [`runner::QaRequest`] and always returns a [`report::QaReport`] — a timeout, a missing browser or
//! a panicking check end as failing results, never as a missing one. [`report::QaReport::to_draft`]
//! turns it into the `qa.result` event.

pub mod browser;
pub mod command_check;
pub mod confine;
pub mod file_check;
pub mod html_check;
pub mod html_scan;
pub mod predicate;
pub mod process_group;
pub mod report;
pub mod runner;
pub mod size_budget;
