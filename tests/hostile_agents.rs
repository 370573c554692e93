//! Hostile agents against the per-turn capability, over the real binary: a builder that tries to
//! pass a verdict as the verifier (through `CRUMB_ACTOR`, through `from`, through a record it
//! writes into `capabilities/`), to write into a made-up session folder or a foreign transcript,
//! to outlive its turn in a session of its own (with its variables or without), and tokens reused after their turns ended. Every attempt is refused (exit 2) and recorded, and
//! the outcome is the honest verifier's.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::{crumb, only_session};

/// A run takes a few seconds; this only bounds a hang.
const LIMIT: Duration = Duration::from_secs(120);

/// The builder: every attack first (each one's exit code goes to `attacks.txt`), then its build.
/// The verifier: an honest FAIL, leaving its token behind for a later thief.
const AGENT: &str = r#"
import hashlib, json, os, subprocess, sys
role = sys.argv[1]
sys.stdin.read()
session = os.environ["CRUMB_SESSION_DIR"]
token = os.environ["CRUMB_CAPABILITY"]
with open(os.path.join(session, f"leaked-{role}-token"), "w") as f:
    f.write(token)
dims = {f"D{i}": {"score": 5, "source": "verifier-llm"} for i in range(1, 7)}

def event(draft, **env):
    full = dict(os.environ)
    for key, value in env.items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = value
    return subprocess.run(["crumb", "event"], input=json.dumps(draft), text=True, env=full,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode

if role == "verifier":
    low = {d: dict(v, score=1) for d, v in dims.items()}
    sys.exit(event({"kind": "judge.score", "body": "not good",
                    "scores": dict(low, aggregate=6, verdict="FAIL")}))

# A process that leaves the turn's group and session, to wait for a later turn.
sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
with open(os.path.join(session, "escaped.pid"), "w") as f:
    f.write(str(sleeper.pid))
# One that also drops every variable, so no marker names it as the turn's.
unmarked = subprocess.Popen(["sleep", "301"], start_new_session=True, env={"PATH": os.environ["PATH"]})
with open(os.path.join(session, "escaped-unmarked.pid"), "w") as f:
    f.write(str(unmarked.pid))
passing = {"kind": "judge.score", "body": "forged", "scores": dict(dims, aggregate=30, verdict="PASS")}
attacks = []
attacks.append(("env_actor", event(passing, CRUMB_ACTOR="verifier")))
attacks.append(("from", event(dict(passing, **{"from": "verifier"}))))
empty = os.path.join(os.path.dirname(os.path.dirname(session)), "made-up-session")
os.makedirs(empty, exist_ok=True)
attacks.append(("fake_dir", event(passing, CRUMB_SESSION_DIR=empty)))
foreign = os.path.join(empty, "foreign.jsonl")
attacks.append(("foreign_transcript", event({"kind": "note"}, CRUMB_TRANSCRIPT_PATH=foreign)))
attacks.append(("no_capability", event(passing, CRUMB_CAPABILITY=None, CRUMB_ACTOR="verifier",
                                       CRUMB_SESSION_DIR=empty)))
# A record of its own making in capabilities/: its own record under a token it made up, with the
# role changed, and then its own record rewritten the same way.
records = os.path.join(session, "capabilities")
own = os.path.join(records, hashlib.sha256(token.encode()).hexdigest())
with open(own) as f:
    mine = f.read()
forged = json.loads(mine)
forged["role"] = "verifier"
made_up = "f" * 64 + "@" + session
with open(os.path.join(records, hashlib.sha256(made_up.encode()).hexdigest()), "w") as f:
    json.dump(forged, f)
attacks.append(("made_up_record", event(passing, CRUMB_CAPABILITY=made_up)))
with open(own, "w") as f:
    json.dump(forged, f)
attacks.append(("rewritten_record", event(passing)))
with open(own, "w") as f:
    f.write(mine)
with open(os.path.join(session, "attacks.txt"), "w") as f:
    json.dump(dict(attacks), f)
sys.exit(event({"kind": "build", "body": "built"}))
"#;

const PIPELINE: &str = r"
version: 1
name: hostile
roles:
  builder:
    template: ../templates/role.md.j2
    produces: [build]
    adapter: { command: [python3, ../agents/agent.py, builder] }
  verifier:
    template: ../templates/role.md.j2
    produces: [judge.score]
    adapter: { command: [python3, ../agents/agent.py, verifier] }
scoring: { guards: [] }
routes:
  - { on: goal, spawn: builder }
  - { on: build, spawn: verifier }
  - { on: verdict, when: { verdict: PASS }, done: pass }
  - { on: verdict, done: { outcome: fail, reason: verdict_fail } }
";

fn project() -> tempfile::TempDir {
    crate::support::project_with(&[
        ("pipelines/hostile.yaml", PIPELINE),
        ("templates/role.md.j2", "goal: {{ goal }}\n"),
        ("agents/agent.py", AGENT),
    ])
}

fn events(session: &Path) -> Vec<Value> {
    std::fs::read_to_string(session.join("transcript.jsonl"))
        .expect("read")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect()
}

fn violations(session: &Path) -> Vec<String> {
    events(session)
        .iter()
        .filter(|e| e["kind"] == "audit")
        .map(|e| {
            e["data"]["violation"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[test]
fn no_agent_can_pass_a_verdict_as_another_role() {
    let dir = project();
    let run = crumb()
        .current_dir(dir.path())
        .env("CRUMB_HOME", dir.path().join("home"))
        .env("CRUMB_STUDIO_PORT", "1")
        .args(["run", "pipelines/hostile.yaml", "--json", "a pitch"])
        .args(["--wall-timeout", "60s", "--idle-timeout", "30s"])
        .timeout(LIMIT)
        .run();
    let summary: Value = serde_json::from_str(&run.stdout).expect("a JSON summary");
    assert_eq!(summary["reason"], "verdict_fail", "{}", run.stderr);
    let session = only_session(&dir.path().join("home")).0;

    let attacks: Value = serde_json::from_str(
        &std::fs::read_to_string(session.join("attacks.txt")).expect("the builder ran"),
    )
    .expect("JSON");
    for (attack, code) in attacks.as_object().expect("an object") {
        assert_eq!(code, 2, "{attack} was not refused");
    }
    assert_eq!(attacks.as_object().map(serde_json::Map::len), Some(7));
    assert_eq!(
        violations(&session),
        [
            "forged_actor_attempt",
            "forged_actor_attempt",
            "forged_session_attempt",
            "forged_session_attempt",
            "forged_capability_attempt",
            "forged_capability_attempt",
        ],
        "each attempt on this session is recorded (the one without a capability named none)"
    );
    let made_up = session
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("made-up-session");
    assert_eq!(
        std::fs::read_dir(&made_up).expect("made").count(),
        0,
        "nothing is written into a made-up session folder"
    );
    let verdicts: Vec<(String, String)> = events(&session)
        .iter()
        .filter(|e| e["kind"] == "judge.score")
        .map(|e| {
            let field = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (field(&e["from"]), field(&e["scores"]["verdict"]))
        })
        .collect();
    assert_eq!(verdicts, [("verifier".to_owned(), "FAIL".to_owned())]);

    // What left the builder's group did not outlive its turn, even with its variables dropped
    // (the turn shim, a child subreaper, adopted and killed it).
    for file in ["escaped.pid", "escaped-unmarked.pid"] {
        let pid = std::fs::read_to_string(session.join(file)).expect("the builder forked");
        crate::support::eventually(file, Duration::from_secs(10), || {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
            // Gone, or a zombie nobody has reaped yet: either way it runs no more.
            stat.map_or(true, |stat| stat.contains(") Z "))
                .then_some(())
        });
    }

    // Tokens taken from turns that have ended speak for nobody, and the attempt is recorded.
    for role in ["builder", "verifier"] {
        let token =
            std::fs::read_to_string(session.join(format!("leaked-{role}-token"))).expect("leaked");
        let run = crumb()
            .arg("event")
            .env("CRUMB_CAPABILITY", token)
            .stdin(r#"{"kind":"judge.score","scores":{"verdict":"PASS"}}"#)
            .run()
            .expect_code(2);
        assert!(run.stderr.contains("not registered"), "{}", run.stderr);
    }
    assert_eq!(
        violations(&session)[6..],
        ["invalid_capability_attempt", "invalid_capability_attempt"]
    );
    let replay: Value = serde_json::from_str(
        &crumb()
            .args(["replay", "--json"])
            .arg(&session)
            .run()
            .expect_code(0)
            .stdout,
    )
    .expect("JSON");
    assert_eq!(
        replay["state"]["done"]["reason"], "verdict_fail",
        "{replay}"
    );
    assert_eq!(replay["state"]["refused_events"], 0, "{replay}");
}
