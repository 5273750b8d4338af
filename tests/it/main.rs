//! Integration tests: the real `pai` binary, real files, real servers.
//! One test binary (faster to link); each area is a module.

mod agent;
mod arena;
mod cli;
mod crash;
mod launch;
mod local_llm;
mod mcp;
mod protocols_real;
mod sessions;
mod support;
mod tmux;
mod tui_arena;
mod tui_e2e;
mod votes;
