//! Pipeline files: the YAML model, its schema, validation and compilation to a transition table.

pub mod argv;
pub mod assemble;
#[cfg(test)]
mod assemble_tests;
pub(crate) mod choices;
pub mod codes;
pub mod compile;
pub mod diagnostic;
pub mod diagnostic_render;
pub mod fan_out;
pub mod file_report;
pub mod flow;
#[cfg(test)]
mod flow_tests;
pub mod graph;
pub mod input_values;
pub mod inputs;
pub mod kinds;
pub mod lexical_path;
pub mod loader;
pub mod located_yaml;
pub mod model;
mod pass_context;
#[cfg(test)]
mod passes_tests;
pub mod preset;
pub mod preset_check;
pub mod prompt_render;
pub mod role_authority;
pub mod routing;
pub mod rubric;
mod rubric_checks;
pub(crate) mod salvage;
pub mod schema;
#[cfg(test)]
mod schema_agreement_tests;
pub mod semantic;
pub mod source;
pub mod suggest;
pub mod table;
pub(crate) mod template_check;
pub(crate) mod template_text;
pub(crate) mod template_types;
pub mod template_variables;
pub mod templates;
pub mod triggers;
pub mod units;

pub use codes::Level;
pub use compile::{CompileOptions, Compiled, compile_bytes, compile_file, compile_str};
pub use diagnostic::Diagnostic;
