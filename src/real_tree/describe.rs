//! `labrun check`'s lines for a real tree: its size and file count, read
//! before anything boots, and the free disk the machine needs for it.

use super::push::host_folder;
use super::survey::survey;
use labrun_lab::real_tree::{DEFAULT_EXPANSION, TreeSpec};
use labrun_lab::{DatasetSpec, Lab, Machine};
use std::path::Path;

/// The lines, or nothing for a generated dataset.
pub fn describe(lab: &Lab, cache: &Path, mirror: Option<&Path>) -> String {
    let on_target = matches!(lab.machine(), Machine::Target(_));
    let trees: Vec<Tree> = match &lab.dataset {
        DatasetSpec::Files(d) => vec![Tree::Folder(&d.path)],
        DatasetSpec::Archive(d) => vec![Tree::Archive(
            &d.artifact,
            d.unpacked_size.map(|s| s.bytes()),
        )],
        DatasetSpec::Trees(d) => d
            .trees
            .iter()
            .map(|t| match t {
                TreeSpec::Files(p) => Tree::Folder(p),
                TreeSpec::Archive(a) => {
                    Tree::Archive(&a.artifact, a.unpacked_size.map(|s| s.bytes()))
                }
            })
            .collect(),
        DatasetSpec::Synthetic { .. } | DatasetSpec::GitHistory { .. } => return String::new(),
    };
    let mut out = String::from("data on this machine:\n");
    let mut largest = 0u64;
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
                        format!(
                            "{} files, {} in {} folders ({} symbolic links)",
                            s.files,
                            labrun_vocab::human_bytes(s.bytes),
                            s.dirs,
                            s.symlinks
                        )
                    }
                    Err(why) => format!("cannot be used: {why}"),
                }
            }
            Tree::Archive(spec, declared) => {
                let r = labrun_artifact::resolve_offline(spec, cache, mirror);
                match declared {
                    Some(b) => {
                        largest = largest.max(*b);
                        format!(
                            "an archive declared to unpack to {}; {}",
                            labrun_vocab::human_bytes(*b),
                            crate::terminal::one_line(&r.to_string())
                        )
                    }
                    None => format!(
                        "an archive of undeclared size (unpacking stops at {DEFAULT_EXPANSION} times the archive's: add `unpacked_size:` to size the disk); {}",
                        crate::terminal::one_line(&r.to_string())
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
    out
}

enum Tree<'l> {
    Folder(&'l str),
    Archive(&'l labrun_artifact::ArtifactSpec, Option<u64>),
}
