//! The mock builder's game: a real, self-contained, playable canvas game derived from the pitch.
//!
//! Everything is a pure function of the pitch (and a variant number, so a repair turn can ship a
//! different build): the mechanic comes from keywords ("match-3"/"tile"/"gem" → a match-3 grid,
//! "dodge"/"avoid"/"runner" → a dodger, "click"/"tap"/"whack" → a tapper; otherwise the pitch's hash
//! picks), the palette from the hash, the round length from a number of seconds in the pitch. The
//! game exposes `window.__game` (`score`, `state`: `title|playing|over`, `timeLeft`, `hint()`…) so
//! acceptance predicates can observe it; [`acceptance`] returns predicates that really hold on it.

use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The game script; `/*CONFIG*/` is replaced by the design as JSON.
const SCRIPT: &str = include_str!("game.js");

/// Which game loop the pitch gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum Mechanic {
    #[serde(rename = "match-3")]
    Match3,
    #[serde(rename = "dodger")]
    Dodger,
    #[serde(rename = "tapper")]
    Tapper,
}

impl Mechanic {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mechanic::Match3 => "match-3",
            Mechanic::Dodger => "dodger",
            Mechanic::Tapper => "tapper",
        }
    }

    fn blurb(self) -> &'static str {
        match self {
            Mechanic::Match3 => "Swap neighbouring gems to line up three or more. Chains multiply.",
            Mechanic::Dodger => "Steer with the arrows or the pointer. Dodge what falls.",
            Mechanic::Tapper => "Tap the targets before they fade. Streaks score more.",
        }
    }
}

/// Colours of one palette.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Palette {
    pub name: &'static str,
    pub bg: &'static str,
    pub panel: &'static str,
    pub fg: &'static str,
    pub accent: &'static str,
    pub pieces: [&'static str; 5],
}

const PALETTES: [Palette; 6] = [
    Palette {
        name: "midnight",
        bg: "#0b1430",
        panel: "#17224a",
        fg: "#f4f6ff",
        accent: "#ffcc33",
        pieces: ["#ff5d73", "#4cc9f0", "#80ed99", "#ffd166", "#c77dff"],
    },
    Palette {
        name: "forest",
        bg: "#10241b",
        panel: "#1c3a2b",
        fg: "#effbea",
        accent: "#f9c74f",
        pieces: ["#f94144", "#90be6d", "#43aa8b", "#f8961e", "#577590"],
    },
    Palette {
        name: "sunset",
        bg: "#2b1120",
        panel: "#451a33",
        fg: "#fff1e6",
        accent: "#ffb703",
        pieces: ["#fb5607", "#ff006e", "#8338ec", "#3a86ff", "#ffbe0b"],
    },
    Palette {
        name: "ocean",
        bg: "#03212e",
        panel: "#073b4c",
        fg: "#e0fbfc",
        accent: "#ffd23f",
        pieces: ["#ef476f", "#06d6a0", "#118ab2", "#ffd166", "#f78c6b"],
    },
    Palette {
        name: "candy",
        bg: "#2d1b3d",
        panel: "#432c5a",
        fg: "#fff0fb",
        accent: "#7bf1a8",
        pieces: ["#ff8fab", "#ffc8dd", "#a2d2ff", "#cdb4db", "#fdffb6"],
    },
    Palette {
        name: "ember",
        bg: "#1a1a1a",
        panel: "#2e2e2e",
        fg: "#fafafa",
        accent: "#ff7b00",
        pieces: ["#e63946", "#f1faee", "#a8dadc", "#ffb703", "#2a9d8f"],
    },
];

/// Everything the game is made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Design {
    pub title: String,
    pub mechanic: Mechanic,
    pub palette: Palette,
    /// Round length in seconds.
    pub duration: u32,
    pub seed: u32,
    pub blurb: &'static str,
}

