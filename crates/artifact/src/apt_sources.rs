//! The host's configured apt sources, as the `deb URI SUITE COMPONENTS` lines
//! mmdebstrap and apt take. The image and the apt artifacts come from exactly
//! the archive the host uses, so no mirror is ever named in labrun itself.
//! Another suite than the host's (trixie, sid) is asked of the same archive.

use std::path::Path;

/// The host's sources cannot serve what was asked.
#[derive(Debug, thiserror::Error)]
pub enum AptSourcesError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    NoSource(String),
}

/// Suites without `-updates` and `-security` companions.
const ROLLING: &[&str] = &["sid", "unstable", "experimental"];

/// One usable source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AptSource {
    pub uri: String,
    pub suite: String,
    pub components: Vec<String>,
}

impl AptSource {
    pub fn mmdebstrap_line(&self) -> String {
        format!(
            "deb {} {} {}",
            self.uri,
            self.suite,
            self.components.join(" ")
        )
    }
}

/// Reads `/etc/apt/sources.list` and `sources.list.d/*.list|*.sources` under
/// `apt_dir` and keeps the binary sources of `suite` and its companions
/// (`bookworm-updates`, `bookworm-security`). Other repositories the host
/// uses (third-party, other suites) are left out.
pub fn host_sources(apt_dir: &Path, suite: &str) -> Result<Vec<AptSource>, AptSourcesError> {
    let mut out = all_host_sources(apt_dir)?;
    out.retain(|s| s.suite == suite || s.suite.starts_with(&format!("{suite}-")));
    out.dedup();
    if !out.iter().any(|s| s.suite == suite) {
        return Err(AptSourcesError::NoSource(format!(
            "no `deb` source for suite `{suite}` in {}/sources.list or sources.list.d; the base image is built from the host's Debian sources, so add one (`apt-get update` must work)",
            apt_dir.display()
        )));
    }
    Ok(out)
}

/// The sources for `suite`: the host's own when it has that suite; otherwise
/// the host's Debian archive asked for `suite` instead of its own (with the
/// `-updates` and `-security` companions, except for sid). The archive
/// serves every suite under one URI, so nothing new is named.
pub fn sources_for_suite(apt_dir: &Path, suite: &str) -> Result<Vec<AptSource>, AptSourcesError> {
    let all = all_host_sources(apt_dir)?;
    if all.iter().any(|s| s.suite == suite) {
        return host_sources(apt_dir, suite);
    }
    // The host's release suites: those with a `-updates` or `-security`
    // companion, or any companion-less one when there is none such.
    let base = |s: &AptSource| !s.suite.contains('-');
    let host_suites: Vec<&str> = all
        .iter()
        .filter(|s| {
            base(s)
                && all
                    .iter()
                    .any(|o| o.suite.starts_with(&format!("{}-", s.suite)))
        })
        .map(|s| s.suite.as_str())
        .collect();
    let rolling = ROLLING.contains(&suite);
    let mut out: Vec<AptSource> = Vec::new();
    for s in &all {
        let (host, tail) = match s.suite.split_once('-') {
            Some((h, t)) => (h, Some(t)),
            None => (s.suite.as_str(), None),
        };
        if !host_suites.contains(&host) || (rolling && tail.is_some()) {
            continue;
        }
        let renamed = match tail {
            Some(t) => format!("{suite}-{t}"),
            None => suite.to_string(),
        };
        let entry = AptSource {
            uri: s.uri.clone(),
            suite: renamed,
            components: s.components.clone(),
        };
        if !out.contains(&entry) {
            out.push(entry);
        }
    }
    if !out.iter().any(|s| s.suite == suite) {
        return Err(AptSourcesError::NoSource(format!(
            "suite `{suite}` is wanted, but the host's apt sources in {} name no Debian release \
             to take the archive's address from (a `deb URI bookworm main` line and its \
             bookworm-updates or -security companion)",
            apt_dir.display()
        )));
    }
    Ok(out)
}

/// Every binary source of the host, in apt's reading order.
fn all_host_sources(apt_dir: &Path) -> Result<Vec<AptSource>, AptSourcesError> {
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|e| AptSourcesError::Read {
            path: p.to_path_buf(),
            source: e,
        })
    };
    let mut out = Vec::new();
    let main = apt_dir.join("sources.list");
    if main.is_file() {
        out.extend(parse_one_line_format(&read(&main)?));
    }
    let dir = apt_dir.join("sources.list.d");
    if dir.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| AptSourcesError::Read {
                path: dir.clone(),
                source: e,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for p in entries {
            let parse: fn(&str) -> Vec<AptSource> = match p.extension().and_then(|e| e.to_str()) {
                Some("list") => parse_one_line_format,
                Some("sources") => parse_deb822,
                _ => continue,
            };
            out.extend(parse(&read(&p)?));
        }
    }
    Ok(out)
}

