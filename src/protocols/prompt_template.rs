//! Prompt templates for the legacy completions protocol: a conversation becomes
//! one prompt string, through a built-in preset (`chatml`, `llama3`,
//! `mistral`/`inst`, `plain`) or the user's own minijinja template, together
//! with the stop sequences that end an answer in that format.
//!
//! Owns parsing (checked when the config loads, with the position of a mistake)
//! and rendering. A prompt is not HTML: autoescaping is off. Templates see
//! `messages` (each with `role`, `content` and, for arena speakers, `name`) and
//! `add_generation_prompt`, and may call `raise_exception(msg)`; whitespace
//! rules follow Hugging Face chat templates (`trim_blocks`, `lstrip_blocks`), so
//! most of those can be pasted in.

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};
use serde::Serialize;

use crate::conversation::{Message, Role};

/// The preset used when an endpoint names none.
pub const DEFAULT_PRESET: &str = "chatml";

/// Preset names a config may use (`inst` is another name for `mistral`).
pub const PRESET_NAMES: &[&str] = &["chatml", "llama3", "mistral", "inst", "plain"];

const TEMPLATE_NAME: &str = "prompt_template";

/// (template, stop sequences) of a preset.
fn preset_source(name: &str) -> Option<(&'static str, &'static [&'static str])> {
    match name {
        "chatml" => Some((
            "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\
             {% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
            &["<|im_end|>", "<|im_start|>"],
        )),
        // No <|begin_of_text|>: completion servers add the BOS token themselves.
        "llama3" => Some((
            "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content | trim }}<|eot_id|>{% endfor %}\
             {% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}",
            &["<|eot_id|>", "<|start_header_id|>"],
        )),
        // Mistral has no system role: the system prompt opens the first [INST].
        "mistral" | "inst" => Some((
            "{% if messages and messages[0].role == 'system' %}{% set system = messages[0].content %}{% set turns = messages[1:] %}\
             {% else %}{% set system = '' %}{% set turns = messages %}{% endif %}\
             {% for m in turns %}{% if m.role == 'assistant' %} {{ m.content | trim }}</s>\
             {% else %}[INST] {% if loop.first and system %}{{ system }}\n\n{% endif %}{{ m.content | trim }} [/INST]{% endif %}{% endfor %}",
            &["</s>", "[INST]"],
        )),
        "plain" => Some((
            "{% for m in messages %}{% if m.role == 'system' %}{{ m.content }}\n\n\
             {% elif m.role == 'assistant' %}Assistant: {{ m.content }}\n\
             {% elif m.role == 'tool' %}Tool result: {{ m.content }}\n\
             {% else %}User: {{ m.content }}\n{% endif %}{% endfor %}\
             {% if add_generation_prompt %}Assistant:{% endif %}",
            &["\nUser:", "\nAssistant:"],
        )),
        _ => None,
    }
}

/// Why a `prompt_template` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub message: String,
    /// Byte offset of the mistake in the template text, when known.
    pub offset: Option<usize>,
    pub hint: String,
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} — {}", self.message, self.hint)
    }
}

/// What a template sees of one message.
#[derive(Serialize)]
struct TemplateMessage<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

/// A compiled prompt template and its stop sequences.
pub struct PromptTemplate {
    env: Environment<'static>,
    /// The preset's name, or `custom`.
    label: String,
    stops: Vec<String>,
}

impl std::fmt::Debug for PromptTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptTemplate")
            .field("label", &self.label)
            .field("stops", &self.stops)
            .finish_non_exhaustive()
    }
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.set_debug(true);
    if let Ok(syntax) = SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build() {
        env.set_syntax(syntax);
    }
    env.add_function("raise_exception", |msg: String| -> Result<Value, minijinja::Error> {
        Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, msg))
    });
    env
}

