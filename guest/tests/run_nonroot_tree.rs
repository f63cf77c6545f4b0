//! An ordinary user's run of an archive with folders its owner cannot
//! write (0555) or read (0000): the run stops, saying why, and leaves no
//! tree behind that only root could delete.

mod common;

use common::*;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn mode(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

#[test]
#[ignore = "needs root (to run the agent as nobody through setpriv): `make test` runs it"]
fn an_archive_with_closed_folders_stops_the_run_and_leaves_no_tree_behind() {
    let lab = Lab::new();
    mode(lab.dir.path(), 0o777);
    // The tree the archive holds, made and packed by root.
    let tree = lab.path("made/tree");
    for d in ["read-only/inner", "closed/inner"] {
        std::fs::create_dir_all(tree.join(d)).unwrap();
    }
    std::fs::write(tree.join("read-only/f"), "r").unwrap();
    std::fs::write(tree.join("read-only/inner/g"), "r").unwrap();
    std::fs::write(tree.join("closed/inner/g"), "c").unwrap();
    for d in ["read-only/inner", "read-only", "closed/inner"] {
        mode(&tree.join(d), 0o555);
    }
    mode(&tree.join("closed"), 0o000);
    let archive = lab.path("made/tree.tar");
    let out = Command::new("tar")
        .arg("-cf")
        .arg(&archive)
        .arg("-C")
        .arg(&tree)
        .arg(".")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    mode(&archive, 0o644);
    let sha256 = labrun_evidence::digest::sha256_file(&archive).unwrap();
    let mut plan = base_plan("closed", 1, vec![sh_tool("copy", json!({}))]);
    plan["dataset"] = json!({
        "kind": "tree",
        "source": {"archive": {
            "path": archive.to_str().unwrap(), "format": "tar", "sha256": sha256,
            "max_bytes": 1 << 20,
        }},
        "change": {"fraction": 0.2, "seed": 5},
        "public": true,
    });
    plan["drop_caches"] = json!(false);
    lab.write_plan(&plan);
    // A copy `nobody` can reach wherever the checkout lives.
    let agent = lab.path("labrun-agent");
    std::fs::copy(AGENT, &agent).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&agent)
        .arg("run")
        .arg("--plan")
        .arg(lab.plan_path())
        .arg("--work")
        .arg(lab.work())
        .arg("--evidence")
        .arg(lab.evidence())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("closed"), "the folder is named: {err}");
    let run_tree = lab.work().join("closed");
    let left: Vec<_> = ["pristine", "pristine-sample"]
        .iter()
        .map(|d| run_tree.join(d))
        .filter(|p| p.exists())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{err}");
}
