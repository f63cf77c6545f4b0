//! A run with variants: each variant summarized from its own raw evidence,
//! then set side by side, with the variant where each tool first failed.

use labrun_evidence::variant::{Change, VariantRecord, VariantsIndex};
use std::path::Path;

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/two-tools/raw")
}

/// A variant folder holding the two-tools fixture's evidence; `edit`
/// rewrites its records.
fn variant(run: &Path, name: &str, edit: impl Fn(String) -> String) {
    let raw = run.join("variants").join(name).join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    for f in std::fs::read_dir(fixture()).unwrap() {
        let f = f.unwrap();
        let text = std::fs::read_to_string(f.path()).unwrap();
        let text = if f.file_name() == "records.jsonl" {
            edit(text)
        } else {
            text
        };
        std::fs::write(raw.join(f.file_name()), text).unwrap();
    }
}

fn record(name: &str, changes: Vec<Change>) -> VariantRecord {
    VariantRecord {
        name: name.into(),
        description: String::new(),
        axes: Vec::new(),
        changes,
        boot: 0,
    }
}

#[test]
fn variants_are_set_side_by_side_and_failures_named() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path();
    let index = VariantsIndex {
        run_id: "lab-20261202T0500Z-abcdef".into(),
        variants: vec![
            record(
                "small",
                vec![Change {
                    field: "vm.memory".into(),
                    from: "3GiB".into(),
                    to: "512MiB".into(),
                }],
            ),
            record("published", vec![]),
            record("lost", vec![]),
        ],
    };
    std::fs::write(
        run.join("variants.json"),
        serde_json::to_vec(&index).unwrap(),
    )
    .unwrap();
    // In `small`, borg's full backup fails in its first cycle.
    variant(run, "small", |text| {
        text.lines()
            .map(|l| {
                if l.contains(r#""tool":"borg","cycle":1,"step":"backup_full""#) {
                    l.replace(r#""ok":true"#, r#""ok":false"#)
                        .replace(r#""error":null"#, r#""error":"killed by signal 9""#)
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    });
    variant(run, "published", |t| t);
    // `lost` never ran: bench said why.
    let lost = run.join("variants/lost/raw");
    std::fs::create_dir_all(&lost).unwrap();
    std::fs::write(lost.join("bench-error.txt"), "bringing the VM up failed").unwrap();

    let (c, written) = labrun_report::variants::make_report(run).unwrap();
    assert_eq!(c.tools, ["restic", "borg"]);
    let borg = c.failures.iter().find(|f| f.tool == "borg").unwrap();
    assert_eq!(borg.first.as_deref(), Some("small"));
    assert_eq!(borg.failed[0].step.as_str(), "backup_full");
    assert!(
        c.failures
            .iter()
            .find(|f| f.tool == "restic")
            .unwrap()
            .first
            .is_none()
    );
    assert!(c.column("lost").unwrap().summary.is_none());

    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(md.contains("| Tool | small | published | lost |"), "{md}");
    assert!(md.contains("`vm.memory` 3GiB -> 512MiB"), "{md}");
    assert!(md.contains("## Full backup: time"), "{md}");
    // (The fixture's own borg has a failed verify in cycle 2: listed too.)
    assert!(
        md.contains("| borg | small | small: backup_full cycle 1 (killed by signal 9); published: verify cycle 2 "),
        "{md}"
    );
    assert!(
        md.contains("Variant `lost`: bringing the VM up failed"),
        "{md}"
    );
    // Each variant's own summary is made too, from its raw evidence.
    assert!(run.join("variants/small/summary.md").is_file());
    // The same tables on one page, linking each variant's own.
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains(">small</th>"), "{html}");
    assert!(html.contains("variants/small/report.html"), "{html}");
    assert!(html.contains("bringing the VM up failed"), "{html}");
    for f in [
        "summary.md",
        "summary.json",
        "report.html",
        "chart-variants-time.svg",
        "chart-variants-memory.svg",
    ] {
        assert!(
            written.contains(&run.join(f)),
            "{f} not written: {written:?}"
        );
    }
    // The comparison reads back from its JSON.
    let json = std::fs::read_to_string(run.join("summary.json")).unwrap();
    let back: labrun_report::variants::VariantsComparison = serde_json::from_str(&json).unwrap();
    assert_eq!(back.variants.len(), 3);
}

/// Variants spread over a pool of hypervisors: each names its host, the
/// hosts are grouped into classes by machine, and the columns are grouped
/// by class so figures sit beside those of the same kind of host.
#[test]
fn pooled_variants_name_their_host_and_are_grouped_by_host_class() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path();
    let index = VariantsIndex {
        run_id: "lab-20261202T0600Z-abcdef".into(),
        variants: vec![
            record("a", vec![]),
            record("b", vec![]),
            record("c", vec![]),
        ],
    };
    std::fs::write(
        run.join("variants.json"),
        serde_json::to_vec(&index).unwrap(),
    )
    .unwrap();
    // a on `here` and c on `rack2`, one class; b on `big`, another CPU.
    for (name, host, cpu) in [
        ("a", "here", "AMD EPYC 7543"),
        ("b", "big", "Intel Xeon Gold 6338"),
        ("c", "rack2", "AMD EPYC 7543"),
    ] {
        variant(run, name, |t| t);
        let env_path = run.join("variants").join(name).join("raw/environment.json");
        let mut env: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&env_path).unwrap()).unwrap();
        env["hypervisor"] = host.into();
        env["host"]["cpu_model"] = cpu.into();
        std::fs::write(&env_path, serde_json::to_vec(&env).unwrap()).unwrap();
    }
    labrun_report::variants::make_report(run).unwrap();
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(md.contains("| Variant | Host | Boot |"), "{md}");
    assert!(md.contains("| b | big | 1 |"), "{md}");
    assert!(md.contains("## Hosts"), "{md}");
    assert!(md.contains("a (on here), c (on rack2)"), "{md}");
    // Columns: the EPYC class first (a, c), then the Xeon (b).
    assert!(
        md.contains("| Tool | a (here) | c (rack2) | b (big) |"),
        "{md}"
    );
    assert!(md.contains("ran on 2 classes of host"), "{md}");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("Intel Xeon Gold 6338"), "{html}");
}
