//! Pipeline files: the YAML model, its schema, validation and compilation to a transition table.

pub mod context;
pub mod model;
pub mod table;
