//! `scores` read in one pass as either of the two things the strict parser makes of it: our
//! `Scores`, or the legacy shape replay meets on every verdict of the reference's transcripts,
//! whose dimensions carry keys ours does not (`semantic`, `quality` …). The strict parser refuses
//! such a line, reads it as a `serde_json::Value` and maps it ([`super::legacy::map`], which
//! rebuilds each dimension as `{score, source, lookup}`); this reads the object straight into what
//! that mapping makes of it, and gives up on everything else the mapping would touch (a missing or
//! non-number `score`, a `null`, `dims`, an unknown key, a repeated one), which serde then reads.

use super::scores::SLOT_IDS;
use std::fmt;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::transcript::scores::CourtEval;
use crate::transcript::{Deviation, Dimension, ScoreSource, Scores};
use crate::vocab::Verdict;

/// Deepest nesting followed inside a dimension's extra keys (the scan's limit less the levels
/// above them), so every line read here is within `serde_json`'s own limit.
const EXTRA_DEPTH: usize = super::scan::MAX_DEPTH - 4;

/// What `scores` reads as.
#[derive(Debug)]
pub enum Read {
    /// Our `Scores`, exactly as serde reads them: the line needs no mapping.
    Ours(Scores),
    /// The legacy shape, as the mapping leaves it, with the changes it reports
    /// (`normalised scores.D1` …, in dimension order).
    Mapped(Scores, Vec<String>),
}

/// Read `scores` (its JSON text); `None` leaves it to serde (and the strict parser).
pub fn read_scores(json: &str) -> Option<Read> {
    let Lenient(scores, dimensions) = serde_json::from_str(json).ok()?;
    if dimensions.iter().flatten().all(|d| d.ours) {
        let mut scores = scores;
        for (index, dimension) in dimensions.into_iter().enumerate() {
            if let Some(ReadDimension {
                dimension,
                evidence,
                ..
            }) = dimension
            {
                scores.set(
                    SLOT_IDS[index],
                    Dimension {
                        evidence: evidence.unwrap_or_default(),
                        ..dimension
                    },
                );
            }
        }
        return Some(Read::Ours(scores));
    }
    let mut scores = scores;
    let mut changes = Vec::new();
    for (index, dimension) in dimensions.into_iter().enumerate() {
        if let Some(ReadDimension {
            dimension, changed, ..
        }) = dimension
        {
            if changed {
                changes.push(format!("normalised scores.{}", SLOT_IDS[index]));
            }
            scores.set(SLOT_IDS[index], dimension);
        }
    }
    Some(Read::Mapped(scores, changes))
}

/// The scores without their dimensions, and D1–D6 as read.
struct Lenient(Scores, [Option<ReadDimension>; 6]);

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
        let mut dimensions: [Option<ReadDimension>; 6] = Default::default();
        let mut seen = 0u16;
        while let Some(key) = map.next_key::<&str>()? {
            let bit = match key {
                "D1" | "D2" | "D3" | "D4" | "D5" | "D6" => {
                    let index = usize::from(key.as_bytes()[1] - b'1');
                    dimensions[index] = Some(map.next_value()?);
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
        Ok(Lenient(scores, dimensions))
    }
}

/// A dimension as the mapping rebuilds it (`score`, `source` and a string `lookup`, the rest
/// dropped), whether that changed it (extra keys, or a whole-number score, which becomes a float),
/// and whether serde would read it as ours (no key but those and `evidence`, a list of strings).
struct ReadDimension {
    dimension: Dimension,
    evidence: Option<Vec<String>>,
    changed: bool,
    ours: bool,
}

impl<'de> Deserialize<'de> for ReadDimension {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(DimensionVisitor)
    }
}

struct DimensionVisitor;

impl<'de> Visitor<'de> for DimensionVisitor {
    type Value = ReadDimension;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a dimension")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ReadDimension, A::Error> {
        let mut score: Option<Number> = None;
        let mut source: Option<ScoreSource> = None;
        let mut lookup: Option<String> = None;
        let mut evidence: Option<Vec<String>> = None;
        let mut extra = false;
        let mut ours = true;
        while let Some(key) = map.next_key::<&str>()? {
            let repeated = match key {
                "score" => score.replace(map.next_value()?).is_some(),
                "source" => source.replace(map.next_value()?).is_some(),
                "lookup" => lookup.replace(map.next_value()?).is_some(),
                "evidence" => {
                    let value: serde_json::Value = map.next_value()?;
                    let strings = match value {
                        serde_json::Value::Array(items) => items
                            .into_iter()
                            .map(|item| match item {
                                serde_json::Value::String(s) => Some(s),
                                _ => None,
                            })
                            .collect::<Option<Vec<String>>>(),
                        _ => None,
                    };
                    ours &= strings.is_some();
                    extra = true;
                    evidence.replace(strings.unwrap_or_default()).is_some()
                }
                _ => {
                    map.next_value_seed(Shape(EXTRA_DEPTH))?;
                    extra = true;
                    ours = false;
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
        Ok(ReadDimension {
            dimension,
            evidence,
            changed: extra || !float,
            ours,
        })
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
    use super::{Read, read_scores};

    fn map_scores(json: &str) -> Option<(crate::transcript::Scores, Vec<String>)> {
        match read_scores(json)? {
            Read::Mapped(scores, changes) => Some((scores, changes)),
            Read::Ours(_) => None,
        }
    }

    #[test]
    fn the_reference_verdict_maps_as_the_strict_parser_maps_it() {
        let scores = r#"{"D1":{"score":4.5,"source":"verifier-llm","evidence":["AC-1 ✓"]},"D3":{"score":4,"source":"verifier-llm","semantic":4},"D2":{"score":5,"source":"qa-check-effect","lookup":"qa.result.exec_exit_code"},"D6":{"score":4.5,"source":"qa-check-effect","lookup":"x"},"aggregate":28,"verdict":"PASS"}"#;
        let (mapped, changes) = map_scores(scores).expect("maps");
        assert_eq!(
            changes,
            vec![
                "normalised scores.D1",
                "normalised scores.D2",
                "normalised scores.D3"
            ]
        );
        assert!(mapped.d1.as_ref().is_some_and(|d| d.evidence.is_empty()));
        assert_eq!(mapped.d2.map(|d| d.score), Some(5.0));
        // Without a key ours lacks, serde reads them as ours, and so does this.
        let ours = r#"{"D1":{"score":4.5,"source":"verifier-llm","evidence":["a"]},"D2":{"score":5,"source":"qa-check-effect"},"verdict":"PASS"}"#;
        let Some(Read::Ours(read)) = read_scores(ours) else {
            panic!("read as ours");
        };
        let serde: crate::transcript::Scores = serde_json::from_str(ours).expect("ours");
        assert_eq!(read, serde);
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
