//! The JSON Schema the pipeline and preset types generate, read as documentation: what a key
//! means (hover), which keys a mapping takes and which values an enum allows (completion).

use std::sync::OnceLock;

use crumb_core::pipeline::schema::{pipeline_schema, preset_schema};
use serde_json::Value;

/// Which file's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    Pipeline,
    Preset,
}

fn root(which: Which) -> &'static Value {
    static PIPELINE: OnceLock<Value> = OnceLock::new();
    static PRESET: OnceLock<Value> = OnceLock::new();
    match which {
        Which::Pipeline => PIPELINE.get_or_init(pipeline_schema),
        Which::Preset => PRESET.get_or_init(preset_schema),
    }
}

/// The schema nodes a path of keys (list indices included, as any text) leads to.
fn nodes_at(which: Which, segments: &[String]) -> Vec<&'static Value> {
    let root = root(which);
    let mut nodes = vec![root];
    for segment in segments {
        nodes = nodes
            .into_iter()
            .flat_map(|node| branches(root, node))
            .filter_map(|node| {
                node.get("properties")
                    .and_then(|p| p.get(segment))
                    .or_else(|| {
                        node.get("items")
                            .filter(|_| segment.parse::<usize>().is_ok())
                    })
                    .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))
            })
            .collect();
    }
    nodes
}

/// `node` with its `$ref` followed and its `anyOf`/`oneOf`/`allOf` spread into alternatives
/// (an array's items too: `OneOrMany` is a value or a list of them).
fn branches<'a>(root: &'a Value, node: &'a Value) -> Vec<&'a Value> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        if out.len() > 64 {
            break;
        }
        if let Some(target) = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/definitions/"))
            .and_then(|name| root.get("definitions")?.get(name))
        {
            stack.push(target);
            continue;
        }
        let mut spread = false;
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(alternatives) = node.get(key).and_then(Value::as_array) {
                stack.extend(alternatives);
                spread = true;
            }
        }
        if !spread {
            out.push(node);
        }
    }
    out
}

/// What the key at this path means.
pub(crate) fn description(which: Which, segments: &[String]) -> Option<&'static str> {
    let root = root(which);
    nodes_at(which, segments).into_iter().find_map(|node| {
        node.get("description")
            .or_else(|| {
                branches(root, node)
                    .into_iter()
                    .find_map(|b| b.get("description"))
            })
            .and_then(Value::as_str)
    })
}

/// The keys the mapping at this path takes, each with its description.
pub(crate) fn keys(which: Which, segments: &[String]) -> Vec<(&'static str, Option<&'static str>)> {
    let root = root(which);
    let mut out: Vec<(&str, Option<&str>)> = Vec::new();
    for node in nodes_at(which, segments) {
        for branch in branches(root, node) {
            for (key, property) in branch
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if !out.iter().any(|(k, _)| k == key) {
                    out.push((
                        key.as_str(),
                        property.get("description").and_then(Value::as_str),
                    ));
                }
            }
        }
    }
    out
}

/// The values an enum (or a list of one) at this path allows.
pub(crate) fn values(which: Which, segments: &[String]) -> Vec<&'static str> {
    let root = root(which);
    let mut out: Vec<&str> = Vec::new();
    let mut add = |v: &'static Value| {
        if let Some(s) = v.as_str()
            && !out.contains(&s)
        {
            out.push(s);
        }
    };
    for node in nodes_at(which, segments) {
        let mut alternatives = branches(root, node);
        let items: Vec<_> = alternatives
            .iter()
            .filter_map(|b| b.get("items"))
            .flat_map(|items| branches(root, items))
            .collect();
        alternatives.extend(items);
        for branch in alternatives {
            branch.get("const").into_iter().for_each(&mut add);
            branch
                .get("enum")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .for_each(&mut add);
        }
    }
    out
}

/// The path of keys a JSON pointer names (`/routes/3/spawn` → `routes`, `3`, `spawn`).
pub(crate) fn segments(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        segments(p)
    }

    #[test]
    fn keys_values_and_descriptions_come_from_the_schema() {
        assert!(
            description(Which::Pipeline, &path("/routes"))
                .unwrap()
                .contains("first that matches")
        );
        assert!(description(Which::Pipeline, &path("/roles/builder/template")).is_some());
        let route_keys: Vec<_> = keys(Which::Pipeline, &path("/routes/0"))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert!(
            route_keys.contains(&"spawn") && route_keys.contains(&"max"),
            "{route_keys:?}"
        );
        let kinds = values(Which::Pipeline, &path("/qa/checks/0/kind"));
        assert!(
            kinds.contains(&"browser") && kinds.contains(&"file"),
            "{kinds:?}"
        );
        let verdicts = values(Which::Pipeline, &path("/routes/0/when/verdict"));
        assert!(verdicts.contains(&"PASS"), "{verdicts:?}");
    }
}
