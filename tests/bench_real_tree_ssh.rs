//! Real data (issue 31) end to end without a VM: the lab names an existing
//! machine, an OpenSSH server on 127.0.0.1 that this test starts, and the
//! real binary runs restic from Debian's package on a folder of the user's
//! (read in place), a pinned tar.gz and a .deb's tar.xz member, each copied
//! in once; `labrun check` sizes a folder before anything boots.

mod common;
mod run_output;

use labrun_ssh::test_support::Sshd;
use run_output::{only_run_dir, records};
use sha2::Digest;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");

/// Every entry name of the private folder carries this marker, so that a
/// search for it finds any of them wherever it went.
const MARKER: &str = "zqxprivate";

/// A folder with names a careless quoting would break, a symbolic link, a
/// hard link, an empty folder and a nested file; its root's own name holds
/// no marker (the lab file, copied into the evidence, names the root).
fn private_folder(at: &Path) -> PathBuf {
    let root = at.join("user-data");
    let sub = root.join(format!("{MARKER} dir ünï ✓"));
    std::fs::create_dir_all(sub.join(format!("{MARKER}-empty"))).expect("mkdir");
    let files: [(&str, &[u8]); 5] = [
        ("-a leading dash", b"first file\n"),
        (
            "quote's \"double\" $HOME *?",
            b"second file, longer than the first\n",
        ),
        ("tab\there", b""),
        ("new\nline", b"a name with a newline\n"),
        ("back\\slash.bin", &[0u8, 1, 2, 255, 254, 253]),
    ];
    for (name, bytes) in files {
        std::fs::write(root.join(format!("{MARKER} {name}")), bytes).expect("write");
    }
    std::fs::write(sub.join(format!("{MARKER} nested.txt")), vec![b'x'; 70_000]).expect("write");
    std::os::unix::fs::symlink(
        format!("{MARKER} -a leading dash"),
        root.join(format!("{MARKER} link")),
    )
    .expect("symlink");
    std::fs::hard_link(
        sub.join(format!("{MARKER} nested.txt")),
        root.join(format!("{MARKER} hard link")),
    )
    .expect("hard link");
    root
}

/// Every entry under `dir`: its path, mode, mtime (ns), inode's link count,
/// and its bytes or link target. What "unchanged" means for a user's folder.
fn fingerprint(dir: &Path) -> Vec<(PathBuf, u32, i64, i64, u64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).expect("lstat");
            let content = if m.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .expect("readlink")
                    .into_os_string()
                    .into_encoded_bytes()
            } else if m.is_file() {
                std::fs::read(&p).expect("read")
            } else {
                stack.push(p.clone());
                Vec::new()
            };
            out.push((p, m.mode(), m.mtime(), m.mtime_nsec(), m.nlink(), content));
        }
    }
    out.sort();
    out
}

fn sha256_file(path: &Path) -> String {
    hex::encode(sha2::Sha256::digest(std::fs::read(path).expect("read")))
}

/// A lab of restic alone on the loopback server, with this dataset.
fn target_lab(dir: &Path, sshd: &Sshd, dataset: &str) -> PathBuf {
    common::target_lab(dir, sshd, "lab.yaml", "real-tree", dataset, 1)
}

/// `bench` of restic, which must succeed; its run folder under `results`.
fn bench(lab: &Path, dir: &Path, results: &str, sshd: &Sshd) -> (PathBuf, String) {
    let results = dir.join(results);
    let cache = dir.join("cache");
    let text = common::bench_ok(
        lab,
        &results,
        "restic",
        &["--cache", cache.to_str().expect("utf-8 path")],
        sshd,
    );
    (only_run_dir(&results), text)
}

/// Every restore of the run verified, and at least one.
fn assert_verified(run: &Path) {
    let recs = records(run);
    let verified: Vec<_> = recs.iter().filter(|r| !r["verify"].is_null()).collect();
    assert!(!verified.is_empty(), "no verify record: {recs:?}");
    for r in verified {
        assert_eq!(r["verify"]["passed"], true, "{r}");
        assert_eq!(r["ok"], true, "{r}");
    }
    for step in ["init", "backup_full", "backup_incremental", "restore"] {
        let r = recs
            .iter()
            .find(|r| r["tool"] == "restic" && r["step"] == step)
            .unwrap_or_else(|| panic!("no restic {step} record: {recs:?}"));
        assert_eq!(r["ok"], true, "{step}: {r}");
    }
}

