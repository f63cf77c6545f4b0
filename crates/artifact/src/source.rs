//! Where an artifact's bytes came from, and the file name it is known by in
//! a mirror folder and in the cache.

use std::fmt;
use std::path::PathBuf;

/// Where a fetched artifact was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Already in the cache (and re-hashed).
    Cache,
    /// The `--mirror` folder.
    Mirror(PathBuf),
    /// Downloaded from `url`, the lab's URL, through `redirects` (every
    /// URL the server redirected to, in order; the last one served the
    /// bytes; empty when `url` did).
    Url { url: String, redirects: Vec<String> },
    /// Copied from this local path.
    File(PathBuf),
    /// `apt-get download PACKAGE=VERSION` with the host's apt configuration.
    Apt { package: String, version: String },
    /// Built on the host from pinned source ([`crate::build`]).
    Build {
        /// `go build MODULE@VERSION (PACKAGE) with go1.26.8`, or the cargo line.
        recipe: String,
        /// The toolchain's own version line(s).
        toolchain: String,
        /// True when the build was already in the cache.
        cached: bool,
        /// The build's folder: binary, build.log, build.json.
        dir: PathBuf,
    },
}

impl Source {
    /// One word for tables: cache, mirror, url, file, apt.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Cache => "cache",
            Source::Mirror(_) => "mirror",
            Source::Url { .. } => "url",
            Source::File(_) => "file",
            Source::Apt { .. } => "apt",
            Source::Build { .. } => "build",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Cache => write!(f, "cache"),
            Source::Mirror(p) => write!(f, "mirror {}", p.display()),
            Source::Url { url, redirects } => {
                write!(f, "{url}")?;
                for hop in redirects {
                    write!(f, " -> {hop}")?;
                }
                Ok(())
            }
            Source::File(p) => write!(f, "file {}", p.display()),
            Source::Apt { package, version } => write!(f, "apt {package}={version}"),
            Source::Build { recipe, cached, .. } => {
                write!(
                    f,
                    "{recipe}{}",
                    if *cached { " (cached build)" } else { "" }
                )
            }
        }
    }
}

/// The file name an artifact goes by. For apt the architecture is only known
/// once apt has picked it, so the name is matched by prefix and suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileName {
    Exact(String),
    AptDeb { prefix: String },
}

impl FileName {
    /// A plain file name; `None` for names that are empty, `.`/`..`, or hold
    /// a path separator (they would escape the cache or mirror folder).
    pub fn exact(name: &str) -> Option<FileName> {
        let ok =
            !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
        ok.then(|| FileName::Exact(name.to_string()))
    }

    /// `PACKAGE_VERSION_ARCH.deb`, with the epoch's `:` written `%3a` as apt
    /// writes it.
    pub fn apt_deb(package: &str, version: &str) -> FileName {
        FileName::AptDeb {
            prefix: format!("{package}_{}_", version.replace(':', "%3a")),
        }
    }

    pub fn matches(&self, name: &str) -> bool {
        match self {
            FileName::Exact(n) => n == name,
            FileName::AptDeb { prefix } => {
                name.len() > prefix.len() + 4
                    && name.starts_with(prefix.as_str())
                    && name.ends_with(".deb")
                    && !name[prefix.len()..].contains('_')
            }
        }
    }
}

impl fmt::Display for FileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileName::Exact(n) => write!(f, "{n}"),
            FileName::AptDeb { prefix } => write!(f, "{prefix}<arch>.deb"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apt_names_follow_apt() {
        let n = FileName::apt_deb("restic", "0.14.0-1+b5");
        assert!(n.matches("restic_0.14.0-1+b5_amd64.deb"));
        assert!(n.matches("restic_0.14.0-1+b5_all.deb"));
        assert!(!n.matches("restic_0.14.0-1+b5_amd64.deb.part"));
        assert!(!n.matches("restic_0.14.0-1+b5_.deb"));
        let epoch = FileName::apt_deb("borgbackup", "1:1.2.4-1");
        assert!(epoch.matches("borgbackup_1%3a1.2.4-1_amd64.deb"));
    }

    #[test]
    fn exact_names_cannot_escape() {
        assert!(FileName::exact("..").is_none());
        assert!(FileName::exact("a/b").is_none());
        assert!(FileName::exact("").is_none());
        assert!(FileName::exact("restic_0.19.1_linux_amd64.bz2").is_some());
    }
}
