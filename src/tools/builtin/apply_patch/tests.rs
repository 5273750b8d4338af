use serde_json::json;

use super::super::testutil::*;
use super::*;

async fn patch(env: &Env, p: &str) -> Result<String, ToolError> {
    call(ApplyPatch, json!({ "patch": p }), env.ctx()).await
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn multi_file_patch_with_new_and_deleted_files() {
    let env = Env::new();
    env.write("src/a.txt", "one\ntwo\nthree\n");
    env.write("old.txt", "bye\nnow\n");
    let p = "diff --git a/src/a.txt b/src/a.txt\n--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,4 @@\n one\n-two\n+TWO\n+2.5\n three\n\
             --- /dev/null\n+++ b/new/dir/n.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n\
             --- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-bye\n-now\n";
    let out = patch(&env, p).await.unwrap();
    assert_eq!(
        out,
        "patch applied: 3 files changed\nmodified src/a.txt (1 hunk, +2 -1)\ncreated new/dir/n.txt (+2 lines)\n\
         deleted old.txt\n"
    );
    assert_eq!(env.read("src/a.txt"), "one\nTWO\n2.5\nthree\n");
    assert_eq!(env.read("new/dir/n.txt"), "hello\nworld\n");
    assert!(!env.root().join("old.txt").exists());
}

#[tokio::test]
async fn several_hunks_with_offsets_and_no_prefixes() {
    let env = Env::new();
    // The file has 5 extra lines at the top that the patch does not know about.
    let mut text = String::from("a\nb\nc\nd\ne\n");
    text.push_str(&numbered(40));
    env.write("f.txt", &text);
    let p = "--- f.txt\n+++ f.txt\n@@ -2,3 +2,3 @@\n line 2\n-line 3\n+LINE 3\n line 4\n\
             @@ -30,3 +30,4 @@\n line 30\n line 31\n+inserted\n line 32\n";
    let out = patch(&env, p).await.unwrap();
    assert!(out.contains("modified f.txt (2 hunks, +2 -1)"), "{out}");
    assert!(
        out.contains("hunk 1 matched at line 7 (5 lines from where the patch placed it)"),
        "{out}"
    );
    // The second hunk follows the first one's offset, so it needs no note.
    assert!(!out.contains("hunk 2"), "{out}");
    let got = env.read("f.txt");
    assert!(got.contains("line 2\nLINE 3\nline 4\n"), "{got}");
    assert!(got.contains("line 31\ninserted\nline 32\n"), "{got}");
    assert_eq!(got.lines().count(), 46);
}

#[tokio::test]
async fn whitespace_at_line_ends_crlf_and_missing_final_newline() {
    let env = Env::new();
    env.write("w.txt", "keep   \r\nold\r\nend\r\n");
    let p = "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n keep\n-old\n+new\n end\n";
    patch(&env, p).await.unwrap();
    assert_eq!(
        env.read("w.txt"),
        "keep   \r\nnew\r\nend\r\n",
        "context kept as in the file, CRLF kept"
    );
    env.write("n.txt", "a\nb");
    let p = "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n";
    patch(&env, p).await.unwrap();
    assert_eq!(env.read("n.txt"), "a\nc\n");
    let p = "--- a/n.txt\n+++ b/n.txt\n@@ -1,2 +1,2 @@\n a\n-c\n+d\n\\ No newline at end of file\n";
    patch(&env, p).await.unwrap();
    assert_eq!(env.read("n.txt"), "a\nd");
}

#[tokio::test]
async fn mismatch_reports_expected_and_actual_and_writes_nothing() {
    let env = Env::new();
    env.write("a.txt", "alpha\nbeta\ngamma\n");
    env.write("b.txt", "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n");
    // The first file's hunk is fine; the second file's hunk has a wrong line.
    let p = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-alpha\n+ALPHA\n beta\n\
             --- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+new\n\
             --- a/b.txt\n+++ b/b.txt\n@@ -1,3 +1,3 @@\n fn main() {\n-    let x = 2;\n+    let x = 3;\n   println!(\"{x}\");\n";
    let e = err_text(patch(&env, p).await);
    assert!(
        e.contains("hunk 1 of `b.txt` (`@@ -1,3 +1,3 @@`) does not match"),
        "{e}"
    );
    assert!(e.contains("        |     let x = 2;\n"), "{e}");
    assert!(e.contains("The closest match, lines 1-3 of the file are"), "{e}");
    assert!(e.contains("!     2 |     let x = 1;\n"), "{e}");
    assert!(
        e.contains("!     3 |     println!(\"{x}\");   <- indentation differs\n"),
        "{e}"
    );
    assert!(e.contains("      1 | fn main() {\n"), "{e}");
    assert!(e.contains("Nothing was written"), "{e}");
    assert_eq!(env.read("a.txt"), "alpha\nbeta\ngamma\n");
    assert!(!env.root().join("c.txt").exists());
    // A second hunk failing after a first good one in the same file: nothing written either.
    let p = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-alpha\n+ALPHA\n@@ -3 +3 @@\n-delta\n+DELTA\n";
    let e = err_text(patch(&env, p).await);
    assert!(e.contains("hunk 2 of `a.txt`"), "{e}");
    assert_eq!(env.read("a.txt"), "alpha\nbeta\ngamma\n");
}

#[tokio::test]
async fn file_level_errors() {
    let env = Env::new();
    env.write("x.txt", "x\n");
    let e = err_text(patch(&env, "--- /dev/null\n+++ b/x.txt\n@@ -0,0 +1 @@\n+y\n").await);
    assert!(e.contains("already exists"), "{e}");
    let e = err_text(patch(&env, "--- a/nope.txt\n+++ b/nope.txt\n@@ -1 +1 @@\n-a\n+b\n").await);
    assert!(e.contains("`nope.txt` does not exist"), "{e}");
    env.write("two.txt", "1\n2\n");
    let e = err_text(patch(&env, "--- a/two.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-1\n").await);
    assert!(e.contains("leave 1 of its lines"), "{e}");
    assert_eq!(env.read("two.txt"), "1\n2\n");
    let e = err_text(patch(&env, "please apply my change").await);
    assert!(
        e.contains("invalid arguments for `apply_patch`: patch: no file header"),
        "{e}"
    );
    std::fs::write(env.root().join("bin.dat"), b"a\0b\n").unwrap();
    let e = err_text(patch(&env, "--- a/bin.dat\n+++ b/bin.dat\n@@ -1 +1 @@\n-a\n+b\n").await);
    assert!(e.contains("binary"), "{e}");
}

#[tokio::test]
async fn renames_and_sections_building_on_each_other() {
    let env = Env::new();
    env.write("r.txt", "r1\nr2\n");
    let p = "--- a/r.txt\n+++ b/s.txt\n@@ -1,2 +1,2 @@\n r1\n-r2\n+R2\n\
             --- /dev/null\n+++ b/t.txt\n@@ -0,0 +1 @@\n+t\n--- a/t.txt\n+++ b/t.txt\n@@ -1 +1,2 @@\n t\n+u\n";
    let out = patch(&env, p).await.unwrap();
    assert!(out.contains("renamed r.txt -> s.txt (1 hunk, +1 -1)"), "{out}");
    assert!(!env.root().join("r.txt").exists());
    assert_eq!(env.read("s.txt"), "r1\nR2\n");
    assert_eq!(env.read("t.txt"), "t\nu\n");
}

#[tokio::test]
async fn hunks_without_numbers_are_found_by_content() {
    let env = Env::new();
    env.write("h.txt", &numbered(20));
    let p = "--- a/h.txt\n+++ b/h.txt\n@@ @@\n line 12\n-line 13\n+thirteen\n@@ @@\n line 18\n+after 18\n";
    patch(&env, p).await.unwrap();
    let got = env.read("h.txt");
    assert!(
        got.contains("line 12\nthirteen\nline 14\n") && got.contains("line 18\nafter 18\nline 19\n"),
        "{got}"
    );
}

#[tokio::test]
async fn pure_insertions_go_after_the_stated_line() {
    let env = Env::new();
    env.write("i.txt", "a\nb\nc\n");
    patch(&env, "--- a/i.txt\n+++ b/i.txt\n@@ -2,0 +3,2 @@\n+x\n+y\n")
        .await
        .unwrap();
    assert_eq!(env.read("i.txt"), "a\nb\nx\ny\nc\n");
    patch(&env, "--- a/i.txt\n+++ b/i.txt\n@@ -0,0 +1 @@\n+top\n")
        .await
        .unwrap();
    assert_eq!(env.read("i.txt"), "top\na\nb\nx\ny\nc\n");
}

#[tokio::test]
async fn never_touches_files_outside_the_workspace() {
    let env = Env::new();
    let outside = env.outside();
    let cases = [
        "--- a/../secret.txt\n+++ b/../secret.txt\n@@ -1 +1 @@\n-TOP SECRET\n+pwned\n".to_string(),
        "--- /dev/null\n+++ b/../evil.txt\n@@ -0,0 +1 @@\n+pwned\n".to_string(),
        format!(
            "--- {0}/secret.txt\n+++ {0}/secret.txt\n@@ -1 +1 @@\n-TOP SECRET\n+pwned\n",
            outside.display()
        ),
        "--- a/link_out.txt\n+++ b/link_out.txt\n@@ -1 +1 @@\n-TOP SECRET\n+pwned\n".to_string(),
        "--- /dev/null\n+++ b/dir_out/evil.txt\n@@ -0,0 +1 @@\n+pwned\n".to_string(),
        "--- a/dir_out/o.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-outside file\n".to_string(),
        // A rename out of the workspace.
        "--- a/in.txt\n+++ b/../moved.txt\n@@ -1 +1 @@\n-in\n+in\n".to_string(),
    ];
    env.write("in.txt", "in\n");
    for p in &cases {
        assert_refused(patch(&env, p).await);
    }
    assert_eq!(env.read("in.txt"), "in\n");
    env.assert_outside_untouched();
}

/// A tiny deterministic generator (no extra crate) for the robustness test.
fn lcg(state: &mut u64) -> usize {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*state >> 33) as usize
}

#[test]
fn random_patches_never_panic() {
    let env = Env::new();
    let pieces = [
        "--- a/f.txt\n",
        "+++ b/f.txt\n",
        "--- /dev/null\n",
        "+++ /dev/null\n",
        "--- f.txt\n",
        "+++ g.txt\n",
        "@@ -1,2 +1,2 @@\n",
        "@@ -0,0 +1 @@\n",
        "@@ @@\n",
        "@@ -99999999999999999999,1 +1 @@\n",
        "@@ -18446744073709551615,0 +1 @@\n",
        "@@ -3 +3,0 @@\n",
        "@@ -1,1 @@\n",
        " a\n",
        "-a\n",
        "+b\n",
        "-b\n",
        " b\n",
        "\n",
        "\\ No newline at end of file\n",
        "garbage é\n",
        "é\n",
        "diff --git a/f b/f\n",
        "+",
        "-",
        " ",
        "\r\n",
        "--- \"a/\\303\"\n",
    ];
    let mut seed = 42u64;
    for _ in 0..3000 {
        env.write("f.txt", "a\nb\na\n");
        let n = 1 + lcg(&mut seed) % 12;
        let p: String = (0..n).map(|_| pieces[lcg(&mut seed) % pieces.len()]).collect();
        if let Ok(files) = parse(&p) {
            let _ = apply_all(&env.ws, &files);
        }
    }
    env.assert_outside_untouched();
}
