//! Parsers for the human-written quantities in pipeline files: durations (`1500ms`, `20m`,
//! `1h30m`) and sizes (`512B`, `5MB`, `2MiB`).
//!
//! Both are strict: no spaces inside a part, no fractions, no bare numbers, and overflow is an
//! error rather than a wrap, so a typo can never silently become a huge or zero budget.

/// Why a quantity did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("empty value")]
    Empty,
    #[error("`{0}` has no unit")]
    MissingUnit(String),
    #[error("unknown unit `{unit}` (expected one of {expected})")]
    UnknownUnit {
        unit: String,
        expected: &'static str,
    },
    #[error("`{0}` is not a number followed by a unit")]
    Malformed(String),
    #[error("`{0}` is too large")]
    Overflow(String),
}

const DURATION_UNITS: &str = "ms, s, m, h";
const SIZE_UNITS: &str = "B, KB, MB, GB, KiB, MiB, GiB";

/// Parse a duration into milliseconds. Parts may be chained largest first: `1h30m`, `2m30s`.
pub fn parse_duration_ms(text: &str) -> Result<u64, UnitError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(UnitError::Empty);
    }
    let mut total: u64 = 0;
    for (number, unit) in parts(text)? {
        let factor = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "" => return Err(UnitError::MissingUnit(text.to_string())),
            other => {
                return Err(UnitError::UnknownUnit {
                    unit: other.to_string(),
                    expected: DURATION_UNITS,
                });
            }
        };
        let part = number
            .checked_mul(factor)
            .ok_or_else(|| UnitError::Overflow(text.to_string()))?;
        total = total
            .checked_add(part)
            .ok_or_else(|| UnitError::Overflow(text.to_string()))?;
    }
    Ok(total)
}

/// Parse a size into bytes. `KB`/`MB`/`GB` are powers of 1000, `KiB`/`MiB`/`GiB` of 1024.
pub fn parse_size_bytes(text: &str) -> Result<u64, UnitError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(UnitError::Empty);
    }
    let parts = parts(text)?;
    let [(number, unit)] = parts.as_slice() else {
        return Err(UnitError::Malformed(text.to_string()));
    };
    let factor: u64 = match *unit {
        "B" => 1,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "" => return Err(UnitError::MissingUnit(text.to_string())),
        other => {
            return Err(UnitError::UnknownUnit {
                unit: other.to_string(),
                expected: SIZE_UNITS,
            });
        }
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| UnitError::Overflow(text.to_string()))
}

/// Split `12ab34cd` into `[(12, "ab"), (34, "cd")]`.
fn parts(text: &str) -> Result<Vec<(u64, &str)>, UnitError> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(UnitError::Malformed(text.to_string()));
        }
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| UnitError::Overflow(text.to_string()))?;
        rest = &rest[digits..];
        let letters = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        out.push((number, &rest[..letters]));
        rest = &rest[letters..];
        if letters == 0 && !rest.is_empty() {
            return Err(UnitError::Malformed(text.to_string()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("1500ms"), Ok(1500));
        assert_eq!(parse_duration_ms("20m"), Ok(1_200_000));
        assert_eq!(parse_duration_ms("1h30m"), Ok(5_400_000));
        assert!(matches!(
            parse_duration_ms("20"),
            Err(UnitError::MissingUnit(_))
        ));
        assert!(matches!(
            parse_duration_ms("5 min"),
            Err(UnitError::Malformed(_))
        ));
        assert!(matches!(
            parse_duration_ms("5x"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_duration_ms("1.5s"),
            Err(UnitError::Malformed(_))
        ));
        assert!(matches!(
            parse_duration_ms("99999999999999999999h"),
            Err(UnitError::Overflow(_))
        ));
        assert!(matches!(
            parse_duration_ms("9999999999999999h"),
            Err(UnitError::Overflow(_))
        ));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size_bytes("5MB"), Ok(5_000_000));
        assert_eq!(parse_size_bytes("2KiB"), Ok(2048));
        assert!(matches!(
            parse_size_bytes("5mb"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_size_bytes("1MB1KB"),
            Err(UnitError::Malformed(_))
        ));
        assert!(matches!(parse_size_bytes(""), Err(UnitError::Empty)));
    }
}
