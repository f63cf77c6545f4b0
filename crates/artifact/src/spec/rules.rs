//! Every rule of an `artifact:` block, each written once. `labrun check`
//! reports all of them with the lab file's line (labrun-lab adds the block's
//! path); the fetcher refuses a block that breaks any, before any I/O.
//! The source kinds' own rules are beside their fields (`spec/apt.rs`,
//! `build/go.rs`, ...) and reach here through
//! [`ArtifactSource::problems`](super::ArtifactSource::problems).

use super::{ArtifactSpec, Extract, local_path};
use crate::error::ArtifactError;
use crate::source::FileName;
use std::path::{Component, Path};

/// One problem of an `artifact:` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecProblem {
    /// The field below the block as the lab file spells it (`sha256`,
    /// `apt.package`, `go.tags[1]`); empty for the block itself.
    pub field: String,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl SpecProblem {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> SpecProblem {
        SpecProblem {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same problem seen from the mapping above: `package` under `apt`
    /// is `apt.package`.
    pub fn under(self, parent: &str) -> SpecProblem {
        let field = if self.field.is_empty() {
            parent.to_string()
        } else {
            format!("{parent}.{}", self.field)
        };
        SpecProblem { field, ..self }
    }
}

impl From<SpecProblem> for ArtifactError {
    fn from(p: SpecProblem) -> ArtifactError {
        ArtifactError::Spec {
            field: p.field,
            problem: p.message,
        }
    }
}

impl ArtifactSpec {
    /// Every problem of the block, in the order of its fields (no I/O).
    pub fn problems(&self) -> Vec<SpecProblem> {
        let mut out = Vec::new();
        if let Some(m) = sha256_problem(&self.sha256) {
            out.push(SpecProblem::new("sha256", m));
        }
        if let Some(b) = &self.binary_sha256 {
            let problem = if self.source.is_build() {
                Some("is not used for a build: `sha256` is the built binary's digest".to_string())
            } else {
                sha256_problem(b)
            };
            if let Some(m) = problem {
                out.push(SpecProblem::new("binary_sha256", m));
            }
        }
        out.extend(self.source.problems());
        if let Some(m) = self.extract_problem() {
            out.push(SpecProblem::new("extract", m));
        }
        out
    }

    /// [`Self::problems`] of a file used whole, as the archive a dataset
    /// unpacks: with `extract` left out, a `.tar.gz` or a `.deb` is what is
    /// wanted, not a binary's missing `tar: MEMBER`.
    pub fn whole_archive_problems(&self) -> Vec<SpecProblem> {
        let whole = self.extract == Extract::Raw;
        self.problems()
            .into_iter()
            .filter(|p| !(whole && p.field == "extract"))
            .collect()
    }

    /// The block's first problem, for callers that stop at one.
    pub fn validate(&self) -> Result<(), ArtifactError> {
        match self.problems().into_iter().next() {
            None => Ok(()),
            Some(p) => Err(p.into()),
        }
    }

    /// `extract:` on its own, then against the file it is applied to (a
    /// `.bz2` read as a raw binary would install garbage).
    fn extract_problem(&self) -> Option<String> {
        if self.source.is_build() {
            return (self.extract != Extract::Raw)
                .then(|| "a built binary is used as it is: leave `extract` out".to_string());
        }
        match &self.extract {
            Extract::Raw | Extract::Bz2 | Extract::Gz => {}
            Extract::Tar(member) | Extract::DebMember(member) => {
                let bare = member.trim().trim_start_matches("./");
                if bare.is_empty()
                    || member.starts_with('/')
                    || Path::new(member)
                        .components()
                        .any(|c| matches!(c, Component::ParentDir))
                {
                    return Some(format!(
                        "`{member}` is not a member path: expected a relative path inside the \
                         archive without `..`, e.g. `usr/bin/restic`"
                    ));
                }
            }
            Extract::DebInstall(binary) => {
                if !binary.starts_with('/') || binary.len() < 2 {
                    return Some(format!(
                        "`{binary}` must be the absolute path of the binary the package \
                         installs, e.g. `/usr/bin/borg`"
                    ));
                }
            }
        }
        let (name, what) = match self.source.file_name()? {
            FileName::Exact(name) => (name.clone(), format!("`{name}`")),
            FileName::AptDeb { .. } => ("package.deb".into(), "an apt package (a .deb)".into()),
        };
        let expected = expected_extract(&name, &self.extract)?;
        Some(format!(
            "{} does not fit {what}: expected {expected}",
            self.extract.as_written()
        ))
    }
}

/// What `extract:` a file of this name needs, when `extract` is not it.
fn expected_extract(name: &str, extract: &Extract) -> Option<&'static str> {
    let is_tar = [".tar.gz", ".tgz", ".tar.xz", ".tar.zst", ".tar.bz2", ".tar"]
        .iter()
        .any(|s| name.ends_with(s));
    let (fits, expected) = if name.ends_with(".deb") {
        (
            extract.is_deb(),
            "`deb-member: usr/bin/NAME` or `deb-install: /usr/bin/NAME`",
        )
    } else if is_tar {
        (
            matches!(extract, Extract::Tar(_)),
            "`tar: MEMBER` (the binary's path inside the archive)",
        )
    } else if name.ends_with(".bz2") {
        (matches!(extract, Extract::Bz2), "`bz2`")
    } else if name.ends_with(".gz") {
        (matches!(extract, Extract::Gz), "`gz`")
    } else {
        (true, "")
    };
    (!fits).then_some(expected)
}

/// A pinned digest: 64 lowercase hex digits.
pub fn sha256_problem(value: &str) -> Option<String> {
    let hex = value.chars().all(|c| c.is_ascii_hexdigit());
    if value.len() == 64 && hex && !value.chars().any(|c| c.is_ascii_uppercase()) {
        return None;
    }
    Some(if value.len() == 64 && hex {
        "a SHA-256 is written in lowercase hex: lowercase it".to_string()
    } else if !hex {
        let bad = value
            .chars()
            .find(|c| !c.is_ascii_hexdigit())
            .unwrap_or(' ');
        format!(
            "expected a SHA-256 of 64 hex digits, found the character `{bad}` (copy the digest from the project's checksum file)"
        )
    } else {
        format!(
            "expected a SHA-256 of 64 hex digits, found {} (copy the whole digest from the project's checksum file)",
            value.len()
        )
    })
}

/// A `url:` source: an `http(s)://` URL of a file on a named host.
pub(crate) fn url_problem(url: &str) -> Option<String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Some(format!(
            "`{url}` is not a URL: expected `https://host/path`"
        ));
    };
    if scheme != "https" && scheme != "http" {
        let hint = if scheme == "file" {
            " (for a local file write `file: PATH` instead of `url:`)"
        } else {
            ""
        };
        return Some(format!(
            "URL scheme `{scheme}` is not supported: expected `https://` or `http://`{hint}"
        ));
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || url.contains(char::is_whitespace) {
        return Some(format!("`{url}` has no host or contains spaces"));
    }
    if rest.split(['?', '#']).next().unwrap_or("").ends_with('/') {
        return Some(format!(
            "`{url}` names a folder: expected the URL of a file"
        ));
    }
    // The fetcher's own parser has the last word.
    match reqwest::Url::parse(url) {
        Err(e) => Some(format!("`{url}` is not a URL: {e}")),
        Ok(parsed) if parsed.host().is_none() => Some(format!("`{url}` has no host")),
        Ok(parsed) => {
            let last = parsed.path_segments().and_then(|mut s| s.next_back());
            last.and_then(FileName::exact)
                .is_none()
                .then(|| format!("`{url}` does not end in a file name"))
        }
    }
}

