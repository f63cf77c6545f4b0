//! `labrun pin`: take a tool's digest from the upstream's own checksum list
//! (or apt's signed index) and write it into the lab file's text.

use crate::apt;
use crate::build::{BuildRecipe, GoBuild};
use crate::error::ArtifactError;
use crate::fetcher::Fetcher;
use crate::lab_edit::{PinEdit, apply_pin, read_tool};
use crate::spec::{AptPackage, SpecProblem};
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinRequest {
    pub tool: String,
    pub version: String,
    /// The artifact URL with `{version}`; derived from the current URL when
    /// absent (the current version replaced by `{version}`).
    pub url_template: Option<String>,
    /// The checksum list's URL (`{version}` allowed); derived when absent.
    pub checksums: Option<String>,
    /// A digest checked by other means, for projects that publish no list.
    pub manual: Option<ManualPin>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManualPin {
    pub sha256: String,
    /// Where it was checked, written as `sha256_source`.
    pub source: String,
}

/// The edit, ready to be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinOutcome {
    pub sha256: String,
    pub sha256_source: String,
    pub url: Option<String>,
    pub old_sha256: Option<String>,
    pub new_text: String,
}

impl Fetcher {
    /// Works out the pin for `req` against the lab text `lab` (read from
    /// `lab_path`, named in errors); writes nothing.
    pub async fn plan_pin(
        &self,
        lab_path: &Path,
        lab: &str,
        req: &PinRequest,
    ) -> Result<PinOutcome, ArtifactError> {
        let edit_err = |problem: String| ArtifactError::LabEdit {
            path: lab_path.to_path_buf(),
            problem,
        };
        let view = read_tool(lab, &req.tool).map_err(edit_err)?;
        let mut edit = PinEdit {
            tool: req.tool.clone(),
            version: Some(req.version.clone()),
            url: None,
            apt_version: None,
            extract_member: None,
            sha256: String::new(),
            sha256_source: String::new(),
        };
        if let Some(package) = &view.apt_package {
            // The host's apt index is signed; its SHA256 is the upstream list.
            let pkg = AptPackage {
                package: package.clone(),
                version: req.version.clone(),
                suite: view.apt_suite.clone(),
            };
            if let Some(p) = pkg.problems().into_iter().next() {
                return Err(p.under("apt").into());
            }
            edit.apt_version = Some(req.version.clone());
            // The tool's own `version:` may be the upstream one: only follow
            // it when it was the apt version.
            if view.version != view.apt_version {
                edit.version = None;
            }
            match &req.manual {
                Some(m) => (edit.sha256, edit.sha256_source) = (m.sha256.clone(), m.source.clone()),
                None => {
                    edit.sha256 = apt::index_sha256(&pkg, self.cache().root()).await?;
                    edit.sha256_source = match &pkg.suite {
                        Some(suite) => format!(
                            "apt-cache show {}={} (the signed apt index of {suite}, from the host's archive)",
                            pkg.package, pkg.version
                        ),
                        None => format!(
                            "apt-cache show {}={} (the host's signed apt index)",
                            pkg.package, pkg.version
                        ),
                    };
                }
            }
        } else {
            let template = match &req.url_template {
                Some(t) => t.clone(),
                None => derive_template(&view.url, &view.version).map_err(edit_err)?,
            };
            if !template.contains("{version}") {
                return Err(edit_err(format!(
                    "the URL template {template:?} has no `{{version}}` placeholder"
                )));
            }
            let url = template.replace("{version}", &req.version);
            match &req.manual {
                Some(m) => (edit.sha256, edit.sha256_source) = (m.sha256.clone(), m.source.clone()),
                None => {
                    let list = req
                        .checksums
                        .as_ref()
                        .map(|c| c.replace("{version}", &req.version));
                    let published = self.published_sha256(&url, list.as_deref()).await?;
                    edit.sha256 = published.sha256;
                    edit.sha256_source = format!("upstream checksum list {}", published.list_url);
                }
            }
            edit.url = Some(url);
            // `kopia-0.22.0-linux-x64/kopia` follows the version too.
            if let (Some(old), Some(member)) = (&view.version, &view.extract_member)
                && !old.is_empty()
                && member.contains(old.as_str())
            {
                edit.extract_member = Some(member.replace(old.as_str(), &req.version));
            }
        }
        if let Some(problem) = crate::spec::rules::sha256_problem(&edit.sha256) {
            return Err(SpecProblem::new("sha256", problem).into());
        }
        let new_text = apply_pin(lab, &edit).map_err(edit_err)?;
        Ok(PinOutcome {
            sha256: edit.sha256,
            sha256_source: edit.sha256_source,
            url: edit.url,
            old_sha256: view.sha256,
            new_text,
        })
    }
}

