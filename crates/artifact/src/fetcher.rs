//! Getting an artifact's verified bytes into the cache: the cache first, then
//! the mirror folder, then the source the lab names (URL, file, apt).

use crate::apt;
use crate::cache::{Cache, find_in};
use crate::digest::sha256_file;
use crate::error::ArtifactError;
use crate::http::{Downloaded, Http, NetPolicy};
use crate::progress::Progress;
use crate::source::{FileName, Source};
use crate::spec::{ArtifactSource, ArtifactSpec, local_path};
use crate::url_credentials::without_credentials;
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// labrun's cache folder (artifacts go in its `artifacts/`).
    pub cache_dir: PathBuf,
    /// A folder looked up by file name before any source.
    pub mirror: Option<PathBuf>,
    pub net: NetPolicy,
    /// Extra environment for builds from source (set last): a private
    /// module proxy, another cargo home. Empty for most users.
    pub build_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

impl FetchOptions {
    pub fn new(cache_dir: PathBuf, mirror: Option<PathBuf>) -> FetchOptions {
        FetchOptions {
            cache_dir,
            mirror,
            net: NetPolicy::default(),
            build_env: Vec::new(),
        }
    }
}

/// A verified file in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedArtifact {
    /// The tool it is for.
    pub name: String,
    /// The file, in the cache.
    pub path: PathBuf,
    /// Its SHA-256 (equal to the pin).
    pub sha256: String,
    /// Where it was found this time.
    pub from: Source,
}

pub struct Fetcher {
    pub(crate) opts: FetchOptions,
    cache: Cache,
    http: Http,
}

impl Fetcher {
    pub fn new(opts: FetchOptions) -> Result<Fetcher, ArtifactError> {
        Ok(Fetcher {
            cache: Cache::new(&opts.cache_dir),
            http: Http::new(opts.net.clone())?,
            opts,
        })
    }

    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    pub(crate) fn http(&self) -> &Http {
        &self.http
    }

    /// The folder looked up by file name before any source, if one was given.
    pub(crate) fn mirror(&self) -> Option<&Path> {
        self.opts.mirror.as_deref()
    }

    /// The verified file for `spec`, fetched if not cached. Any digest
    /// mismatch is an error and leaves no file behind.
    pub async fn fetch(
        &self,
        name: &str,
        spec: &ArtifactSpec,
        progress: &mut dyn Progress,
    ) -> Result<FetchedArtifact, ArtifactError> {
        spec.validate()?;
        self.fetch_valid(name, spec, progress).await
    }

    /// [`Self::fetch`] of an archive a dataset unpacks whole (see
    /// [`ArtifactSpec::whole_archive_problems`]).
    pub async fn fetch_whole_archive(
        &self,
        name: &str,
        spec: &ArtifactSpec,
        progress: &mut dyn Progress,
    ) -> Result<FetchedArtifact, ArtifactError> {
        if let Some(p) = spec.whole_archive_problems().into_iter().next() {
            return Err(p.into());
        }
        self.fetch_valid(name, spec, progress).await
    }