/// The transports a `git.repo` may use. git's remote helpers (`fd::0`
/// speaks git's protocol on labrun's own standard input and waited forever;
/// `ext::` runs a command) and plain `http://` are refused; every git
/// command labrun runs holds git to the same list (`GIT_ALLOW_PROTOCOL`).
pub const GIT_TRANSPORTS: [&str; 4] = ["https", "ssh", "git", "file"];

/// A `git.repo`: a URL of one of [`GIT_TRANSPORTS`] (`git+ssh://` and
/// `ssh+git://` are ssh), an scp-like `host:path`, or a local path. The
/// message never repeats credentials written in the URL.
pub fn git_repo_problem(repo: &str) -> Option<String> {
    let shown = crate::url_credentials::without_credentials(repo);
    if repo.trim().is_empty() || repo.starts_with('-') || repo.chars().any(char::is_control) {
        return Some(format!(
            "{shown:?} is not a repository: expected a URL git can fetch or a local path, \
             not starting with `-`"
        ));
    }
    let expected = "expected an `https://`, `ssh://`, `git://` or `file://` URL, \
                    `host:path`, or a local repository's path";
    // `<transport>::<address>` is how git names a remote helper.
    if let Some((helper, _)) = repo.split_once("::")
        && !helper.is_empty()
        && helper
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return Some(format!(
            "{shown:?} asks for git's remote helper `{helper}::`, which labrun does not run: \
             {expected}"
        ));
    }
    if let Some((scheme, _)) = repo.split_once("://") {
        let transport = match scheme.to_ascii_lowercase().as_str() {
            "git+ssh" | "ssh+git" => "ssh".to_string(),
            other => other.to_string(),
        };
        if !GIT_TRANSPORTS.contains(&transport.as_str()) {
            let hint = if transport == "http" {
                " (plain http can be altered on the way: use `https://`)"
            } else {
                ""
            };
            return Some(format!(
                "{shown:?} uses the transport `{scheme}`, which labrun does not fetch from{hint}: \
                 {expected}"
            ));
        }
    }
    None
}

