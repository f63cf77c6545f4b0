//! What can stop a pack from being written or opened; each names the file or
//! the archive entry at fault.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "cannot write {path}: {source}; check that the folder is writable and the disk is not full"
    )]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{path} is not a run folder: pass the folder that holds raw/")]
    NotARunFolder { path: PathBuf },

    #[error(
        "{path} cannot be packed: {reason}; a pack holds regular files and folders only, so move it out of the run folder"
    )]
    Unpackable { path: PathBuf, reason: String },

    #[error("{path} is inside the run folder it packs: write the pack beside the folder")]
    OutputInsideRun { path: PathBuf },

    #[error("{path} is not a readable run pack ({reason}); make it again with `labrun pack`")]
    NotAPack { path: PathBuf, reason: String },

    #[error("{pack}: entry `{entry}` refused: {reason}")]
    Refused {
        pack: PathBuf,
        entry: String,
        reason: String,
    },

    #[error(
        "{pack}: `{file}` does not match the manifest ({detail}): the file was changed after the run was packed"
    )]
    Tampered {
        pack: PathBuf,
        file: String,
        detail: String,
    },

    #[error(
        "{pack}: `{file}` is in the manifest but not in the pack: a file was removed after the run was packed"
    )]
    Missing { pack: PathBuf, file: String },

    #[error(
        "{pack}: `{file}` is in the pack but not in its manifest: a file was added after the run was packed"
    )]
    Extra { pack: PathBuf, file: String },

    #[error(
        "{path} holds a run of its own (raw/): the summaries of another run are not written over its; pass --out with a new or empty folder"
    )]
    OutputHoldsRun { path: PathBuf },

    #[error(
        "{path} cannot be packed: {reason}, which `labrun report` would refuse to open; move out what is not evidence (`du -ah RUN_DIR | sort -h | tail` lists the largest files), or share the run folder itself"
    )]
    TooLarge { path: PathBuf, reason: String },

    #[error("{pack}: the manifest is not valid ({reason}); make the pack again with `labrun pack`")]
    BadManifest { pack: PathBuf, reason: String },
}
