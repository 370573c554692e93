//! Per-turn capabilities: the only thing that lets `crumb event` speak for a role.
//!
//! At each spawn the dispatcher mints a random token, names its hash in the turn's `agent.wake`
//! (`data.capability`), and registers the hash in `<session>/capabilities/<sha256>` (role, turn,
//! the wake's place in the transcript) before the agent starts; the agent gets the token as
//! `CRUMB_CAPABILITY`. `crumb event` derives the session, the transcript and the role from the token
//! alone: the token names its session folder, the record names the role, and the record counts only
//! when the wake line it points at was written for the same hash, role and turn (a record written
//! into `capabilities/` by anyone else points at no such line). The turn's end revokes it (the
//! record is removed, and an `agent.stop` or a re-issued `agent.wake` of the same turn after that
//! wake ends it for good), and so does every coordinator start (all records are removed), so a
//! token of a killed run never works after `crumb resume`.
//!
//! Only the hash is on disk: reading `capabilities/` or the transcript reveals no token.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::meta::write_atomically;
use super::session_dir::TRANSCRIPT_FILE;
use crate::transcript::reader::{LineDecoder, Reader, Typed};
use crate::transcript::writer::{WriteError, Writer};
use crate::transcript::{Draft, Event, Kind};

/// The variable an agent's turn finds its capability in.
pub const CAPABILITY_ENV: &str = "CRUMB_CAPABILITY";
/// The folder of a session holding one record per live capability.
pub(crate) const CAPABILITIES_DIR: &str = "capabilities";
/// Random bytes behind a token (256 bits).
const SECRET_BYTES: usize = 32;
/// Largest record read (a record is a few hundred bytes).
const MAX_RECORD_BYTES: u64 = 4096;

/// A minted capability: the token handed to the agent, and where its record lives.
#[derive(Debug)]
pub struct Capability {
    token: String,
    record: PathBuf,
}

impl Capability {
    /// The token, as the agent receives it in `CRUMB_CAPABILITY`.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// End the capability (the turn is over); a record already gone is fine.
    pub fn revoke(&self) {
        let _ = std::fs::remove_file(&self.record);
    }

    /// What a `crumb event` of this turn could not write for a storage fault, if one could not
    /// (see [`record_fault`]); taken, so it is reported once.
    pub(crate) fn take_fault(&self) -> Option<String> {
        let marker = fault_marker(&self.record);
        let cause = std::fs::read_to_string(&marker).ok()?;
        let _ = std::fs::remove_file(&marker);
        Some(if cause.trim().is_empty() {
            "a crumb event of the turn could not write to the session".to_owned()
        } else {
            cause.trim().to_owned()
        })
    }
}

/// Where a turn's `crumb event` notes a write it could not make: next to the capability's
/// record, so the dispatcher finds it and the turn is owed rather than failed.
fn fault_marker(record: &Path) -> PathBuf {
    record.with_extension("fault")
}

/// Note that a `crumb event` holding `grant` could not write for a storage fault (best effort: on
/// a full disk the file may stay empty, which still says so).
pub(crate) fn record_fault(grant: &Grant, cause: &str) {
    let _ = std::fs::write(fault_marker(&grant.record), cause);
}

/// What `capabilities/<sha256>` holds.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    role: String,
    effect_id: String,
    session_id: String,
    wake_id: String,
    /// Byte offset of the wake's line in the transcript.
    wake_offset: u64,
}

/// Who a valid capability speaks for.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    pub session_dir: PathBuf,
    pub session_id: String,
    pub role: String,
    pub transcript: PathBuf,
    /// The capability's record.
    record: PathBuf,
}

/// Why a presented token gives no authority.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Invalid {
    /// Not a token crumb minted (wrong shape).
    Malformed,
    /// No record: never registered here, or revoked.
    Unknown,
    /// A record that no `agent.wake` of this session backs.
    Forged,
    /// The turn it was minted for has ended.
    Ended,
}

impl Invalid {
    /// The audit violation code for a refusal of this kind.
    pub(crate) fn violation(&self) -> &'static str {
        match self {
            Invalid::Malformed | Invalid::Unknown => "invalid_capability_attempt",
            Invalid::Forged => "forged_capability_attempt",
            Invalid::Ended => "revoked_capability_attempt",
        }
    }

    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Invalid::Malformed => "CRUMB_CAPABILITY is not a capability crumb minted",
            Invalid::Unknown => {
                "CRUMB_CAPABILITY is not registered in its session (never issued there, or revoked)"
            }
            Invalid::Forged => {
                "CRUMB_CAPABILITY's record is not backed by the agent.wake that issued it"
            }
            Invalid::Ended => "CRUMB_CAPABILITY belongs to a turn that has ended",
        }
    }
}

