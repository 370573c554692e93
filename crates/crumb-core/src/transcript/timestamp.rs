//! Event timestamps: the canonical form the writer produces is read without a parser.

use chrono::DateTime;

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp. The canonical form the writer
/// produces (`2026-05-01T10:00:00.000Z`) is read directly; anything else goes through chrono.
pub fn parse_ms(ts: &str) -> Option<i64> {
    canonical_ms(ts).or_else(|| {
        DateTime::parse_from_rfc3339(ts)
            .ok()
            .map(|t| t.timestamp_millis())
    })
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` without a parser; `None` for any other shape or an invalid date.
fn canonical_ms(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    if b.len() != 24
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    if b[19] != b'.' || b[23] != b'Z' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        b[range].iter().try_fold(0i64, |acc, &d| {
            d.is_ascii_digit().then(|| acc * 10 + i64::from(d - b'0'))
        })
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second, milli) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
    if !(1..=12).contains(&month) || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let month_index = usize::try_from(month - 1).ok()?;
    if day < 1 || day > month_days[month_index] {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milli)
}

#[cfg(test)]
mod tests {
    use super::{canonical_ms, parse_ms};

    #[test]
    fn the_fast_timestamp_path_agrees_with_chrono() {
        for ts in [
            "1970-01-01T00:00:00.000Z",
            "2026-05-01T10:00:07.123Z",
            "2024-02-29T23:59:59.999Z",
            "2000-03-01T00:00:00.000Z",
            "1999-12-31T12:30:45.500Z",
            "0001-01-01T00:00:00.000Z",
        ] {
            let chrono = chrono::DateTime::parse_from_rfc3339(ts)
                .expect("valid")
                .timestamp_millis();
            assert_eq!(canonical_ms(ts), Some(chrono), "{ts}");
        }
        assert_eq!(canonical_ms("2023-02-29T00:00:00.000Z"), None);
        assert_eq!(canonical_ms("2026-13-01T00:00:00.000Z"), None);
        assert_eq!(canonical_ms("2026-05-01T10:00:0७.000Z"), None);
        assert_eq!(
            parse_ms("2026-05-01T10:00:07+02:00"),
            Some(1_777_622_407_000)
        );
        assert_eq!(parse_ms("yesterday"), None);
    }
}
