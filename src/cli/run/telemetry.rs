//! The live OTLP export of a drive, when `--otlp-endpoint` or the `OTEL_EXPORTER_OTLP_*`
//! variables ask for one: started beside the coordinator, fed every event it folds (through
//! [`Observed`], which also shows the progress), finished after it, with its counts for the
//! summary.

use super::progress::Progress;
use crate::engine::State;
use crate::export::live::{self, LiveExport};
use crate::runtime::coordinator::Observer;
use crate::transcript::Event;

/// Start the export for `session` of `pipeline`, if one is configured (problems with the
/// variables are warnings, never a reason not to run).
pub(super) fn start(
    flag: Option<&str>,
    session: &str,
    pipeline: &str,
    runtime: &tokio::runtime::Handle,
    progress: &mut Progress,
) -> Option<LiveExport> {
    let resolved = live::config::resolve(flag, &|name| std::env::var(name).ok());
    for warning in &resolved.warnings {
        progress.warn(warning);
    }
    resolved
        .config
        .map(|config| LiveExport::start(config, session, pipeline, runtime))
}

/// The progress display and the live export, watching the same events.
pub(super) struct Observed<'a> {
    pub progress: &'a mut Progress,
    pub live: Option<&'a mut LiveExport>,
}

impl Observer for Observed<'_> {
    fn event(&mut self, event: &Event, state: &State, live: bool) {
        if let Some(export) = self.live.as_deref_mut() {
            export.observe(event, state, live);
        }
        self.progress.event(event, state, live);
    }

    fn warn(&mut self, message: &str) {
        self.progress.warn(message);
    }
}