/// `.../v0.18.0/restic_0.18.0_linux_amd64.bz2` with version `0.18.0` ->
/// `.../v{version}/restic_{version}_linux_amd64.bz2`.
fn derive_template(url: &Option<String>, version: &Option<String>) -> Result<String, String> {
    let url = url
        .as_ref()
        .ok_or("the tool's artifact has no `url:`; give --url-template")?;
    let version = version
        .as_ref()
        .filter(|v| !v.is_empty() && url.contains(v.as_str()))
        .ok_or_else(|| {
            format!(
                "cannot tell where the version is in {url}; give --url-template with {{version}}"
            )
        })?;
    Ok(url.replace(version.as_str(), "{version}"))
}

/// Replaces the lab file at `path` with `text`, atomically (a temporary
/// file beside it, renamed), keeping its permissions. A link is written
/// through: the file it names changes, the link stays. `as_read` is the text
/// the edit was made from: if the file no longer holds it (edited while
/// `pin` waited on a checksum list or a build), nothing is written, so
/// neither edit is lost.
pub fn write_lab(path: &Path, as_read: &str, text: &str) -> Result<(), ArtifactError> {
    let problem = |problem: String| ArtifactError::LabEdit {
        path: path.to_path_buf(),
        problem,
    };
    let io = |e: std::io::Error| problem(format!("cannot write it: {e}"));
    let real = std::fs::canonicalize(path).map_err(io)?;
    let dir = real.parent().unwrap_or(Path::new("/"));
    let mut temp = tempfile::Builder::new()
        .prefix(".labrun-pin-")
        .tempfile_in(dir)
        .map_err(io)?;
    std::io::Write::write_all(&mut temp, text.as_bytes()).map_err(io)?;
    let meta = std::fs::metadata(&real).map_err(io)?;
    std::fs::set_permissions(temp.path(), meta.permissions()).map_err(io)?;
    temp.as_file().sync_all().map_err(io)?;
    // Last, just before the rename: the narrowest window for an edit.
    if std::fs::read(&real).map_err(io)? != as_read.as_bytes() {
        return Err(problem(
            "it changed since `labrun pin` read it (edited meanwhile?), so the pin was not written and the file keeps that edit: run `labrun pin` again".into(),
        ));
    }
    temp.persist(&real).map_err(|e| io(e.error))?;
    Ok(())
}

/// A build's pins, as `labrun pin` writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildPin {
    /// The Go module's hash (go.sum's `h1:`), for a go build.
    pub sum: Option<String>,
    /// The built binary's SHA-256.
    pub sha256: String,
}

impl Fetcher {
    /// Builds `recipe` (from the cache when its inputs were built before)
    /// and returns its pins: for a go build the module's hash first, as the
    /// go command gets it from the host's module proxy and checks it
    /// against the checksum database, then the binary's digest. The recipe's
    /// own `sum` is ignored (it is what is being pinned).
    pub async fn pin_build(
        &self,
        name: &str,
        recipe: &BuildRecipe,
        progress: &mut dyn crate::progress::Progress,
    ) -> Result<BuildPin, ArtifactError> {
        let cache_dir = self.opts.cache_dir.as_path();
        let (recipe, sum) = match recipe {
            BuildRecipe::Go(go) => {
                let sum = module_sum(go, cache_dir, &self.opts.build_env).await?;
                let pinned = GoBuild {
                    sum: sum.clone(),
                    ..go.clone()
                };
                (BuildRecipe::Go(pinned), Some(sum))
            }
            other => (other.clone(), None),
        };
        // An empty expectation never matches: the mismatch carries the
        // digest of the binary just built (or found in the cache).
        let built = crate::build::build_checked(
            &recipe,
            name,
            "",
            cache_dir,
            &self.opts.build_env,
            progress,
            self,
        )
        .await;
        match built {
            Err(ArtifactError::BuiltDigestMismatch { actual, .. }) => Ok(BuildPin {
                sum,
                sha256: actual,
            }),
            Err(e) => Err(e),
            // Not reached (no digest is empty), but said rightly if it were.
            Ok((binary, _)) => Ok(BuildPin {
                sum,
                sha256: crate::digest::sha256_file(&binary).map_err(|e| ArtifactError::Io {
                    name: name.to_string(),
                    what: "cannot read",
                    path: binary.clone(),
                    source: e,
                })?,
            }),
        }
    }
}

