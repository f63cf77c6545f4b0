//! The entry rules: which names and link targets an archive may hold. Each
//! rule is here once; the formats only hand over raw bytes.
//!
//! - A name is UTF-8 (manifests name files in UTF-8), holds no NUL, is not
//!   absolute and has no `..` component. `.` and empty components (`./a`,
//!   `a//b`) are dropped, as tar does; what is left names a place under the
//!   tree's root, the root itself when nothing is left.
//! - What is left fits Linux, so every name the listing accepts can be
//!   made: at most [`MAX_PATH_BYTES`] bytes, each component at most
//!   [`MAX_COMPONENT_BYTES`], and at most [`MAX_DEPTH`] components (a
//!   bound of labrun's: what a deep name costs to list and to reach grows
//!   with its depth, and it is checked before either keeps anything).
//! - A symbolic link's target is relative, and its `..` components all come
//!   first and climb no higher than the link's own folder (counted from the
//!   link's folder, which the unpacker made as a real folder). A `..` after
//!   a name is refused too: the name may be a link, and `r/..` with
//!   `r -> .` at the root climbs out of the tree though it reads as staying.
//!   With that rule every link, followed through any chain of the tree's
//!   links, stays in the tree.
//! - A hard link's target is a name (the rules above), never the root. A
//!   hard link to a symbolic link is that link again at the hard link's
//!   place: its target is checked there by the rule above, or `a/b/l ->
//!   ../..` hard-linked at the root would lead two folders above the tree.

use std::fmt;

/// The most components a name may have: far deeper than a real tree (the
/// Linux sources are under 20 deep).
pub const MAX_DEPTH: usize = 1024;
/// The most bytes a name or a link target may have: below Linux's PATH_MAX
/// (4096 with the closing NUL), so a tool can be handed it whole.
pub const MAX_PATH_BYTES: usize = 4095;
/// The most bytes of one component: Linux's NAME_MAX, what file systems take.
pub const MAX_COMPONENT_BYTES: usize = 255;

/// A name checked against the rules: relative, `/`-separated, no `.`,
/// `..` or empty components; empty for the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EntryPath(String);

impl EntryPath {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The folder the entry is in ("" for the root's), and its own name.
    pub fn split(&self) -> (&str, &str) {
        match self.0.rsplit_once('/') {
            Some((dir, name)) => (dir, name),
            None => ("", &self.0),
        }
    }

    /// How many folders below the root the entry's folder is.
    fn folder_depth(&self) -> usize {
        self.0.matches('/').count()
    }
}

impl fmt::Display for EntryPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() { "." } else { &self.0 })
    }
}

/// Why a name or target breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Broken {
    /// Not UTF-8 (the caller names the entry with its bytes shown lossily).
    NotUtf8,
    /// Would reach outside the tree, or cannot be a file name at all.
    Unsafe(String),
    /// Deeper or longer than a tree labrun unpacks can hold.
    TooLong(String),
}

impl Broken {
    /// The fault of an entry whose `what` ("name", "link target") broke a rule.
    pub fn fault(self, what: &'static str) -> super::Fault {
        match self {
            Broken::NotUtf8 => super::Fault::NotUtf8(what),
            Broken::Unsafe(reason) => super::Fault::Unsafe(reason),
            Broken::TooLong(detail) => super::Fault::Unsupported(detail),
        }
    }
}

/// Checks an entry's raw name.
pub(super) fn entry_path(raw: &[u8]) -> Result<EntryPath, Broken> {
    let name = std::str::from_utf8(raw).map_err(|_| Broken::NotUtf8)?;
    if name.contains('\0') {
        return Err(Broken::Unsafe("has a NUL byte in its name".into()));
    }
    if name.starts_with('/') {
        return Err(Broken::Unsafe(
            "is an absolute path, which would be written outside the tree".into(),
        ));
    }
    let mut parts = Vec::new();
    for part in name.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                return Err(Broken::Unsafe(
                    "has a `..` component, which climbs out of the folder it names".into(),
                ));
            }
            _ if part.len() > MAX_COMPONENT_BYTES => {
                return Err(Broken::TooLong(format!(
                    "has a component of {} bytes, longer than a file name may be \
                     ({MAX_COMPONENT_BYTES} bytes, Linux's NAME_MAX): repack the archive \
                     without it",
                    part.len()
                )));
            }
            _ if parts.len() == MAX_DEPTH => {
                return Err(Broken::TooLong(format!(
                    "is more than {MAX_DEPTH} folders deep, the deepest path labrun unpacks \
                     (a real tree is far shallower: the Linux sources are under 20 deep): \
                     repack the archive without it"
                )));
            }
            _ => parts.push(part),
        }
    }
    let path = parts.join("/");
    if path.len() > MAX_PATH_BYTES {
        return Err(Broken::TooLong(format!(
            "has a name of {} bytes, longer than a path may be ({MAX_PATH_BYTES} bytes, \
             Linux's PATH_MAX): repack the archive without it",
            path.len()
        )));
    }
    Ok(EntryPath(path))
}

