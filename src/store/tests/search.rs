//! Search: ranking, snippets, diacritics, prefixes, hostile user input.

use super::*;

fn store_with(texts: &[(&str, &str)]) -> Store {
    let mut s = Store::in_memory().unwrap();
    for (i, (q, a)) in texts.iter().enumerate() {
        chat(&mut s, &format!("2026112{i}-000000-s{i}"), None, &[(q, a)]);
    }
    s
}

#[test]
fn hits_are_ranked_and_snippets_mark_the_matches() {
    let filler = "lorem ipsum dolor sit amet ".repeat(40);
    let s = store_with(&[
        (
            "Tell me about congestion",
            &format!("{filler} Slow start doubles the window. {filler}"),
        ),
        (
            "What is slow start?",
            "Slow start is TCP's ramp-up: slow start doubles cwnd.",
        ),
        ("Unrelated", "Bananas are yellow."),
    ]);
    let hits = s.search("slow start", 10).unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(
        hits[0].session_id, "20261121-000000-s1",
        "dense, short text ranks first"
    );
    assert!(hits[0].rank < hits[1].rank);
    assert_eq!((hits[0].turn_id, hits[0].model.as_str()), (1, "smollm2"));
    assert_eq!(hits[0].session_title, "What is slow start?");
    let snip = hits[1].highlighted("[", "]");
    assert!(snip.contains("[Slow] [start] doubles"), "{snip}");
    assert!(snip.starts_with('…') && snip.ends_with('…'), "long text is cut: {snip}");
    assert!(hits[1].snippet.contains(HIT_START) && hits[1].snippet.contains(HIT_END));
    assert_eq!(s.search("slow start", 1).unwrap().len(), 1, "limit");
    assert!(s.search("kiwi", 10).unwrap().is_empty());
}

#[test]
fn diacritics_and_case_do_not_matter() {
    let s = store_with(&[
        ("Où est le café?", "Le CAFÉ est à côté de la gare."),
        ("naive", "A naïve approach."),
    ]);
    for q in ["cafe", "café", "CAFE", "cote", "gare"] {
        let hits = s.search(q, 10).unwrap();
        assert_eq!(hits.len(), 1, "{q}");
        assert_eq!(hits[0].session_id, "20261120-000000-s0", "{q}");
    }
    assert_eq!(s.search("naive", 10).unwrap().len(), 1);
    assert_eq!(s.search("naïve", 10).unwrap().len(), 1);
    let snip = s.search("cafe", 10).unwrap()[0].highlighted("<", ">");
    assert!(
        snip.contains("<café>") || snip.contains("<CAFÉ>"),
        "the original text is shown: {snip}"
    );
}

#[test]
fn prefixes_phrases_or_and_not() {
    let s = store_with(&[
        ("tokens", "Tokenizers split text into tokens."),
        ("token bucket", "A token bucket limits rates."),
        ("rate limits", "Leaky bucket versus fixed window."),
    ]);
    assert_eq!(s.search("tok*", 10).unwrap().len(), 2);
    assert_eq!(s.search("tokenizer*", 10).unwrap().len(), 1);
    assert_eq!(s.search("\"token bucket\"", 10).unwrap().len(), 1);
    assert_eq!(s.search("bucket", 10).unwrap().len(), 2);
    assert_eq!(s.search("bucket -leaky", 10).unwrap().len(), 1);
    assert_eq!(s.search("bucket NOT token", 10).unwrap().len(), 1);
    assert_eq!(s.search("tokenizers OR leaky", 10).unwrap().len(), 2);
}

#[test]
fn anything_a_user_types_is_a_search_not_an_error() {
    let s = store_with(&[(
        "c++ (templates)",
        "Use \"concepts\" AND constraints: f(x) -> y; NEAR the end.",
    )]);
    let nasty = [
        "\"concepts",
        "concepts\"",
        "(templates",
        "templates)",
        "AND",
        "concepts AND",
        "OR concepts",
        "NOT",
        "c++",
        "f(x) -> y",
        "NEAR(concepts end)",
        "answer:concepts",
        "^concepts",
        "{prompt answer}: x",
        "*",
        "\"\"",
        "'; DROP TABLE turns; --",
        "\u{0}\u{1b}[31m",
        "\u{E000}",
    ];
    for q in nasty {
        let r = s.search(q, 10);
        assert!(r.is_ok(), "{q:?}: {r:?}");
    }
    assert_eq!(s.search("(templates", 10).unwrap().len(), 1);
    assert_eq!(s.search("concepts AND constraints", 10).unwrap().len(), 1);
    assert_eq!(s.search("c++", 10).unwrap().len(), 1);
    assert_eq!(
        s.search("answer:concepts", 10).unwrap().len(),
        0,
        "no column filter: the words must appear"
    );
    assert_eq!(count(&s, "turns"), 1, "still there");
}
