//! Integration tests: the real `pai` binary, real files, real servers.
//! One test binary (faster to link); each area is a module.

mod cli;
mod local_llm;
mod sessions;
mod support;
mod tmux;
mod tui_e2e;
