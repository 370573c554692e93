//! Where a session can be watched in Studio, for the header and the summary of a run.

use serde_json::{Value, json};

/// Where this session can be watched in Studio: straight there when a Studio is running, else
/// the command that starts one and the address it will have.
pub(crate) struct StudioLink {
    pub(crate) url: String,
    pub(crate) running: bool,
}

impl StudioLink {
    pub(super) fn probe(session_id: &str) -> Self {
        if let Some(url) = crate::studio::probe::deep_link(session_id) {
            return StudioLink { url, running: true };
        }
        let port = std::env::var(crate::studio::probe::PORT_ENV)
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(crate::studio::probe::DEFAULT_PORT);
        StudioLink {
            url: crate::studio::probe::session_url(port, session_id),
            running: false,
        }
    }

    /// One line of the header and of the summary.
    pub(crate) fn line(&self) -> String {
        if self.running {
            format!("studio   {}", self.url)
        } else {
            format!("studio   crumb studio → {}", self.url)
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({ "url": self.url, "running": self.running })
    }
}
