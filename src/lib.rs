//! pai — Polyglot AI: a terminal workbench for people who work with many LLMs.
//!
//! Layers: `protocols` (wire → `StreamEvent`), `orchestration` (turns →
//! `OrchestratorEvent`), front ends (`headless`, `multi` for arena and compare,
//! the TUI) and `records`.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod app;
pub mod cli;
pub mod config;
pub mod conversation;
pub mod headless;
pub mod launch;
pub mod leaderboard;
pub mod leaderboard_cmd;
pub mod multi;
pub mod orchestration;
pub mod preference;
pub mod protocols;
pub mod records;
pub mod sessions_cmd;
pub mod stats;
pub mod store;
pub mod testkit;
pub mod tools;
pub mod tui;
pub mod util;
pub mod verdict;
pub mod votes_cmd;
