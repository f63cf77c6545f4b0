//! Real trees as the dataset (issue 31), through the agent with the real
//! restic and borg from Debian's packages (scripts/host-setup.sh installs
//! them): a user's folder with odd names read in place and never written
//! (also when the run is killed), a private tree whose names stay out of
//! the evidence, archives unpacked (and refused when they are not what the
//! plan says), a series of real trees, and a seeded sample.

mod common;

use common::*;
use labrun_evidence::{Manifest, Step, StepRecord};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn restic() -> Value {
    json!({
        "name": "restic", "version": "0.14", "binary": "/usr/bin/restic",
        "env": {"RESTIC_PASSWORD": PASSWORD, "RESTIC_CACHE_DIR": "{work}/cache"},
        "secret_env": ["RESTIC_PASSWORD"],
        "commands": {
            "init": {"argv": ["{bin}", "init", "-r", "{repo}"]},
            "backup": {"argv": ["{bin}", "backup", "-r", "{repo}", "."], "cwd": "{source}"},
            "restore": {"argv": ["{bin}", "restore", "latest", "-r", "{repo}", "--target", "{target}"]}
        }
    })
}

fn borg() -> Value {
    json!({
        "name": "borg", "version": "1.2", "binary": "/usr/bin/borg",
        "env": {"BORG_PASSPHRASE": PASSWORD, "BORG_BASE_DIR": "{work}"},
        "secret_env": ["BORG_PASSPHRASE"],
        "commands": {
            "init": {"argv": ["{bin}", "init", "--encryption=repokey-blake2", "{repo}"]},
            "backup": {"argv": ["{bin}", "create", "--stats", "{repo}::{snapshot}", "."], "cwd": "{source}"},
            "restore": {"argv": ["{bin}", "extract", "{repo}::{snapshot}"], "cwd": "{target}"}
        }
    })
}

/// The same tool under another name with extra arguments after `backup` /
/// `create` and `restore` / `extract`: a tool that lists every path.
fn verbose(tool: Value, name: &str, backup_flags: &[&str], restore_flags: &[&str]) -> Value {
    let mut t = tool;
    t["name"] = json!(name);
    for (cmd, flags) in [("backup", backup_flags), ("restore", restore_flags)] {
        let argv = t["commands"][cmd]["argv"].as_array_mut().unwrap();
        for (i, f) in flags.iter().enumerate() {
            argv.insert(2 + i, json!(f));
        }
    }
    t
}

fn require_tools() {
    for bin in ["/usr/bin/restic", "/usr/bin/borg"] {
        assert!(
            Path::new(bin).exists(),
            "{bin} is missing: run scripts/host-setup.sh"
        );
    }
}

fn tree_plan(run_id: &str, source: Value, public: bool, tools: Vec<Value>) -> Value {
    let mut plan = base_plan(run_id, 1, tools);
    plan["dataset"] = json!({
        "kind": "tree",
        "source": source,
        "change": {"fraction": 0.2, "seed": 5},
        "public": public,
    });
    plan["drop_caches"] = json!(false);
    plan
}

