//! Evidence whose strings carry terminal sequences (a tool version from the
//! plan, the guest's kernel, a step's error): the terminal table and
//! `summary.md` show them escaped, `raw/` keeps them as they were.

use labrun_report::{make_report, render_terminal};
use std::path::Path;

/// The characters a terminal would obey: C0 but newline and tab, DEL, C1,
/// and the bidi embeddings, overrides and isolates.
fn obeyed(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn assert_safe(what: &str, text: &str) {
    let raw: Vec<char> = text.chars().filter(|c| obeyed(*c)).collect();
    assert!(
        raw.is_empty(),
        "{what} has {raw:?}:\n{}",
        text.escape_debug()
    );
}

/// Replaces `from` by `to` in `raw/name`, which must contain it.
fn tamper(raw: &Path, name: &str, from: &str, to: &str) {
    let path = raw.join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{name} has no {from}");
    std::fs::write(&path, text.replace(from, to)).unwrap();
}

#[test]
fn hostile_strings_are_shown_escaped() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/two-tools/raw");
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("raw");
    std::fs::create_dir(&raw).unwrap();
    for f in std::fs::read_dir(&fixture).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), raw.join(f.file_name())).unwrap();
    }
    // JSON escapes: the parsed strings hold the control characters.
    tamper(
        &raw,
        "plan.json",
        "\"version\": \"0.19.1\"",
        r#""version": "0.19.1\u001b]0;owned\u0007\u202e""#,
    );
    tamper(
        &raw,
        "environment.json",
        "\"6.1.0-27-amd64\"",
        r#""6.1.0-27\u001b[2J\r""#,
    );
    tamper(
        &raw,
        "records.jsonl",
        "1 changed (first: ",
        r"1 changed\u001b[2J\u009b (first: ",
    );

    let (summary, _) = make_report(tmp.path()).unwrap();
    let table = render_terminal(&summary);
    assert_safe("the terminal table", &table);
    assert!(
        table.contains(r"restic 0.19.1\x1b]0;owned\x07\u{202e}"),
        "{table}"
    );

    let md = std::fs::read_to_string(tmp.path().join("summary.md")).unwrap();
    assert_safe("summary.md", &md);
    for shown in [
        r"restic 0.19.1\x1b]0;owned\x07\u{202e}",
        r"kernel 6.1.0-27\x1b[2J\r,",
        r"1 changed\x1b[2J\u{9b} (first: ",
    ] {
        assert!(md.contains(shown), "no {shown} in summary.md:\n{md}");
    }

    // The evidence is as the agent wrote it.
    let env = std::fs::read_to_string(raw.join("environment.json")).unwrap();
    assert!(env.contains(r"6.1.0-27\u001b[2J\r"), "{env}");
}