fn error_from(e: &minijinja::Error, what: &str) -> TemplateError {
    let detail = e.detail().map(str::to_string).unwrap_or_else(|| e.kind().to_string());
    let line = e.line().map(|l| format!(" (template line {l})")).unwrap_or_default();
    TemplateError {
        message: format!("prompt_template {what}: {detail}{line}"),
        offset: e.range().map(|r| r.start),
        hint: "templates see `messages` (each with `role` and `content`) and `add_generation_prompt`; \
               or use a preset: chatml, llama3, mistral, plain"
            .into(),
    }
}

impl PromptTemplate {
    /// The endpoint's `prompt_template` value: a preset name or a template. None = the default preset.
    pub fn from_config(value: Option<&str>) -> Result<Self, TemplateError> {
        let Some(v) = value else {
            return Self::preset(DEFAULT_PRESET).ok_or_else(|| TemplateError {
                message: "the default prompt template is missing".into(),
                offset: None,
                hint: "report this bug".into(),
            });
        };
        if v.contains("{{") || v.contains("{%") || v.contains("{#") {
            return Self::custom(v);
        }
        let name = v.trim();
        Self::preset(name).ok_or_else(|| TemplateError {
            message: format!("unknown prompt_template preset `{name}`"),
            offset: None,
            hint: match crate::util::suggest::closest(name, PRESET_NAMES.iter().copied()) {
                Some(c) => format!(
                    "did you mean `{c}`? Presets: {}; or write a minijinja template using {{{{ messages }}}}",
                    PRESET_NAMES.join(", ")
                ),
                None => format!(
                    "use a preset ({}) or a minijinja template using {{{{ messages }}}}",
                    PRESET_NAMES.join(", ")
                ),
            },
        })
    }

    /// A built-in preset by name.
    pub fn preset(name: &str) -> Option<Self> {
        let (src, stops) = preset_source(name)?;
        let mut env = environment();
        env.add_template_owned(TEMPLATE_NAME, src).ok()?;
        Some(PromptTemplate {
            env,
            label: name.to_string(),
            stops: stops.iter().map(|s| s.to_string()).collect(),
        })
    }

    /// The user's own template: it must parse, and render a one-message conversation.
    pub fn custom(src: &str) -> Result<Self, TemplateError> {
        let mut env = environment();
        env.add_template_owned(TEMPLATE_NAME, src.to_string())
            .map_err(|e| error_from(&e, "does not parse"))?;
        let t = PromptTemplate {
            env,
            label: "custom".into(),
            stops: Vec::new(),
        };
        t.render_inner(&[Message::user("Hello")], true)
            .map_err(|e| error_from(&e, "fails on a one-message conversation"))?;
        Ok(t)
    }

    /// The preset's name, or `custom`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Stop sequences that end an answer in this format (none for custom templates).
    pub fn stops(&self) -> &[String] {
        &self.stops
    }

    /// The prompt for a conversation.
    pub fn render(&self, messages: &[Message], add_generation_prompt: bool) -> Result<String, String> {
        self.render_inner(messages, add_generation_prompt).map_err(|e| {
            let line = e.line().map(|l| format!(" (template line {l})")).unwrap_or_default();
            format!(
                "prompt_template failed: {}{line}",
                e.detail().map(str::to_string).unwrap_or_else(|| e.kind().to_string())
            )
        })
    }

