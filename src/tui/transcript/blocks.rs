//! Rendering of the richer transcript entries: an answer's frame (label,
//! figures, reasoning, markers), the judge's verdict, and compare answers in
//! side-by-side columns (stacked when the terminal is too narrow).

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::{Answer, AnswerState, RenderCx, fmt_duration_ms, plain_lines};
use crate::tui::theme::Theme;
use crate::util::sanitize::terminal_safe;
use crate::verdict::Verdict;

/// Narrowest column for side-by-side answers; narrower terminals stack them.
const MIN_COLUMN: u16 = 28;
const GAP: &str = " │ ";

/// Answers to one prompt, shown side by side.
pub struct CompareEntry {
    pub answers: Vec<Answer>,
    /// A line under the columns: what to do (while picking) or what was picked.
    pub footer: Option<String>,
}

fn label_style(a: &Answer, t: &Theme) -> Style {
    match a.seat {
        Some(s) => t.seats[usize::from(s) % t.seats.len()],
        None => t.assistant_label,
    }
}

/// Head and tail lines of an answer (`width` wide): label, figures, reasoning,
/// notes; tool calls and how it ended.
pub(super) fn answer_frame(a: &Answer, cx: &RenderCx, w: u16) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
    let t = cx.theme;
    let mut head = Vec::new();
    let mut tail = Vec::new();
    let mut label = vec![Span::styled(
        format!("● {}", terminal_safe(&a.label)),
        label_style(a, t),
    )];
    if let Some(m) = &a.mark {
        label.push(Span::styled(format!("  {m}"), t.strong));
    }
    match (&a.stats, &a.state, &a.live) {
        (Some(s), AnswerState::Done, _) => {
            let mut facts = vec![fmt_duration_ms(s.duration_ms)];
            if let Some(ms) = s.ttft_ms.filter(|_| a.live.is_some()) {
                facts = vec![format!("TTFT {}", fmt_duration_ms(ms)), format!("{} total", facts[0])];
            }
            if let Some(r) = s.tokens_per_sec {
                facts.push(format!("{r:.0} tok/s"));
            }
            facts.push(format!("{} tok", s.output_tokens));
            label.push(Span::styled(format!("  {}", facts.join(" · ")), t.dim));
        }
        (_, AnswerState::Waiting | AnswerState::Streaming, Some(live)) => {
            label.push(Span::styled(format!("  {live}"), t.dim));
        }
        _ => {}
    }
    head.extend(crate::tui::wrap::wrap_spans(
        &label,
        w,
        Vec::new(),
        vec![Span::raw("  ")],
    ));
    if !a.reasoning.is_empty() {
        if cx.show_reasoning {
            head.push(Line::from(Span::styled("  ▾ reasoning (Ctrl-T hides)", t.reasoning)));
            head.extend(plain_lines(a.reasoning.trim(), t.reasoning, w, "  │ "));
        } else {
            let words = a.reasoning.split_whitespace().count();
            head.push(Line::from(Span::styled(
                format!("  ▸ reasoning, {words} words (Ctrl-T shows)"),
                t.reasoning,
            )));
        }
    }
    if let Some(n) = &a.retry_note {
        head.extend(plain_lines(&format!("↻ {n}"), t.warning, w, "  "));
    }
    if a.state == AnswerState::Waiting && a.text.is_empty() {
        head.push(Line::from(Span::styled("  …", t.dim)));
    }
    for c in &a.tool_calls {
        tail.push(Line::from(vec![
            Span::styled("  ⚙ ", t.tool),
            Span::styled(terminal_safe(&c.name).into_owned(), t.tool),
            Span::styled(format!(" {}", terminal_safe(&c.arguments)), t.dim),
        ]));
    }
    match &a.state {
        AnswerState::Cancelled => tail.push(Line::from(Span::styled(
            "  ⊘ cancelled — partial answer kept",
            t.warning,
        ))),
        AnswerState::Failed(e) => tail.extend(plain_lines(&format!("✗ {e}"), t.error, w, "  ")),
        AnswerState::Waiting | AnswerState::Streaming | AnswerState::Done => {}
    }
    (head, tail)
}

