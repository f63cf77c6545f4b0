//! The rest server: restic's rest-server, the lab's pinned binary, serving
//! the run's work root with no authentication (nothing but the agent can
//! reach its address). A tool cycle's repository `<root>/c1-restic/repo` is
//! the URL path `/c1-restic/repo/`: rest-server 0.14 serves repositories
//! nested up to two folders deep (its `MaxFolderDepth`).

use std::path::Path;

/// `listen`: the server's address and port in its namespace.
pub fn argv(binary: &str, root: &Path, listen: &str) -> Vec<String> {
    vec![
        binary.to_string(),
        "--path".into(),
        root.to_string_lossy().into_owned(),
        "--listen".into(),
        listen.to_string(),
        "--no-auth".into(),
    ]
}
