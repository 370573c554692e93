//! Keep validating past schema errors: cut the parts that break the schema out of the document,
//! so the rest can be typed and checked for meaning in the same run (one `crumb validate` shows
//! every error, not one pass's worth).
//!
//! What is cut is the smallest whole item around each error: an element of a list (a route, a
//! check), else the entry under a top-level section (a role, `limits.tokens`), else a top-level
//! key. Serde defaults fill what a cut leaves missing. Cut list elements shift the indexes after
//! them, so the cut remembers how to map a pointer back to the file.

use std::collections::BTreeSet;

use serde_json::Value;

/// Most rounds of cutting; each round removes at least one item, and files are small.
const MAX_ROUNDS: usize = 64;

/// What was cut from a document before it could be typed. Empty when it typed as written.
#[derive(Debug, Default, Clone)]
pub(crate) struct Salvage {
    /// Pointers (into the file as written) of the items cut.
    pub cut: Vec<String>,
    /// For each list that lost elements: its pointer and, per remaining element, its index in
    /// the file.
    remap: Vec<(String, Vec<usize>)>,
}

impl Salvage {
    /// Whether anything was cut (the model is then only part of the file).
    pub(crate) fn is_partial(&self) -> bool {
        !self.cut.is_empty()
    }

    /// Whether the item at `pointer` (as written) was cut.
    pub(crate) fn was_cut(&self, pointer: &str) -> bool {
        self.cut.iter().any(|c| c == pointer)
    }

    /// `pointer` into the typed model, as a pointer into the file.
    pub(crate) fn original(&self, pointer: &str) -> String {
        for (list, indexes) in &self.remap {
            let Some(rest) = pointer
                .strip_prefix(list.as_str())
                .and_then(|r| r.strip_prefix('/'))
            else {
                continue;
            };
            let (head, tail) = rest.split_once('/').map_or((rest, ""), |(h, t)| (h, t));
            if let Some(&i) = head.parse::<usize>().ok().and_then(|i| indexes.get(i)) {
                let sep = if tail.is_empty() { "" } else { "/" };
                return format!("{list}/{i}{sep}{tail}");
            }
        }
        pointer.to_string()
    }

    /// Cut `value` until `valid` holds, or give up (`None`) when an error has nothing to cut.
    /// `errors` lists each violation's instance pointer and, for unknown top-level keys, their
    /// names.
    pub(crate) fn cut_until_valid(
        mut value: Value,
        errors: impl Fn(&Value) -> Vec<(String, Vec<String>)>,
    ) -> Option<(Value, Salvage)> {
        let mut salvage = Salvage::default();
        for _ in 0..MAX_ROUNDS {
            let found = errors(&value);
            if found.is_empty() {
                return Some((value, salvage));
            }
            let mut targets: BTreeSet<Vec<String>> = BTreeSet::new();
            for (pointer, unexpected) in found {
                let segments: Vec<String> = pointer
                    .split('/')
                    .skip(1)
                    .map(|s| s.replace("~1", "/").replace("~0", "~"))
                    .collect();
                if segments.is_empty() {
                    if unexpected.is_empty() {
                        return None;
                    }
                    targets.extend(unexpected.into_iter().map(|k| vec![k]));
                } else {
                    targets.insert(item_of(&value, &segments));
                }
            }
            // Last first, so list indexes in the same round stay valid.
            for target in targets.into_iter().rev() {
                salvage.remove(&mut value, &target);
            }
        }
        None
    }

    fn remove(&mut self, value: &mut Value, target: &[String]) {
        let Some((last, parent_path)) = target.split_last() else {
            return;
        };
        let parent_pointer = pointer_of(parent_path);
        let Some(parent) = value.pointer_mut(&parent_pointer) else {
            return;
        };
        match parent {
            Value::Object(map) => {
                let removed = map.shift_remove(last).is_some();
                if removed {
                    self.cut.push(self.original(&pointer_of(target)));
                }
            }
            Value::Array(items) => {
                let Some(i) = last.parse::<usize>().ok().filter(|i| *i < items.len()) else {
                    return;
                };
                self.cut.push(self.original(&pointer_of(target)));
                let len = items.len();
                items.remove(i);
                let slot =
                    if let Some(slot) = self.remap.iter().position(|(l, _)| *l == parent_pointer) {
                        slot
                    } else {
                        self.remap.push((parent_pointer, (0..len).collect()));
                        self.remap.len() - 1
                    };
                self.remap[slot].1.remove(i);
            }
            _ => {}
        }
    }
}

/// The whole item around the value at `segments`: the outermost list element on the way, else
/// the entry under a top-level section, else the top-level key.
fn item_of(value: &Value, segments: &[String]) -> Vec<String> {
    let mut at = value;
    for (depth, segment) in segments.iter().enumerate() {
        if at.is_array() {
            return segments[..=depth].to_vec();
        }
        match at.get(segment) {
            Some(next) => at = next,
            None => break,
        }
    }
    segments[..segments.len().min(2)].to_vec()
}

fn pointer_of(segments: &[String]) -> String {
    segments.iter().fold(String::new(), |mut out, s| {
        out.push('/');
        out.push_str(&s.replace('~', "~0").replace('/', "~1"));
        out
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn cut_list_elements_map_back_to_their_place_in_the_file() {
        let value = json!({"routes": [{"ok": 1}, {"bad": 1}, {"ok": 2}, {"bad": 2}, {"ok": 3}]});
        let errors = |v: &Value| -> Vec<(String, Vec<String>)> {
            let routes = v["routes"].as_array().cloned().unwrap_or_default();
            routes
                .iter()
                .enumerate()
                .filter(|(_, r)| r.get("bad").is_some())
                .map(|(i, _)| (format!("/routes/{i}/bad"), Vec::new()))
                .collect()
        };
        let (value, salvage) = Salvage::cut_until_valid(value, errors).expect("salvaged");
        assert_eq!(value, json!({"routes": [{"ok": 1}, {"ok": 2}, {"ok": 3}]}));
        assert_eq!(salvage.cut, ["/routes/3", "/routes/1"]);
        assert_eq!(salvage.original("/routes/1/on"), "/routes/2/on");
        assert_eq!(salvage.original("/routes/2"), "/routes/4");
        assert_eq!(salvage.original("/roles/a"), "/roles/a");
    }

    #[test]
    fn map_entries_and_unknown_top_level_keys_are_cut_whole() {
        let value = json!({"roles": {"a": {"x": 1}, "b": {}}, "extra": 1, "limits": {"tokens": {"hard": "no"}}});
        let errors = |v: &Value| -> Vec<(String, Vec<String>)> {
            let mut out = Vec::new();
            if v.get("extra").is_some() {
                out.push((String::new(), vec!["extra".to_string()]));
            }
            if v.pointer("/roles/a/x").is_some() {
                out.push(("/roles/a/x".into(), Vec::new()));
            }
            if v.pointer("/limits/tokens/hard").is_some() {
                out.push(("/limits/tokens/hard".into(), Vec::new()));
            }
            out
        };
        let (value, salvage) = Salvage::cut_until_valid(value, errors).expect("salvaged");
        assert_eq!(value, json!({"roles": {"b": {}}, "limits": {}}));
        assert!(salvage.was_cut("/roles/a"));
        assert!(salvage.was_cut("/limits/tokens"));
        assert!(salvage.was_cut("/extra"));
    }

    #[test]
    fn an_error_at_the_top_with_nothing_to_cut_gives_up() {
        let errors = |_: &Value| vec![(String::new(), Vec::new())];
        assert!(Salvage::cut_until_valid(json!({}), errors).is_none());
    }
}
