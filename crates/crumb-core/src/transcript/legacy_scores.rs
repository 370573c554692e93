//! The legacy shape replay meets on every verdict of the reference's transcripts: `scores` whose
//! dimensions carry keys ours does not (`evidence` lists, `semantic`, `quality` …) or whole-number
//! scores. The strict parser refuses such a line, reads it as a `serde_json::Value` and maps it
//! ([`super::legacy::map`], which rebuilds each dimension as `{score, source, lookup}`); this reads
//! the `scores` object straight into what that mapping makes of it, and gives up on everything
//! else the mapping would touch (a missing or non-number `score`, a `null`, `dims`, an unknown key,
//! a repeated one), so the strict parser maps those.

use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::transcript::scores::CourtEval;
use crate::transcript::{Deviation, Dimension, ScoreSource, Scores};
use crate::vocab::Verdict;

/// Deepest nesting followed inside a dimension's extra keys (the scan's limit less the levels
/// above them), so every line read here is within `serde_json`'s own limit.
const EXTRA_DEPTH: usize = super::scan::MAX_DEPTH - 4;

/// `scores` (its JSON text) as the legacy mapping leaves it, with the changes it reports
/// (`normalised scores.D1` …, in dimension order); `None` when the strict parser must map it.
pub fn map_scores(json: &str) -> Option<(Scores, Vec<String>)> {
    let Lenient(scores, normalised) = serde_json::from_str(json).ok()?;
    let changes: Vec<String> = ["D1", "D2", "D3", "D4", "D5", "D6"]
        .iter()
        .zip(normalised)
        .filter(|(_, changed)| *changed)
        .map(|(name, _)| format!("normalised scores.{name}"))
        .collect();
    Some((scores, changes))
}

/// The scores, and for each of D1–D6 whether the mapping rewrote it.
struct Lenient(Scores, [bool; 6]);

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(LenientVisitor)
    }
}

struct LenientVisitor;

impl<'de> Visitor<'de> for LenientVisitor {
    type Value = Lenient;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("legacy scores")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Lenient, A::Error> {
        let mut scores = Scores::default();
        let mut normalised = [false; 6];
        let mut seen = 0u16;
        while let Some(key) = map.next_key::<&str>()? {
            let bit = match key {
                "D1" | "D2" | "D3" | "D4" | "D5" | "D6" => {
                    let index = usize::from(key.as_bytes()[1] - b'1');
                    let LenientDimension(dimension, changed) = map.next_value()?;
                    normalised[index] = changed;
                    scores.set(key, dimension);
                    index
                }
                "aggregate" => {
                    scores.aggregate = map.next_value::<Option<f64>>()?;
                    6
                }
                "verdict" => {
                    scores.verdict = map.next_value::<Option<Verdict>>()?;
                    7
                }
                "feedback" => {
                    scores.feedback = map.next_value::<Option<String>>()?;
                    8
                }
                "suggested_change" => {
                    scores.suggested_change = map.next_value::<Option<String>>()?;
                    9
                }
                // Not `Option`: the mapping drops a `null` deviation and says so.
                "deviation" => {
                    scores.deviation = Some(map.next_value::<Deviation>()?);
                    10
                }
                "courteval" => {
                    scores.courteval = map.next_value::<Option<CourtEval>>()?;
                    11
                }
                "audit_violations" => {
                    scores.audit_violations = map.next_value::<Vec<String>>()?;
                    12
                }
                _ => return Err(de::Error::custom("a key the fast mapping leaves alone")),
            };
            if seen & (1 << bit) != 0 {
                return Err(de::Error::custom("repeated key"));
            }
            seen |= 1 << bit;
        }
        Ok(Lenient(scores, normalised))
    }
}

/// A dimension as the mapping rebuilds it, and whether that changed it: it keeps `score`,
/// `source` and a string `lookup` and drops the rest, and a whole-number score becomes a float.
struct LenientDimension(Dimension, bool);

impl<'de> Deserialize<'de> for LenientDimension {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(DimensionVisitor)
    }
}

struct DimensionVisitor;

