//! The real `labrun pack`, then `labrun report` and `labrun compare` on the
//! pack: the same figures as from the folder, the files written beside the
//! pack (which is never changed), and a changed pack refused with its file
//! named.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");

fn labrun(args: &[&str]) -> Output {
    Command::new(LABRUN)
        .args(args)
        .env_remove("LABRUN_LAB")
        .output()
        .expect("run labrun")
}

fn text(o: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `<dir>/two-tools-run` holding the report crate's two-tools fixture as raw/.
fn run_folder(dir: &Path) -> PathBuf {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/report/tests/fixtures/two-tools/raw");
    let run = dir.join("two-tools-run");
    std::fs::create_dir_all(run.join("raw")).unwrap();
    for f in std::fs::read_dir(fixture).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), run.join("raw").join(f.file_name())).unwrap();
    }
    run
}

/// The digest `pack` printed.
fn manifest_digest(o: &Output) -> String {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("manifest sha256:"))
        .unwrap_or_else(|| panic!("no digest printed: {}", text(o)));
    assert_eq!(line.len(), 64, "{line}");
    line.to_string()
}

#[test]
fn pack_then_report_gives_the_folders_summary_beside_the_pack() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_folder(tmp.path());
    let out = labrun(&["pack", path(&run)]);
    assert!(out.status.success(), "{}", text(&out));
    let pack = tmp.path().join("two-tools-run.tar.gz");
    assert!(pack.is_file(), "{}", text(&out));
    let digest = manifest_digest(&out);

    // Packed twice: the same bytes, the same address.
    let again = tmp.path().join("again.tar.gz");
    let out2 = labrun(&["pack", path(&run), "-o", path(&again)]);
    assert!(out2.status.success(), "{}", text(&out2));
    assert_eq!(manifest_digest(&out2), digest);
    assert_eq!(
        std::fs::read(&pack).unwrap(),
        std::fs::read(&again).unwrap()
    );

    // The folder's own report, to hold the pack's against.
    let from_folder = labrun(&["report", path(&run)]);
    assert!(from_folder.status.success(), "{}", text(&from_folder));
    let folder_md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    // Out of the way, so the pack's report cannot be mistaken for it.
    std::fs::rename(&run, tmp.path().join("moved")).unwrap();

    let pack_bytes = std::fs::read(&pack).unwrap();
    let report = labrun(&["report", path(&pack)]);
    assert!(report.status.success(), "{}", text(&report));
    let stdout = String::from_utf8_lossy(&report.stdout);
    assert!(
        stdout.contains(&format!("manifest sha256:{digest}")),
        "{}",
        text(&report)
    );
    let beside = tmp.path().join("two-tools-run");
    assert!(
        stdout.contains(&format!("wrote {}", beside.join("summary.md").display())),
        "{}",
        text(&report)
    );
    assert_eq!(
        std::fs::read_to_string(beside.join("summary.md")).unwrap(),
        folder_md
    );
    for name in [
        "summary.json",
        "summary.csv",
        "chart-time.svg",
        "report.html",
    ] {
        assert!(beside.join(name).is_file(), "{name}");
    }
    assert!(
        !beside.join("raw").exists(),
        "only the summaries are written out"
    );
    assert_eq!(
        std::fs::read(&pack).unwrap(),
        pack_bytes,
        "the pack is never changed"
    );

    // --out puts them elsewhere.
    let elsewhere = tmp.path().join("elsewhere");
    let report = labrun(&["report", path(&pack), "--out", path(&elsewhere)]);
    assert!(report.status.success(), "{}", text(&report));
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("summary.md")).unwrap(),
        folder_md
    );
}

#[test]
fn compare_opens_a_pack_as_a_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_folder(tmp.path());
    let shared = tmp.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let pack = shared.join("two-tools-run.tar.gz");
    let out = labrun(&["pack", path(&run), "-o", path(&pack)]);
    assert!(out.status.success(), "{}", text(&out));

    // Paired, within the pack: the same verdicts as within the folder.
    let args = ["--baseline", "restic", "--candidate", "borg", "--json"];
    let folder = labrun(&[&["compare", path(&run)][..], &args[..]].concat());
    let packed = labrun(&[&["compare", path(&pack)][..], &args[..]].concat());
    assert_ne!(folder.status.code(), Some(2), "{}", text(&folder));
    assert_eq!(
        packed.status.code(),
        folder.status.code(),
        "{}",
        text(&packed)
    );
    assert_eq!(packed.stdout, folder.stdout, "{}", text(&packed));
    // compare.md lands where report would put the pack's files: a folder
    // named after the run beside the pack.
    assert!(shared.join("two-tools-run/compare.md").is_file());
    assert!(!shared.join("two-tools-run/raw").exists());

    // Unpaired, the folder against its own pack: no change anywhere.
    let unpaired = labrun(&[
        "compare",
        path(&run),
        path(&pack),
        "--tool",
        "restic",
        "--json",
    ]);
    assert_eq!(unpaired.status.code(), Some(0), "{}", text(&unpaired));
    let json: serde_json::Value = serde_json::from_slice(&unpaired.stdout).unwrap();
    let verdicts: Vec<&str> = json["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r["verdict"].as_str())
        .collect();
    assert!(!verdicts.is_empty(), "{json}");
    assert!(
        verdicts.iter().all(|v| *v != "slower" && *v != "faster"),
        "{verdicts:?}"
    );
}

#[test]
fn a_changed_pack_is_refused_with_its_file_named() {
    let tmp = tempfile::tempdir().unwrap();
    let run = run_folder(tmp.path());
    let pack = tmp.path().join("run.tar.gz");
    let out = labrun(&["pack", path(&run), "-o", path(&pack)]);
    assert!(out.status.success(), "{}", text(&out));

    // Unpack with the system's tar, change one figure, pack with it again:
    // the manifest is the old one.
    let unpacked = tmp.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    let status = Command::new("tar")
        .args(["-xzf", path(&pack), "-C", path(&unpacked)])
        .status()
        .expect("tar");
    assert!(status.success());
    let records = unpacked.join("raw/records.jsonl");
    let changed =
        std::fs::read_to_string(&records)
            .unwrap()
            .replacen("\"wall_secs\":", "\"wall_secs\":1", 1);
    std::fs::write(&records, changed).unwrap();
    let tampered = tmp.path().join("tampered.tar.gz");
    let status = Command::new("tar")
        .args([
            "-czf",
            path(&tampered),
            "-C",
            path(&unpacked),
            "labrun-pack.json",
            "raw",
        ])
        .status()
        .expect("tar");
    assert!(status.success());

    let report = labrun(&["report", path(&tampered)]);
    assert!(!report.status.success(), "{}", text(&report));
    let err = String::from_utf8_lossy(&report.stderr);
    assert!(
        err.contains("`raw/records.jsonl` does not match the manifest"),
        "{}",
        text(&report)
    );
    assert!(!tmp.path().join("two-tools-run/summary.md").exists());

    let compare = labrun(&[
        "compare",
        path(&tampered),
        "--baseline",
        "restic",
        "--candidate",
        "borg",
    ]);
    assert_eq!(compare.status.code(), Some(2), "{}", text(&compare));
    let err = String::from_utf8_lossy(&compare.stderr);
    assert!(
        err.contains("`raw/records.jsonl` does not match the manifest"),
        "{}",
        text(&compare)
    );
}