/// Derive the design from the pitch.
pub(crate) fn design(pitch: &str, variant: u32) -> Design {
    let lower = pitch.to_lowercase();
    let digest = Sha256::digest(lower.trim().as_bytes());
    let hash = u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]]);
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    let mechanic = if has(&[
        "match-3", "match 3", "match3", "tile", "gem", "jewel", "candy", "swap",
    ]) {
        Mechanic::Match3
    } else if has(&[
        "dodge", "avoid", "runner", "run ", "escape", "survive", "asteroid",
    ]) {
        Mechanic::Dodger
    } else if has(&["click", "tap", "whack", "pop", "catch", "target"]) {
        Mechanic::Tapper
    } else {
        [Mechanic::Match3, Mechanic::Dodger, Mechanic::Tapper][(hash % 3) as usize]
    };
    let palette = PALETTES[(hash.wrapping_add(variant) as usize) % PALETTES.len()].clone();
    Design {
        title: title_of(pitch),
        mechanic,
        palette,
        duration: duration_of(&lower),
        seed: hash ^ variant.wrapping_mul(0x9e37_79b9),
        blurb: mechanic.blurb(),
    }
}

/// The files of the game, relative to the artifacts folder.
pub fn render(pitch: &str, variant: u32) -> Vec<(String, String)> {
    let d = design(pitch, variant);
    let config = json!({
        "title": d.title,
        "mechanic": d.mechanic.as_str(),
        "palette": d.palette,
        "duration": d.duration,
        "seed": d.seed,
        "blurb": d.blurb,
    });
    let script = SCRIPT.replace("/*CONFIG*/", &config.to_string());
    let title = escape_html(&d.title);
    let html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n\
         <style>\nhtml, body {{ margin: 0; height: 100%; background: {bg}; }}\n\
         body {{ display: flex; align-items: center; justify-content: center; overflow: hidden; }}\n\
         canvas {{ display: block; max-width: 100vw; max-height: 100vh; touch-action: none; }}\n</style>\n\
         </head>\n<body>\n<canvas id=\"game\" width=\"640\" height=\"480\" aria-label=\"{title}\"></canvas>\n\
         <script src=\"game.js\"></script>\n</body>\n</html>\n",
        bg = d.palette.bg,
    );
    vec![
        ("game/index.html".to_owned(), html),
        ("game/game.js".to_owned(), script),
    ]
}

/// Acceptance criteria and the JavaScript predicates that check them on the rendered game.
pub fn acceptance(pitch: &str) -> (Vec<String>, Vec<Value>) {
    let d = design(pitch, 0);
    let scoring = match d.mechanic {
        Mechanic::Match3 => "Swapping two neighbouring gems into a line of three scores points",
        Mechanic::Dodger => "Surviving and dodging falling rocks scores points",
        Mechanic::Tapper => "Tapping a target before it fades scores points",
    };
    let criteria = vec![
        "The game draws on a canvas of at least 320x240 as soon as the page loads".to_owned(),
        "Pressing Space (or Enter, or clicking) starts a round".to_owned(),
        scoring.to_owned(),
        format!("A {}-second countdown runs during a round", d.duration),
        "When time runs out the game shows game over, and Space starts a new round".to_owned(),
    ];
    let space = "document.dispatchEvent(new KeyboardEvent('keydown', { key: ' ', code: 'Space', bubbles: true }))";
    let predicates = vec![
        json!({
            "id": "AC1",
            "intent": criteria[0],
            "predicate": "(() => { const c = document.querySelector('canvas'); return !!c && c.width >= 320 && c.height >= 240; })()",
        }),
        json!({
            "id": "AC2",
            "intent": criteria[1],
            "action": format!("if (window.__game.state !== 'playing') {space}"),
            "predicate": "window.__game.state === 'playing'",
            "timeout_ms": 2000,
        }),
        json!({
            "id": "AC3",
            "intent": criteria[2],
            "action": format!(
                "(() => {{ const g = window.__game; if (g.state !== 'playing') {space}; window.__acScore = g.score; \
                 const c = document.querySelector('canvas'); const r = c.getBoundingClientRect(); \
                 for (const p of g.hint()) {{ const o = {{ clientX: r.left + p.x * r.width / c.width, clientY: r.top + p.y * r.height / c.height, bubbles: true, isPrimary: true }}; \
                 c.dispatchEvent(new PointerEvent('pointerdown', o)); }} }})()"
            ),
            "predicate": "window.__game.score > window.__acScore",
            "timeout_ms": 4000,
        }),
        json!({
            "id": "AC4",
            "intent": criteria[3],
            "action": format!("if (window.__game.state !== 'playing') {space}; window.__acTime = window.__game.timeLeft"),
            "predicate": "window.__game.timeLeft < window.__acTime",
            "timeout_ms": 3000,
        }),
        json!({
            "id": "AC5",
            "intent": criteria[4],
            "action": format!(
                "new Promise((done) => {{ if (window.__game.state !== 'playing') {space}; window.__game.timeLeft = 0.05; \
                 setTimeout(() => {{ window.__acOver = window.__game.state === 'over'; {space}; done(); }}, 400); }})"
            ),
            "predicate": "window.__acOver === true && window.__game.state === 'playing' && window.__game.timeLeft > 1",
            "timeout_ms": 3000,
        }),
    ];
    (criteria, predicates)
}

