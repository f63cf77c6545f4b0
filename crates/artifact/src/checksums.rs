//! Upstream checksum lists, so a pin is taken from the project's own list
//! rather than typed by hand: restic `SHA256SUMS`, kopia `checksums.txt`,
//! rustic `<asset>.sha256`, each beside the release's assets.

use crate::digest::is_sha256_hex;
use crate::error::ArtifactError;
use crate::fetcher::Fetcher;

/// A checksum list larger than this is not one.
const MAX_LIST_BYTES: usize = 1 << 20;

/// A digest and the list it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedDigest {
    pub sha256: String,
    /// The checksum list's URL.
    pub list_url: String,
}

/// Where the known layouts put the list for `artifact_url`, most common first.
pub fn candidate_lists(artifact_url: &str) -> Vec<String> {
    let Some((dir, _asset)) = artifact_url.rsplit_once('/') else {
        return Vec::new();
    };
    vec![
        format!("{dir}/SHA256SUMS"),
        format!("{dir}/checksums.txt"),
        format!("{artifact_url}.sha256"),
        format!("{dir}/SHA256SUMS.txt"),
        format!("{dir}/sha256sums.txt"),
    ]
}

/// The digest listed for `file_name`. Reads GNU lines (`HEX  name`,
/// `HEX *name`), BSD lines (`SHA256 (name) = HEX`) and a bare `HEX` (a
/// per-asset `.sha256` file, only when `bare_ok`). Names are compared by
/// their last path segment. Two different digests for one name is an error.
pub fn find_digest(text: &str, file_name: &str, bare_ok: bool) -> Result<Option<String>, String> {
    let mut found: Vec<String> = Vec::new();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    for line in &lines {
        let (hex, name) = if let Some(rest) = line.strip_prefix("SHA256 (") {
            match rest.rsplit_once(") = ") {
                Some((name, hex)) => (hex.trim(), name),
                None => continue,
            }
        } else {
            let mut parts = line.splitn(2, char::is_whitespace);
            let hex = parts.next().unwrap_or("");
            let name = parts.next().unwrap_or("").trim().trim_start_matches('*');
            (hex, name)
        };
        let hex = hex.to_ascii_lowercase();
        if !is_sha256_hex(&hex) {
            continue;
        }
        let base = name.rsplit('/').next().unwrap_or(name);
        if base == file_name || (bare_ok && name.is_empty() && lines.len() == 1) {
            found.push(hex);
        }
    }
    found.sort();
    found.dedup();
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(format!(
            "lists {} different digests for {file_name}: {}; refusing to guess",
            found.len(),
            found.join(", ")
        )),
    }
}

impl Fetcher {
    /// The upstream's published SHA-256 of the file at `artifact_url`, from
    /// `list_url` if given, else from the first known layout that lists it.
    pub async fn published_sha256(
        &self,
        artifact_url: &str,
        list_url: Option<&str>,
    ) -> Result<PublishedDigest, ArtifactError> {
        let file_name = artifact_url
            .rsplit('/')
            .next()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| ArtifactError::Checksums {
                url: artifact_url.to_string(),
                problem: "the artifact URL does not end in a file name".into(),
            })?;
        let candidates = match list_url {
            Some(u) => vec![u.to_string()],
            None => candidate_lists(artifact_url),
        };
        let mut tried = Vec::new();
        for url in &candidates {
            let bare_ok = url.ends_with(".sha256");
            match self.http().get_text(url, MAX_LIST_BYTES).await? {
                None => tried.push(format!("{url} (404)")),
                Some(text) => match find_digest(&text, file_name, bare_ok) {
                    Ok(Some(sha256)) => {
                        return Ok(PublishedDigest {
                            sha256,
                            list_url: url.clone(),
                        });
                    }
                    Ok(None) => tried.push(format!("{url} (does not list {file_name})")),
                    Err(problem) => {
                        return Err(ArtifactError::Checksums {
                            url: url.clone(),
                            problem,
                        });
                    }
                },
            }
        }
        Err(ArtifactError::Checksums {
            url: artifact_url.to_string(),
            problem: format!(
                "no published SHA-256 found; tried: {}.\n  Some projects publish none (borg, \
                 duplicacy): download the file, check it another way (the project's GPG \
                 signature, the digest GitHub's release API lists for the asset), then pin it \
                 with --sha256 HEX --sha256-source 'where it was checked'; or name the list \
                 with --checksums URL",
                tried.join(", ")
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "f415415624dcc452f2a02b8c33641791a8c6d6d3b65bbb3543fcf9a25151585c";
    const B: &str = "416d0f84a3dbb321a8b2d8f0997b1a0a6e915babe79ee76fa6e4d2bd1e1c5178";

    #[test]
    fn reads_gnu_bsd_and_bare_lines() {
        let gnu =
            format!("{B}  restic_0.19.1_darwin_amd64.bz2\n{A}  restic_0.19.1_linux_amd64.bz2\n");
        assert_eq!(
            find_digest(&gnu, "restic_0.19.1_linux_amd64.bz2", false).unwrap(),
            Some(A.into())
        );
        let star = format!(
            "{}  *dist/kopia-0.23.1-linux-x64.tar.gz\n",
            B.to_uppercase()
        );
        assert_eq!(
            find_digest(&star, "kopia-0.23.1-linux-x64.tar.gz", false).unwrap(),
            Some(B.into())
        );
        let bsd = format!("SHA256 (tool.tar.gz) = {A}\n");
        assert_eq!(
            find_digest(&bsd, "tool.tar.gz", false).unwrap(),
            Some(A.into())
        );
        assert_eq!(
            find_digest(&format!("{A}\n"), "x", true).unwrap(),
            Some(A.into())
        );
        assert_eq!(find_digest(&format!("{A}\n"), "x", false).unwrap(), None);
        assert_eq!(
            find_digest(&gnu, "restic_0.19.1_linux_arm64.bz2", false).unwrap(),
            None
        );
    }

    #[test]
    fn two_digests_for_one_name_is_refused() {
        let text = format!("{A}  a.bz2\n{B}  other/a.bz2\n{A}  a.bz2\n");
        assert!(
            find_digest(&text, "a.bz2", false)
                .unwrap_err()
                .contains("refusing")
        );
    }

    #[test]
    fn layouts_sit_beside_the_asset() {
        let c = candidate_lists("https://h.invalid/r/download/v1/t_1_linux.bz2");
        assert_eq!(c[0], "https://h.invalid/r/download/v1/SHA256SUMS");
        assert_eq!(c[1], "https://h.invalid/r/download/v1/checksums.txt");
        assert_eq!(c[2], "https://h.invalid/r/download/v1/t_1_linux.bz2.sha256");
    }
}