/// Checks a symbolic link's raw target against the link's own place.
pub(super) fn symlink_target<'a>(link: &EntryPath, raw: &'a [u8]) -> Result<&'a str, Broken> {
    let target = std::str::from_utf8(raw).map_err(|_| Broken::NotUtf8)?;
    if target.is_empty() {
        return Err(Broken::Unsafe(
            "is a symbolic link with an empty target".into(),
        ));
    }
    if target.contains('\0') {
        return Err(Broken::Unsafe("has a NUL byte in its link target".into()));
    }
    if target.len() > MAX_PATH_BYTES {
        return Err(Broken::TooLong(format!(
            "is a symbolic link whose target is {} bytes, longer than a path may be \
             ({MAX_PATH_BYTES} bytes, Linux's PATH_MAX): repack the archive without it",
            target.len()
        )));
    }
    if target.starts_with('/') {
        return Err(Broken::Unsafe(format!(
            "is a symbolic link to the absolute path `{target}`, outside the tree"
        )));
    }
    let mut depth = link.folder_depth();
    let mut after_name = false;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." if after_name => {
                return Err(Broken::Unsafe(format!(
                    "is a symbolic link to `{target}`, with a `..` after a name: through \
                     another link that name could lead out of the tree"
                )));
            }
            ".." if depth == 0 => {
                return Err(Broken::Unsafe(format!(
                    "is a symbolic link to `{target}`, which climbs above the tree's root"
                )));
            }
            ".." => depth -= 1,
            _ => after_name = true,
        }
    }
    Ok(target)
}

/// Checks a hard link's raw target (a name in the archive).
pub(super) fn hard_link_target(raw: &[u8]) -> Result<EntryPath, Broken> {
    let target = entry_path(raw)?;
    if target.is_root() {
        return Err(Broken::Unsafe(
            "is a hard link to the tree's root folder".into(),
        ));
    }
    Ok(target)
}

/// Checks that a hard link at `link` to `to`, a symbolic link to
/// `points_to`, is a link that stays in the tree from the hard link's place.
pub(super) fn hard_link_to_symlink(
    link: &EntryPath,
    to: &EntryPath,
    points_to: &str,
) -> Result<(), Broken> {
    match symlink_target(link, points_to.as_bytes()) {
        Ok(_) => Ok(()),
        Err(Broken::Unsafe(reason)) => Err(Broken::Unsafe(format!(
            "is a hard link to `{to}`, a symbolic link; placed here it {reason}"
        ))),
        Err(other) => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> EntryPath {
        entry_path(s.as_bytes()).unwrap()
    }

    #[test]
    fn names_are_normalised_or_refused() {
        assert_eq!(path("./a//b/./c").as_str(), "a/b/c");
        assert_eq!(path("a/b/").as_str(), "a/b");
        assert!(path("./").is_root());
        assert_eq!(path("a/b/c").split(), ("a/b", "c"));
        assert_eq!(path("c").split(), ("", "c"));
        for bad in ["/etc/passwd", "../x", "a/../../x", "a/..", "a\0b"] {
            assert!(
                matches!(entry_path(bad.as_bytes()), Err(Broken::Unsafe(_))),
                "{bad:?}"
            );
        }
        assert_eq!(entry_path(b"caf\xe9"), Err(Broken::NotUtf8));
    }

    #[test]
    fn link_targets_stay_in_the_tree() {
        let deep = path("a/b/link");
        for ok in ["x", "../x", "../../x", "./../x/y", "../../a/b/c/", "."] {
            assert!(symlink_target(&deep, ok.as_bytes()).is_ok(), "{ok}");
        }
        for bad in ["../../../x", "/etc", "r/..", "x/../../y", "", "../../.."] {
            assert!(symlink_target(&deep, bad.as_bytes()).is_err(), "{bad:?}");
        }
        let top = path("link");
        assert!(symlink_target(&top, b"..").is_err());
        assert!(symlink_target(&top, b"x/y").is_ok());
        assert_eq!(symlink_target(&top, b"\xff"), Err(Broken::NotUtf8));
        assert!(hard_link_target(b"./").is_err());
        assert!(hard_link_target(b"../x").is_err());
        assert_eq!(hard_link_target(b"./a/f").unwrap().as_str(), "a/f");
    }
}