/// The tree the run backed up had `files` regular files (a hard link is
/// one more): the data reached the agent.
fn assert_tree_files(run: &Path, files: u64) {
    let recs = records(run);
    let generate = recs
        .iter()
        .find(|r| r["step"] == "generate")
        .unwrap_or_else(|| panic!("no generate record: {recs:?}"));
    assert_eq!(generate["files"], files, "{generate}");
}

/// What the host said it copied in (`raw/dataset-push.json`), tree by tree.
fn sent_bytes(run: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(run.join("raw/dataset-push.json"))
        .unwrap_or_else(|e| panic!("raw/dataset-push.json in {}: {e}", run.display()));
    let pushed: serde_json::Value = serde_json::from_str(&text).expect("dataset-push.json");
    pushed
        .as_array()
        .expect("a list of pushed trees")
        .iter()
        .map(|p| p["sent_bytes"].as_u64().expect("sent_bytes"))
        .collect()
}

/// `tar -C dir -cf out ARGS .` (a compressed tar when ARGS say so).
fn tar(dir: &Path, out: &Path, args: &[&str]) {
    let ok = Command::new("tar")
        .args(args)
        .arg("-C")
        .arg(dir)
        .arg("-cf")
        .arg(out)
        .arg(".")
        .status()
        .expect("tar")
        .success();
    assert!(ok, "tar {args:?} failed");
}

/// A small tree for the archives: a few files in two folders. It
/// compresses far beyond the bound an archive of undeclared size is held
/// to: the labs declare its `unpacked_size`.
fn archive_tree(at: &Path) -> PathBuf {
    let root = at.join("archive-tree");
    std::fs::create_dir_all(root.join("src/lib")).expect("mkdir");
    std::fs::write(root.join("README"), b"an archive dataset\n").expect("write");
    std::fs::write(root.join("src/main.c"), b"int main(void) { return 0; }\n").expect("write");
    std::fs::write(root.join("src/lib/big.bin"), vec![7u8; 200_000]).expect("write");
    root
}

/// A .deb (built by dpkg-deb) whose data holds `member` (a tar.xz of `tree`).
fn deb_with_tar_xz(at: &Path, tree: &Path, member: &str) -> PathBuf {
    let pkg = at.join("pkg");
    let inside = pkg.join(member);
    std::fs::create_dir_all(inside.parent().expect("member folder")).expect("mkdir");
    tar(tree, &inside, &["-J"]);
    std::fs::create_dir_all(pkg.join("DEBIAN")).expect("mkdir");
    std::fs::write(
        pkg.join("DEBIAN/control"),
        "Package: labrun-test-data\nVersion: 1.0\nArchitecture: all\nMaintainer: labrun tests <tests@localhost>\nDescription: a tree as a tar.xz, for labrun's tests\n",
    )
    .expect("control");
    let deb = at.join("labrun-test-data_1.0_all.deb");
    let out = Command::new("dpkg-deb")
        .args(["--root-owner-group", "--build"])
        .arg(&pkg)
        .arg(&deb)
        .output()
        .expect("dpkg-deb");
    assert!(
        out.status.success(),
        "dpkg-deb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    deb
}

#[test]
#[ignore = "runs restic end to end over SSH, for minutes: `make test` runs it"]
fn a_folder_read_in_place_and_archives_copied_once_on_a_target() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");

    // (a) The user's folder on the target, read where it is.
    let folder = private_folder(dir.path());
    let before = fingerprint(&folder);
    let lab = target_lab(
        dir.path(),
        &sshd,
        &format!("dataset: {{kind: files, path: \"{}\"}}", folder.display()),
    );
    let (run, text) = bench(&lab, dir.path(), "results-files", &sshd);
    assert_verified(&run);
    assert_tree_files(&run, 7);
    assert_eq!(
        fingerprint(&folder),
        before,
        "the user's folder changed:\n{text}"
    );
    assert!(
        !run.join("raw/dataset-push.json").exists() && !dir.path().join("remote/trees").exists(),
        "a folder on the target was copied:\n{text}"
    );
    // Private: no name of the tree anywhere in the run's evidence, logs
    // included (each name carries the marker; JSON escapes leave it whole).
    let files = common::files_under(&run);
    assert!(files.len() > 5, "{files:?}");
    for f in &files {
        let bytes = std::fs::read(f).expect("read evidence");
        assert!(
            !String::from_utf8_lossy(&bytes).contains(MARKER),
            "a path of the private folder is in {}",
            f.display()
        );
    }
    assert!(
        !text.contains(MARKER),
        "labrun printed a private path:\n{text}"
    );

    // (b) A pinned tar.gz through `file:`: copied in once, unpacked there.
    let tree = archive_tree(dir.path());
    let tgz = dir.path().join("tree.tar.gz");
    tar(&tree, &tgz, &["-z"]);
    let lab = target_lab(
        dir.path(),
        &sshd,
        &format!(
            "dataset:\n  kind: archive\n  artifact: {{file: \"{}\", sha256: {}}}\n  unpacked_size: 1MB",
            tgz.display(),
            sha256_file(&tgz)
        ),
    );
    let (run, text) = bench(&lab, dir.path(), "results-tgz-1", &sshd);
    assert_verified(&run);
    assert_tree_files(&run, 3);
    let size = std::fs::metadata(&tgz).expect("tgz").len();
    assert_eq!(sent_bytes(&run), [size], "{text}");
    // The copy is a phase of bench's own time (a generated dataset has none).
    let phases = std::fs::read_to_string(run.join("raw/host-phases.jsonl")).expect("phases");
    assert!(phases.contains("\"ready_trees\""), "{phases}");
    let (run, text) = bench(&lab, dir.path(), "results-tgz-2", &sshd);
    assert_verified(&run);
    assert_eq!(sent_bytes(&run), [0], "copied again:\n{text}");

    // (c) A .deb's member, a tar.xz, through `file:`.
    let member = "usr/share/labrun-test/tree.tar.xz";
    let deb = deb_with_tar_xz(dir.path(), &tree, member);
    let lab = target_lab(
        dir.path(),
        &sshd,
        &format!(
            "dataset:\n  kind: archive\n  artifact:\n    file: \"{}\"\n    sha256: {}\n    extract: {{deb-member: {member}}}\n  unpacked_size: 1MB",
            deb.display(),
            sha256_file(&deb)
        ),
    );
    let (run, text) = bench(&lab, dir.path(), "results-deb", &sshd);
    assert_verified(&run);
    assert_tree_files(&run, 3);
    let sent = sent_bytes(&run);
    // The member is copied, not the package.
    let xz = std::fs::metadata(dir.path().join("pkg").join(member))
        .expect("member")
        .len();
    assert_eq!(sent, [xz], "{text}");
}

