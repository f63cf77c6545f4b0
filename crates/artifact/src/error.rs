//! Everything that can go wrong with an artifact, each worded so the user
//! knows what happened and what to do next.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// A rule of the `artifact:` block ([`crate::spec::rules`]); `field`
    /// is its path below the block (`apt.package`).
    #[error("artifact spec: `{field}`: {problem}")]
    Spec { field: String, problem: String },

    #[error(
        "{name}: SHA-256 mismatch for {origin}\n  expected {expected}\n  actual   {actual}\n\
         the file was not kept; nothing was installed. If the upstream file really changed, \
         review why, then re-pin it (`labrun pin` for a tool; the `sha256:` in the lab file)"
    )]
    DigestMismatch {
        name: String,
        /// The URL, file path, mirror path or apt package the bytes came from.
        origin: String,
        expected: String,
        actual: String,
    },

    #[error(
        "{name}: the download of {url} was cut short ({received} of {expected} bytes); \
         the partial file was not kept. Run again, or use --mirror DIR with a complete copy"
    )]
    Truncated {
        name: String,
        url: String,
        received: u64,
        expected: u64,
    },

    #[error("{name}: the download of {url} was stopped: {refused}")]
    Redirect {
        name: String,
        url: String,
        refused: crate::redirect::RedirectRefused,
    },

    #[error(
        "{name}: {url} sends more than {limit} bytes, more than labrun accepts for one \
         artifact; the download was stopped and nothing was kept. Check the URL in the lab file"
    )]
    TooLarge {
        name: String,
        url: String,
        limit: u64,
    },

    #[error(
        "{name}: the download of {url} did not finish within {}s ({received} bytes received); \
         the partial file was not kept. Run again on a faster link, or use --mirror DIR with a \
         complete copy",
        limit.as_secs()
    )]
    TooSlow {
        name: String,
        url: String,
        received: u64,
        limit: std::time::Duration,
    },

    #[error(
        "{name}: {url} answered HTTP {status}; check the URL (and the version in it) in the lab file"
    )]
    HttpStatus {
        name: String,
        url: String,
        status: u16,
    },

    #[error(
        "{name}: cannot download {url}: {detail}\n  if this host is offline, put `{file_name}` in a \
         folder and pass --mirror DIR (or set LABRUN_MIRROR)"
    )]
    Unreachable {
        name: String,
        url: String,
        file_name: String,
        detail: String,
    },

    #[error(
        "{name}: `apt-get download {package}={version}` failed: {detail}\n  check \
         `apt-cache policy {package}` for the versions this host's apt offers (and run \
         `apt-get update` if its lists are old), or put the .deb in a --mirror folder"
    )]
    Apt {
        name: String,
        package: String,
        version: String,
        detail: String,
    },

    #[error("{name}: cannot read {}: {source}; check the `file:` path in the lab file", path.display())]
    SourceFile {
        name: String,
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{name}: {what} {}: {source}", path.display())]
    Io {
        name: String,
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "{name}: `{member}` is not in {archive}; it holds {count} entries, starting with: {first}\n  \
         fix the member path in the lab file's `extract:`"
    )]
    MissingMember {
        name: String,
        member: String,
        archive: String,
        count: usize,
        first: String,
    },

    #[error("{name}: cannot extract from {archive}: {detail}")]
    BadArchive {
        name: String,
        archive: String,
        detail: String,
    },

    #[error(
        "{name}: the extracted binary's SHA-256 differs from the pinned binary_sha256\n  \
         expected {expected}\n  actual   {actual}\n  the binary was not kept. Check `extract:` \
         and `binary_sha256` in the lab file"
    )]
    BinaryDigestMismatch {
        name: String,
        expected: String,
        actual: String,
    },

    #[error(
        "{name}: the build failed at `{step}`: {detail}\n  every command and its output \
         are in {}",
        log.display()
    )]
    Build {
        name: String,
        step: String,
        detail: String,
        log: PathBuf,
    },

    #[error("{name}: the build needs {wanted}, but the host has: {found}\n  {hint}")]
    Toolchain {
        name: String,
        wanted: String,
        found: String,
        hint: String,
    },

    #[error(
        "{name}: the module proxy's {module} has hash {actual}, but the lab pins {expected}\n  \
         nothing was built. A published module version never changes: check the version and \
         `sum` in the lab file (go.sum of any project that uses it has the hash)"
    )]
    ModuleSumMismatch {
        name: String,
        module: String,
        expected: String,
        actual: String,
    },

    #[error(
        "{name}: the source from {origin} has git tree {actual}, but the lab pins tree \
         {expected}\n  nothing was built. A tree id names the source's exact files: check \
         the archive or commit and `tree:` in the lab file (in an unpacked tree, `git init \
         && git add -A -f && git write-tree` prints its id)"
    )]
    SourceTreeMismatch {
        name: String,
        origin: String,
        expected: String,
        actual: String,
    },

    #[error(
        "{name}: the binary from {recipe} has SHA-256 {actual}, but the lab pins {expected}\n  \
         nothing was installed. The same inputs build the same bytes: if you changed the \
         version, flags or toolchain on purpose, review the build (log and build info in {}) \
         and pin `sha256: {actual}`",
        dir.display()
    )]
    BuiltDigestMismatch {
        name: String,
        recipe: String,
        expected: String,
        actual: String,
        dir: PathBuf,
    },

    #[error("cannot start the HTTP client: {0}")]
    Client(String),

    #[error("checksum list {url}: {problem}")]
    Checksums { url: String, problem: String },

    #[error("lab file {}: {problem}", path.display())]
    LabEdit { path: PathBuf, problem: String },
}