/// A `file:` source: a path that ends in a file name.
pub(crate) fn file_problem(written: &str) -> Option<String> {
    let path = local_path(written);
    if written.trim().is_empty() || path.as_os_str().is_empty() {
        return Some(
            "an empty path: expected a local file such as `/srv/mirror/restic.bz2`".into(),
        );
    }
    let name = path.file_name().and_then(|n| n.to_str());
    name.and_then(FileName::exact)
        .is_none()
        .then(|| format!("`{written}` does not end in a file name"))
}

#[cfg(test)]
mod tests {
    use super::super::{AptPackage, ArtifactSource, BuildRecipe, GoBuild};
    use super::*;

    fn url(u: &str) -> ArtifactSpec {
        ArtifactSpec::new(ArtifactSource::Url(u.into()), "ab".repeat(32))
    }

    fn fields(spec: &ArtifactSpec) -> Vec<String> {
        spec.problems().into_iter().map(|p| p.field).collect()
    }

    #[test]
    fn a_good_block_has_no_problem() {
        let mut s = url("https://example.invalid/restic_0.19.1_linux_amd64.bz2");
        s.extract = Extract::Bz2;
        assert_eq!(s.problems(), vec![]);
        assert!(s.validate().is_ok());
    }

    #[test]
    fn each_problem_names_its_field() {
        let mut s = url("ftp://example.invalid/x");
        s.sha256 = "AB".repeat(32);
        s.binary_sha256 = Some("xyz".into());
        s.extract = Extract::Tar("../x".into());
        assert_eq!(fields(&s), ["sha256", "binary_sha256", "url", "extract"]);
        let err = s.validate().unwrap_err().to_string();
        assert!(
            err.contains("`sha256`") && err.contains("lowercase"),
            "{err}"
        );
    }

    #[test]
    fn nested_fields_have_their_path() {
        let apt = AptPackage {
            package: "Restic".into(),
            version: "latest".into(),
            suite: Some("Sid".into()),
        };
        let mut s = ArtifactSpec::new(ArtifactSource::Apt(apt), "ab".repeat(32));
        s.extract = Extract::DebMember("usr/bin/restic".into());
        assert_eq!(fields(&s), ["apt.package", "apt.version", "apt.suite"]);
    }

    #[test]
    fn a_build_is_used_as_built() {
        let go = GoBuild {
            module: "github.com/kopia/kopia".into(),
            version: "v0.23.1".into(),
            sum: "h1:0+V5Au8fD+190vQbklG0DaWD6I4clmbwlmJTqtI0y0Q=".into(),
            package: ".".into(),
            toolchain: "go1.26.8".into(),
            tags: vec!["a b".into()],
            ldflags: None,
            binary: None,
        };
        let mut s = ArtifactSpec::new(ArtifactSource::Build(BuildRecipe::Go(go)), "ab".repeat(32));
        s.extract = Extract::Gz;
        s.binary_sha256 = Some("ab".repeat(32));
        assert_eq!(fields(&s), ["binary_sha256", "go.tags[0]", "extract"]);
    }

    #[test]
    fn extract_must_fit_the_file() {
        let s = url("https://example.invalid/tool.tar.gz");
        let p = s.problems();
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].message.contains("`tar: MEMBER`"), "{p:?}");
        let file = ArtifactSpec::new(
            ArtifactSource::File("file:///srv/..".into()),
            "ab".repeat(32),
        );
        assert_eq!(fields(&file), ["file"]);
    }
}
