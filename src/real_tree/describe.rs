//! `labrun check`'s lines for a real tree: its size and file count, read
//! before anything boots, and the free disk the machine needs for it.

use super::push::host_folder;
use super::survey::survey;
use labrun_artifact::Resolution;
use labrun_evidence::ArchiveFormat;
use labrun_lab::real_tree::{DEFAULT_EXPANSION, TreeSpec, archive_format};
use labrun_lab::{DatasetSpec, Lab, Machine};
use std::path::Path;

/// `check`'s lines for the dataset, and which trees the run would refuse.
#[derive(Debug, Default)]
pub struct Described {
    pub text: String,
    /// The trees (counted from 1) that cannot be used: `check` is then no
    /// pass, since the run would stop at them.
    pub unusable: Vec<usize>,
}

/// The lines, or nothing for a generated dataset.
pub fn describe(lab: &Lab, cache: &Path, mirror: Option<&Path>) -> Described {
    let on_target = matches!(lab.machine(), Machine::Target(_));
    let trees: Vec<Tree> = match &lab.dataset {
        DatasetSpec::Files(d) => vec![Tree::Folder(&d.path)],
        DatasetSpec::Archive(d) => vec![Tree::Archive(
            &d.artifact,
            d.unpacked_size.map(|s| s.bytes()),
            archive_format(&d.artifact, d.format),
        )],
        DatasetSpec::Trees(d) => d
            .trees
            .iter()
            .map(|t| match t {
                TreeSpec::Files(p) => Tree::Folder(p),
                TreeSpec::Archive(a) => Tree::Archive(
                    &a.artifact,
                    a.unpacked_size.map(|s| s.bytes()),
                    archive_format(&a.artifact, a.format),
                ),
            })
            .collect(),
        DatasetSpec::Synthetic { .. } | DatasetSpec::GitHistory { .. } => {
            return Described::default();
        }
    };
    let mut out = String::from("data on this machine:\n");
    let mut unusable = Vec::new();
    let mut largest = 0u64;
    let mut most_files = 0u64;
    for (i, t) in trees.iter().enumerate() {
        let line = match t {
            Tree::Folder(_) if on_target => {
                "a folder on the target machine: sized there when the run starts".to_string()
            }
            Tree::Folder(p) => {
                let local = host_folder(&lab.source.file, p);
                match survey(&local) {
                    Ok(s) => {
                        largest = largest.max(s.bytes);
                        most_files = most_files.max(s.files);
                        format!(
                            "{} files, {} in {} folders ({} symbolic links)",
                            s.files,
                            labrun_vocab::human_bytes(s.bytes),
                            s.dirs,
                            s.symlinks
                        )
                    }
                    Err(why) => {
                        unusable.push(i + 1);
                        format!("cannot be used: {why}")
                    }
                }
            }
            Tree::Archive(spec, declared, format) => {
                let r = labrun_artifact::resolve_offline(spec, cache, mirror);
                let resolution = r.to_string();
                let whence = crate::terminal::one_line(&resolution);
                match (listing(spec, &r, *format, *declared), declared) {
                    (Some(Ok(u)), _) => {
                        largest = largest.max(u.bytes);
                        most_files = most_files.max(u.files + u.hard_links);
                        format!(
                            "{} files, {} in {} folders ({} symbolic links), from the archive's listing; {whence}",
                            u.files + u.hard_links,
                            labrun_vocab::human_bytes(u.bytes),
                            u.dirs,
                            u.symlinks
                        )
                    }
                    (Some(Err(why)), _) => {
                        unusable.push(i + 1);
                        format!("cannot be used: {why}")
                    }
                    (None, Some(b)) => {
                        largest = largest.max(*b);
                        format!(
                            "an archive declared to unpack to {} (listed once it is fetched); {whence}",
                            labrun_vocab::human_bytes(*b),
                        )
                    }
                    (None, None) => format!(
                        "an archive of undeclared size (unpacking stops at {DEFAULT_EXPANSION} times the archive's: add `unpacked_size:` to size the disk); {whence}"
                    ),
                }
            }
        };
        out.push_str(&format!("  tree {}: {line}\n", i + 1));
    }
    if largest > 0 {
        out.push_str(&format!(
            "  the machine needs about {} free for a run of the largest tree (a copy per tool cycle, the repository, a restore)\n",
            labrun_vocab::human_bytes(labrun_dataset::space::needed_bytes(largest))
        ));
    }
    if most_files > 0 {
        out.push_str(&memory_line(most_files, &lab.machine()));
    }
    Described {
        text: out,
        unusable,
    }
}

