//! Commands that change how the next request is made: /endpoint, /model,
//! /models, /system, /temp, /max-tokens, /smooth.

use super::{CommandError, SlashCommand, parse_switch};
use crate::tui::app::{App, Effect};
use crate::tui::mode::{Overlay, PickerKind, Transition};
use crate::tui::transcript::NoticeLevel;

pub struct Endpoint;
impl SlashCommand for Endpoint {
    fn name(&self) -> &'static str {
        "endpoint"
    }
    fn args(&self) -> &'static str {
        "[NAME]"
    }
    fn about(&self) -> &'static str {
        "switch endpoint mid-conversation (no name: pick one)"
    }
    fn complete(&self, app: &App, _partial: &str) -> Vec<String> {
        app.config.endpoints.keys().cloned().collect()
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        if args.is_empty() {
            let items: Vec<String> = app.config.endpoints.keys().cloned().collect();
            let current = app.endpoint.clone();
            app.overlay_state.open_picker(PickerKind::Endpoint, items, &current);
            return app
                .modes
                .apply(Transition::Open(Overlay::Picker(PickerKind::Endpoint)))
                .map_err(|r| CommandError::Failed(r.0.into()));
        }
        app.set_endpoint(args, None).map_err(CommandError::Failed)?;
        app.flash(
            format!("endpoint {} · model {}", app.endpoint, app.model),
            NoticeLevel::Info,
        );
        Ok(())
    }
}

pub struct Model;
impl SlashCommand for Model {
    fn name(&self) -> &'static str {
        "model"
    }
    fn args(&self) -> &'static str {
        "[NAME]"
    }
    fn about(&self) -> &'static str {
        "switch model on this endpoint (no name: pick from its list)"
    }
    fn complete(&self, app: &App, _partial: &str) -> Vec<String> {
        app.models.get(&app.endpoint).cloned().unwrap_or_default()
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        if args.is_empty() {
            let items = app.models.get(&app.endpoint).cloned().unwrap_or_default();
            let current = app.model.clone();
            app.overlay_state.open_picker(PickerKind::Model, items, &current);
            app.push_effect(Effect::ListModels {
                endpoint: app.endpoint.clone(),
                show: false,
            });
            return app
                .modes
                .apply(Transition::Open(Overlay::Picker(PickerKind::Model)))
                .map_err(|r| CommandError::Failed(r.0.into()));
        }
        app.model = args.to_string();
        app.flash(format!("model {} on {}", app.model, app.endpoint), NoticeLevel::Info);
        Ok(())
    }
}

pub struct Models;
impl SlashCommand for Models {
    fn name(&self) -> &'static str {
        "models"
    }
    fn args(&self) -> &'static str {
        "[ENDPOINT]"
    }
    fn about(&self) -> &'static str {
        "list the models an endpoint offers"
    }
    fn complete(&self, app: &App, _partial: &str) -> Vec<String> {
        app.config.endpoints.keys().cloned().collect()
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        let endpoint = if args.is_empty() {
            app.endpoint.clone()
        } else {
            args.to_string()
        };
        app.config.require_endpoint(&endpoint).map_err(CommandError::Failed)?;
        app.flash(format!("asking {endpoint} for its models…"), NoticeLevel::Info);
        app.push_effect(Effect::ListModels { endpoint, show: true });
        Ok(())
    }
}

pub struct System;
impl SlashCommand for System {
    fn name(&self) -> &'static str {
        "system"
    }
    fn args(&self) -> &'static str {
        "[TEXT|off]"
    }
    fn about(&self) -> &'static str {
        "show or set the system prompt"
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        match args {
            "" => {
                let s = app.conversation.system.clone().unwrap_or_else(|| "(none)".into());
                app.notice(format!("system prompt: {s}"), NoticeLevel::Info);
            }
            "off" | "none" => {
                app.conversation.system = None;
                app.flash("system prompt removed", NoticeLevel::Info);
            }
            text => {
                app.conversation.system = Some(text.to_string());
                app.flash("system prompt set for the next requests", NoticeLevel::Info);
            }
        }
        Ok(())
    }
}

pub struct Temp;
impl SlashCommand for Temp {
    fn name(&self) -> &'static str {
        "temp"
    }
    fn args(&self) -> &'static str {
        "[X|default]"
    }
    fn about(&self) -> &'static str {
        "show or set the temperature (0.0–2.0)"
    }
    fn complete(&self, _app: &App, _partial: &str) -> Vec<String> {
        ["0", "0.2", "0.7", "1", "default"].map(String::from).to_vec()
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        match args {
            "" => {
                let t = app
                    .params
                    .temperature
                    .map_or("server default".into(), |t| t.to_string());
                app.flash(format!("temperature: {t}"), NoticeLevel::Info);
            }
            "default" | "off" => {
                app.params.temperature = None;
                app.flash("temperature: server default", NoticeLevel::Info);
            }
            x => {
                let v: f32 = x
                    .parse()
                    .map_err(|_| CommandError::Usage(format!("`{x}` is not a number")))?;
                if !(0.0..=2.0).contains(&v) {
                    return Err(CommandError::Usage(format!("{v} is out of range 0.0–2.0")));
                }
                app.params.temperature = Some(v);
                app.flash(format!("temperature: {v}"), NoticeLevel::Info);
            }
        }
        Ok(())
    }
}

pub struct MaxTokens;
impl SlashCommand for MaxTokens {
    fn name(&self) -> &'static str {
        "max-tokens"
    }
    fn args(&self) -> &'static str {
        "[N|default]"
    }
    fn about(&self) -> &'static str {
        "show or set the answer length cap"
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        match args {
            "" => {
                let t = app.params.max_tokens.map_or("server default".into(), |t| t.to_string());
                app.flash(format!("max tokens: {t}"), NoticeLevel::Info);
            }
            "default" | "off" => {
                app.params.max_tokens = None;
                app.flash("max tokens: server default", NoticeLevel::Info);
            }
            n => {
                let v: u32 = n
                    .parse()
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(|| CommandError::Usage(format!("`{n}` is not a positive whole number")))?;
                app.params.max_tokens = Some(v);
                app.flash(format!("max tokens: {v}"), NoticeLevel::Info);
            }
        }
        Ok(())
    }
}

pub struct Smooth;
impl SlashCommand for Smooth {
    fn name(&self) -> &'static str {
        "smooth"
    }
    fn args(&self) -> &'static str {
        "[on|off]"
    }
    fn about(&self) -> &'static str {
        "smooth streaming: steady text instead of network bursts"
    }
    fn complete(&self, _app: &App, _partial: &str) -> Vec<String> {
        vec!["on".into(), "off".into()]
    }
    fn run(&self, app: &mut App, args: &str) -> Result<(), CommandError> {
        let on = if args.is_empty() {
            !app.smooth
        } else {
            parse_switch(args).ok_or_else(|| CommandError::Usage(format!("`{args}` is not on or off")))?
        };
        app.smooth = on;
        app.flash(
            format!(
                "smooth streaming {} (from the next answer)",
                if on { "on" } else { "off" }
            ),
            NoticeLevel::Info,
        );
        Ok(())
    }
}
