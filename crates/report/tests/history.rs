//! The git-history study's summary, on the evidence of a real run (the
//! agent, restic and borg from Debian, 3 commits, 2 cycles: the fixture
//! `history/`): a row per tool and snapshot with backup, repository size
//! and restore figures, CPU beside wall time, in summary.md, summary.json
//! and history.svg. A run of the first study gets none of it.

use labrun_report::make_report;
use std::path::{Path, PathBuf};

fn copy_fixture(name: &str, to: &Path) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let run = to.join(name);
    let raw = run.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    for e in std::fs::read_dir(from.join("raw")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), raw.join(e.file_name())).unwrap();
    }
    run
}

#[test]
fn a_history_run_has_a_row_per_tool_and_snapshot_and_a_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let run = copy_fixture("history", tmp.path());
    let (summary, written) = make_report(&run).unwrap();

    let rows: Vec<(&str, u32)> = summary
        .history
        .iter()
        .map(|r| (r.tool.as_str(), r.index))
        .collect();
    assert_eq!(
        rows,
        [
            ("restic", 1),
            ("restic", 2),
            ("restic", 3),
            ("borg", 1),
            ("borg", 2),
            ("borg", 3)
        ]
    );
    for r in &summary.history {
        assert_eq!(r.commit, format!("gen-{}", r.index));
        let backup = r.backup.expect("backup figures");
        let restore = r.restore.expect("restore figures");
        // Two cycles: a median over both.
        assert_eq!((backup.wall_secs.n, restore.wall_secs.n), (2, 2), "{r:?}");
        assert!(backup.user_secs.is_some() && restore.sys_secs.is_some());
        assert_eq!((r.verified, r.restores_checked), (2, 2));
        assert!(r.repo_size_bytes.expect("size").median > 0.0);
    }
    // The repository grows snapshot after snapshot.
    for tool in ["restic", "borg"] {
        let sizes: Vec<f64> = summary
            .history
            .iter()
            .filter(|r| r.tool == tool)
            .map(|r| r.repo_size_bytes.unwrap().median)
            .collect();
        assert!(sizes.windows(2).all(|w| w[1] > w[0]), "{tool}: {sizes:?}");
    }

    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(md.contains("## Per snapshot (git history)"), "{md}");
    let table: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("## Per snapshot"))
        .filter(|l| l.starts_with("| restic |") || l.starts_with("| borg |"))
        .collect();
    assert_eq!(table.len(), 6, "{md}");
    assert!(
        table[0].contains("`gen-1`")
            && table[0].contains("(user ")
            && table[0].ends_with("2 of 2 |")
    );

    let json = std::fs::read_to_string(run.join("summary.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["history"].as_array().map(Vec::len), Some(6));

    let svg_path = run.join("history.svg");
    assert!(written.contains(&svg_path), "{written:?}");
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    roxmltree::Document::parse(&svg).expect("well-formed SVG");
    for needle in [
        "restic",
        "borg",
        "Backup time by snapshot",
        "Repository size",
        "Restore time by snapshot",
    ] {
        assert!(svg.contains(needle), "history.svg lacks {needle}");
    }
}

#[test]
fn a_run_of_the_first_study_has_no_history_part() {
    let tmp = tempfile::tempdir().unwrap();
    let run = copy_fixture("two-tools", tmp.path());
    let (summary, written) = make_report(&run).unwrap();
    assert!(summary.history.is_empty());
    assert!(!written.iter().any(|p| p.ends_with("history.svg")));
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(!md.contains("Per snapshot"));
    let json = std::fs::read_to_string(run.join("summary.json")).unwrap();
    assert!(!json.contains("\"history\""));
}
