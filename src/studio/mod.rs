//! Studio: the local web console over the transcript.
//!
//! One axum server answers the page, the JSON API and the SSE streams; a second listener (another
//! port, hence another origin) serves only the game preview, under a CSP, so generated game code
//! can never reach the API. Studio reads transcripts and writes only to a session's `inbox.txt` and
//! its own caches beside the transcript (`studio.index`, `studio.snapshot`).
//!
//! - [`index`]: per-session line-offset index, extended incrementally (a long session's kept on
//!   disk by [`index_file`]);
//! - [`large_line`], [`large_event`]: lines too long to send whole (a summary kept in the index,
//!   and the link that serves the full line);
//! - [`watched_session`]: one watched session: index, incremental reducer state, change signal;
//! - [`view_snapshot`]: its fold kept beside the transcript (`studio.snapshot`), so a long session
//!   opens without folding it again;
//! - [`sessions`]: finding sessions and their list rows;
//! - [`outcome`]: a session's outcome in words, the same everywhere;
//! - [`graph`]: the compiled graph (from `crumb graph`'s output) with edge counts;
//! - [`api`], [`stream`], [`files`], [`say`], [`new_session`], [`fork`]: the routes, with
//!   [`app`] (what they share) and [`api_error`] (how they refuse);
//! - [`waterfall`]: where the time and tokens went (the export's spans, per role);
//! - [`thread`]: the conversation (a person's lines, acks, answers), rebuilt from the files;
//! - [`new_form`]: what + New offers (declared inputs, roles, adapters' readiness);
//! - [`control`]: Resume (`crumb resume`) and Stop (SIGTERM) from the page;
//! - [`security`]: host allow-list, write token, origin checks, CSPs;
//! - [`assets`]: the embedded client from `studio/`;
//! - [`probe`]: finding a running Studio (for `crumb run`'s deep link).

pub(crate) mod api;
pub(crate) mod api_error;
pub(crate) mod app;
pub mod assets;
pub(crate) mod batches;
pub(crate) mod config;
pub(crate) mod control;
pub(crate) mod files;
pub(crate) mod fork;
pub(crate) mod graph;
pub(crate) mod index;
pub(crate) mod index_file;
pub(crate) mod large_event;
pub(crate) mod large_line;
pub(crate) mod new_form;
pub(crate) mod new_session;
pub(crate) mod outcome;
pub mod probe;
pub(crate) mod rubric;
pub(crate) mod say;
pub(crate) mod security;
pub(crate) mod server;
pub(crate) mod sessions;
pub(crate) mod stream;
pub(crate) mod thread;
pub(crate) mod versions;
pub(crate) mod view_snapshot;
pub mod watched_session;
pub(crate) mod waterfall;

pub use config::StudioConfig;
pub use server::serve;
