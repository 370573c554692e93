//! Pipeline files: the YAML model, its schema, validation and compilation to a transition table.

pub mod context;
pub mod model;
pub mod table;
pub mod source;
pub mod codes;
pub mod diagnostic;
pub mod preset;
pub mod schema;
pub mod suggest;
pub mod units;
pub mod compile;
pub mod front;
pub mod routing;
pub mod semantic;
pub mod templates;

pub use compile::{CompileOptions, Compiled, compile_bytes, compile_file, compile_str};
pub use diagnostic::{Diagnostic, Level};
pub mod render;
pub mod graph;
