//! Symmetry reduction: roles a pipeline cannot tell apart are explored as one.
//!
//! Three judges with the same `produces`, `sees` and `fallback`, spawned only together by a
//! fan-out and named by no `from:` or single `spawn:`, are interchangeable: renaming them in a
//! state gives a state with the same futures, renamed. So the explorer keys a state by its
//! canonical renaming (each group's members ordered by what the state holds about them, see
//! [`Symmetry::renaming`]) and, of the members whose records are equal, offers the choices of
//! one only. A fan-out of n judges is then explored as multisets of verdicts, not n-tuples.

use std::hash::{DefaultHasher, Hash, Hasher};

use super::state_hash::{Rules, hash_into};
use super::world::{Point, Work};
use crate::pipeline::table::{Action, RoleSpec, TransitionTable, Trigger};

/// The groups of interchangeable roles of a table (each of two or more, names sorted).
#[derive(Debug, Clone, Default)]
pub(crate) struct Symmetry {
    pub(crate) groups: Vec<Vec<String>>,
}

impl Symmetry {
    /// No reduction: every role is its own (what the tests compare the reduction with).
    pub(crate) fn none() -> Self {
        Symmetry::default()
    }

    /// The interchangeable roles of `table`.
    pub(crate) fn of(table: &TransitionTable) -> Self {
        // Roles alike in everything the explorer plays (template, description and adapter only
        // shape the prompt and the process, never the route).
        let alike = |a: &RoleSpec, b: &RoleSpec| {
            a.produces == b.produces
                && a.sees == b.sees
                && a.fallback == b.fallback
                && a.wall_timeout_ms == b.wall_timeout_ms
                && a.idle_timeout_ms == b.idle_timeout_ms
        };
        // A role a route names on its own is distinguished by the route.
        let named_alone = |role: &str| {
            table.routes.iter().any(|route| {
                matches!(&route.trigger, Trigger::Kind { from: Some(from), .. } if from == role)
                    || matches!(&route.action, Action::Spawn { role: spawned } if spawned == role)
            })
        };
        let mut groups: Vec<Vec<String>> = Vec::new();
        for role in table.roles.iter().filter(|r| !named_alone(&r.id)) {
            let home = groups.iter_mut().find(|group| {
                table
                    .role(&group[0])
                    .is_some_and(|first| alike(first, role))
            });
            match home {
                Some(group) => group.push(role.id.clone()),
                None => groups.push(vec![role.id.clone()]),
            }
        }
        // A fan-out that spawns some members of a group and not others tells them apart.
        for route in &table.routes {
            if let Action::SpawnAll { roles } = &route.action {
                groups = groups
                    .into_iter()
                    .flat_map(|group| {
                        let (inside, outside): (Vec<String>, Vec<String>) =
                            group.into_iter().partition(|r| roles.contains(r));
                        [inside, outside]
                    })
                    .collect();
            }
        }
        groups.retain(|group| group.len() > 1);
        for group in &mut groups {
            group.sort();
        }
        Symmetry { groups }
    }

    /// Whether any role has a twin.
    pub(crate) fn is_trivial(&self) -> bool {
        self.groups.is_empty()
    }

    /// The group `role` belongs to, if any.
    pub(crate) fn group_of(&self, role: &str) -> Option<usize> {
        self.groups.iter().position(|g| g.iter().any(|r| r == role))
    }

    /// What `point` holds about `role`, without its name: its record, its pending turns, its
    /// place in the open fan-out and the result it reported there, the slots it last wrote.
    pub(crate) fn signature(point: &Point, role: &str, rules: Rules<'_>) -> u64 {
        let mut hasher = DefaultHasher::new();
        let state = &point.state;
        hash_into(&state.roles.get(role), rules, &mut hasher);
        point
            .pending
            .iter()
            .filter(|w| matches!(w, Work::Turn(r) if r == role))
            .count()
            .hash(&mut hasher);
        if let Some(fan_out) = &state.fan_out {
            fan_out.roles.iter().any(|r| r == role).hash(&mut hasher);
            if fan_out.joined.is_none() {
                let result = fan_out.results.iter().find(|r| r.role == role);
                result
                    .map(|r| (r.verdict, r.severity, r.aggregate.to_bits()))
                    .hash(&mut hasher);
            }
        }
        (state.build.as_ref().map(|b| b.from.as_str()) == Some(role)).hash(&mut hasher);
        (state.plan.as_ref().map(|p| p.from.as_str()) == Some(role)).hash(&mut hasher);
        for (i, swap) in state.swaps.iter().enumerate() {
            if swap.role == role {
                i.hash(&mut hasher);
            }
        }
        hasher.finish()
    }

    /// The canonical renaming of `point`: in each group, the member with the k-th smallest
    /// signature takes the group's k-th name. Two points one renaming apart get the same one.
    pub(crate) fn renaming(&self, point: &Point, rules: Rules<'_>) -> Vec<(String, String)> {
        let mut renaming = Vec::new();
        for group in &self.groups {
            let mut members: Vec<(u64, &String)> = group
                .iter()
                .map(|role| (Self::signature(point, role, rules), role))
                .collect();
            members.sort();
            for ((_, from), to) in members.into_iter().zip(group) {
                if from != to {
                    renaming.push((from.clone(), to.clone()));
                }
            }
        }
        renaming
    }

    /// Every name `text` could carry under the group's renamings: `circuit_open:judge-a` is
    /// also reachable as `circuit_open:judge-b` when the two are twins. Returns `text` first.
    pub(crate) fn variants(&self, text: &str) -> Vec<(String, Vec<(String, String)>)> {
        let mut out = vec![(text.to_owned(), Vec::new())];
        for group in &self.groups {
            let Some(named) = group.iter().find(|role| mentions(text, role)) else {
                continue;
            };
            for other in group.iter().filter(|r| *r != named) {
                let swap = vec![
                    (named.clone(), other.clone()),
                    (other.clone(), named.clone()),
                ];
                out.push((rename_text(text, &swap), swap));
            }
        }
        out
    }
}

/// Whether `text` names `role` as a word (not as part of a longer name).
fn mentions(text: &str, role: &str) -> bool {
    text.match_indices(role).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + role.len()..].chars().next();
        !before.is_some_and(name_char) && !after.is_some_and(name_char)
    })
}

fn name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

/// `text` with every whole-word name of `renaming` replaced at once.
pub(crate) fn rename_text(text: &str, renaming: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let to = renaming
            .iter()
            .find(|(from, _)| from == word)
            .map_or(word.as_str(), |(_, to)| to.as_str());
        out.push_str(to);
        word.clear();
    };
    for c in text.chars() {
        if name_char(c) {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}