/// `go mod download -json MODULE@VERSION`'s `Sum`, with the environment
/// every build of labrun runs the go command with (its own module cache).
async fn module_sum(
    go: &GoBuild,
    cache_dir: &Path,
    extra_env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Result<String, ArtifactError> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Downloaded {
        #[serde(default)]
        sum: String,
        #[serde(default)]
        error: String,
    }
    let at = format!("{}@{}", go.module, go.version);
    let fail = |problem: String| ArtifactError::Checksums {
        url: format!("go mod download -json {at}"),
        problem,
    };
    let mut cmd = tokio::process::Command::new("go");
    cmd.args(["mod", "download", "-json", &at])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    crate::build::go::go_env(&mut cmd, cache_dir, &go.toolchain);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().await.map_err(|e| {
        fail(format!(
            "cannot run `go`: {e} (install Go: Debian's golang-go)"
        ))
    })?;
    // The JSON (with "Error") comes on a refusal too, with exit status 1.
    let got: Downloaded = serde_json::from_slice(&out.stdout).map_err(|_| {
        fail(format!(
            "no answer: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    })?;
    if !got.error.is_empty() {
        return Err(fail(format!(
            "{}; {}",
            got.error,
            crate::build::go::PROXY_REFUSED
        )));
    }
    if !got.sum.starts_with("h1:") {
        return Err(fail(format!(
            "the answer has no module hash: {:?}",
            got.sum
        )));
    }
    Ok(got.sum)
}

/// How a build's digest was taken, as `sha256_source` says it.
pub const BUILT_SOURCE: &str = "the binary labrun built from these inputs (`labrun pin`); \
     a build from the same inputs gives the same bytes";

impl Fetcher {
    /// `labrun pin TOOL [--version V]` for a tool built from source: the
    /// recipe (as the lab writes it) at `version` when given (a go build's
    /// module version gets its `v`), built or taken from the cache, and its
    /// pins written into the text: the build block's `version` and `sum`,
    /// the tool's `version`, `sha256` and `sha256_source`. Writes nothing.
    pub async fn plan_build_pin(
        &self,
        lab_path: &Path,
        lab: &str,
        tool: &str,
        version: Option<&str>,
        recipe: &BuildRecipe,
        progress: &mut dyn crate::progress::Progress,
    ) -> Result<PinOutcome, ArtifactError> {
        let edit_err = |problem: String| ArtifactError::LabEdit {
            path: lab_path.to_path_buf(),
            problem,
        };
        let mut recipe = recipe.clone();
        let mut fields: Vec<(&str, String)> = Vec::new();
        if let Some(v) = version {
            match &mut recipe {
                BuildRecipe::Go(g) => {
                    g.version = if v.starts_with('v') {
                        v.to_string()
                    } else {
                        format!("v{v}")
                    };
                    fields.push(("version", g.version.clone()));
                }
                BuildRecipe::Crate(c) => {
                    c.version = v.to_string();
                    fields.push(("version", c.version.clone()));
                }
                BuildRecipe::Python(_) => {
                    return Err(edit_err(format!(
                        "`{tool}` is a Python package: its sdist's and dependencies' digests \
                         change with the version, so write the new `version`, `sdist_sha256` and \
                         `requires` in the lab (docs/guide/labs.md), then run `labrun pin {tool}` \
                         without --version"
                    )));
                }
                BuildRecipe::Source(_) => {
                    return Err(edit_err(format!(
                        "`{tool}` is built from a source tree, which its commit or archive and                          tree id name, not a version: write the new `git.commit` (or archive and                          `tree`) in the lab, then run `labrun pin {tool}` without --version"
                    )));
                }
            }
        }
        if let Some(p) = recipe.problems().into_iter().next() {
            return Err(p.into());
        }
        let pin = self.pin_build(tool, &recipe, progress).await?;
        if let Some(sum) = &pin.sum {
            fields.push(("sum", sum.clone()));
        }
        let view = read_tool(lab, tool).map_err(edit_err)?;
        let text = if fields.is_empty() {
            lab.to_string()
        } else {
            crate::lab_edit::apply_build_fields(lab, tool, recipe.key(), &fields)
                .map_err(edit_err)?
        };
        let edit = PinEdit {
            tool: tool.to_string(),
            version: version.map(|v| v.trim_start_matches('v').to_string()),
            url: None,
            apt_version: None,
            extract_member: None,
            sha256: pin.sha256.clone(),
            sha256_source: BUILT_SOURCE.to_string(),
        };
        let new_text = apply_pin(&text, &edit).map_err(edit_err)?;
        Ok(PinOutcome {
            sha256: pin.sha256,
            sha256_source: BUILT_SOURCE.to_string(),
            url: None,
            old_sha256: view.sha256,
            new_text,
        })
    }
}