/// `deb [options] URI SUITE COMPONENT...` lines.
pub fn parse_one_line_format(text: &str) -> Vec<AptSource> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(rest) = line.strip_prefix("deb ") else {
            continue;
        };
        let mut rest = rest.trim_start();
        if rest.starts_with('[') {
            match rest.find(']') {
                Some(end) => rest = rest[end + 1..].trim_start(),
                None => continue,
            }
        }
        let words: Vec<&str> = rest.split_whitespace().collect();
        if words.len() >= 3 {
            out.push(AptSource {
                uri: words[0].to_string(),
                suite: words[1].to_string(),
                components: words[2..].iter().map(|w| w.to_string()).collect(),
            });
        }
    }
    out
}

/// deb822 stanzas (`Types:`, `URIs:`, `Suites:`, `Components:`, `Enabled:`).
pub fn parse_deb822(text: &str) -> Vec<AptSource> {
    let mut out = Vec::new();
    for stanza in text.split("\n\n") {
        let mut fields: Vec<(String, String)> = Vec::new();
        for line in stanza.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            if line.starts_with(' ') || line.starts_with('\t') {
                // A continuation line belongs to the previous field.
                if let Some(last) = fields.last_mut() {
                    last.1.push(' ');
                    last.1.push_str(line.trim());
                }
            } else if let Some((k, v)) = line.split_once(':') {
                fields.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let get = |k: &str| {
            fields
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
                .unwrap_or("")
        };
        if !get("types").split_whitespace().any(|t| t == "deb")
            || get("enabled").eq_ignore_ascii_case("no")
        {
            continue;
        }
        let components: Vec<String> = get("components")
            .split_whitespace()
            .map(String::from)
            .collect();
        if components.is_empty() {
            continue;
        }
        for uri in get("uris").split_whitespace() {
            for suite in get("suites").split_whitespace() {
                out.push(AptSource {
                    uri: uri.to_string(),
                    suite: suite.to_string(),
                    components: components.clone(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEB822: &str = "Types: deb deb-src\n# a comment\nURIs: http://deb.example.invalid/debian\nSuites: bookworm bookworm-updates\nComponents: main contrib\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://sec.example.invalid/debian-security\nSuites: bookworm-security\nComponents: main\n\nTypes: deb\nURIs: https://other.example.invalid/node\nSuites: nodistro\nComponents: main\n\nTypes: deb\nEnabled: no\nURIs: http://off.example.invalid/debian\nSuites: bookworm\nComponents: main\n";

    #[test]
    fn deb822_keeps_binary_enabled_sources_of_the_suite() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("sources.list.d")).unwrap();
        std::fs::write(tmp.path().join("sources.list.d/debian.sources"), DEB822).unwrap();
        // Files with other extensions are not read by apt either.
        std::fs::write(
            tmp.path().join("sources.list.d/x.list.disabled"),
            "deb http://disabled.example.invalid/debian bookworm main\n",
        )
        .unwrap();
        let lines: Vec<String> = host_sources(tmp.path(), "bookworm")
            .unwrap()
            .iter()
            .map(AptSource::mmdebstrap_line)
            .collect();
        assert_eq!(
            lines,
            [
                "deb http://deb.example.invalid/debian bookworm main contrib",
                "deb http://deb.example.invalid/debian bookworm-updates main contrib",
                "deb http://sec.example.invalid/debian-security bookworm-security main",
            ]
        );
    }

    #[test]
    fn one_line_format_with_options_and_comments() {
        let text = "# comment\ndeb [arch=amd64 signed-by=/k.gpg] http://a.example.invalid/debian bookworm main # tail\ndeb-src http://a.example.invalid/debian bookworm main\ndeb http://a.example.invalid/debian bullseye main\n";
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("sources.list"), text).unwrap();
        let got = host_sources(tmp.path(), "bookworm").unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].mmdebstrap_line(),
            "deb http://a.example.invalid/debian bookworm main"
        );
    }

    #[test]
    fn another_suite_is_asked_of_the_hosts_archive() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("sources.list.d")).unwrap();
        std::fs::write(tmp.path().join("sources.list.d/debian.sources"), DEB822).unwrap();
        let lines = |suite| -> Vec<String> {
            sources_for_suite(tmp.path(), suite)
                .unwrap()
                .iter()
                .map(AptSource::mmdebstrap_line)
                .collect()
        };
        assert_eq!(
            lines("sid"),
            ["deb http://deb.example.invalid/debian sid main contrib"]
        );
        assert_eq!(
            lines("trixie"),
            [
                "deb http://deb.example.invalid/debian trixie main contrib",
                "deb http://deb.example.invalid/debian trixie-updates main contrib",
                "deb http://sec.example.invalid/debian-security trixie-security main",
            ]
        );
        // The host's own suite is as before; a third-party suite is never renamed.
        assert_eq!(lines("bookworm").len(), 3);
        assert!(!lines("trixie").iter().any(|l| l.contains("other.example")));
    }

    #[test]
    fn no_source_for_the_suite_is_an_actionable_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err = host_sources(tmp.path(), "bookworm").unwrap_err();
        assert!(
            err.to_string()
                .contains("no `deb` source for suite `bookworm`")
        );
    }
}
