//! Checks of an `artifact:` block (`labrun_artifact::ArtifactSpec`) that a
//! type cannot express. Pure: nothing is fetched or read.

use crate::error::Problem;
use labrun_artifact::{ArtifactSpec, Extract};

/// What the artifact is for: a tool's binary, or a VM's disk image (which
/// is used as it is, or decompressed, never installed from a `.deb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArtifactUse {
    ToolBinary,
    DiskImage,
}

/// Every problem of `spec`, with paths under `at` (e.g. `tools[1].artifact`).
pub fn validate_artifact(spec: &ArtifactSpec, at: &str, usage: ArtifactUse) -> Vec<Problem> {
    let mut out = Vec::new();
    let p = |field: &str| format!("{at}.{field}");

    check_sha256(&spec.sha256, &p("sha256"), &mut out);
    if let Some(b) = &spec.binary_sha256 {
        check_sha256(b, &p("binary_sha256"), &mut out);
    }

    let sources: Vec<&str> = [
        spec.url.as_ref().map(|_| "url"),
        spec.file.as_ref().map(|_| "file"),
        spec.apt.as_ref().map(|_| "apt"),
        spec.go.as_ref().map(|_| "go"),
        spec.cargo.as_ref().map(|_| "crate"),
    ]
    .into_iter()
    .flatten()
    .collect();
    match sources.len() {
        0 => out.push(Problem::new(
            at,
            "no source: give exactly one of `url: https://...`, `file: PATH`, `apt: {package: NAME, version: VERSION}`, `go: {module: ..., version: ...}` or `crate: {name: ..., version: ...}`",
        )),
        1 => {}
        _ => out.push(Problem::new(
            at,
            format!(
                "more than one source ({}): give exactly one of `url`, `file`, `apt`, `go`, `crate`",
                sources.join(", ")
            ),
        )),
    }

    if let Some(url) = &spec.url {
        check_url(url, &p("url"), &mut out);
    }
    if let Some(file) = &spec.file {
        let path = file.strip_prefix("file://").unwrap_or(file);
        if path.trim().is_empty() {
            out.push(Problem::new(
                p("file"),
                "an empty path: expected a local file such as `/srv/mirror/restic.bz2`",
            ));
        }
    }
    if let Some(apt) = &spec.apt {
        let valid_name = !apt.package.is_empty()
            && apt
                .package
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c));
        if !valid_name {
            out.push(Problem::new(
                format!("{at}.apt.package"),
                format!(
                    "`{}` is not a Debian package name (lowercase letters, digits, `+-.`)",
                    apt.package
                ),
            ));
        }
        if apt.version.trim().is_empty() || apt.version.contains(char::is_whitespace) {
            out.push(Problem::new(
                format!("{at}.apt.version"),
                format!("`{}` is not a package version: use the exact one `apt-cache policy {}` shows, e.g. `0.14.0-1+b5`", apt.version, apt.package),
            ));
        }
    }

    // The build recipes' own shape rules (one place: labrun-artifact).
    let build = spec
        .go
        .as_ref()
        .map(|g| ("go", g.validate()))
        .or(spec.cargo.as_ref().map(|c| ("crate", c.validate())));
    if let Some((field, result)) = build {
        if let Err(labrun_artifact::ArtifactError::Spec { problem, .. }) = result {
            out.push(Problem::new(p(field), problem));
        }
        if usage == ArtifactUse::DiskImage {
            out.push(Problem::new(
                p(field),
                "a disk image cannot be built from source: give a `url` or `file`",
            ));
        }
        if spec.binary_sha256.is_some() {
            out.push(Problem::new(
                p("binary_sha256"),
                "is not used for a build: `sha256` is the built binary's digest",
            ));
        }
        if spec.extract != Extract::Raw {
            out.push(Problem::new(
                p("extract"),
                "a built binary is used as it is: leave `extract` out",
            ));
        }
        return out;
    }
    if let Some(suite) = spec.apt.as_ref().and_then(|a| a.suite.as_deref())
        && !labrun_artifact::spec::is_suite_name(suite)
    {
        out.push(Problem::new(
            format!("{at}.apt.suite"),
            format!("`{suite}` is not a Debian suite name: e.g. bookworm, trixie, sid"),
        ));
    }

    check_extract(spec, at, usage, &mut out);
    out
}

/// 64 lowercase hex digits.
pub fn check_sha256(value: &str, path: &str, out: &mut Vec<Problem>) {
    let hex = value.chars().all(|c| c.is_ascii_hexdigit());
    if value.len() == 64 && hex && value.chars().all(|c| !c.is_ascii_uppercase()) {
        return;
    }
    let msg = if value.len() == 64 && hex {
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
    };
    out.push(Problem::new(path, msg));
}

