//! Pipeline files: the YAML model, its schema, validation and compilation to a transition table.

pub mod argv;
pub mod assemble;
#[cfg(test)]
mod assemble_tests;
pub mod authority;
pub mod codes;
pub mod compile;
pub mod context;
pub mod diagnostic;
pub mod fan_out;
pub mod flow;
#[cfg(test)]
mod flow_tests;
pub mod kinds;
pub mod loader;
pub mod located_yaml;
pub mod model;
#[cfg(test)]
mod passes_tests;
pub mod preset;
pub mod routing;
pub mod rubric;
mod rubric_checks;
pub mod salvage;
pub mod schema;
pub mod semantic;
pub mod suggest;
pub mod table;
pub mod template_render;
pub mod templates;
pub mod units;

pub use compile::{CompileOptions, Compiled, compile_bytes, compile_file, compile_str};
pub use diagnostic::{Diagnostic, Level};
pub mod graph;
pub mod input_values;
pub mod inputs;
pub mod render;
