//! Every path and anchor of the site. Names from packs (tools, datasets,
//! machine classes) never become a path or an anchor as they are: each is
//! a few plain letters of it and a digest of all of it, so any name gives
//! a safe file name and two names never share one.

use labrun_report::MachineClass;
use sha2::{Digest, Sha256};

pub const INDEX: &str = "index.html";

fn short_digest(s: &str) -> String {
    hex::encode(&Sha256::digest(s.as_bytes())[..6])
}

/// `restic-1a2b3c4d5e6f`: lowercase ASCII letters and digits of the name
/// (at most 32), then its digest.
pub fn slug(name: &str) -> String {
    let plain: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .take(32)
        .collect();
    if plain.is_empty() {
        short_digest(name)
    } else {
        format!("{plain}-{}", short_digest(name))
    }
}

/// A tool's page, from the site's root.
pub fn tool_page(tool: &str) -> String {
    format!("tools/{}.html", slug(tool))
}

pub fn dataset_page(dataset: &str) -> String {
    format!("datasets/{}.html", slug(dataset))
}

/// A run's own report page; `digest` is a checked hex SHA-256.
pub fn run_report(digest: &str) -> String {
    format!("runs/{digest}/report.html")
}

/// The anchor of one dataset and class on a tool's page.
pub fn line_anchor(dataset: &str, class: &MachineClass) -> String {
    format!(
        "line-{}",
        short_digest(&format!("{dataset}\n{}", class.key()))
    )
}

/// The anchor of one class on the index and a dataset's page.
pub fn class_anchor(class: &MachineClass) -> String {
    format!("class-{}", short_digest(&class.key()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_safe_distinct_file_names() {
        let script = slug("<script>alert(1)</script>");
        assert!(script.starts_with("scriptalert1script-"), "{script}");
        assert!(
            script
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        );
        assert_ne!(slug("a/b"), slug("ab"));
        assert!(!slug("../..").contains('.'));
        assert!(!slug("").is_empty());
    }
}
