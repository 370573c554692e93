//! "Did you mean": the closest known name to a misspelt one.

/// Edit distance counting insertions, deletions, substitutions and swaps of two adjacent
/// characters (optimal string alignment), by characters: `biuld` is one edit from `build`.
pub use strsim::osa_distance as edit_distance;

/// The candidate closest to `wrong`, if it is close enough to be a plausible typo
/// (at most a third of the longer name, and never more than 3 edits).
pub fn closest<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // Names longer than this are not typos of short identifiers; skip the quadratic work.
    if wrong.chars().count() > 64 {
        return None;
    }
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        let distance = edit_distance(&wrong.to_lowercase(), &candidate.to_lowercase());
        let longest = wrong.chars().count().max(candidate.chars().count());
        if distance == 0 || distance > 3 || distance * 3 > longest.max(3) {
            if distance == 0 && wrong != candidate {
                // Same letters, different case.
                return Some(candidate);
            }
            continue;
        }
        if best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, name)| name)
}

/// `did you mean `x`?` for the closest candidate.
pub fn did_you_mean<'a>(
    wrong: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    closest(wrong, candidates).map(|name| format!("did you mean `{name}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_names_only() {
        assert_eq!(edit_distance("bulder", "builder"), 1);
        assert_eq!(edit_distance("biuld", "build"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(closest("biuld", ["build", "spec"]), Some("build"));
        assert_eq!(closest("bulder", ["builder", "verifier"]), Some("builder"));
        assert_eq!(
            closest("tempalte", ["template", "produces"]),
            Some("template")
        );
        assert_eq!(closest("zzz", ["builder"]), None);
        assert_eq!(closest("Builder", ["builder"]), Some("builder"));
    }
}
