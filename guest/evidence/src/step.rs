//! The name of a step, as records, events, logs and reports call it.
//!
//! A name, not a closed list: the published cycle's steps have constants
//! here, and a lab's own protocol may name any other (`check`, `prune`,
//! `stats`) without a change to labrun.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Step(Cow<'static, str>);

impl Step {
    /// The pristine source tree of a tool cycle (and the run's dataset, cycle 0).
    pub const GENERATE: Step = Step::fixed("generate");
    pub const INIT: Step = Step::fixed("init");
    pub const BACKUP_FULL: Step = Step::fixed("backup_full");
    pub const CHANGE: Step = Step::fixed("change");
    pub const BACKUP_INCREMENTAL: Step = Step::fixed("backup_incremental");
    pub const RESTORE: Step = Step::fixed("restore");
    pub const VERIFY: Step = Step::fixed("verify");
    /// The metadata-fidelity fixture written (see `protocol::ProtocolStep::Fixture`).
    pub const FIXTURE: Step = Step::fixed("fixture");

    const fn fixed(name: &'static str) -> Step {
        Step(Cow::Borrowed(name))
    }

    /// A step a lab names. Whether the name is allowed is the plan check's
    /// business ([`Step::check_name`]).
    pub fn named(name: impl Into<String>) -> Step {
        Step(Cow::Owned(name.into()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The word rule step names and snapshot labels share: 1-40 of
    /// `a-z 0-9 _`, starting with a letter (safe in a file name, a shell
    /// word and a table header alike).
    pub fn is_plain_word(s: &str) -> bool {
        (1..=40).contains(&s.len())
            && s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    }

    /// Names go into file names and table headers: 1-40 of `a-z 0-9 _`,
    /// starting with a letter.
    pub fn check_name(name: &str) -> Result<(), String> {
        if Self::is_plain_word(name) {
            Ok(())
        } else {
            Err(format!(
                "step name {name:?}: use 1-40 of a-z, 0-9 and _, starting with a letter (e.g. check_all_data)"
            ))
        }
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Step {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_its_name() {
        assert_eq!(
            serde_json::to_string(&Step::BACKUP_FULL).unwrap(),
            "\"backup_full\""
        );
        let s: Step = serde_json::from_str("\"stats\"").unwrap();
        assert_eq!(s, Step::named("stats"));
        let s: Step = serde_json::from_str("\"restore\"").unwrap();
        assert_eq!(s, Step::RESTORE);
    }

    #[test]
    fn names() {
        assert!(Step::check_name("check_all_data").is_ok());
        for bad in ["", "Check", "1st", "a-b", "a b", &"x".repeat(41)] {
            assert!(Step::check_name(bad).is_err(), "{bad:?}");
        }
    }
}