fn score_line(scores: &std::collections::BTreeMap<String, f64>) -> String {
    scores
        .iter()
        .map(|(c, v)| {
            if v.fract() == 0.0 {
                format!("{c} {v:.0}")
            } else {
                format!("{c} {v:.1}")
            }
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The verdict block: the outcome, scores per participant, each ruling's reasons.
pub(super) fn verdict_lines(v: &Verdict, t: &Theme, w: u16) -> Vec<Line<'static>> {
    let mut out = plain_lines(&format!("⚖ Verdict — {}", v.summary()), t.heading, w, "");
    out.extend(plain_lines(&format!("judge: {}", v.judge), t.dim, w, "  "));
    let name_w = v.scores.keys().map(|k| k.chars().count()).max().unwrap_or(0);
    for (who, per) in &v.scores {
        let pad = " ".repeat(name_w - who.chars().count());
        out.extend(plain_lines(
            &format!("{who}{pad}  {}", score_line(per)),
            t.text,
            w,
            "  ",
        ));
    }
    for (i, r) in v.rulings.iter().enumerate() {
        let first = r.order.first().map(String::as_str).unwrap_or("?");
        let said = match (&r.error, &r.winner, r.tie) {
            (Some(e), _, _) => format!("no ruling — {e}"),
            (None, Some(w), _) => format!("{w} wins"),
            (None, None, true) => "a tie".into(),
            (None, None, false) => "no winner".into(),
        };
        let reasons = if r.reasons.is_empty() {
            String::new()
        } else {
            format!(": {}", r.reasons)
        };
        let style = if r.error.is_some() { t.warning } else { t.dim };
        out.extend(plain_lines(
            &format!("order {} ({first} first) — {said}{reasons}", i + 1),
            style,
            w,
            "  ",
        ));
    }
    out
}

fn pad_to(mut l: Line<'static>, width: usize) -> Line<'static> {
    let w = l.width();
    if w < width {
        l.spans.push(Span::raw(" ".repeat(width - w)));
    }
    l
}

/// Compare answers side by side (or stacked when too narrow), with the footer.
pub(super) fn columns(c: &mut CompareEntry, cx: &RenderCx, w: u16) -> Vec<Line<'static>> {
    let t = cx.theme;
    let n = c.answers.len().max(1) as u16;
    let gaps = (n - 1) * GAP.chars().count() as u16;
    let col = w.saturating_sub(gaps) / n;
    let mut out = Vec::new();
    if col < MIN_COLUMN {
        for (i, a) in c.answers.iter_mut().enumerate() {
            if i > 0 {
                out.push(Line::default());
            }
            let (head, tail) = answer_frame(a, cx, w);
            out.extend(head);
            let body = a.md.lines(&a.text, w.saturating_sub(2), t, cx.highlighter);
            out.extend(body.iter().map(|l| {
                let mut l = l.clone();
                l.spans.insert(0, Span::raw("  "));
                l
            }));
            out.extend(tail);
        }
    } else {
        let frames: Vec<_> = c.answers.iter().map(|a| answer_frame(a, cx, col)).collect();
        // Bodies start on the same row in every column.
        let head_rows = frames.iter().map(|(h, _)| h.len()).max().unwrap_or(0);
        let mut cols: Vec<Vec<Line<'static>>> = Vec::with_capacity(c.answers.len());
        for (a, (head, tail)) in c.answers.iter_mut().zip(frames) {
            let mut lines = head;
            lines.resize(head_rows, Line::default());
            lines.extend(
                a.md.lines(&a.text, col.saturating_sub(2), t, cx.highlighter)
                    .iter()
                    .map(|l| {
                        let mut l = l.clone();
                        l.spans.insert(0, Span::raw("  "));
                        l
                    }),
            );
            lines.extend(tail);
            cols.push(lines);
        }
        let rows = cols.iter().map(Vec::len).max().unwrap_or(0);
        for r in 0..rows {
            let mut spans = Vec::new();
            for (i, lines) in cols.iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(GAP, t.dim));
                }
                let cell = lines.get(r).cloned().unwrap_or_default();
                let last = i + 1 == cols.len();
                let cell = if last { cell } else { pad_to(cell, usize::from(col)) };
                spans.extend(cell.spans);
            }
            out.push(Line::from(spans));
        }
    }
    if let Some(f) = &c.footer {
        out.extend(plain_lines(f, t.warning, w, "  "));
    }
    out
}