    fn render_inner(&self, messages: &[Message], add_generation_prompt: bool) -> Result<String, minijinja::Error> {
        let msgs: Vec<TemplateMessage<'_>> = messages
            .iter()
            .map(|m| TemplateMessage {
                role: match m.role {
                    Role::System => "system",
                    Role::User => "user",
                    Role::Assistant => "assistant",
                    Role::Tool => "tool",
                },
                content: &m.content,
                name: m.name.as_deref(),
            })
            .collect();
        let tmpl = self.env.get_template(TEMPLATE_NAME)?;
        tmpl.render(minijinja::context! {
            messages => Serde(&msgs),
            add_generation_prompt => add_generation_prompt,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convo() -> Vec<Message> {
        vec![
            Message::system("Be brief."),
            Message::user("Hi"),
            Message::assistant("Hello!"),
            Message::user("2+2?"),
        ]
    }

    fn render(name: &str) -> String {
        PromptTemplate::from_config(Some(name))
            .unwrap()
            .render(&convo(), true)
            .unwrap()
    }

    #[test]
    fn chatml_is_the_default() {
        let t = PromptTemplate::from_config(None).unwrap();
        assert_eq!(t.label(), "chatml");
        assert_eq!(
            t.render(&convo(), true).unwrap(),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"
        );
        assert_eq!(t.stops(), ["<|im_end|>", "<|im_start|>"]);
        assert!(!t.render(&convo(), false).unwrap().ends_with("assistant\n"));
    }

    #[test]
    fn llama3_mistral_and_plain_presets() {
        assert_eq!(
            render("llama3"),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
        );
        assert_eq!(
            render("mistral"),
            "[INST] Be brief.\n\nHi [/INST] Hello!</s>[INST] 2+2? [/INST]"
        );
        assert_eq!(render("inst"), render("mistral"));
        assert_eq!(
            PromptTemplate::preset("mistral")
                .unwrap()
                .render(&[Message::user("Hi")], true)
                .unwrap(),
            "[INST] Hi [/INST]"
        );
        assert_eq!(
            render("plain"),
            "Be brief.\n\nUser: Hi\nAssistant: Hello!\nUser: 2+2?\nAssistant:"
        );
        assert_eq!(
            PromptTemplate::preset("plain").unwrap().stops(),
            ["\nUser:", "\nAssistant:"]
        );
    }

    #[test]
    fn custom_templates_render_without_escaping() {
        let t = PromptTemplate::from_config(Some(
            "{% for m in messages %}{{ m.role | upper }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}",
        ))
        .unwrap();
        assert_eq!(t.label(), "custom");
        assert!(t.stops().is_empty());
        let out = t.render(&[Message::user("a < b & \"c\"")], true).unwrap();
        assert_eq!(out, "USER: a < b & \"c\"\nASSISTANT:");
    }

    #[test]
    fn syntax_errors_carry_the_offset() {
        let src = "{% for m in messages %}{{ m.content }";
        let e = PromptTemplate::from_config(Some(src)).unwrap_err();
        assert!(e.message.contains("does not parse"), "{e}");
        assert!(e.offset.is_some_and(|o| o <= src.len()), "{e:?}");
        let e = PromptTemplate::from_config(Some("{% for m in messages %}x")).unwrap_err();
        assert!(e.message.contains("does not parse"), "{e}");
    }

    #[test]
    fn undefined_variables_and_unknown_filters_are_caught_at_load() {
        let src = "{% for m in message %}{{ m.content }}{% endfor %}";
        let e = PromptTemplate::from_config(Some(src)).unwrap_err();
        assert!(e.message.contains("fails"), "{e}");
        assert_eq!(e.offset.map(|o| &src[o..o + 7]), Some("message"), "{e:?}");
        let e = PromptTemplate::from_config(Some("{{ messages | shout }}")).unwrap_err();
        assert!(e.message.contains("shout") || e.message.contains("filter"), "{e}");
        // Truthiness checks of undefined names stay allowed (HF templates use them).
        assert!(PromptTemplate::from_config(Some("{% if tools %}T{% endif %}{{ messages[0].content }}")).is_ok());
    }

    #[test]
    fn raise_exception_fails_the_render_with_its_message() {
        let t = PromptTemplate::from_config(Some(
            "{% if messages[0].role != 'user' %}{{ raise_exception('user first, please') }}{% endif %}{{ messages[0].content }}",
        ))
        .unwrap();
        let e = t.render(&[Message::assistant("x")], true).unwrap_err();
        assert!(e.contains("user first, please"), "{e}");
    }

    #[test]
    fn unknown_preset_suggests_the_closest() {
        let e = PromptTemplate::from_config(Some("chatlm")).unwrap_err();
        assert!(e.message.contains("unknown prompt_template preset `chatlm`"), "{e}");
        assert!(e.hint.contains("did you mean `chatml`"), "{e}");
    }
}
