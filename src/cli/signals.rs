//! Ctrl-C and SIGTERM as a future: the CLI hands it to `coordinator::drive` as the shutdown, so
//! signal handling stays out of the runtime (tests shut a coordinator down with a channel).

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Completes on the first SIGINT or SIGTERM. Must be polled inside a Tokio runtime; the handlers
/// are installed on the first poll.
pub(crate) async fn interrupted() {
    let mut interrupt = signal(SignalKind::interrupt()).ok();
    let mut terminate = signal(SignalKind::terminate()).ok();
    tokio::select! {
        () = received(&mut interrupt) => {}
        () = received(&mut terminate) => {}
    }
}

/// Completes when `signal` arrives; never, when it could not be installed or its stream closed.
async fn received(signal: &mut Option<Signal>) {
    if let Some(signal) = signal
        && signal.recv().await.is_some()
    {
        return;
    }
    std::future::pending::<()>().await;
}
