//! The server's resources: per session of the project, its summary (what `crumb status --json`
//! prints) and its transcript in pages, with `notifications/resources/updated` for both while the
//! session runs. A subscription follows each session's transcript with the live [`Tail`] (one
//! read of what was appended per poll) and closes once every session it follows has ended.

use std::time::Duration;

use rmcp::model::{ListResourcesResult, ReadResourceResult, Resource, ResourceContents};
use rmcp::service::SubscriptionContext;

use super::scope::Scope;
use crate::runtime::listing;
use crate::transcript::Kind;
use crate::transcript::reader::Typed;
use crate::transcript::tail::Tail;

/// Lines per transcript page.
pub(crate) const PAGE_LINES: usize = 500;
/// How often a subscription reads its sessions' transcripts for new lines.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// A resource of one session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SessionResource {
    Summary {
        id: String,
    },
    /// The transcript's lines from `from` (0-based) on, at most [`PAGE_LINES`].
    Transcript {
        id: String,
        from: usize,
    },
}

impl SessionResource {
    /// `crumb://sessions/<id>/summary` or `crumb://sessions/<id>/transcript[?from=N]`.
    pub(crate) fn parse(uri: &str) -> Option<SessionResource> {
        let rest = uri.strip_prefix("crumb://sessions/")?;
        let (id, what) = rest.split_once('/')?;
        let id = id.to_owned();
        let (what, query) = what.split_once('?').unwrap_or((what, ""));
        match what {
            "summary" if query.is_empty() => Some(SessionResource::Summary { id }),
            "transcript" => {
                let from = match query.strip_prefix("from=") {
                    Some(n) => n.parse().ok()?,
                    None if query.is_empty() => 0,
                    None => return None,
                };
                Some(SessionResource::Transcript { id, from })
            }
            _ => None,
        }
    }
}

fn summary_uri(id: &str) -> String {
    format!("crumb://sessions/{id}/summary")
}

fn transcript_uri(id: &str) -> String {
    format!("crumb://sessions/{id}/transcript")
}

/// Both resources of every session of the project.
pub(crate) fn list(scope: &Scope) -> ListResourcesResult {
    let (sessions, _) = listing::list(&scope.home, Some(&scope.project));
    let mut resources: Vec<Resource> = Vec::new();
    for session in sessions {
        let what = format!(
            "{} · {} · {}",
            session.pipeline, session.status, session.goal
        );
        resources.push(
            Resource::new(summary_uri(&session.id), format!("{} summary", session.id))
                .with_description(format!("status of {what}"))
                .with_mime_type("application/json"),
        );
        resources.push(
            Resource::new(
                transcript_uri(&session.id),
                format!("{} transcript", session.id),
            )
            .with_description(format!(
                "events of {what}, {PAGE_LINES} lines a page (`?from=N`)"
            ))
            .with_mime_type("application/json"),
        );
    }
    ListResourcesResult {
        resources,
        ..ListResourcesResult::default()
    }
}

/// Read one resource: the summary as `crumb status --json` prints it, or a transcript page as
/// `{"from", "lines", "next"}` (`next` is absent on the last page).
pub(crate) async fn read(scope: &Scope, uri: &str) -> Result<ReadResourceResult, String> {
    let resource = SessionResource::parse(uri).ok_or_else(|| format!("no such resource: {uri}"))?;
    let text = match &resource {
        SessionResource::Summary { id } => {
            let session = scope.session(id)?;
            let path = session.path().display().to_string();
            let args = ["status", "--json", &path].map(str::to_owned);
            let finished = scope.crumb(&args).await?;
            if finished.code != 0 {
                return Err(finished.stderr.trim().to_owned());
            }
            finished.stdout
        }
        SessionResource::Transcript { id, from } => {
            let session = scope.session(id)?;
            let text = std::fs::read_to_string(session.transcript()).map_err(|e| e.to_string())?;
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let page: Vec<&str> = lines.iter().skip(*from).take(PAGE_LINES).copied().collect();
            let next = (from + page.len() < lines.len()).then(|| from + page.len());
            let mut value = serde_json::json!({ "from": from, "lines": page });
            if let Some(next) = next {
                value["next"] = next.into();
            }
            value.to_string()
        }
    };
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type("application/json"),
    ]))
}

/// One followed session: its transcript tail and the URIs to notify when it grows.
struct Followed {
    tail: Tail<Typed>,
    uris: Vec<String>,
    ended: bool,
}

/// Notify the subscribed URIs of each session whenever its transcript grows, until the host
/// cancels or every followed session has written `session.end`.
pub(crate) async fn follow(scope: &Scope, context: &SubscriptionContext) {
    let uris = context
        .accepted()
        .resource_subscriptions
        .clone()
        .unwrap_or_default();
    let mut followed: Vec<Followed> = Vec::new();
    for uri in uris {
        let Some(SessionResource::Summary { id } | SessionResource::Transcript { id, .. }) =
            SessionResource::parse(&uri)
        else {
            continue;
        };
        let Ok(session) = scope.session(&id) else {
            continue;
        };
        if let Some(known) = followed
            .iter_mut()
            .find(|f| f.uris.iter().any(|u| u.contains(session.id())))
        {
            known.uris.push(uri);
            continue;
        }
        followed.push(Followed {
            tail: Tail::new(session.transcript()),
            uris: vec![uri],
            ended: false,
        });
    }
    // What is already there is not a change: start from the current end.
    for session in &mut followed {
        session.ended = drain(&mut session.tail).1;
    }
    while followed.iter().any(|f| !f.ended) {
        tokio::select! {
            () = context.cancelled() => return,
            () = tokio::time::sleep(POLL_INTERVAL) => {}
        }
        for session in followed.iter_mut().filter(|f| !f.ended) {
            let (grew, ended) = drain(&mut session.tail);
            session.ended = ended;
            if grew {
                for uri in &session.uris {
                    if context
                        .sink()
                        .notify_resource_updated(uri.clone())
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    }
}

/// Read everything appended: whether anything was, and whether `session.end` was among it.
fn drain(tail: &mut Tail<Typed>) -> (bool, bool) {
    let (mut grew, mut ended) = (false, false);
    loop {
        let Ok(batch) = tail.poll() else {
            return (grew, ended);
        };
        grew |= !batch.items.is_empty() || batch.truncated;
        ended |= batch
            .items
            .iter()
            .any(|e| e.as_ref().is_ok_and(|e| e.kind == Kind::SessionEnd));
        if !batch.more {
            return (grew, ended);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SessionResource;

    #[test]
    fn resource_uris_parse_and_anything_else_is_refused() {
        assert_eq!(
            SessionResource::parse("crumb://sessions/01ABC/transcript?from=500"),
            Some(SessionResource::Transcript {
                id: "01ABC".into(),
                from: 500
            })
        );
        assert_eq!(
            SessionResource::parse("crumb://sessions/01ABC/summary"),
            Some(SessionResource::Summary { id: "01ABC".into() })
        );
        for bad in [
            "crumb://sessions/01ABC/summary?x=1",
            "crumb://sessions/01ABC/transcript?from=x",
            "crumb://sessions/01ABC/meta",
            "file:///etc/passwd",
        ] {
            assert_eq!(SessionResource::parse(bad), None, "{bad}");
        }
    }
}