/// A short title from the pitch: its first words, title-cased.
fn title_of(pitch: &str) -> String {
    let words: Vec<String> = pitch
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .take(5)
        .map(|w| {
            let mut chars = w.chars().filter(|c| !c.is_control());
            chars
                .next()
                .map(|f| f.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        })
        .collect();
    let title: String = words.join(" ").chars().take(40).collect();
    if title.is_empty() {
        "Untitled Arcade".to_owned()
    } else {
        title
    }
}

/// Seconds named in the pitch ("60-second", "90 s", "2 minute"), clamped to 10–300; default 60.
fn duration_of(lower: &str) -> u32 {
    let bytes = lower.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let n: u32 = lower[start..i].parse().unwrap_or(0);
            let unit = lower[i..].trim_start_matches(['-', ' ']);
            let seconds = if unit.starts_with("min") {
                n.saturating_mul(60)
            } else if unit.starts_with("sec") || unit.starts_with("s ") || unit == "s" {
                n
            } else {
                continue;
            };
            return seconds.clamp(10, 300);
        }
        i += 1;
    }
    60
}

fn escape_html(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_pick_the_mechanic_and_numbers_the_length() {
        assert_eq!(
            design("60-second match-3 with combo bonus", 0).mechanic,
            Mechanic::Match3
        );
        assert_eq!(
            design("asteroid dodge runner", 0).mechanic,
            Mechanic::Dodger
        );
        assert_eq!(design("whack-a-mole clicker", 0).mechanic, Mechanic::Tapper);
        assert_eq!(design("60-second match-3 with combo bonus", 0).duration, 60);
        assert_eq!(design("a 90 sec dodger", 0).duration, 90);
        assert_eq!(design("2 minute tapper", 0).duration, 120);
        assert_eq!(design("tapper", 0).duration, 60);
        assert_eq!(design("5 sec tapper", 0).duration, 10);
    }

    #[test]
    fn the_same_pitch_gives_the_same_game() {
        assert_eq!(render("space gems", 0), render("space gems", 0));
        assert_ne!(render("space gems", 0)[1].1, render("space gems", 1)[1].1);
    }

    #[test]
    fn hostile_pitches_cannot_break_out_of_html_or_script() {
        let files = render("</title><script>alert(1)</script> \"); alert(2); //", 0);
        let html = &files[0].1;
        assert!(!html.contains("<script>alert"), "{html}");
        assert_eq!(html.matches("<script").count(), 1);
        let script = &files[1].1;
        assert!(!script.contains("/*CONFIG*/"));
        // The pitch lands in the script only as a JSON string literal.
        let config = script
            .split("const CONFIG = ")
            .nth(1)
            .and_then(|rest| rest.split(";\n").next())
            .unwrap();
        let parsed: Value = serde_json::from_str(config).unwrap();
        assert_eq!(
            parsed["title"],
            design("</title><script>alert(1)</script> \"); alert(2); //", 0).title
        );
    }

    #[test]
    fn acceptance_predicates_parse_as_qa_predicates() {
        let (criteria, predicates) = acceptance("60-second match-3 with combo bonus");
        assert_eq!(criteria.len(), predicates.len());
        let parsed = crate::qa::predicate::parse(&Value::Array(predicates));
        assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
        assert_eq!(parsed.predicates.len(), 5);
    }

    proptest::proptest! {
        #[test]
        fn any_pitch_renders_a_complete_page(pitch in "\\PC{0,200}", variant in 0u32..8) {
            let files = render(&pitch, variant);
            proptest::prop_assert_eq!(files.len(), 2);
            proptest::prop_assert!(files[0].1.starts_with("<!doctype html>"));
            let d = design(&pitch, variant);
            proptest::prop_assert!((10..=300).contains(&d.duration));
            proptest::prop_assert!(!d.title.is_empty() && d.title.chars().count() <= 40);
        }
    }
}
