//! The one integration-test binary. Each module tests one area against the real `crumb` binary,
//! real files and real subprocesses.

#[macro_use]
mod support;

mod engine;
mod pipelines;
mod qa;
mod run;
mod runtime;
mod studio;
mod transcript;