/// What the agent's memory needs for the largest tree, against the VM's:
/// the agent refuses a tree that does not fit, and this says it first.
fn memory_line(files: u64, machine: &Machine) -> String {
    let needed = labrun_dataset::space::agent_memory_bytes(files);
    let mut line = format!(
        "  the agent needs about {} of memory for the {files} files of the largest tree ({} bytes a file on top of {}: it streams the manifests)",
        labrun_vocab::human_bytes(needed),
        labrun_dataset::space::AGENT_BYTES_PER_FILE,
        labrun_vocab::human_bytes(labrun_dataset::space::AGENT_BASE_BYTES),
    );
    if let Machine::Vm(vm) = machine {
        let memory = vm.memory.bytes();
        // The guest's own system takes a few hundred MB of it.
        if let Err(fraction) = labrun_dataset::space::memory_fit(files, memory / 10 * 8) {
            line.push_str(&format!(
                "; the VM's {} will not hold it: raise `vm.memory`, or add `sample: {{fraction: {fraction}}}` under `dataset:`",
                labrun_vocab::human_bytes(memory),
            ));
        }
    }
    line.push('\n');
    line
}

enum Tree<'l> {
    Folder(&'l str),
    Archive(
        &'l labrun_artifact::ArtifactSpec,
        Option<u64>,
        Option<ArchiveFormat>,
    ),
}

/// What the archive holds, read from its listing when it is on this
/// machine already (in the cache, the mirror or a local file), with the
/// bounds the unpack in the guest keeps: nothing when it is not here yet.
/// A member taken out of it (`deb-member:`) is listed as it streams, never
/// written out.
fn listing(
    spec: &labrun_artifact::ArtifactSpec,
    r: &Resolution,
    format: Option<ArchiveFormat>,
    declared: Option<u64>,
) -> Option<Result<labrun_dataset::Unpacked, String>> {
    let (Resolution::Cached(path) | Resolution::Mirror(path) | Resolution::LocalFile(path)) = r
    else {
        return None;
    };
    let format = format?;
    Some(pinned(spec, path, r).and_then(|()| list(spec, path, format, declared)))
}

/// The file's SHA-256 against the pinned one: `labrun fetch` and the run
/// refuse a file that is not the pinned one, so `check` does too.
fn pinned(spec: &labrun_artifact::ArtifactSpec, path: &Path, r: &Resolution) -> Result<(), String> {
    let actual = labrun_artifact::digest::sha256_file(path)
        .map_err(|e| format!("cannot read {} ({e})", path.display()))?;
    if actual == spec.sha256 {
        return Ok(());
    }
    let what = match r {
        // A damaged cached copy is replaced by `labrun fetch`.
        Resolution::Cached(_) => {
            "`labrun fetch` removes this damaged cached copy and fetches the archive again"
        }
        _ => {
            "`labrun fetch` and the run refuse it; if the file really changed, review why, then re-pin it (the `sha256:` in the lab file)"
        }
    };
    Err(format!(
        "{} has SHA-256 {actual}, not the pinned {}: {what}",
        path.display(),
        spec.sha256
    ))
}

/// The listing, bounded as the run bounds the unpack: by the size of the
/// file fetched ([`super::max_unpacked`]), which also bounds a member.
fn list(
    spec: &labrun_artifact::ArtifactSpec,
    path: &Path,
    format: ArchiveFormat,
    declared: Option<u64>,
) -> Result<labrun_dataset::Unpacked, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot read {} ({e})", path.display()))?
        .len();
    let max_bytes = super::max_unpacked(size, declared);
    let limits = labrun_dataset::UnpackLimits {
        max_bytes,
        max_entries: labrun_dataset::unpack::MAX_ENTRIES,
    };
    if spec.extract == labrun_artifact::Extract::Raw {
        return labrun_dataset::list_file(path, format, limits).map_err(|e| e.to_string());
    }
    super::member_listing::list_member(spec, path, format, limits)
}

#[cfg(test)]
mod tests {
    use super::{Machine, describe, memory_line};
    use std::path::Path;

    const TOOL: &str = r#"tools:
  - name: restic
    version: 0.14.0
    artifact:
      apt: {package: restic, version: 0.14.0-1+b5}
      sha256: 9d7e8c210736f3f15ed7cf425ab56aa5259b07d8422b958494bfd4359b5024d1
      extract: {deb-member: usr/bin/restic}
    env: {RESTIC_PASSWORD: lab-only-not-a-secret}
    secret_env: [RESTIC_PASSWORD]
    commands:
      init: ["{bin}", init, -r, "{repo}"]
      backup: {argv: ["{bin}", backup, -r, "{repo}", .], cwd: "{source}"}
      restore: ["{bin}", restore, latest, -r, "{repo}", --target, "{target}"]
"#;

