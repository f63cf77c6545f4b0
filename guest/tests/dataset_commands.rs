//! `labrun-agent gen`, `change` and `verify` as a user runs them: exit codes,
//! where the manifest goes, what is printed.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn agent(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_labrun-agent"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn gen_change_verify_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let manifest = tmp.path().join("src.manifest.jsonl");

    let o = agent(&["gen", "--out", s(&src), "--seed", "3", "--scale", "0.0005"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    for class in [
        "small",
        "large random",
        "large low-entropy",
        "duplicates",
        "total",
    ] {
        assert!(out.contains(class), "totals by class: {out}");
    }
    assert!(manifest.is_file(), "manifest beside the tree by default");

    let o = agent(&["verify", "--manifest", s(&manifest), "--dir", s(&src)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("verify: pass"));

    // Keep the generated manifest, change the tree (its manifest replaced).
    let base = tmp.path().join("base.jsonl");
    fs::copy(&manifest, &base).unwrap();
    let o = agent(&[
        "change",
        "--dir",
        s(&src),
        "--seed",
        "3",
        "--scale",
        "0.0005",
        "--base-manifest",
        s(&base),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_ne!(fs::read(&manifest).unwrap(), fs::read(&base).unwrap());

    let o = agent(&["verify", "--manifest", s(&manifest), "--dir", s(&src)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    // Against the old manifest: fails, names what changed.
    let o = agent(&["verify", "--manifest", s(&base), "--dir", s(&src)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("verify: FAIL"), "{out}");
    assert!(out.contains("changed: large/random-0.bin"), "{out}");

    let o = agent(&["verify", "--manifest", s(&base), "--dir", s(&src), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["passed"], false);
    assert_eq!(v["changed"], 10); // 1 small file + 9 large at scale 0.0005
}

#[test]
fn mistakes_exit_2_with_a_message_and_no_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");

    let o = agent(&["gen", "--out", s(&src), "--scale", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("scale 0 is out of range"), "{}", text(&o));

    let inside = src.join("m.jsonl");
    let o = agent(&[
        "gen",
        "--out",
        s(&src),
        "--scale",
        "0.0005",
        "--manifest",
        s(&inside),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("inside the tree"), "{}", text(&o));

    let o = agent(&[
        "verify",
        "--manifest",
        s(&tmp.path().join("none")),
        "--dir",
        s(&src),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("none"), "{}", text(&o));

    // A tree of another scale is refused before anything is touched.
    let o = agent(&["gen", "--out", s(&src), "--scale", "0.0005"]);
    assert!(o.status.success());
    let o = agent(&["change", "--dir", s(&src), "--scale", "0.001"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("same --seed and --scale"), "{}", text(&o));
    let o = agent(&[
        "verify",
        "--manifest",
        s(&tmp.path().join("src.manifest.jsonl")),
        "--dir",
        s(&src),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}
