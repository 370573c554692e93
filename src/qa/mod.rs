//! Execution QA: declared checks run against real artifacts (static checks, commands, headless Chromium).
