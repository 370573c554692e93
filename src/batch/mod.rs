//! `crumb batch`: many pitches of one pipeline, each its own session, run here in parallel
//! ([`run`]), or as a Kubernetes Indexed Job ([`k8s`]) whose shared home is summarised by
//! [`collect`] (with each pod's [`attempt`] record). The summary is built from session folders
//! alone ([`summary`]).

pub(crate) mod attempt;
pub(crate) mod collect;
pub(crate) mod k8s;
pub(crate) mod plan;
pub(crate) mod record;
pub(crate) mod run;
pub(crate) mod summary;
