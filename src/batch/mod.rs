//! `crumb batch`: many pitches of one pipeline, each its own session, run here in parallel
//! ([`run`]), or as a Kubernetes Indexed Job ([`k8s`]) whose shared home is summarised by
//! [`collect`]. The summary is built from session folders alone ([`summary`]).

pub mod collect;
pub mod k8s;
pub mod plan;
pub mod record;
pub mod run;
pub mod summary;
