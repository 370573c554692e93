//! "Did you mean": the closest known name to a misspelt one.

/// Edit distance counting insertions, deletions, substitutions and swaps of two adjacent
/// characters (optimal string alignment), by characters: `biuld` is one edit from `build`.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

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