/// `labrun -f LAB check ARGS`: its exit code and its stdout and stderr.
fn check(lab: &Path, cache: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(LABRUN)
        .arg("-f")
        .arg(lab)
        .arg("--cache")
        .arg(cache)
        .arg("check")
        .args(args)
        .output()
        .expect("run labrun check");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn check_sizes_a_folder_and_refuses_scale() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = private_folder(dir.path());
    // The shipped default lab (a VM) with the folder as its dataset.
    let shipped = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("lab.yaml"))
        .expect("lab.yaml");
    let synthetic = "dataset:\n  kind: synthetic\n  seed: 1\n  scale: 1\n";
    assert!(
        shipped.contains(synthetic),
        "the default lab's dataset moved"
    );
    let lab = dir.path().join("lab.yaml");
    std::fs::write(
        &lab,
        shipped.replace(
            synthetic,
            &format!(
                "dataset:\n  kind: files\n  path: \"{}\"\n",
                folder.display()
            ),
        ),
    )
    .expect("write lab");
    let cache = dir.path().join("cache");
    let (code, text) = check(&lab, &cache, &[]);
    assert_eq!(code, Some(0), "{text}");
    // 6 regular files (the hard link is one of them twice), 70 KB of the
    // nested one plus its hard link and the small ones.
    let bytes: u64 = common::files_under(&folder)
        .iter()
        .filter(|p| !p.is_symlink())
        .map(|p| std::fs::metadata(p).expect("stat").len())
        .sum();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("tree 1:"))
        .unwrap_or_else(|| panic!("no tree line:\n{text}"));
    assert!(
        line.contains(&format!(
            "7 files, {} in 2 folders (1 symbolic links)",
            labrun_vocab::human_bytes(bytes)
        )),
        "{line}\n{text}"
    );
    assert!(
        text.contains("the machine needs about") && text.contains("free for a run"),
        "{text}"
    );
    let (code, text) = check(&lab, &cache, &["--scale", "0.1"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("sample: {fraction: 0.1}") && text.contains("a real tree"),
        "{text}"
    );
}
