//! The terminal UI: a ratatui front end over the orchestrators' events.
//!
//! `app` holds state and behaviour without I/O; `run` owns the terminal and
//! carries out effects; `view`, `overlay` and `transcript` draw; `mode` is the
//! UiMode state machine; `commands` are the slash commands; `markdown`,
//! `highlight` and `wrap` turn model text into styled lines; `smoother` paces
//! streamed text; `clipboard` gets text out of a full-screen app.

pub mod app;
pub mod approval;
pub mod clipboard;
pub mod commands;
pub mod effects;
pub mod highlight;
pub mod input;
pub mod keys;
pub mod markdown;
pub mod mode;
pub mod overlay;
pub mod pick;
pub mod run;
pub mod smoother;
pub mod theme;
pub mod transcript;
pub mod view;
pub mod wrap;

#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;

pub use run::{Channels, LoopOptions, Recorders, TuiOptions, TuiStart, event_loop, run};
#[cfg(test)]
mod tests_arena;
#[cfg(test)]
mod tests_history;