    async fn fetch_valid(
        &self,
        name: &str,
        spec: &ArtifactSpec,
        progress: &mut dyn Progress,
    ) -> Result<FetchedArtifact, ArtifactError> {
        let expected = spec.sha256.as_str();
        let file_name = spec.file_name()?;
        let done = |path: PathBuf, from: Source| FetchedArtifact {
            name: name.to_string(),
            path,
            sha256: expected.to_string(),
            from,
        };

        // Builds are cached by their inputs, not looked up by the digest
        // alone: a changed version with an old digest must be refused.
        let (opts, cache_dir) = (&self.opts, self.opts.cache_dir.as_path());
        if let ArtifactSource::Build(recipe) = &spec.source {
            let (path, from) = crate::build::build_checked(
                recipe,
                name,
                expected,
                cache_dir,
                &opts.build_env,
                progress,
                self,
            )
            .await?;
            return Ok(done(path, from));
        }

        if let Some(path) = self.cache.find(expected, &file_name) {
            let actual = hash_blocking(name, &path).await?;
            if actual == expected {
                return Ok(done(path, Source::Cache));
            }
            // A damaged copy says nothing about the source: drop it and fetch
            // again; the fresh bytes are checked like any others.
            let _ = std::fs::remove_file(&path);
            progress.notice(&format!(
                "{name}: the cached {} had SHA-256 {actual}, not {expected}; removed it, fetching again",
                path.display()
            ));
        }

        // Whatever brings the file now, an old download record is not its.
        self.cache.forget_download(expected);

        if let Some(mirror) = &self.opts.mirror
            && let Some((path, from)) = self
                .look_in_mirror(name, spec, mirror, &file_name, progress)
                .await?
        {
            return Ok(done(path, from));
        }

        match &spec.source {
            ArtifactSource::Url(url) => {
                let FileName::Exact(fname) = &file_name else {
                    return Err(no_file_name(name));
                };
                let Downloaded {
                    temp,
                    sha256,
                    redirects,
                } = self
                    .http
                    .download(name, url, fname, &self.cache, expected, progress)
                    .await
                    .inspect_err(|_| self.cache.tidy(expected))?;
                let from = Source::Url {
                    url: without_credentials(url).into_owned(),
                    redirects: redirects.clone(),
                };
                // A mismatch names the host that served the bytes.
                let origin = from.to_string();
                let path =
                    self.commit_if_matching(name, &origin, temp, &sha256, expected, fname)?;
                self.cache
                    .record_download(expected, fname, url, &redirects)
                    .map_err(|e| ArtifactError::Io {
                        name: name.to_string(),
                        what: "cannot write the download record in",
                        path: self.cache.dir_for(expected),
                        source: e,
                    })?;
                Ok(done(path, from))
            }
            ArtifactSource::File(written) => {
                let FileName::Exact(fname) = &file_name else {
                    return Err(no_file_name(name));
                };
                let src = local_path(written);
                let from = Source::File(src.clone());
                let (temp, actual) = self.copy_in(name, &src, &from, expected, progress).await?;
                let origin = src.display().to_string();
                let path =
                    self.commit_if_matching(name, &origin, temp, &actual, expected, fname)?;
                Ok(done(path, from))
            }
            ArtifactSource::Build(recipe) => Err(ArtifactError::Spec {
                field: recipe.key().into(),
                problem: "names a build, which is never fetched".into(),
            }),
            ArtifactSource::Apt(pkg) => {
                let from = Source::Apt {
                    package: pkg.package.clone(),
                    version: pkg.version.clone(),
                };
                progress.start(name, &from, None);
                let got = apt::download(name, pkg, self.cache.root()).await;
                progress.finish();
                let got = got?;
                let actual = hash_blocking(name, &got.path).await?;
                if actual != expected {
                    return Err(ArtifactError::DigestMismatch {
                        name: name.to_string(),
                        origin: format!(
                            "apt package {}={} ({})",
                            pkg.package, pkg.version, got.file_name
                        ),
                        expected: expected.to_string(),
                        actual,
                    });
                }
                let dir = self.cache.dir_for(expected);
                let path = dir.join(&got.file_name);
                std::fs::create_dir_all(&dir)
                    .and_then(|()| std::fs::rename(&got.path, &path))
                    .map_err(|e| ArtifactError::Io {
                        name: name.to_string(),
                        what: "cannot move the downloaded .deb into",
                        path: dir.clone(),
                        source: e,
                    })?;
                Ok(done(path, from))
            }
        }
    }

