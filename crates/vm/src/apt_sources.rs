//! The host's configured apt sources, as the `deb URI SUITE COMPONENTS` lines
//! mmdebstrap takes. The image is built from exactly what the host uses, so
//! no mirror is ever named in labrun itself.

use crate::error::VmError;
use std::path::Path;

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
pub fn host_sources(apt_dir: &Path, suite: &str) -> Result<Vec<AptSource>, VmError> {
    let mut out = Vec::new();
    let main = apt_dir.join("sources.list");
    if main.is_file() {
        let text = std::fs::read_to_string(&main).map_err(VmError::io(&main))?;
        out.extend(parse_one_line_format(&text));
    }
    let dir = apt_dir.join("sources.list.d");
    if dir.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .map_err(VmError::io(&dir))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for p in entries {
            let parse: fn(&str) -> Vec<AptSource> = match p.extension().and_then(|e| e.to_str()) {
                Some("list") => parse_one_line_format,
                Some("sources") => parse_deb822,
                _ => continue,
            };
            let text = std::fs::read_to_string(&p).map_err(VmError::io(&p))?;
            out.extend(parse(&text));
        }
    }
    out.retain(|s| s.suite == suite || s.suite.starts_with(&format!("{suite}-")));
    out.dedup();
    if !out.iter().any(|s| s.suite == suite) {
        return Err(VmError::AptSources(format!(
            "no `deb` source for suite `{suite}` in {}/sources.list or sources.list.d; the base image is built from the host's Debian sources, so add one (`apt-get update` must work)",
            apt_dir.display()
        )));
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
    fn no_source_for_the_suite_is_an_actionable_error() {
        let tmp = tempfile::tempdir().unwrap();
        let err = host_sources(tmp.path(), "bookworm").unwrap_err();
        assert!(
            err.to_string()
                .contains("no `deb` source for suite `bookworm`")
        );
    }
}
