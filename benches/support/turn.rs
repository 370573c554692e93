//! A turn opened as the dispatcher opens one, for benches that time `crumb event`.

use std::path::Path;

/// Open a turn of `role` in the session folder `session` (an `agent.wake` with effect id
/// `effect`, naming a fresh capability recorded in the session); the token `crumb event` takes.
pub fn open(session: &Path, role: &str, effect: &str) -> String {
    let mut writer =
        crumb::transcript::writer::Writer::open(session.join("transcript.jsonl"), "bench")
            .expect("open transcript");
    let wake = crumb::transcript::Draft::new(role, crumb::transcript::Kind::AgentWake).metadata(
        crumb::transcript::Metadata {
            effect_id: Some(effect.to_owned()),
            ..Default::default()
        },
    );
    let (_, capability) =
        crumb::runtime::capability::open_turn(session, &mut writer, wake).expect("open a turn");
    capability.token().to_owned()
}
