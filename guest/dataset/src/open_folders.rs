//! The folders a stream of entries in manifest order is still inside, or
//! not yet inside: what a streamed pass needs to act on a folder for the
//! entries under it without holding the tree.
//!
//! A folder's entries are not those that follow it: `/` sorts after `.`
//! and `-`, so `a`, `a-b`, `a.b/x`, `a/x` is manifest order and only the
//! last is in `a`. A folder stays open from its own entry until a path
//! past `a/` and every path under it comes; the open folders are a chain
//! (each later one sorts inside or before the range of the earlier ones),
//! about as long as paths are deep, and they close last opened first.

/// Open folders (by path), each with a value of the caller's.
pub(crate) struct OpenFolders<T> {
    /// (folder path with a trailing `/`, value), in the order opened.
    open: Vec<(String, T)>,
}

impl<T> OpenFolders<T> {
    pub(crate) fn new() -> OpenFolders<T> {
        OpenFolders { open: Vec::new() }
    }

    /// The folder `path` (the entry just read) opens.
    pub(crate) fn open(&mut self, path: &str, value: T) {
        self.open.push((format!("{path}/"), value));
    }

    /// One folder that `path` (the next path in manifest order) has passed
    /// the range of, last opened first; `None` once no more are closed.
    pub(crate) fn close_passed(&mut self, path: &str) -> Option<T> {
        let (prefix, _) = self.open.last()?;
        if path > prefix.as_str() && !path.starts_with(prefix.as_str()) {
            return self.open.pop().map(|(_, value)| value);
        }
        None
    }

    /// The values of the open folders that hold `path`: its folders in the
    /// tree, shallowest first.
    pub(crate) fn holding<'a>(&'a mut self, path: &'a str) -> impl Iterator<Item = &'a mut T> {
        self.open
            .iter_mut()
            .filter(move |(prefix, _)| path.starts_with(prefix.as_str()))
            .map(|(_, value)| value)
    }

    /// The folders still open, last opened first (the stream ended).
    pub(crate) fn close(&mut self) -> Option<T> {
        self.open.pop().map(|(_, value)| value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_closes_after_its_entries_not_after_its_dotted_siblings() {
        let mut open = OpenFolders::new();
        let mut closed = Vec::new();
        let mut held: Vec<(&str, String)> = Vec::new();
        for path in ["a", "a-b", "a-b/x", "a.b", "a/b", "a/b/c", "a/d", "a0"] {
            while let Some(folder) = open.close_passed(path) {
                closed.push(folder);
            }
            let holders: Vec<&str> = open.holding(path).map(|f| *f).collect();
            held.push((path, holders.join(",")));
            if ["a", "a-b", "a/b"].contains(&path) {
                open.open(path, path);
            }
        }
        while let Some(folder) = open.close() {
            closed.push(folder);
        }
        assert_eq!(closed, ["a-b", "a/b", "a"]);
        assert_eq!(
            held,
            [
                ("a", "".to_string()),
                ("a-b", "".to_string()),
                ("a-b/x", "a-b".to_string()),
                ("a.b", "".to_string()),
                ("a/b", "a".to_string()),
                ("a/b/c", "a,a/b".to_string()),
                ("a/d", "a".to_string()),
                ("a0", "".to_string()),
            ]
        );
    }
}