fn check_url(url: &str, path: &str, out: &mut Vec<Problem>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        out.push(Problem::new(
            path,
            format!("`{url}` is not a URL: expected `https://host/path`"),
        ));
        return;
    };
    if scheme != "https" && scheme != "http" {
        let hint = if scheme == "file" {
            " (for a local file write `file: PATH` instead of `url:`)"
        } else {
            ""
        };
        out.push(Problem::new(
            path,
            format!(
                "URL scheme `{scheme}` is not supported: expected `https://` or `http://`{hint}"
            ),
        ));
        return;
    }
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || url.contains(char::is_whitespace) {
        out.push(Problem::new(
            path,
            format!("`{url}` has no host or contains spaces"),
        ));
    } else if rest.split(['?', '#']).next().unwrap_or("").ends_with('/') {
        out.push(Problem::new(
            path,
            format!("`{url}` names a folder: expected the URL of a file"),
        ));
    }
}

/// The name of the downloaded file, used to catch an `extract:` that does
/// not match it (a `.bz2` read as a raw binary would install garbage).
fn file_name(spec: &ArtifactSpec) -> Option<String> {
    if spec.apt.is_some() {
        return Some("package.deb".into());
    }
    let raw = spec.url.as_deref().or(spec.file.as_deref())?;
    let no_query = raw.split(['?', '#']).next().unwrap_or(raw);
    no_query.rsplit('/').next().map(str::to_string)
}

fn check_extract(spec: &ArtifactSpec, at: &str, usage: ArtifactUse, out: &mut Vec<Problem>) {
    let path = format!("{at}.extract");
    match &spec.extract {
        Extract::Tar(member) | Extract::DebMember(member) => {
            if member.trim().is_empty() || member.starts_with('/') {
                out.push(Problem::new(
                    &path,
                    format!("`{member}` is not a member path: expected a relative path inside the archive, e.g. `usr/bin/restic`"),
                ));
            }
        }
        Extract::DebInstall(bin) => {
            if !bin.starts_with('/') {
                out.push(Problem::new(
                    &path,
                    format!("`{bin}` must be the absolute path of the binary the package installs, e.g. `/usr/bin/borg`"),
                ));
            }
        }
        Extract::Raw | Extract::Bz2 | Extract::Gz => {}
    }
    if usage == ArtifactUse::DiskImage
        && matches!(spec.extract, Extract::DebMember(_) | Extract::DebInstall(_))
    {
        out.push(Problem::new(
            &path,
            "a disk image cannot come out of a .deb: use `raw`, `gz`, `bz2` or `tar: MEMBER`",
        ));
        return;
    }
    let Some(name) = file_name(spec) else { return };
    let is_tar = [".tar.gz", ".tgz", ".tar.xz", ".tar.zst", ".tar.bz2", ".tar"]
        .iter()
        .any(|s| name.ends_with(s));
    let wanted = if name.ends_with(".deb") {
        matches!(spec.extract, Extract::DebMember(_) | Extract::DebInstall(_))
            .then_some(())
            .ok_or("`deb-member: usr/bin/NAME` or `deb-install: /usr/bin/NAME`")
    } else if is_tar {
        matches!(spec.extract, Extract::Tar(_))
            .then_some(())
            .ok_or("`tar: MEMBER` (the binary's path inside the archive)")
    } else if name.ends_with(".bz2") {
        matches!(spec.extract, Extract::Bz2)
            .then_some(())
            .ok_or("`bz2`")
    } else if name.ends_with(".gz") {
        matches!(spec.extract, Extract::Gz)
            .then_some(())
            .ok_or("`gz`")
    } else {
        Ok(())
    };
    if let Err(expected) = wanted {
        let what = if spec.apt.is_some() {
            "an apt package (a .deb)".to_string()
        } else {
            format!("`{name}`")
        };
        out.push(Problem::new(
            path,
            format!(
                "{} does not fit {what}: expected {expected}",
                describe_extract(&spec.extract)
            ),
        ));
    }
}

/// `extract: raw`, `extract: {tar: kopia}`... as the user wrote it.
pub fn describe_extract(e: &Extract) -> String {
    match e {
        Extract::Raw => "`extract: raw` (the default)".into(),
        Extract::Bz2 => "`extract: bz2`".into(),
        Extract::Gz => "`extract: gz`".into(),
        Extract::Tar(m) => format!("`extract: {{tar: {m}}}`"),
        Extract::DebMember(m) => format!("`extract: {{deb-member: {m}}}`"),
        Extract::DebInstall(b) => format!("`extract: {{deb-install: {b}}}`"),
    }
}