/// Why a turn could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenTurnError {
    /// The `agent.wake` could not be appended.
    #[error(transparent)]
    Wake(#[from] WriteError),
    /// The wake is written but its capability could not be registered (a full disk).
    #[error("cannot register the turn's capability in {}: {source}", .path.display())]
    Record { path: PathBuf, source: io::Error },
    /// No randomness for the token.
    #[error("cannot mint a capability: {0}")]
    Random(io::Error),
}

impl OpenTurnError {
    /// Whether the session's storage failed (rather than the wake being refused): the turn is
    /// then owed, not failed.
    pub(crate) fn is_storage(&self) -> bool {
        matches!(
            self,
            OpenTurnError::Record { .. } | OpenTurnError::Wake(WriteError::Io { .. })
        )
    }
}

/// Open a turn: mint a capability, name its hash in `wake` (`data.capability`), append the wake
/// and register the capability, in that order, so it is valid before the agent starts.
pub fn open_turn(
    session_dir: &Path,
    writer: &mut Writer,
    mut wake: Draft,
) -> Result<(Event, Capability), OpenTurnError> {
    let token = format!(
        "{}@{}",
        random_hex().map_err(OpenTurnError::Random)?,
        session_dir.display()
    );
    let sha = crumb_core::digest::sha256_hex(token.as_bytes());
    wake.data
        .get_or_insert_with(Default::default)
        .insert("capability".into(), Value::String(sha.clone()));
    let (event, wake_offset) = writer.append_located(wake)?;
    let record = Record {
        role: event.from.clone(),
        effect_id: effect_of(&event).unwrap_or_default().to_owned(),
        session_id: event.session_id.clone(),
        wake_id: event.id.clone(),
        wake_offset,
    };
    let dir = session_dir.join(CAPABILITIES_DIR);
    let path = dir.join(&sha);
    std::fs::create_dir_all(&dir)
        .and_then(|()| write_atomically(&path, &serde_json::to_vec(&record).unwrap_or_default()))
        .map_err(|source| OpenTurnError::Record {
            path: path.clone(),
            source,
        })?;
    Ok((
        event,
        Capability {
            token,
            record: path,
        },
    ))
}

/// Revoke every capability of a session (a coordinator starting: no earlier turn is live).
pub(crate) fn revoke_all(session_dir: &Path) {
    let _ = std::fs::remove_dir_all(session_dir.join(CAPABILITIES_DIR));
}

/// The session folder a token names (whether or not the token is valid there).
pub(crate) fn named_session(token: &str) -> Option<PathBuf> {
    let (secret, dir) = token.split_once('@')?;
    let well_formed = secret.len() == 64
        && secret.bytes().all(|b| b.is_ascii_hexdigit())
        && Path::new(dir).is_absolute();
    well_formed.then(|| PathBuf::from(dir))
}

/// Who `token` speaks for, if it is a live capability of the session it names.
pub(crate) fn resolve(token: &str) -> Result<Grant, Invalid> {
    let session_dir = named_session(token).ok_or(Invalid::Malformed)?;
    let sha = crumb_core::digest::sha256_hex(token.as_bytes());
    let record_path = session_dir.join(CAPABILITIES_DIR).join(&sha);
    let record = read_record(&record_path)?;
    let transcript = session_dir.join(TRANSCRIPT_FILE);
    let mut file = File::open(&transcript).map_err(|_| Invalid::Forged)?;
    file.seek(SeekFrom::Start(record.wake_offset))
        .map_err(|_| Invalid::Forged)?;
    let mut events = Reader::<_, TurnMarks>::with_decoder(BufReader::new(file))
        .filter_map(|item| item.ok().flatten());
    let wake = events.next().ok_or(Invalid::Forged)?;
    let of_turn = |event: &Event| effect_of(event) == Some(record.effect_id.as_str());
    let backed = wake.kind == Kind::AgentWake
        && wake.id == record.wake_id
        && wake.from == record.role
        && wake.session_id == record.session_id
        && of_turn(&wake)
        && wake
            .data
            .as_ref()
            .and_then(|data| data.get("capability"))
            .and_then(Value::as_str)
            == Some(sha.as_str());
    if !backed {
        return Err(Invalid::Forged);
    }
    if events.any(|e| matches!(e.kind, Kind::AgentStop | Kind::AgentWake) && of_turn(&e)) {
        return Err(Invalid::Ended);
    }
    Ok(Grant {
        session_dir,
        session_id: record.session_id,
        role: record.role,
        transcript,
        record: record_path,
    })
}