fn folder(path: &Path) -> Value {
    json!({"folder": {"path": path.to_str().unwrap()}})
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Bytes that differ from file to file (`seed`), `len` of them.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A user's folder as users have them: odd names (spaces, a newline,
/// unicode, a leading dash), hard links, relative and dangling symlinks,
/// a sparse file, empty folders, deep nesting, odd modes.
fn odd_tree(root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    write(&root.join("with space.txt"), &bytes(1, 3000));
    write(&root.join("new\nline"), &bytes(2, 1500));
    write(&root.join("ünïcødé ☃/日本語.bin"), &bytes(3, 40_000));
    write(&root.join("-leading-dash"), &bytes(4, 700));
    write(&root.join("--"), b"two dashes\n");
    write(&root.join("docs/report.pdf"), &bytes(5, 120_000));
    write(&root.join("docs/notes.md"), &bytes(6, 9000));
    for i in 0..20 {
        write(
            &root.join(format!("photos/img-{i:03}.jpg")),
            &bytes(100 + i, 5000 + 300 * i as usize),
        );
    }
    std::fs::hard_link(root.join("docs/notes.md"), root.join("notes hard link.md")).unwrap();
    std::os::unix::fs::symlink("docs/report.pdf", root.join("link to report")).unwrap();
    std::os::unix::fs::symlink("../with space.txt", root.join("docs/up link")).unwrap();
    std::os::unix::fs::symlink("no/such/target", root.join("dangling")).unwrap();
    // Sparse: 2 MiB apparent, a few KiB of data in the middle.
    let sparse = std::fs::File::create(root.join("disk.img")).unwrap();
    sparse.set_len(2 << 20).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&sparse, &bytes(7, 4096), 1 << 20).unwrap();
    drop(sparse);
    std::fs::create_dir_all(root.join("empty")).unwrap();
    std::fs::create_dir_all(root.join("empty too/inner empty")).unwrap();
    let mut deep = root.join("deep");
    for i in 0..24 {
        deep = deep.join(format!("level-{i}"));
    }
    write(&deep.join("bottom.txt"), b"the bottom\n");
    let script = root.join("run.sh");
    write(&script, b"#!/bin/sh\necho hi\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o750)).unwrap();
    std::fs::set_permissions(
        root.join("docs/report.pdf"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    // Times from the past: a run that wrote anything would show.
    let out = Command::new("find")
        .arg(root)
        .args([
            "-exec",
            "touch",
            "-h",
            "-d",
            "2021-03-04 05:06:07.123456789",
            "{}",
            "+",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Everything about a tree a run could change: every entry's kind, size,
/// mode, owner, mtime, inode and link count (symlinks themselves included),
/// and every byte (the manifest with metadata).
#[derive(Debug, PartialEq)]
struct Snapshot {
    stats: BTreeMap<PathBuf, Stat>,
    manifest: Manifest,
}

/// What `lstat` says of one entry.
#[derive(Debug, PartialEq)]
struct Stat {
    mode: u32,
    size: u64,
    owner: (u32, u32),
    mtime: (i64, i64),
    inode: u64,
    links: u64,
}

fn snapshot(root: &Path) -> Snapshot {
    let mut stats = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let md = std::fs::symlink_metadata(&p).unwrap();
        stats.insert(
            p.strip_prefix(root).unwrap().to_path_buf(),
            Stat {
                mode: md.mode(),
                size: md.size(),
                owner: (md.uid(), md.gid()),
                mtime: (md.mtime(), md.mtime_nsec()),
                inode: md.ino(),
                links: md.nlink(),
            },
        );
        if md.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
    }
    Snapshot {
        stats,
        manifest: labrun_dataset::scan_metadata(root).unwrap(),
    }
}

fn of_tool<'a>(records: &'a [StepRecord], tool: &str) -> Vec<&'a StepRecord> {
    records.iter().filter(|r| r.tool == tool).collect()
}

fn assert_ran(lab: &Lab, out: &std::process::Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}\nfailed steps:\n{}",
        stderr(out),
        lab.failures()
    );
}

#[test]
fn a_folder_with_odd_names_runs_the_published_cycle_and_is_never_written() {
    require_tools();
    let lab = Lab::new();
    let tree = lab.path("user/data");
    odd_tree(&tree);
    let before = snapshot(&tree);
    assert!(
        before.manifest.entries.iter().any(|e| e.sparse),
        "no sparse file made"
    );
    let out = lab.run(&tree_plan(
        "odd",
        folder(&tree),
        false,
        vec![restic(), borg()],
    ));
    assert_ran(&lab, &out);
    let records = lab.records();
    assert_eq!(
        (records[0].step.clone(), records[0].tool.as_str()),
        (Step::GENERATE, "")
    );
    // 20 photos and 11 other files (the hard link counts as a file).
    assert_eq!(records[0].files, Some(31), "{:?}", records[0]);
    for tool in ["restic", "borg"] {
        assert_eq!(steps_of(&records, tool, 1), full_cycle(), "{tool}");
        for r in of_tool(&records, tool) {
            assert!(r.ok, "{tool} {}: {:?}", r.step, r.error);
        }
        let change = of_tool(&records, tool)
            .into_iter()
            .find(|r| r.step == Step::CHANGE)
            .unwrap();
        assert!(
            change.files.unwrap_or(0) > 0 && change.bytes.unwrap_or(0) > 0,
            "{change:?}"
        );
        let verify = of_tool(&records, tool)
            .into_iter()
            .find(|r| r.step == Step::VERIFY)
            .unwrap();
        let v = verify.verify.as_ref().unwrap();
        assert!(v.passed && v.files_checked >= 31, "{tool}: {v:?}");
    }
    let summary: Value = serde_json::from_slice(
        &std::fs::read(lab.evidence().join("manifests/changed.change.json")).unwrap(),
    )
    .unwrap();
    assert!(
        summary["bytes_written"].as_u64().unwrap_or(0) > 0,
        "{summary}"
    );
    let after = snapshot(&tree);
    assert_eq!(before, after, "the user's folder changed");
    // The folder itself: its own mtime and mode were in the snapshot ("").
    assert!(before.stats.contains_key(Path::new("")));
}

#[test]
fn a_run_killed_during_a_backup_leaves_the_folder_as_it_was() {
    require_tools();
    let lab = Lab::new();
    let tree = lab.path("user/data");
    odd_tree(&tree);
    let before = snapshot(&tree);
    let marker = lab.path("backups");
    // restic, then a mark; the second (incremental) backup, after the
    // change, then waits: that is where the SIGTERM falls.
    let mut tool = restic();
    tool["binary"] = json!("/bin/sh");
    tool["commands"]["backup"] = json!({
        "argv": ["{bin}", "-c", format!(
            "/usr/bin/restic backup -r {{repo}} . && echo {{snapshot}} >> {m} && if [ $(wc -l < {m}) -ge 2 ]; then sleep 60; fi",
            m = marker.display()
        )],
        "cwd": "{source}",
    });
    tool["commands"]["init"]["argv"][0] = json!("/usr/bin/restic");
    tool["commands"]["restore"]["argv"][0] = json!("/usr/bin/restic");
    lab.write_plan(&tree_plan("killed", folder(&tree), false, vec![tool]));
    let mut child = lab
        .command()
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let marks = || {
        std::fs::read_to_string(&marker)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    while marks() < 2 {
        assert!(Instant::now() < deadline, "the second backup never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(child.wait().unwrap().code(), Some(128 + libc::SIGTERM));
    let records = lab.records();
    assert!(
        records.iter().any(|r| r.step == Step::CHANGE && r.ok),
        "the change ran before the kill: {records:#?}"
    );
    let last = records.last().unwrap();
    assert_eq!(
        (last.step.clone(), last.error.as_deref()),
        (Step::BACKUP_INCREMENTAL, Some("interrupted by SIGTERM"))
    );
    assert_eq!(before, snapshot(&tree), "the user's folder changed");
}

/// Names nobody else writes: if one shows in the evidence, it leaked.
const SECRET_DIRS: [&str; 2] = ["QzxDirAlphaSecret", "QzxDirBetaSecret"];
const SECRET_FILES: [&str; 4] = [
    "QzxFileGammaSecret.txt",
    "QzxFileDeltaSecret.bin",
    "QzxFile Epsilon Secret",
    "QzxLinkZetaSecret",
];

fn secret_tree(root: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    for (d, dir) in SECRET_DIRS.iter().enumerate() {
        for (f, file) in SECRET_FILES[..3].iter().enumerate() {
            let rel = format!("{dir}/{file}");
            write(
                &root.join(&rel),
                &bytes((d * 10 + f) as u64, 20_000 + 5000 * f),
            );
            paths.push(rel);
        }
        paths.push(dir.to_string());
    }
    let link = format!("{}/{}", SECRET_DIRS[0], SECRET_FILES[3]);
    std::os::unix::fs::symlink(SECRET_FILES[0], root.join(&link)).unwrap();
    paths.push(link);
    paths
}

/// Every name and path of the tree found in the evidence: (file, what).
fn leaks(lab: &Lab, paths: &[String]) -> Vec<(PathBuf, String)> {
    let mut needles: Vec<String> = paths.to_vec();
    needles.extend(SECRET_DIRS.iter().map(|s| s.to_string()));
    needles.extend(SECRET_FILES.iter().map(|s| s.to_string()));
    // The distinctive part alone, in case a tool quotes or escapes a name.
    needles.push("Qzx".to_string());
    let mut found = Vec::new();
    for (file, content) in lab.evidence_files() {
        for n in &needles {
            if content.windows(n.len()).any(|w| w == n.as_bytes()) {
                found.push((file.clone(), n.clone()));
            }
        }
    }
    found
}

#[test]
fn a_private_restore_that_differs_is_named_by_hashes_only() {
    let lab = Lab::new();
    let tree = lab.path("user/data");
    for (i, rel) in ["hidden-a/one.txt", "hidden-a/two.txt", "hidden-b/three.txt"]
        .iter()
        .enumerate()
    {
        write(&tree.join(rel), &bytes(i as u64, 3000));
    }
    // A restore that loses one file and damages another (which ones the
    // change left is the change's: the first and the last in path order).
    let tool = sh_tool(
        "lossy",
        json!({"restore": {"argv": ["{bin}", "-c",
            "cp -a {repo}/snapshots/{snapshot}/. {target} && cd {target} && rm \"$(find . -type f | sort | head -1)\" && echo x >> \"$(find . -type f | sort | tail -1)\""]}}),
    );
    let out = lab.run(&tree_plan("lossy", folder(&tree), false, vec![tool]));
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let verify = lab
        .records()
        .into_iter()
        .find(|r| r.step == Step::VERIFY)
        .unwrap_or_else(|| panic!("no verify record: {}", lab.failures()));
    let outcome = verify.verify.clone().expect("an outcome");
    assert!(
        !outcome.passed && outcome.missing == 1 && outcome.changed == 1,
        "{outcome:?}"
    );
    // Each difference is named by a path of the tree as the evidence's
    // manifest of it names them: hashed.
    let kept =
        labrun_dataset::read_manifest(&lab.evidence().join("manifests/changed.jsonl")).unwrap();
    let mut kinds = Vec::new();
    for d in &outcome.first_differences {
        let (kind, name) = d.split_once(": ").unwrap_or_else(|| panic!("{d}"));
        assert!(
            kept.entries.iter().any(|e| e.path == name),
            "{d} names no entry of manifests/changed.jsonl"
        );
        kinds.push(kind);
    }
    kinds.sort();
    assert_eq!(kinds, ["changed", "missing"], "{outcome:?}");
    for (file, content) in lab.evidence_files() {
        assert!(
            !content.windows(6).any(|w| w == b"hidden"),
            "{} names the private tree",
            file.display()
        );
    }
    // The work copies of its manifests went with the work folder.
    let left: Vec<PathBuf> = walk(&lab.work())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("plain-manifests"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(e.path());
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

#[test]
fn no_name_or_path_of_a_private_tree_is_in_the_evidence() {
    require_tools();
    let lab = Lab::new();
    let tree = lab.path("user/data");
    let paths = secret_tree(&tree);
    // The usual flags, and the same tools listing every path they touch.
    let tools = vec![
        restic(),
        borg(),
        verbose(restic(), "restic-verbose", &["-vv"], &["-vv"]),
        verbose(borg(), "borg-list", &["--list"], &["--list"]),
    ];
    let out = lab.run(&tree_plan("private", folder(&tree), false, tools.clone()));
    assert_ran(&lab, &out);
    assert_eq!(lab.records().len(), 1 + 4 * full_cycle().len());
    let logs = std::fs::read_to_string(lab.evidence().join("logs/borg-list/c1-backup_full.err"))
        .or_else(|_| {
            std::fs::read_to_string(lab.evidence().join("logs/borg-list/c1-backup_full.out"))
        })
        .unwrap_or_default();
    assert!(
        logs.lines().count() > 6,
        "borg --list listed nothing: {logs}"
    );
    let leaked = leaks(&lab, &paths);
    assert!(
        leaked.is_empty(),
        "paths of a private tree in the evidence: {leaked:#?}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).find("Qzx").is_none());

    // The same tree made public: its names are in the manifests (so the
    // search above can see a leak), and the tool logs list them.
    let public = Lab::new();
    let out = public.run(&tree_plan("public", folder(&tree), true, tools));
    assert_ran(&public, &out);
    let leaked = leaks(&public, &paths);
    for manifest in ["generated", "changed"] {
        let file = public
            .evidence()
            .join(format!("manifests/{manifest}.jsonl"));
        assert!(
            leaked.iter().any(|(f, n)| *f == file && n == &paths[0]),
            "{manifest}: {leaked:#?}"
        );
    }
    assert!(
        leaked
            .iter()
            .any(|(f, _)| f.starts_with(public.evidence().join("logs/borg-list"))),
        "{leaked:#?}"
    );
}

#[test]
fn no_name_or_path_of_a_private_series_is_in_the_evidence() {
    require_tools();
    let lab = Lab::new();
    let (one, two) = (lab.path("user/v1"), lab.path("user/v2"));
    let mut paths = secret_tree(&one);
    copy_tree(&one, &two);
    let added = format!("{}/QzxFileEtaSecret.md", SECRET_DIRS[1]);
    write(&two.join(&added), &bytes(77, 9000));
    paths.push(added);
    let tool = verbose(borg(), "borg-list", &["--list"], &["--list"]);
    let mut plan = base_plan("private-series", 1, vec![tool]);
    plan["drop_caches"] = json!(false);
    plan["dataset"] = json!({"kind": "git-history", "source": {"trees": {
        "trees": [folder(&one), folder(&two)],
        "public": false,
    }}});
    let out = lab.run(&plan);
    assert_ran(&lab, &out);
    let log = std::fs::read_to_string(
        lab.evidence()
            .join("logs/borg-list/c1-s2-backup_incremental.err"),
    )
    .unwrap();
    assert!(log.lines().count() > 6, "borg --list listed nothing: {log}");
    let leaked = leaks(&lab, &paths);
    assert!(
        leaked.is_empty(),
        "paths of a private series in the evidence: {leaked:#?}"
    );
}

#[test]
fn a_private_folder_that_cannot_be_read_is_refused_without_naming_its_entry() {
    let lab = Lab::new();
    let tree = lab.path("user/data");
    secret_tree(&tree);
    let fifo = tree.join(SECRET_DIRS[1]).join("QzxFifoSecret");
    let out = Command::new("mkfifo").arg(&fifo).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = lab.run(&tree_plan(
        "fifo",
        folder(&tree),
        false,
        vec![sh_tool("copy", json!({}))],
    ));
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(tree.to_str().unwrap()) && err.contains("not a regular file"),
        "{err}"
    );
    assert!(!err.contains("Qzx"), "{err}");
    assert!(leaks(&lab, &[]).is_empty(), "{:#?}", leaks(&lab, &[]));
}

fn sha256_of(path: &Path) -> String {
    labrun_evidence::digest::sha256_file(path).unwrap()
}

fn archive_source(path: &Path, format: &str, sha256: &str, max_bytes: u64) -> Value {
    json!({"archive": {
        "path": path.to_str().unwrap(), "format": format, "sha256": sha256, "max_bytes": max_bytes,
    }})
}

/// A small tree and its archives, made with tar and zip.
fn archives(lab: &Lab) -> (PathBuf, PathBuf, PathBuf) {
    let tree = lab.path("made/tree");
    for i in 0..12 {
        write(
            &tree.join(format!("src/part-{}/file-{i}.c", i % 3)),
            &bytes(i, 4000 + 1000 * i as usize),
        );
    }
    write(&tree.join("README"), b"an archive's tree\n");
    std::fs::create_dir_all(tree.join("empty")).unwrap();
    let tgz = lab.path("made/tree.tar.gz");
    let zip = lab.path("made/tree.zip");
    let run = |cmd: &mut Command| {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(Command::new("tar")
        .arg("-czf")
        .arg(&tgz)
        .arg("-C")
        .arg(&tree)
        .arg("."));
    run(Command::new("zip")
        .arg("-qr")
        .arg(&zip)
        .arg(".")
        .current_dir(&tree));
    (tree, tgz, zip)
}

#[test]
fn a_tar_gz_and_a_zip_are_unpacked_and_verified_and_bad_ones_refused() {
    require_tools();
    let lab = Lab::new();
    let (tree, tgz, zip) = archives(&lab);
    let expected = labrun_dataset::scan(&tree).unwrap();
    for (archive, format) in [(&tgz, "tar-gz"), (&zip, "zip")] {
        let run = Lab::new();
        let source = archive_source(archive, format, &sha256_of(archive), 10 << 20);
        let out = run.run(&tree_plan(format, source, true, vec![restic()]));
        assert_ran(&run, &out);
        let records = run.records();
        assert_eq!(records[0].files, Some(13), "{format}: {:?}", records[0]);
        assert_eq!(steps_of(&records, "restic", 1), full_cycle(), "{format}");
        let generated =
            labrun_dataset::read_manifest(&run.evidence().join("manifests/generated.jsonl"))
                .unwrap();
        // zip keeps no mode for folders the way tar does: compare files.
        let files = |m: &Manifest| -> Vec<(String, u64, String)> {
            m.entries
                .iter()
                .filter(|e| e.kind == labrun_evidence::EntryKind::File)
                .map(|e| (e.path.clone(), e.size, e.sha256.clone()))
                .collect()
        };
        assert_eq!(files(&generated), files(&expected), "{format}");
        let v = records.iter().find(|r| r.step == Step::VERIFY).unwrap();
        assert!(v.ok && v.verify.as_ref().unwrap().passed, "{format}: {v:?}");
    }

    // A digest that is not the archive's: refused before anything runs.
    let wrong = Lab::new();
    let source = archive_source(&tgz, "tar-gz", &"0".repeat(64), 10 << 20);
    let out = wrong.run(&tree_plan("wrong", source, false, vec![restic()]));
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(tgz.to_str().unwrap()) && err.contains("SHA-256"),
        "{err}"
    );
    assert!(wrong.records().iter().all(|r| r.tool.is_empty()));

    // Bytes past max_bytes: an archive bomb, refused.
    let bomb = Lab::new();
    let source = archive_source(&tgz, "tar-gz", &sha256_of(&tgz), 10_000);
    let out = bomb.run(&tree_plan("bomb", source, false, vec![restic()]));
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(tgz.to_str().unwrap()) && err.contains("more than 10000 bytes"),
        "{err}"
    );
    assert!(bomb.records().iter().all(|r| r.tool.is_empty()));
    // A private tree's entry names stay out of the message and the evidence.
    let record = &bomb.records()[0];
    assert!(
        !err.contains("file-") && !record.error.as_deref().unwrap_or("").contains("file-"),
        "{err}\n{record:?}"
    );
}

#[test]
fn a_series_of_three_trees_restores_each_snapshot_as_its_own_tree() {
    require_tools();
    let lab = Lab::new();
    let trees: Vec<PathBuf> = (1..=3)
        .map(|k| lab.path(&format!("releases/v{k}")))
        .collect();
    for i in 0..10 {
        write(
            &trees[0].join(format!("lib/mod-{i}.rs")),
            &bytes(i, 3000 + 200 * i as usize),
        );
    }
    write(&trees[0].join("VERSION"), b"1.0.0\n");
    write(&trees[0].join("old/gone.txt"), b"removed in v3\n");
    // v2: VERSION's bytes change, its size and mtime do not.
    copy_tree(&trees[0], &trees[1]);
    let version = trees[1].join("VERSION");
    let mtime = std::fs::metadata(&version).unwrap().modified().unwrap();
    std::fs::write(&version, b"2.0.0\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&version)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    // v3: a file and a folder gone, files added.
    copy_tree(&trees[1], &trees[2]);
    std::fs::remove_dir_all(trees[2].join("old")).unwrap();
    std::fs::remove_file(trees[2].join("lib/mod-3.rs")).unwrap();
    write(&trees[2].join("lib/new-a.rs"), &bytes(50, 5000));
    write(&trees[2].join("bin/new-b"), &bytes(51, 800));
    let mut plan = base_plan("series", 1, vec![tagged_restic()]);
    plan["drop_caches"] = json!(false);
    plan["dataset"] = json!({"kind": "git-history", "source": {"trees": {
        "trees": trees.iter().map(|t| folder(t)).collect::<Vec<_>>(),
        "public": true,
    }}});
    let out = lab.run(&plan);
    assert_ran(&lab, &out);
    let records = lab.records();
    let steps: Vec<(Step, Option<u32>)> = of_tool(&records, "restic")
        .iter()
        .map(|r| (r.step.clone(), r.history.as_ref().map(|h| h.index)))
        .collect();
    let mut expected = vec![(Step::INIT, None)];
    for k in 1..=3 {
        expected.push((if k == 1 { Step::GENERATE } else { Step::CHANGE }, Some(k)));
        expected.push((
            if k == 1 {
                Step::BACKUP_FULL
            } else {
                Step::BACKUP_INCREMENTAL
            },
            Some(k),
        ));
    }
    for k in 1..=3 {
        expected.push((Step::RESTORE, Some(k)));
        expected.push((Step::VERIFY, Some(k)));
    }
    assert_eq!(steps, expected);
    for r in of_tool(&records, "restic") {
        assert!(r.ok, "{} {:?}: {:?}", r.step, r.history, r.error);
        if r.step == Step::VERIFY {
            assert!(r.verify.as_ref().unwrap().passed, "{r:?}");
        }
    }
    // Each commit's manifest is its own tree as the test made it (the work
    // tree was moved right), so each verify compared with the right tree.
    for (k, t) in trees.iter().enumerate() {
        let kept = labrun_dataset::read_manifest(
            &lab.evidence()
                .join(format!("manifests/commit-{:04}.jsonl", k + 1)),
        )
        .unwrap();
        assert_eq!(kept, labrun_dataset::scan(t).unwrap(), "tree {}", k + 1);
    }
}

/// restic with each snapshot tagged, and restored by its tag (not
/// `latest`), as a series needs.
fn tagged_restic() -> Value {
    let mut tool = restic();
    tool["commands"]["backup"]["argv"] = json!([
        "{bin}",
        "backup",
        "-r",
        "{repo}",
        "--tag",
        "{snapshot}",
        "."
    ]);
    tool["commands"]["restore"]["argv"] = json!([
        "{bin}",
        "restore",
        "latest",
        "--tag",
        "{snapshot}",
        "-r",
        "{repo}",
        "--target",
        "{target}"
    ]);
    tool
}

#[test]
fn a_sampled_series_takes_the_same_paths_from_every_tree() {
    require_tools();
    let lab = Lab::new();
    let (v1, v2) = (lab.path("releases/v1"), lab.path("releases/v2"));
    for i in 0..60 {
        write(
            &v1.join(format!("d{}/f{i}", i % 5)),
            &bytes(i, 500 + 10 * i as usize),
        );
    }
    // v2: a third of the files rewritten, a few gone, a few new.
    copy_tree(&v1, &v2);
    for i in (0..60).step_by(3) {
        write(&v2.join(format!("d{}/f{i}", i % 5)), &bytes(100 + i, 700));
    }
    for i in [1, 7, 13] {
        std::fs::remove_file(v2.join(format!("d{}/f{i}", i % 5))).unwrap();
    }
    for i in 60..70 {
        write(&v2.join(format!("d{}/f{i}", i % 5)), &bytes(i, 900));
    }
    let before = [
        labrun_dataset::scan(&v1).unwrap(),
        labrun_dataset::scan(&v2).unwrap(),
    ];
    let sample = labrun_evidence::Sample {
        fraction: 0.5,
        seed: 3,
    };
    let mut plan = base_plan("sampled-series", 1, vec![tagged_restic()]);
    plan["drop_caches"] = json!(false);
    plan["dataset"] = json!({"kind": "git-history", "source": {"trees": {
        "trees": [folder(&v1), folder(&v2)],
        "public": true,
        "sample": sample,
    }}});
    let out = lab.run(&plan);
    assert_ran(&lab, &out);
    for r in of_tool(&lab.records(), "restic") {
        assert!(r.ok, "{} {:?}: {:?}", r.step, r.history, r.error);
        if r.step == Step::VERIFY {
            assert!(r.verify.as_ref().unwrap().passed, "{r:?}");
        }
    }
    let file_paths = |m: &Manifest| -> std::collections::BTreeSet<String> {
        m.entries
            .iter()
            .filter(|e| e.kind == labrun_evidence::EntryKind::File)
            .map(|e| e.path.clone())
            .collect()
    };
    let mut kept = Vec::new();
    for (k, full) in before.iter().enumerate() {
        let m = labrun_dataset::read_manifest(
            &lab.evidence()
                .join(format!("manifests/commit-{:04}.jsonl", k + 1)),
        )
        .unwrap();
        // Each snapshot's tree is its own tree's sample, byte for byte.
        let expected = labrun_dataset::sample::sample(full, sample.fraction, sample.seed);
        assert_eq!(file_paths(&m), file_paths(&expected), "tree {}", k + 1);
        for e in m
            .entries
            .iter()
            .filter(|e| e.kind == labrun_evidence::EntryKind::File)
        {
            assert!(
                full.entries.contains(e),
                "tree {}: {e:?} is not its own",
                k + 1
            );
        }
        let n = file_paths(&m).len();
        assert!(
            n > 0 && n < file_paths(full).len(),
            "tree {}: {n} files",
            k + 1
        );
        kept.push(file_paths(&m));
    }
    // The paths both trees have are in both samples or in neither.
    let (paths_1, paths_2) = (file_paths(&before[0]), file_paths(&before[1]));
    for p in paths_1.intersection(&paths_2) {
        assert_eq!(kept[0].contains(p), kept[1].contains(p), "{p}");
    }
    // The folders were read, never written.
    assert_eq!(labrun_dataset::scan(&v1).unwrap(), before[0]);
    assert_eq!(labrun_dataset::scan(&v2).unwrap(), before[1]);
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let out = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_sample_is_the_same_subset_in_two_runs() {
    let source = Lab::new();
    let tree = source.path("big");
    for i in 0..40 {
        write(
            &tree.join(format!("d{}/f{i}", i % 4)),
            &bytes(i, 1000 + i as usize),
        );
    }
    let mut manifests = Vec::new();
    for run in ["one", "two"] {
        let lab = Lab::new();
        let mut plan = tree_plan(run, folder(&tree), true, vec![sh_tool("copy", json!({}))]);
        plan["dataset"]["sample"] = json!({"fraction": 0.5, "seed": 1});
        let out = lab.run(&plan);
        assert_ran(&lab, &out);
        let m = labrun_dataset::read_manifest(&lab.evidence().join("manifests/generated.jsonl"))
            .unwrap();
        manifests.push(m);
    }
    assert_eq!(manifests[0], manifests[1]);
    let files = |m: &Manifest| {
        m.entries
            .iter()
            .filter(|e| e.kind == labrun_evidence::EntryKind::File)
            .count()
    };
    let n = files(&manifests[0]);
    assert!((8..=32).contains(&n), "{n} of 40 files in a half sample");
    // Every sampled file is the tree's, byte for byte.
    let full = labrun_dataset::scan(&tree).unwrap();
    for e in &manifests[0].entries {
        assert!(full.entries.contains(e), "{e:?} is not the tree's");
    }
    // The sample is a copy: the folder itself was never the run's.
    assert_eq!(labrun_dataset::scan(&tree).unwrap(), full);
}
