//! What stops a site from being written. Each message says what to do; a
//! run that cannot be shown is not an error of the site (it is listed as
//! left out, [`crate::Skipped`]).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error(transparent)]
    Store(#[from] labrun_store::StoreError),
    #[error(
        "{} exists and is not a site labrun wrote (it has no {} file): labrun site replaces only an earlier site and never deletes another folder; pass a new or empty folder as OUT",
        path.display(),
        crate::out_dir::MARKER
    )]
    ForeignOut { path: PathBuf },
    #[error(
        "{} is a symbolic link: labrun site does not write through a link; pass the folder it points to, or a new folder, as OUT",
        path.display()
    )]
    LinkOut { path: PathBuf },
    #[error("cannot write the site at {}: {source}; check that its parent folder exists and is writable, and that the disk has room", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the report page of run {run_id} (sha256:{digest}) was not made: {detail}")]
    Report {
        run_id: String,
        digest: String,
        detail: String,
    },
}