/// Decodes only the lines that can open or end a turn (`agent.wake`, `agent.stop`), so checking a
/// capability costs a substring search per line of its turn, not a parse.
struct TurnMarks;

impl LineDecoder for TurnMarks {
    type Item = Option<Event>;
    fn decode(line: &[u8]) -> Result<Option<Event>, String> {
        let marks = [&b"\"agent.wake\""[..], &b"\"agent.stop\""[..]];
        if marks
            .iter()
            .any(|mark| memchr::memmem::find(line, mark).is_some())
        {
            Typed::decode(line).map(Some)
        } else {
            Ok(None)
        }
    }
}

fn effect_of(event: &Event) -> Option<&str> {
    event.metadata.as_ref()?.effect_id.as_deref()
}

fn read_record(path: &Path) -> Result<Record, Invalid> {
    let file = File::open(path).map_err(|_| Invalid::Unknown)?;
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|_| Invalid::Unknown)?;
    serde_json::from_slice(&bytes).map_err(|_| Invalid::Forged)
}

/// `SECRET_BYTES` from the kernel's CSPRNG, as 64 hex digits (hashed, which keeps all 256 bits).
fn random_hex() -> io::Result<String> {
    let mut bytes = [0u8; SECRET_BYTES];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(crumb_core::digest::sha256_hex(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wake(role: &str, effect: &str) -> Draft {
        turn_event(role, Kind::AgentWake, effect)
    }

    fn turn_event(role: &str, kind: Kind, effect: &str) -> Draft {
        Draft::new(role, kind).metadata(crate::transcript::Metadata {
            effect_id: Some(effect.to_owned()),
            ..Default::default()
        })
    }

    fn session() -> (tempfile::TempDir, Writer) {
        let dir = tempfile::tempdir().unwrap();
        let writer = Writer::open(dir.path().join(TRANSCRIPT_FILE), "s-1").unwrap();
        (dir, writer)
    }

    #[test]
    fn a_fresh_capability_resolves_to_its_role_and_session() {
        let (dir, mut writer) = session();
        writer.append(Draft::new("system", Kind::Note)).unwrap();
        let (_, cap) = open_turn(dir.path(), &mut writer, wake("builder", "e-1")).unwrap();
        let grant = resolve(cap.token()).unwrap();
        assert_eq!(
            (grant.role.as_str(), grant.session_id.as_str()),
            ("builder", "s-1")
        );
        assert_eq!(grant.transcript, dir.path().join(TRANSCRIPT_FILE));
    }

    #[test]
    fn revoked_ended_and_forged_capabilities_resolve_to_nothing() {
        let (dir, mut writer) = session();
        let (_, builder) = open_turn(dir.path(), &mut writer, wake("builder", "e-1")).unwrap();
        let (_, verifier) = open_turn(dir.path(), &mut writer, wake("verifier", "e-2")).unwrap();
        let record = |cap: &Capability| std::fs::read(&cap.record).unwrap();
        // A record copied under another token's hash is backed by no wake.
        let forged = format!("{}@{}", "ab".repeat(32), dir.path().display());
        let forged_path = dir
            .path()
            .join(CAPABILITIES_DIR)
            .join(crumb_core::digest::sha256_hex(forged.as_bytes()));
        std::fs::write(&forged_path, record(&verifier)).unwrap();
        assert_eq!(resolve(&forged).unwrap_err(), Invalid::Forged);
        // A turn that stopped stays ended even when its record is put back.
        let kept = record(&builder);
        writer
            .append(turn_event("builder", Kind::AgentStop, "e-1"))
            .unwrap();
        assert_eq!(resolve(builder.token()).unwrap_err(), Invalid::Ended);
        builder.revoke();
        assert_eq!(resolve(builder.token()).unwrap_err(), Invalid::Unknown);
        std::fs::write(&builder.record, kept).unwrap();
        assert_eq!(resolve(builder.token()).unwrap_err(), Invalid::Ended);
        assert!(resolve(verifier.token()).is_ok());
        revoke_all(dir.path());
        assert_eq!(resolve(verifier.token()).unwrap_err(), Invalid::Unknown);
        assert_eq!(resolve("verifier").unwrap_err(), Invalid::Malformed);
    }
}