impl<'de> Visitor<'de> for DimensionVisitor {
    type Value = LenientDimension;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a legacy dimension")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LenientDimension, A::Error> {
        let mut score: Option<Number> = None;
        let mut source: Option<ScoreSource> = None;
        let mut lookup: Option<String> = None;
        let mut extra = false;
        while let Some(key) = map.next_key::<&str>()? {
            let repeated = match key {
                "score" => score.replace(map.next_value()?).is_some(),
                "source" => source.replace(map.next_value()?).is_some(),
                "lookup" => lookup.replace(map.next_value()?).is_some(),
                _ => {
                    map.next_value_seed(Shape(EXTRA_DEPTH))?;
                    extra = true;
                    false
                }
            };
            if repeated {
                return Err(de::Error::custom("repeated key"));
            }
        }
        let (Some(Number { value, float }), Some(source)) = (score, source) else {
            return Err(de::Error::custom(
                "a dimension the fast mapping leaves alone",
            ));
        };
        let dimension = Dimension {
            score: value,
            source,
            lookup,
            evidence: Vec::new(),
        };
        Ok(LenientDimension(dimension, extra || !float))
    }
}

/// A JSON number as `f64`, and whether `serde_json` read it as a float (a `Value` then holds the
/// same number the mapping writes back, so the dimension is unchanged).
struct Number {
    value: f64,
    float: bool,
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NumberVisitor)
    }
}

struct NumberVisitor;

impl Visitor<'_> for NumberVisitor {
    type Value = Number;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }
    #[allow(
        clippy::cast_precision_loss,
        reason = "as serde_json's Value::as_f64 converts it"
    )]
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Number, E> {
        Ok(Number {
            value: v as f64,
            float: false,
        })
    }
    #[allow(
        clippy::cast_precision_loss,
        reason = "as serde_json's Value::as_f64 converts it"
    )]
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Number, E> {
        Ok(Number {
            value: v as f64,
            float: false,
        })
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Number, E> {
        Ok(Number {
            value: v,
            float: true,
        })
    }
}

/// Any JSON value a `serde_json::Value` would accept (numbers in range), checked and dropped, at
/// most this many levels deep.
#[derive(Clone, Copy)]
struct Shape(usize);

impl<'de> DeserializeSeed<'de> for Shape {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shape {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self.deeper()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.deeper()?;
        while map.next_key_seed(inner)?.is_some() {
            map.next_value_seed(inner)?;
        }
        Ok(())
    }
}

impl Shape {
    fn deeper<E: de::Error>(self) -> Result<Shape, E> {
        self.0
            .checked_sub(1)
            .map(Shape)
            .ok_or_else(|| E::custom("nested too deep for the fast mapping"))
    }
}

#[cfg(test)]
mod tests {
    use super::map_scores;

    #[test]
    fn the_reference_verdict_maps_as_the_strict_parser_maps_it() {
        let scores = r#"{"D1":{"score":4.5,"source":"verifier-llm","evidence":["AC-1 ✓"]},"D2":{"score":5,"source":"qa-check-effect","lookup":"qa.result.exec_exit_code"},"D6":{"score":4.5,"source":"qa-check-effect","lookup":"x"},"aggregate":28,"verdict":"PASS"}"#;
        let (mapped, changes) = map_scores(scores).expect("maps");
        assert_eq!(
            changes,
            vec!["normalised scores.D1", "normalised scores.D2"]
        );
        assert!(mapped.d1.as_ref().is_some_and(|d| d.evidence.is_empty()));
        assert_eq!(mapped.d2.map(|d| d.score), Some(5.0));
        for refused in [
            r#"{"D1":{"value":4,"source":"verifier-llm"}}"#,
            r#"{"D1":{"score":4,"source":"hybrid"}}"#,
            r#"{"D1":{"score":4,"source":"verifier-llm","lookup":null}}"#,
            r#"{"D1":{"score":4,"source":"verifier-llm","score":5}}"#,
            r#"{"D1":null}"#,
            r#"{"deviation":null}"#,
            r#"{"dims":{}}"#,
            r#"{"D7":{"score":4,"source":"verifier-llm"}}"#,
            r#"{"D1":{"score":4,"source":"verifier-llm","x":1e400}}"#,
        ] {
            assert!(map_scores(refused).is_none(), "{refused}");
        }
    }
}
