//! Where an artifact would come from, decided without the network: the
//! cache, the mirror folder, the host's apt index, a local file. What none
//! of these has is named, so `labrun check` can say which artifact this
//! machine cannot resolve before anything is fetched.

use crate::build::source::{ArchiveLocation, SourceArchive, SourceOrigin};
use crate::cache::{Cache, find_in};
use crate::spec::{ArtifactSource, ArtifactSpec, BuildRecipe, local_path};
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Already verified into the cache.
    Cached(PathBuf),
    /// A file of that name in the mirror folder (checked when fetched).
    Mirror(PathBuf),
    /// The host's apt index lists this package version.
    AptIndex { package: String, version: String },
    /// A package of another suite, whose lists labrun has not fetched yet:
    /// `labrun fetch` runs `apt-get update` for that suite into its cache.
    AptSuite {
        package: String,
        version: String,
        suite: String,
    },
    /// The local file exists.
    LocalFile(PathBuf),
    /// Built on the host from pinned source (needs the toolchain and the
    /// registry it builds from; cached by its inputs once built).
    Build(String),
    /// Only the URL has it: `labrun fetch` must download it.
    Download(String),
    /// Nothing on this machine provides it.
    Unresolvable(String),
}

impl Resolution {
    /// True when the artifact can be had without any download.
    pub fn is_local(&self) -> bool {
        !matches!(
            self,
            Resolution::Download(_) | Resolution::Unresolvable(_) | Resolution::AptSuite { .. }
        )
    }
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resolution::Cached(p) => write!(f, "in the cache ({})", p.display()),
            Resolution::Mirror(p) => write!(f, "in the mirror folder ({})", p.display()),
            Resolution::AptIndex { package, version } => {
                write!(f, "in the host's apt index ({package}={version})")
            }
            Resolution::AptSuite {
                package,
                version,
                suite,
            } => write!(
                f,
                "from the host's Debian archive, suite {suite} ({package}={version}): `labrun fetch` lists that suite in labrun's cache first"
            ),
            Resolution::LocalFile(p) => write!(f, "local file {}", p.display()),
            Resolution::Build(recipe) => write!(
                f,
                "built on this host: {recipe} (the first `labrun fetch` or `up` builds it, then it is cached)"
            ),
            Resolution::Download(url) => write!(
                f,
                "not cached and not in a mirror: `labrun fetch` will download {url} (offline: put the file in a folder and pass --mirror DIR)"
            ),
            Resolution::Unresolvable(why) => write!(f, "CANNOT BE RESOLVED here: {why}"),
        }
    }
}

/// A build from a source archive not built yet: it needs the archive,
/// found by name in the mirror folder, as a local file, or downloaded.
fn source_archive(
    recipe: &BuildRecipe,
    archive: &SourceArchive,
    mirror: Option<&Path>,
) -> Resolution {
    let name = archive.file_name().unwrap_or_default();
    if let Some(p) = mirror.map(|m| m.join(&name)).filter(|p| p.is_file()) {
        return Resolution::Build(format!(
            "{}, its source from the mirror folder ({})",
            recipe.describe(),
            p.display()
        ));
    }
    match &archive.location {
        ArchiveLocation::Url(url) => Resolution::Download(format!("{url} (as {name})")),
        ArchiveLocation::File(written) => {
            let path = local_path(written);
            if path.is_file() {
                Resolution::Build(format!(
                    "{}, its source from {}",
                    recipe.describe(),
                    path.display()
                ))
            } else {
                Resolution::Unresolvable(format!(
                    "the source archive {} does not exist",
                    path.display()
                ))
            }
        }
    }
}

