//! Layout of Markdown tables: columns separated by `│`, a `─┼─` rule under
//! the header, cells word-wrapped inside their column.
//!
//! Column widths: natural widths when the table fits; otherwise the widest
//! columns are capped (water-filling) so the table fills the width exactly
//! and cells wrap. When even 3 columns per cell do not fit, rows are shown
//! vertically as `Header: value` lines.

use pulldown_cmark::Alignment;
use ratatui::text::Span;

use crate::tui::theme::Theme;
use crate::tui::wrap::{spans_width, wrap_spans};

const SEP: &str = " │ ";
const SEP_W: usize = 3;
const MIN_COL: usize = 3;

type Cell = Vec<Span<'static>>;

/// A table being collected from parser events.
pub(super) struct TableBuf {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<Cell>>,
    head_rows: usize,
    row: Vec<Cell>,
}

impl TableBuf {
    pub(super) fn new(aligns: Vec<Alignment>) -> Self {
        TableBuf {
            aligns,
            rows: Vec::new(),
            head_rows: 0,
            row: Vec::new(),
        }
    }

    pub(super) fn push_cell(&mut self, cell: Cell) {
        self.row.push(cell);
    }

    pub(super) fn end_row(&mut self, head: bool) {
        if self.row.is_empty() && !head {
            return;
        }
        self.rows.push(std::mem::take(&mut self.row));
        if head {
            self.head_rows = self.rows.len();
        }
    }

    /// Display lines (without container prefixes) at most `width` columns.
    pub(super) fn layout(&self, width: usize, theme: &Theme) -> Vec<Vec<Span<'static>>> {
        let ncols = self
            .rows
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .max(self.aligns.len())
            .max(1);
        let natural: Vec<usize> = (0..ncols)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|cell| spans_width(cell))
                    .max()
                    .unwrap_or(0)
                    .max(1)
            })
            .collect();
        let seps = SEP_W * (ncols - 1);
        let widths = if natural.iter().sum::<usize>() + seps <= width {
            natural
        } else {
            let budget = width.saturating_sub(seps);
            if budget < MIN_COL * ncols {
                return self.vertical(width, theme);
            }
            fit_columns(&natural, budget)
        };
        let mut out = Vec::new();
        let empty = Vec::new();
        for (ri, row) in self.rows.iter().enumerate() {
            let cells: Vec<_> = widths
                .iter()
                .enumerate()
                .map(|(c, &w)| wrap_spans(row.get(c).unwrap_or(&empty), clamp16(w), Vec::new(), Vec::new()))
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for k in 0..height {
                let mut line = Vec::new();
                for (c, &w) in widths.iter().enumerate() {
                    if c > 0 {
                        line.push(Span::styled(SEP, theme.rule));
                    }
                    let spans = cells
                        .get(c)
                        .and_then(|l| l.get(k))
                        .map(|l| l.spans.clone())
                        .unwrap_or_default();
                    let pad = w.saturating_sub(spans_width(&spans));
                    let last = c + 1 == ncols;
                    let (left, right) = match self.aligns.get(c) {
                        Some(Alignment::Right) => (pad, 0),
                        Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                        _ => (0, pad),
                    };
                    if left > 0 {
                        line.push(Span::raw(" ".repeat(left)));
                    }
                    line.extend(spans);
                    if right > 0 && !last {
                        line.push(Span::raw(" ".repeat(right)));
                    }
                }
                out.push(line);
            }
            if ri + 1 == self.head_rows {
                let rule: Vec<String> = widths.iter().map(|&w| "─".repeat(w)).collect();
                out.push(vec![Span::styled(rule.join("─┼─"), theme.rule)]);
            }
        }
        out
    }

    /// Narrow fallback: every body row as `Header: value` lines.
    fn vertical(&self, width: usize, theme: &Theme) -> Vec<Vec<Span<'static>>> {
        let mut out = Vec::new();
        let empty = Vec::new();
        let head = self.rows.get(..self.head_rows).and_then(<[_]>::last);
        let body = self.rows.get(self.head_rows..).unwrap_or_default();
        let rows: &[Vec<Cell>] = if body.is_empty() { &self.rows } else { body };
        for (ri, row) in rows.iter().enumerate() {
            if ri > 0 {
                out.push(vec![Span::styled("─".repeat(width.min(8)), theme.rule)]);
            }
            for (c, cell) in row.iter().enumerate() {
                let mut spans = Vec::new();
                if let Some(h) = head.filter(|_| !body.is_empty()).and_then(|h| h.get(c)) {
                    spans.extend(
                        h.iter()
                            .map(|s| Span::styled(s.content.clone(), s.style.patch(theme.strong))),
                    );
                    spans.push(Span::styled(": ", theme.strong));
                }
                spans.extend(cell.iter().cloned());
                let lines = wrap_spans(
                    if spans.is_empty() { &empty } else { &spans },
                    clamp16(width),
                    Vec::new(),
                    vec![Span::raw("  ")],
                );
                out.extend(lines.into_iter().map(|l| l.spans));
            }
        }
        out
    }
}

fn clamp16(w: usize) -> u16 {
    u16::try_from(w).unwrap_or(u16::MAX).max(1)
}

/// Shrink column widths to sum to `budget`: cap the widest columns at the
/// largest level that fits, then hand out the remainder left to right.
fn fit_columns(natural: &[usize], budget: usize) -> Vec<usize> {
    let total = |cap: usize| natural.iter().map(|&n| n.min(cap)).sum::<usize>();
    let (mut lo, mut hi) = (1, natural.iter().copied().max().unwrap_or(1));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if total(mid) <= budget { lo = mid } else { hi = mid - 1 }
    }
    let mut widths: Vec<usize> = natural.iter().map(|&n| n.min(lo)).collect();
    let mut left = budget.saturating_sub(widths.iter().sum());
    for (w, &n) in widths.iter_mut().zip(natural) {
        if left == 0 {
            break;
        }
        if n > *w {
            *w += 1;
            left -= 1;
        }
    }
    widths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_budget() {
        assert_eq!(fit_columns(&[10, 50, 5], 40), vec![10, 25, 5]);
        assert_eq!(fit_columns(&[30, 30], 21), vec![11, 10]);
        assert_eq!(fit_columns(&[4, 4, 4], 12), vec![4, 4, 4]);
    }
}
