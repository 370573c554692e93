//! `crumb batch --collect <home>`: the summary of a batch whose sessions were written by other
//! processes or machines (a Kubernetes Indexed Job's pods) into a shared crumb home. Each pitch is
//! matched to the newest session with that goal (and, when known, that pipeline's name), read
//! from its folder exactly as a local batch reads it.

use std::path::Path;

use super::plan::Pitch;
use super::summary::Row;
use crate::home::CrumbHome;
use crate::runtime::listing;

/// One row per pitch, from the sessions under `home`.
pub(crate) fn collect(home: &Path, pitches: &[Pitch], pipeline_name: Option<&str>) -> Vec<Row> {
    let (sessions, _) = listing::list(&CrumbHome::at(home), None);
    pitches
        .iter()
        .enumerate()
        .map(|(index, pitch)| {
            sessions
                .iter()
                .filter(|s| s.goal == pitch.pitch)
                .filter(|s| pipeline_name.is_none_or(|name| s.pipeline == name))
                .max_by(|a, b| a.created.cmp(&b.created).then(a.id.cmp(&b.id)))
                .map_or_else(
                    || Row::not_run(index, &pitch.pitch, "no session for this pitch in the home"),
                    |s| Row::of_session(index, &pitch.pitch, &s.path),
                )
        })
        .collect()
}
