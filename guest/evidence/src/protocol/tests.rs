use super::*;
use crate::{CommandTemplate, ToolCommands};

fn parse(json: &str) -> Result<ProtocolStep, String> {
    serde_json::from_str(json).map_err(|e| e.to_string())
}

#[test]
fn the_published_cycle_round_trips() {
    let json = serde_json::to_string(&published()).unwrap();
    let back: Vec<ProtocolStep> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, published());
    let names: Vec<String> = published().iter().map(|s| s.name().to_string()).collect();
    assert_eq!(
        names,
        [
            "generate",
            "init",
            "backup_full",
            "change",
            "backup_incremental",
            "restore",
            "verify"
        ]
    );
}

#[test]
fn a_step_labrun_never_saw() {
    let s = parse(r#"{"run":"stats","repo_size":false}"#).unwrap();
    let r = s.as_run().unwrap();
    assert_eq!(r.name, Step::named("stats"));
    assert!(r.timed && r.drop_cache && !r.repo_size);
    let s = parse(r#"{"run":"check","name":"check_untimed","timed":false}"#).unwrap();
    assert!(!s.timed() && !s.as_run().unwrap().drop_cache);
}

#[test]
fn mistakes_are_named() {
    for (json, says) in [
        (r#""prune""#, "{run: prune}"),
        (r#""generate""#, "written `source`"),
        (r#"{"run":"x","do":"verify"}"#, "not both"),
        (r#"{"makes":"s1"}"#, "needs `run"),
        (r#"{"do":"change","timed":true}"#, "takes only a `name`"),
        (r#"{"do":"source","name":"x"}"#, "takes no name"),
        (r#"{"run":"b","makes":"s1","restores":"s1"}"#, "exclude"),
        (r#"{"run":"b","kill_after_secs":0}"#, "above 0"),
        (r#"{"run":"Check"}"#, "a-z"),
    ] {
        let e = parse(json).unwrap_err();
        assert!(e.contains(says), "{json}: {e}");
    }
}

fn tools(commands: &[&str]) -> ToolCommands {
    commands
        .iter()
        .map(|c| {
            let argv = if *c == "backup" || *c == "restore" {
                vec!["t".to_string(), "{snapshot}".into()]
            } else {
                vec!["t".to_string()]
            };
            (c.to_string(), CommandTemplate { argv, cwd: None })
        })
        .collect()
}

fn problems(yaml_json: &str, history: bool) -> Vec<String> {
    let steps: Vec<ProtocolStep> = serde_json::from_str(yaml_json).unwrap();
    let t = tools(&["init", "backup", "restore", "check"]);
    check(&steps, [("t", &t)], history)
        .into_iter()
        .map(|(at, m)| format!("{at}: {m}"))
        .collect()
}

#[test]
fn the_history_study_round_trips_and_checks_clean() {
    let json = serde_json::to_string(&history()).unwrap();
    let back: Vec<ProtocolStep> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, history());
    assert_eq!(problems(&json, true), Vec::<String>::new());
    let timed: Vec<String> = timed_steps(&history())
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        timed,
        ["init", "backup_full", "backup_incremental", "restore"]
    );
    let e = problems(&json, false);
    assert!(e[0].contains("starts with `source`"), "{e:?}");
    assert!(
        e.iter().any(|m| m.contains("dataset is synthetic")),
        "{e:?}"
    );
}

#[test]
fn a_block_substitutes_the_commit_number() {
    let r = RunStep {
        restores: Some("s{k}".into()),
        ..RunStep::new(Step::RESTORE, "restore")
    };
    assert_eq!(r.at_commit(7).restores.as_deref(), Some("s7"));
}

#[test]
fn history_mistakes_are_named_at_their_step() {
    for (json, says) in [
        // A backup of an empty tree.
        (
            r#"[{"run":"init"},{"run":"backup","makes":"s1"}]"#,
            "protocol[1]: backs up before any `commit`",
        ),
        // The block starts where the tree is not.
        (
            r#"[{"run":"init"},"commit",{"each_commit":["commit",{"run":"backup","makes":"s{k}"}]}]"#,
            "protocol[2]: the block moves the tree from commit 1 on, but the one after the steps before it is commit 2: write `from: 2`",
        ),
        // Restores of commits no backup made.
        (
            r#"[{"run":"init"},{"each_commit":["commit",{"run":"backup","makes":"s{k}"}],"from":1},{"each_commit":[{"run":"restore","restores":"t{k}"},"verify"]}]"#,
            "protocol[2].each_commit[0]: uses snapshot t{k}",
        ),
        (
            r#"[{"run":"init"},"commit",{"run":"backup","makes":"s1"},{"each_commit":["commit",{"run":"backup","makes":"s{k}"}],"from":2},{"each_commit":[{"run":"restore","restores":"s{k}"},"verify"],"from":1},"commit"]"#,
            "protocol[5]: an earlier block moved the tree",
        ),
        (
            r#"[{"run":"init"},{"each_commit":["commit",{"run":"backup","makes":"s1"}]}]"#,
            "put {k} in its label",
        ),
        (
            r#"[{"run":"init"},"commit",{"run":"backup","makes":"s{k}"}]"#,
            "inside `each_commit:` only",
        ),
        (
            r#"[{"run":"init"},{"each_commit":[{"run":"backup","makes":"s{k}"},"commit"]}]"#,
            "protocol[1].each_commit[1]: in a block, `commit` comes first",
        ),
        (
            r#"["source",{"run":"init"}]"#,
            "protocol[0]: `source` works on the synthetic dataset",
        ),
    ] {
        let e = problems(json, true);
        assert!(e.iter().any(|m| m.contains(says)), "{json}: {e:?}");
    }
}

#[test]
fn a_restore_of_the_first_commit_made_outside_the_block_is_found() {
    // s1 outside, s{k} from 2: a block from 1 finds every snapshot; one from
    // 1 without s1 would not.
    let ok = r#"[{"run":"init"},"commit",{"run":"backup","makes":"s1"},{"each_commit":["commit",{"run":"backup","name":"b2","makes":"s{k}"}],"from":2},{"each_commit":[{"run":"restore","restores":"s{k}"},"verify"]}]"#;
    assert_eq!(problems(ok, true), Vec::<String>::new());
    let missing_first = r#"[{"run":"init"},"commit",{"run":"backup","makes":"x1"},{"each_commit":["commit",{"run":"backup","name":"b2","makes":"s{k}"}],"from":2},{"each_commit":[{"run":"restore","restores":"s{k}"},"verify"]}]"#;
    assert!(
        problems(missing_first, true)
            .iter()
            .any(|m| m.contains("uses snapshot s{k}"))
    );
}

#[test]
fn block_form_mistakes() {
    for (json, says) in [
        (r#"{"each_commit":[],"from":0}"#, "counts commits from 1"),
        (r#"{"each_commit":[],"run":"x"}"#, "not a step itself"),
        (r#"{"run":"x","from":2}"#, "belongs to an `each_commit:`"),
        (r#"{"do":"commit","name":"x"}"#, "takes no name"),
    ] {
        let e = parse(json).unwrap_err();
        assert!(e.contains(says), "{json}: {e}");
    }
}

#[test]
fn a_restore_over_an_older_snapshot_round_trips_and_is_checked() {
    let s = parse(r#"{"run":"restore","restores":"s2","over":"s1"}"#).unwrap();
    assert_eq!(s.as_run().unwrap().over.as_deref(), Some("s1"));
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(parse(&json).unwrap(), s);
    let e = parse(r#"{"run":"restore","over":"s1"}"#).unwrap_err();
    assert!(e.contains("add `restores:`"), "{e}");
    let e = parse(r#"{"do":"verify","over":"s1"}"#).unwrap_err();
    assert!(e.contains("takes only a `name`"), "{e}");
    let ok = r#"["source",{"run":"init"},{"run":"backup","makes":"s1"},"change",{"run":"backup","name":"b2","makes":"s2"},{"run":"restore","restores":"s2","over":"s1"},"verify"]"#;
    assert_eq!(problems(ok, false), Vec::<String>::new());
    let never_made = r#"["source",{"run":"init"},{"run":"backup","makes":"s2"},{"run":"restore","restores":"s2","over":"s1"},"verify"]"#;
    let found = problems(never_made, false);
    assert!(found.iter().any(|p| p.contains("s1")), "{found:?}");
}
