//! The `apt:` source: a Debian package the host's apt downloads by name and
//! version ([`crate::apt`] does the download).

use super::SpecProblem;
use crate::debian;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AptPackage {
    pub package: String,
    pub version: String,
    /// The Debian suite to take it from (`trixie`, `sid`, ...) when it is not
    /// the host's own: the host's archive is asked for that suite through a
    /// sources list and package lists of labrun's own ([`crate::apt`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
}

impl AptPackage {
    /// Debian's rules for the name, the version and the suite; fields are
    /// named below `apt` (`package`, `version`, `suite`).
    pub fn problems(&self) -> Vec<SpecProblem> {
        let mut out = Vec::new();
        if !debian::is_package_name(&self.package) {
            out.push(SpecProblem::new(
                "package",
                format!(
                    "`{}` is not a Debian package name (lowercase letters, digits, `+-.`)",
                    self.package
                ),
            ));
        }
        if !debian::is_version(&self.version) {
            out.push(SpecProblem::new(
                "version",
                format!(
                    "`{}` is not a package version: use the exact one `apt-cache policy {}` shows, e.g. `0.14.0-1+b5`",
                    self.version, self.package
                ),
            ));
        }
        if let Some(suite) = &self.suite
            && !debian::is_suite_name(suite)
        {
            out.push(SpecProblem::new(
                "suite",
                format!("`{suite}` is not a Debian suite name: e.g. bookworm, trixie, sid"),
            ));
        }
        out
    }

    pub fn provenance(&self) -> String {
        format!(
            "apt package {}={} from Debian {}",
            self.package,
            self.version,
            self.suite
                .as_deref()
                .map(|s| format!("suite {s} (the host's archive)"))
                .unwrap_or_else(|| "as the host's apt sources serve it".into())
        )
    }
}