/// Decides where `spec` would come from; sends nothing over the network.
pub fn resolve_offline(spec: &ArtifactSpec, cache_dir: &Path, mirror: Option<&Path>) -> Resolution {
    if let ArtifactSource::Build(recipe) = &spec.source {
        if let BuildRecipe::Source(source) = recipe
            && let SourceOrigin::Archive(archive) = &source.origin
            && crate::build::find_record(cache_dir, &spec.sha256).is_none()
        {
            return source_archive(recipe, archive, mirror);
        }
        return Resolution::Build(recipe.describe());
    }
    let file_name = match spec.file_name() {
        Ok(n) => n,
        Err(e) => return Resolution::Unresolvable(e.to_string()),
    };
    if let Some(p) = Cache::new(cache_dir).find(&spec.sha256, &file_name) {
        return Resolution::Cached(p);
    }
    if let Some(p) = mirror.and_then(|m| find_in(m, &file_name).into_iter().next()) {
        return Resolution::Mirror(p);
    }
    match &spec.source {
        ArtifactSource::Url(url) => Resolution::Download(url.to_string()),
        ArtifactSource::File(written) => {
            let path = local_path(written);
            if path.is_file() {
                Resolution::LocalFile(path)
            } else {
                Resolution::Unresolvable(format!("{} does not exist", path.display()))
            }
        }
        ArtifactSource::Build(recipe) => Resolution::Build(recipe.describe()),
        ArtifactSource::Apt(apt) => {
            let suite_opts = apt.suite.as_deref().map(|suite| {
                let dir = Cache::new(cache_dir)
                    .root()
                    .parent()
                    .unwrap_or(cache_dir)
                    .join("apt")
                    .join(suite);
                (
                    dir.join("lists").is_dir(),
                    crate::apt::suite_options(&dir, suite),
                )
            });
            if let Some((false, _)) = &suite_opts {
                return Resolution::AptSuite {
                    package: apt.package.clone(),
                    version: apt.version.clone(),
                    suite: apt.suite.clone().unwrap_or_default(),
                };
            }
            // The local index only: `apt-cache` reads the lists on disk. It
            // exits 0 even for a version it lacks, so read its record.
            let listed = std::process::Command::new("apt-cache")
                .args(suite_opts.map(|(_, o)| o).unwrap_or_default())
                .args(["show", "--no-all-versions"])
                .arg(format!("{}={}", apt.package, apt.version))
                .stderr(std::process::Stdio::null())
                .output()
                .is_ok_and(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .any(|l| l.strip_prefix("Version: ") == Some(apt.version.as_str()))
                });
            if listed {
                Resolution::AptIndex {
                    package: apt.package.clone(),
                    version: apt.version.clone(),
                }
            } else {
                Resolution::Unresolvable(format!(
                    "the host's apt index has no {}={} (run `apt-get update`, or pin the version `apt-cache policy {}` lists)",
                    apt.package, apt.version, apt.package
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Extract;

    fn url_spec() -> ArtifactSpec {
        ArtifactSpec::new(
            ArtifactSource::Url("http://127.0.0.1:9/tool_1.0_linux_amd64".into()),
            "ab".repeat(32),
        )
    }

    #[test]
    fn url_only_needs_a_download_unless_the_mirror_has_it() {
        let cache = tempfile::tempdir().unwrap();
        let spec = url_spec();
        let r = resolve_offline(&spec, cache.path(), None);
        assert!(matches!(r, Resolution::Download(_)), "{r}");
        assert!(!r.is_local());
        assert!(r.to_string().contains("--mirror"), "{r}");
        let mirror = tempfile::tempdir().unwrap();
        std::fs::write(mirror.path().join("tool_1.0_linux_amd64"), b"x").unwrap();
        let r = resolve_offline(&spec, cache.path(), Some(mirror.path()));
        assert_eq!(
            r,
            Resolution::Mirror(mirror.path().join("tool_1.0_linux_amd64"))
        );
    }

    #[test]
    fn missing_local_file_and_unknown_apt_version_are_unresolvable() {
        let cache = tempfile::tempdir().unwrap();
        let mut spec = url_spec();
        spec.source = ArtifactSource::File("/nonexistent/labrun-tool".into());
        let r = resolve_offline(&spec, cache.path(), None);
        assert!(matches!(r, Resolution::Unresolvable(_)), "{r}");
        spec.source = ArtifactSource::Apt(crate::spec::AptPackage {
            package: "restic".into(),
            version: "0.0.0-labrun-no-such-version".into(),
            suite: None,
        });
        spec.extract = Extract::DebMember("usr/bin/restic".into());
        let r = resolve_offline(&spec, cache.path(), None);
        assert!(r.to_string().contains("apt index has no restic="), "{r}");
    }

    #[test]
    fn the_default_labs_restic_is_in_the_apt_index() {
        let cache = tempfile::tempdir().unwrap();
        let mut spec = url_spec();
        spec.source = ArtifactSource::Apt(crate::spec::AptPackage {
            package: "restic".into(),
            version: "0.14.0-1+b5".into(),
            suite: None,
        });
        spec.extract = Extract::DebMember("usr/bin/restic".into());
        let r = resolve_offline(&spec, cache.path(), None);
        assert!(matches!(r, Resolution::AptIndex { .. }), "{r}");
        assert!(r.is_local());
    }
}
