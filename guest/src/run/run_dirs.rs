//! Where a run writes, resolved before anything is written. The work tree
//! (`<work>/<run_id>`) is removed at the end and holds gigabytes: evidence
//! inside it would be deleted with it, and it inside the evidence would be
//! pulled back to the host. So the two must not overlap, and that is judged
//! on the paths symlinks resolve to, not on how they are spelled.

use crate::run::error::RunError;
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDirs {
    /// The work folder, created, canonical.
    pub work: PathBuf,
    /// `work/<run_id>`: must not exist yet.
    pub root: PathBuf,
    /// The evidence folder, resolved (it may not exist yet).
    pub evidence: PathBuf,
}

/// Creates the work folder (it is the agent's; the evidence folder is left
/// for [`crate::run::evidence::Evidence::create`]) and resolves both.
pub fn resolve(work: &Path, evidence: &Path, run_id: &str) -> Result<RunDirs, RunError> {
    let work_abs = std::path::absolute(work)
        .map_err(|e| RunError::io("cannot resolve work directory", work, e))?;
    let evidence_abs = std::path::absolute(evidence)
        .map_err(|e| RunError::io("cannot resolve evidence directory", evidence, e))?;
    // As spelled first, so a plain overlap creates nothing.
    check_apart(&work_abs.join(run_id), &evidence_abs)?;
    std::fs::create_dir_all(&work_abs)
        .map_err(|e| RunError::io("cannot create work directory", &work_abs, e))?;
    let work = std::fs::canonicalize(&work_abs)
        .map_err(|e| RunError::io("cannot resolve work directory", &work_abs, e))?;
    let root = work.join(run_id);
    if std::fs::symlink_metadata(&root).is_ok() {
        return Err(RunError::WorkExists { path: root });
    }
    let evidence = resolve_maybe_missing(&evidence_abs)
        .map_err(|e| RunError::io("cannot resolve evidence directory", &evidence_abs, e))?;
    check_apart(&root, &evidence)?;
    Ok(RunDirs {
        work,
        root,
        evidence,
    })
}

fn check_apart(root: &Path, evidence: &Path) -> Result<(), RunError> {
    if evidence.starts_with(root) || root.starts_with(evidence) {
        return Err(RunError::Overlap {
            work: root.to_path_buf(),
            evidence: evidence.to_path_buf(),
        });
    }
    Ok(())
}

/// The canonical form of `path` (absolute), which may not exist yet: its
/// deepest existing ancestor canonicalized (every symlink resolved; a
/// dangling one is an error), then the missing rest, which holds no
/// symlinks since it does not exist. A `..` in the missing rest cannot be
/// resolved and is refused.
fn resolve_maybe_missing(path: &Path) -> std::io::Result<PathBuf> {
    let mut existing = path;
    let mut missing = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
            break;
        };
        missing.push(name.to_owned());
        existing = parent;
    }
    let mut resolved = std::fs::canonicalize(existing)?;
    for name in missing.iter().rev() {
        match Path::new(name).components().next() {
            Some(Component::Normal(n)) => resolved.push(n),
            Some(Component::CurDir) => {}
            _ => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "`..` after a folder that does not exist",
                ));
            }
        }
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_symlink_into_the_work_tree_is_an_overlap() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        // The evidence folder's parent leads into work/<run_id>.
        symlink(work.join("run"), dir.path().join("sneaky")).unwrap();
        let err = resolve(&work, &dir.path().join("sneaky"), "run");
        // A dangling symlink cannot be resolved: refused either way.
        assert!(err.is_err());
        // A work folder spelled through a symlink, evidence under its target.
        symlink(&work, dir.path().join("work-link")).unwrap();
        let err = resolve(
            &dir.path().join("work-link"),
            &work.join("run/evidence"),
            "run",
        )
        .unwrap_err();
        assert!(matches!(err, RunError::Overlap { .. }), "{err}");
        assert!(!work.join("run").exists(), "nothing was created");
    }

    #[test]
    fn separate_folders_resolve_to_their_canonical_paths() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let d = resolve(&dir.path().join("w"), &dir.path().join("e/./f"), "r").unwrap();
        assert_eq!(d.work, base.join("w"));
        assert_eq!(d.root, base.join("w/r"));
        assert_eq!(d.evidence, base.join("e/f"));
        assert!(d.work.is_dir() && !d.evidence.exists());
    }

    #[test]
    fn dot_dot_after_a_missing_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing/../e");
        assert!(resolve_maybe_missing(&p).is_err());
    }
}