    /// A tar.gz of `entries` (name, bytes) in `dir`, and its SHA-256.
    fn tar_gz(dir: &Path, name: &str, entries: &[(&str, &[u8])]) -> String {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        for (path, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_entry_type(tar::EntryType::Regular);
            // Written raw so a test can name what a careful writer refuses.
            h.as_gnu_mut().unwrap().name[..path.len()].copy_from_slice(path.as_bytes());
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        let bytes = b.into_inner().unwrap().finish().unwrap();
        std::fs::write(dir.join(name), &bytes).unwrap();
        labrun_artifact::digest::sha256_hex(&bytes)
    }

    fn lab_of(dir: &Path, dataset: &str) -> labrun_lab::Lab {
        let path = dir.join("lab.yaml");
        std::fs::write(&path, format!("name: t\n{dataset}\n{TOOL}")).unwrap();
        labrun_lab::Lab::load(&path).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn an_archive_on_this_machine_is_sized_from_its_listing() {
        let dir = tempfile::tempdir().unwrap();
        let sha = tar_gz(
            dir.path(),
            "data.tar.gz",
            &[("a/one.txt", b"12345"), ("a/b/two.txt", b"1234567890")],
        );
        let lab = lab_of(
            dir.path(),
            &format!(
                "dataset:\n  kind: archive\n  artifact: {{file: {}, sha256: {sha}}}",
                dir.path().join("data.tar.gz").display()
            ),
        );
        let text = describe(&lab, &dir.path().join("cache"), None).text;
        assert!(
            text.contains(
                "tree 1: 2 files, 15B in 2 folders (0 symbolic links), from the archive's listing"
            ),
            "{text}"
        );
        assert!(text.contains("the machine needs about"), "{text}");
        let memory = labrun_vocab::human_bytes(labrun_dataset::space::agent_memory_bytes(2));
        assert!(
            text.contains(&format!(
                "the agent needs about {memory} of memory for the 2 files"
            )),
            "{text}"
        );
        assert!(!text.contains("will not hold it"), "{text}");
    }

    #[test]
    fn a_tree_the_vm_s_memory_cannot_hold_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let lab = lab_of(dir.path(), "dataset:\n  kind: files\n  path: data");
        let Machine::Vm(vm) = lab.machine() else {
            panic!("the test lab has a VM");
        };
        let memory = vm.memory.bytes();
        let for_the_agent = memory / 10 * 8;
        let fits = (for_the_agent - labrun_dataset::space::AGENT_BASE_BYTES)
            / labrun_dataset::space::AGENT_BYTES_PER_FILE;
        assert!(!memory_line(fits, &lab.machine()).contains("will not hold"));
        let Err(fraction) = labrun_dataset::space::memory_fit(fits * 4, for_the_agent) else {
            panic!("four times what fits fits");
        };
        let line = memory_line(fits * 4, &lab.machine());
        assert!(
            line.contains(&format!(
                "will not hold it: raise `vm.memory`, or add `sample: {{fraction: {fraction}}}`"
            )),
            "{line}"
        );
    }

    #[test]
    fn an_archive_the_guest_would_refuse_is_refused_before_anything_boots() {
        let dir = tempfile::tempdir().unwrap();
        let sha = tar_gz(dir.path(), "bad.tar.gz", &[("../escape", b"x")]);
        let lab = lab_of(
            dir.path(),
            &format!(
                "dataset:\n  kind: archive\n  artifact: {{file: {}, sha256: {sha}}}",
                dir.path().join("bad.tar.gz").display()
            ),
        );
        let text = describe(&lab, &dir.path().join("cache"), None).text;
        assert!(
            text.contains("tree 1: cannot be used:") && text.contains("entry `../escape`"),
            "{text}"
        );
    }

    #[test]
    fn an_archive_not_here_yet_is_described_by_its_declared_size() {
        let dir = tempfile::tempdir().unwrap();
        let lab = lab_of(
            dir.path(),
            "dataset:\n  kind: archive\n  artifact: {url: 'https://example.invalid/d.tar.xz', sha256: 5259c57ca92092da39bd2ea803046da0e3c28f2b6a11ea20f6297468188ceb67}\n  unpacked_size: 2GB",
        );
        let text = describe(&lab, &dir.path().join("cache"), None).text;
        assert!(
            text.contains("an archive declared to unpack to 1.86GiB (listed once it is fetched)"),
            "{text}"
        );
    }
}
