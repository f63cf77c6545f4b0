//! A dataset archive taken out of a `.deb` (`deb-member:`) costs at most
//! the tree's bound (issue item 4): `check` lists it as it streams, never
//! writing it out, and refuses one past the bound naming the member; `fetch`
//! writes it into the cache under that bound (the lab's `unpacked_size:`
//! plus 10%, else 20 times the `.deb`), not a tool binary's 256 MiB, and
//! says so in a dataset's words. The `.deb` is made here: its member is
//! mostly zeros, gzip members of 1 MiB repeated, so a few kB stand for
//! hundreds of MiB.

use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const LABRUN: &str = env!("CARGO_BIN_EXE_labrun");
const MEMBER: &str = "usr/src/tree.tar";
const MIB: usize = 1 << 20;

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// A tar holding `name` of `body`, with its end marker.
fn small_tar(name: &str, body: &[u8]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(body.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    b.append_data(&mut h, name, body).unwrap();
    b.into_inner().unwrap()
}

/// data.tar.gz holding [`MEMBER`] of `mib` MiB: a tar of one small file,
/// then zeros. Gzip members concatenated, as a multi-member reader reads.
fn data_tar_gz(mib: usize) -> Vec<u8> {
    let inner = small_tar("tree/one.txt", b"a tree to back up\n");
    let mut header = tar::Header::new_gnu();
    header.set_path(MEMBER).unwrap();
    header.set_size((mib * MIB) as u64);
    header.set_mode(0o644);
    header.set_cksum();
    let mut first = header.as_bytes().to_vec();
    first.extend_from_slice(&inner);
    first.resize(512 + MIB, 0);
    let mut out = gz(&first);
    let zeros = gz(&vec![0u8; MIB]);
    for _ in 1..mib {
        out.extend_from_slice(&zeros);
    }
    // The outer tar's end-of-archive marker.
    out.extend_from_slice(&gz(&[0u8; 1024]));
    out
}

/// A `.deb` (an ar archive) of `debian-binary` and `data.tar.gz`.
fn deb(data: &[u8]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    for (name, body) in [("debian-binary", &b"2.0\n"[..]), ("data.tar.gz", data)] {
        let header = format!(
            "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            0,
            0,
            0,
            "100644",
            body.len()
        );
        assert_eq!(header.len(), 60);
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(body);
        if body.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    out
}

/// The lab: a `.deb` of a `mib` MiB member, declared to unpack to
/// `unpacked` (YAML), and one tool that is a local file used as it is.
fn lab(dir: &Path, mib: usize, unpacked: &str) -> PathBuf {
    let package = deb(&data_tar_gz(mib));
    let deb_path = dir.join("tree_1.0_all.deb");
    std::fs::write(&deb_path, &package).unwrap();
    let tool = dir.join("tool");
    std::fs::write(&tool, b"#!/bin/sh\nexit 0\n").unwrap();
    let text = format!(
        r#"name: member
dataset:
  kind: archive
  artifact:
    file: '{deb}'
    sha256: "{deb_sha}"
    extract: {{deb-member: {MEMBER}}}
  unpacked_size: {unpacked}
tools:
  - name: tool
    version: "1.0"
    artifact:
      file: '{tool}'
      sha256: "{tool_sha}"
      extract: raw
    commands:
      init: ["{{bin}}", init, "{{repo}}"]
      backup: ["{{bin}}", backup, "{{repo}}", "{{source}}"]
      restore: ["{{bin}}", restore, "{{repo}}", "{{target}}"]
"#,
        deb = deb_path.display(),
        deb_sha = hex::encode(Sha256::digest(&package)),
        tool = tool.display(),
        tool_sha = hex::encode(Sha256::digest(std::fs::read(&tool).unwrap())),
    );
    let path = dir.join("lab.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `labrun -f LAB COMMAND` with its cache, state and TMPDIR in `dir`.
fn labrun(dir: &Path, lab: &Path, command: &str) -> Output {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    Command::new(LABRUN)
        .arg("-f")
        .arg(lab)
        .arg("--cache")
        .arg(dir.join("cache"))
        .arg("--state")
        .arg(dir.join("state"))
        .arg(command)
        .env("TMPDIR", &tmp)
        .env_remove("LABRUN_MIRROR")
        .env_remove("LABRUN_HOST")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn check_refuses_a_member_past_the_tree_s_bound_naming_the_member() {
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path(), 16, "1MB");
    let out = labrun(dir.path(), &lab, "check");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains(&format!(
            "tree 1: cannot be used: the member `{MEMBER}` is larger than"
        )) && all.contains("`unpacked_size:`"),
        "{all}"
    );
    // Nothing of the member was written for the listing.
    let left: Vec<_> = std::fs::read_dir(dir.path().join("tmp")).unwrap().collect();
    assert!(left.is_empty(), "{left:?}\n{all}");
}

#[test]
fn check_lists_a_member_within_its_bound_as_it_streams() {
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path(), 16, "64MB");
    let out = labrun(dir.path(), &lab, "check");
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains(
            "tree 1: 1 files, 18B in 1 folders (0 symbolic links), from the archive's listing"
        ),
        "{all}"
    );
}

#[test]
fn fetch_refuses_a_member_past_the_tree_s_bound_in_a_dataset_s_words() {
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path(), 16, "1MB");
    let out = labrun(dir.path(), &lab, "fetch");
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains(
            "the member is larger than 1100000 bytes, the most the dataset's tree may unpack to"
        ) && !all.contains("tool's binary"),
        "{all}"
    );
}

/// A tool binary's 256 MiB limit made every larger dataset member
/// unusable; a member is bounded by its tree's declared size instead.
#[test]
fn fetch_takes_a_member_over_256_mib_that_the_lab_declares() {
    let dir = tempfile::tempdir().unwrap();
    let lab = lab(dir.path(), 257, "1GB");
    let out = labrun(dir.path(), &lab, "fetch");
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    let row = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.trim_start().starts_with("member "))
        .map(|l| {
            l.trim_start()
                .trim_start_matches("member")
                .trim()
                .to_string()
        })
        .unwrap_or_else(|| panic!("no member row:\n{all}"));
    let size = std::fs::metadata(&row).unwrap().len();
    assert_eq!(size, (257 * MIB) as u64, "{all}");
}
