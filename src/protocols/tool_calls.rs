//! Assembles streamed tool-call fragments (id, name, argument pieces keyed by
//! index) into complete calls. Shared by every adapter that streams tool calls.

use crate::conversation::ToolCall;

use super::StreamEvent;

#[derive(Debug, Default)]
struct Partial {
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

#[derive(Debug, Default)]
pub struct ToolCallAssembler {
    calls: Vec<Partial>,
}

impl ToolCallAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// A fragment for call `index`. Emits `ToolCallStart` once the name is known,
    /// then `ToolCallDelta` for argument text.
    pub fn fragment(
        &mut self,
        index: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
        out: &mut impl Extend<StreamEvent>,
    ) {
        if index >= self.calls.len() {
            self.calls.resize_with(index + 1, Partial::default);
        }
        let p = &mut self.calls[index];
        if let Some(id) = id.filter(|s| !s.is_empty()) {
            p.id = id.to_string();
        }
        if let Some(n) = name.filter(|s| !s.is_empty()) {
            p.name.push_str(n);
        }
        if !p.announced && !p.name.is_empty() {
            p.announced = true;
            out.extend([StreamEvent::ToolCallStart {
                index,
                id: p.id.clone(),
                name: p.name.clone(),
            }]);
        }
        if let Some(a) = arguments.filter(|s| !s.is_empty()) {
            p.arguments.push_str(a);
            out.extend([StreamEvent::ToolCallDelta {
                index,
                arguments: a.to_string(),
            }]);
        }
    }

    /// A call that arrived whole (non-streaming responses, Ollama).
    pub fn whole(&mut self, id: Option<&str>, name: &str, arguments: &str, out: &mut impl Extend<StreamEvent>) {
        let index = self.calls.len();
        self.fragment(index, id, Some(name), Some(arguments), out);
    }

    /// Emit every assembled call as `ToolCall` and reset.
    pub fn finish(&mut self, out: &mut impl Extend<StreamEvent>) {
        for (i, p) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            if p.name.is_empty() && p.arguments.is_empty() {
                continue;
            }
            let id = if p.id.is_empty() { format!("call_{i}") } else { p.id };
            let arguments = if p.arguments.trim().is_empty() {
                "{}".to_string()
            } else {
                p.arguments
            };
            out.extend([StreamEvent::ToolCall(ToolCall {
                id,
                name: p.name,
                arguments,
            })]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_assemble_in_index_order() {
        let mut a = ToolCallAssembler::new();
        let mut ev = Vec::new();
        a.fragment(0, Some("c1"), Some("get_weather"), Some(""), &mut ev);
        a.fragment(1, Some("c2"), Some("time"), None, &mut ev);
        a.fragment(0, None, None, Some("{\"city\":"), &mut ev);
        a.fragment(0, None, None, Some("\"Paris\"}"), &mut ev);
        a.finish(&mut ev);
        let calls: Vec<_> = ev
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCall(c) => Some(c.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(calls[0].arguments, "{\"city\":\"Paris\"}");
        assert_eq!(calls[0].id, "c1");
        assert_eq!(calls[1].arguments, "{}");
        assert_eq!(
            ev.iter()
                .filter(|e| matches!(e, StreamEvent::ToolCallStart { .. }))
                .count(),
            2
        );
        assert!(a.is_empty());
    }
}