    /// The mirror folder's copy, if it has one by that name. A copy whose
    /// digest differs is an error, not a reason to go online: the operator
    /// put it there and must hear that it is wrong.
    async fn look_in_mirror(
        &self,
        name: &str,
        spec: &ArtifactSpec,
        mirror: &Path,
        file_name: &FileName,
        progress: &mut dyn Progress,
    ) -> Result<Option<(PathBuf, Source)>, ArtifactError> {
        let candidates = find_in(mirror, file_name);
        let mut last_err = None;
        for candidate in candidates {
            let from = Source::Mirror(candidate.clone());
            let (temp, actual) = self
                .copy_in(name, &candidate, &from, &spec.sha256, progress)
                .await?;
            let fname = candidate
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let origin = format!("mirror file {}", candidate.display());
            match self.commit_if_matching(name, &origin, temp, &actual, &spec.sha256, &fname) {
                Ok(path) => return Ok(Some((path, from))),
                Err(e) => last_err = Some(e),
            }
        }
        match last_err {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Copies a local file into a partial file in the cache, hashing it.
    async fn copy_in(
        &self,
        name: &str,
        src: &Path,
        from: &Source,
        expected: &str,
        progress: &mut dyn Progress,
    ) -> Result<(NamedTempFile, String), ArtifactError> {
        use tokio::io::AsyncReadExt;
        let read_err = |e| ArtifactError::SourceFile {
            name: name.to_string(),
            path: src.to_path_buf(),
            source: e,
        };
        let write_err = |e| ArtifactError::Io {
            name: name.to_string(),
            what: "cannot write into the cache folder",
            path: self.cache.dir_for(expected),
            source: e,
        };
        let mut file = tokio::fs::File::open(src).await.map_err(read_err)?;
        let total = file.metadata().await.ok().map(|m| m.len());
        let (mut partial, swept) = self.cache.partial(expected).await.map_err(write_err)?;
        if !swept.is_empty() {
            progress.notice(&format!("{swept} ({})", self.cache.root().display()));
        }
        progress.start(name, from, total);
        let mut buf = vec![0u8; 1 << 20];
        let result = async {
            loop {
                let n = file.read(&mut buf).await.map_err(read_err)?;
                if n == 0 {
                    return Ok(());
                }
                partial.write(&buf[..n]).await.map_err(write_err)?;
                progress.advance(n as u64);
            }
        }
        .await;
        progress.finish();
        if let Err(e) = result {
            self.cache.tidy(expected);
            return Err(e);
        }
        let (temp, actual, _) = partial.finish().await.map_err(write_err)?;
        Ok((temp, actual))
    }

    /// Renames `temp` to its cache name if its digest is the pinned one;
    /// otherwise deletes it and reports the mismatch.
    fn commit_if_matching(
        &self,
        name: &str,
        origin: &str,
        temp: NamedTempFile,
        actual: &str,
        expected: &str,
        file_name: &str,
    ) -> Result<PathBuf, ArtifactError> {
        if actual != expected {
            drop(temp);
            self.cache.tidy(expected);
            return Err(ArtifactError::DigestMismatch {
                name: name.to_string(),
                origin: origin.to_string(),
                expected: expected.to_string(),
                actual: actual.to_string(),
            });
        }
        self.cache
            .commit(temp, expected, file_name)
            .map_err(|e| ArtifactError::Io {
                name: name.to_string(),
                what: "cannot rename the verified file in",
                path: self.cache.dir_for(expected),
                source: e,
            })
    }
}

/// A URL or file source always has an exact name; this keeps the match total
/// without a panic.
fn no_file_name(name: &str) -> ArtifactError {
    ArtifactError::Spec {
        field: "url".into(),
        problem: format!("of {name}: no file name could be derived from it"),
    }
}

async fn hash_blocking(name: &str, path: &Path) -> Result<String, ArtifactError> {
    let owned = path.to_path_buf();
    let result = tokio::task::spawn_blocking(move || sha256_file(&owned)).await;
    let io = |e| ArtifactError::Io {
        name: name.to_string(),
        what: "cannot read",
        path: path.to_path_buf(),
        source: e,
    };
    match result {
        Ok(r) => r.map_err(io),
        Err(join) => Err(io(std::io::Error::other(join.to_string()))),
    }
}
