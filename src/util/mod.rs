//! Small shared helpers with no dependencies on the rest of the crate.

pub mod sanitize;
pub mod suggest;
pub mod time;
