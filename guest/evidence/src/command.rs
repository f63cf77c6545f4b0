//! A command of a tool: the one type the lab file, the plan and the agent
//! share.

use serde::{Deserialize, Serialize};

/// An argv list, run without a shell, with placeholders `{bin}` `{repo}`
/// `{source}` `{target}` `{snapshot}` `{work}`. Written either as the list
/// itself, `["{bin}", "init", "-r", "{repo}"]`, or as a mapping when it needs
/// a working directory: `{argv: [...], cwd: "{target}"}`. A pipeline is
/// written `["sh", "-c", "..."]` explicitly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandTemplate {
    pub argv: Vec<String>,
    /// Working directory (placeholders allowed); default: the tool's work dir.
    pub cwd: Option<String>,
}

/// Placeholders a command template may use: the tool cycle's own, then
/// where its repository is on a storage server
/// ([`crate::storage::placeholders`]).
pub const PLACEHOLDERS: &[&str] = &[
    "bin",
    "repo",
    "source",
    "target",
    "snapshot",
    "work",
    "repo_path",
    "repo_host",
    "repo_port",
    "repo_user",
    "repo_url",
    "ssh_config",
    "ssh_key",
    "known_hosts",
    "s3_bucket",
    "s3_access_key",
    "s3_secret_key",
];

impl<'de> Deserialize<'de> for CommandTemplate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CommandTemplate, D::Error> {
        use serde::de::{self, MapAccess, SeqAccess, Visitor, value};

        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Full {
            argv: Vec<String>,
            #[serde(default)]
            cwd: Option<String>,
        }

        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CommandTemplate;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an argv list like [\"{bin}\", \"init\"] or {argv: [...], cwd: ...}")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<CommandTemplate, A::Error> {
                let argv = Vec::<String>::deserialize(value::SeqAccessDeserializer::new(seq))?;
                Ok(CommandTemplate { argv, cwd: None })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CommandTemplate, A::Error> {
                let full = Full::deserialize(value::MapAccessDeserializer::new(map))?;
                Ok(CommandTemplate {
                    argv: full.argv,
                    cwd: full.cwd,
                })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CommandTemplate, E> {
                Err(E::custom(format!(
                    "a command is an argv list, not a string: write [{}] (a shell pipeline: [\"sh\", \"-c\", \"...\"])",
                    v.split_whitespace()
                        .map(|w| format!("\"{w}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// The next `{name}` in `text` whose name is placeholder-shaped (a
/// lowercase identifier, `[a-z_][a-z0-9_]*`): the text before it, the name,
/// and the text after it. The one rule of the host (`labrun check` refuses
/// unknown names) and the agent (it substitutes the known ones); anything
/// else in braces (`${HOME}`, awk's `{print $1}`, `find -exec {} +`) is left
/// to the program.
pub fn next_placeholder(text: &str) -> Option<(&str, &str, &str)> {
    let mut from = 0;
    while let Some(open) = text[from..].find('{').map(|i| from + i) {
        let tail = &text[open + 1..];
        if let Some(close) = tail.find('}') {
            let name = &tail[..close];
            let mut chars = name.chars();
            let shaped = matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
                && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if shaped {
                return Some((&text[..open], name, &tail[close + 1..]));
            }
        }
        from = open + 1;
    }
    None
}

/// Commands with a meaning of their own besides being run by a step: the
/// agent runs them after a step, the host at `up`.
pub mod roles {
    /// Prints the tool's version (recorded as evidence at `up`/`bench`).
    pub const VERSION: &str = "version";
    /// Prints the id of the snapshot just made (last non-empty stdout line);
    /// when absent, `{snapshot}` is labrun's label (`s1`, `s2`).
    pub const SNAPSHOT_ID: &str = "snapshot_id";
    /// Prints the repository size in bytes; when absent the agent measures
    /// the repository folder.
    pub const REPO_SIZE: &str = "repo_size";
    /// Lists the snapshots (kept in the logs for a reader).
    pub const SNAPSHOTS: &str = "snapshots";

    pub const ALL: &[&str] = &[VERSION, SNAPSHOT_ID, REPO_SIZE, SNAPSHOTS];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_storage_placeholder_is_a_placeholder() {
        for p in crate::storage::placeholders::ALL {
            assert!(PLACEHOLDERS.contains(p), "{p}");
        }
    }

    #[test]
    fn placeholder_shaped_names_only() {
        assert_eq!(
            next_placeholder("a {repo}/x{work}"),
            Some(("a ", "repo", "/x{work}"))
        );
        for left_alone in [
            "${HOME}",
            "{print $1}",
            "-exec {} +",
            "{Bin}",
            "{9x}",
            "{unclosed",
        ] {
            assert_eq!(next_placeholder(left_alone), None, "{left_alone}");
        }
        assert_eq!(next_placeholder("{{bin}}"), Some(("{", "bin", "}")));
    }

    #[test]
    fn both_forms() {
        let c: CommandTemplate = serde_json::from_str(r#"["{bin}","init"]"#).unwrap();
        assert_eq!(c.argv, ["{bin}", "init"]);
        let c: CommandTemplate =
            serde_json::from_str(r#"{"argv":["x"],"cwd":"{target}"}"#).unwrap();
        assert_eq!(c.cwd.as_deref(), Some("{target}"));
        let e = serde_json::from_str::<CommandTemplate>(r#""restic init""#).unwrap_err();
        assert!(e.to_string().contains("[\"restic\", \"init\"]"), "{e}");
    }
}
