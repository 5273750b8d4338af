//! Full-text search: a user's search string → a safe FTS5 query, then ranked
//! hits with highlighted snippets.
//!
//! What a user may type: words (all must match), `word*` (prefix), `"a
//! phrase"`, `OR` between words, `-word` or `NOT word` (must not match).
//! Anything else is text: quotes that do not pair, parentheses, `AND`, column
//! names, `^`, `:` never reach FTS5 as syntax, so no input gives a syntax
//! error. Each word is split the way the `unicode61` tokenizer splits text
//! (letters and digits; everything else separates), so `don't` looks for the
//! phrase "don t", which is how it was indexed.

use rusqlite::{Connection, OptionalExtension};

use super::model::{HIT_END, HIT_START, SearchHit};

/// A piece of a parsed query.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    /// An FTS5 string (already quoted), possibly a prefix (`"tok"*`).
    Term(String),
    Or,
    Not,
}

/// Letters and digits runs, as `unicode61` sees them.
fn tokens(s: &str) -> Vec<&str> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect()
}

/// One quoted FTS5 string for `words`; `None` when it has no token.
fn quoted(words: &str, prefix: bool) -> Option<String> {
    let t = tokens(words);
    if t.is_empty() {
        return None;
    }
    // Tokens hold only letters and digits: nothing to escape inside quotes.
    Some(format!("\"{}\"{}", t.join(" "), if prefix { "*" } else { "" }))
}

fn lex(input: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut negate_next = false;
    let mut rest = input;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        // A quoted phrase (when its closing quote exists).
        if let Some(body) = rest.strip_prefix('"')
            && let Some(end) = body.find('"')
        {
            let after = &body[end + 1..];
            let prefix = after.starts_with('*');
            if let Some(q) = quoted(&body[..end], prefix) {
                if std::mem::take(&mut negate_next) {
                    out.push(Piece::Not);
                }
                out.push(Piece::Term(q));
            }
            rest = if prefix { &after[1..] } else { after };
            continue;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        match word {
            "OR" => out.push(Piece::Or),
            "NOT" => negate_next = true,
            "AND" => {}
            _ => {
                let (negated, word) = match word.strip_prefix('-') {
                    Some(w) if !w.is_empty() => (true, w),
                    _ => (false, word),
                };
                let trimmed = word.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '*');
                let prefix = trimmed.ends_with('*');
                if let Some(q) = quoted(trimmed, prefix) {
                    if negated || std::mem::take(&mut negate_next) {
                        out.push(Piece::Not);
                    }
                    out.push(Piece::Term(q));
                }
            }
        }
    }
    out
}

/// The FTS5 query for what a user typed; `None` when it has nothing to look for.
pub fn fts_query(input: &str) -> Option<String> {
    let mut positive: Vec<String> = Vec::new();
    let mut negative: Vec<String> = Vec::new();
    let mut or_pending = false;
    let mut not_pending = false;
    for p in lex(input) {
        match p {
            Piece::Or => or_pending = !positive.is_empty(),
            Piece::Not => not_pending = true,
            Piece::Term(t) if std::mem::take(&mut not_pending) => negative.push(t),
            Piece::Term(t) => {
                if std::mem::take(&mut or_pending)
                    && let Some(last) = positive.last_mut()
                {
                    *last = format!("{last} OR {t}");
                } else {
                    positive.push(t);
                }
            }
        }
    }
    if positive.is_empty() {
        return None;
    }
    // Every group in parentheses: `a OR b` binds looser than the implicit AND.
    let mut q = positive
        .iter()
        .map(|g| {
            if g.contains(" OR ") {
                format!("({g})")
            } else {
                g.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" AND ");
    if !negative.is_empty() {
        q = format!("({q}) NOT ({})", negative.join(" OR "));
    }
    Some(q)
}

/// How many of the most recent matches are ranked. Ranking costs time per
/// match, so a word found in most of 100,000 turns would take a tenth of a
/// second; ranking the latest 2,000 matches keeps every search in
/// milliseconds. A query with fewer matches is ranked over all of them.
pub const RANK_WINDOW: usize = 2000;

/// Ranked hits for an FTS5 query (from [`fts_query`]), best first.
pub fn search(c: &Connection, fts: &str, limit: usize) -> rusqlite::Result<Vec<SearchHit>> {
    // Where the window of recent matches starts (FTS5 walks its doclist
    // newest first and stops there).
    let cut: i64 = c
        .prepare_cached("SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2")?
        .query_row(rusqlite::params![fts, RANK_WINDOW as i64 - 1], |r| r.get(0))
        .optional()?
        .unwrap_or(i64::MIN);
    // Rank and snippet inside the FTS query, so FTS5 sorts by bm25 itself and
    // builds snippets for the rows returned only.
    let mut st = c.prepare_cached(
        "SELECT t.session_id, t.turn_id, t.started_at, t.endpoint, t.model, s.title, f.rank, f.snip
         FROM (SELECT rowid, rank, snippet(turns_fts, -1, ?2, ?3, '…', 16) AS snip
               FROM turns_fts WHERE turns_fts MATCH ?1 AND rowid >= ?5 ORDER BY rank LIMIT ?4) f
         JOIN turns t ON t.id = f.rowid JOIN sessions s ON s.id = t.session_id
         ORDER BY f.rank",
    )?;
    let rows = st.query_map(
        rusqlite::params![fts, HIT_START.to_string(), HIT_END.to_string(), limit as i64, cut],
        |r| {
            Ok(SearchHit {
                session_id: r.get(0)?,
                turn_id: r.get(1)?,
                started_at: r.get(2)?,
                endpoint: r.get(3)?,
                model: r.get(4)?,
                session_title: r.get(5)?,
                rank: r.get(6)?,
                snippet: r.get(7)?,
            })
        },
    )?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_input_becomes_safe_fts() {
        let cases = [
            ("tcp slow start", Some(r#""tcp" AND "slow" AND "start""#)),
            ("tok*", Some(r#""tok"*"#)),
            (r#""slow start" window"#, Some(r#""slow start" AND "window""#)),
            (r#""slow st"* x"#, Some(r#""slow st"* AND "x""#)),
            ("rust OR go", Some(r#"("rust" OR "go")"#)),
            ("a AND (b", Some(r#""a" AND "b""#)),
            (
                "apples -pears NOT plums",
                Some(r#"("apples") NOT ("pears" OR "plums")"#),
            ),
            (r#"say "hi"#, Some(r#""say" AND "hi""#)),
            ("don't", Some(r#""don t""#)),
            ("title: NEAR(x y) ^z", Some(r#""title" AND "NEAR x" AND "y" AND "z""#)),
            ("Café", Some(r#""Café""#)),
            ("OR AND NOT ( ) \" *", None),
            ("-x", None),
            ("", None),
        ];
        for (input, want) in cases {
            assert_eq!(fts_query(input).as_deref(), want, "{input:?}");
        }
    }
}
