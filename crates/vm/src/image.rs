//! The base image: cached under `<cache>/images/<digest>/`, built by the
//! embedded recipe in a temporary folder and renamed into place only when
//! complete, so a half-built image is never used.

use crate::apt_sources;
use crate::config::ImageSpec;
use crate::error::VmError;
use crate::recipe;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, BufReader};

pub(crate) const MANIFEST: &str = "image.json";

/// A complete image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseImage {
    pub dir: PathBuf,
    pub digest: String,
}

impl BaseImage {
    pub fn disk(&self) -> PathBuf {
        self.dir.join("disk.qcow2")
    }
    pub fn kernel(&self) -> PathBuf {
        self.dir.join("vmlinuz")
    }
    pub fn initrd(&self) -> PathBuf {
        self.dir.join("initrd.img")
    }
}

/// Written last into the image folder: its presence means "complete".
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageManifest {
    pub digest: String,
    pub spec: ImageSpec,
    pub built: String,
    pub build_seconds: f64,
}

pub fn images_dir(cache_dir: &Path) -> PathBuf {
    cache_dir.join("images")
}

fn digest_of(spec: &ImageSpec) -> Result<String, VmError> {
    recipe::image_digest(spec).ok_or_else(|| VmError::Config {
        field: "image.recipe",
        reason: format!("unknown recipe `{}`", spec.recipe),
    })
}

/// The image for `spec` if it was built completely before.
pub fn cached(cache_dir: &Path, spec: &ImageSpec) -> Result<Option<BaseImage>, VmError> {
    let digest = digest_of(spec)?;
    let dir = images_dir(cache_dir).join(&digest);
    let img = BaseImage { dir, digest };
    let complete = img.dir.join(MANIFEST).is_file()
        && [img.disk(), img.kernel(), img.initrd()]
            .iter()
            .all(|p| p.is_file());
    Ok(complete.then_some(img))
}

/// Builds the image for `spec` (unless cached and not `force`), feeding each
/// line of the recipe's output to `on_line`. Dropping the future stops the
/// build and removes its temporary folder.
pub async fn build(
    cache_dir: &Path,
    spec: &ImageSpec,
    apt_dir: &Path,
    force: bool,
    on_line: &mut (dyn FnMut(&str) + Send),
) -> Result<BaseImage, VmError> {
    spec.validate()?;
    if !force && let Some(img) = cached(cache_dir, spec)? {
        return Ok(img);
    }
    let digest = digest_of(spec)?;
    let files = recipe::recipe(&spec.recipe).unwrap_or_default();
    let mirrors: Vec<String> = apt_sources::sources_for_suite(apt_dir, &spec.suite)
        .map_err(|e| VmError::AptSources(e.to_string()))?
        .iter()
        .map(|s| s.mmdebstrap_line())
        .collect();

    let images = images_dir(cache_dir);
    make_dir_0755(cache_dir)?;
    make_dir_0755(&images)?;
    remove_abandoned_builds(&images);
    let tmp = images.join(format!(".build-{}-{}", &digest[..16], std::process::id()));
    let guard = TempDir(tmp.clone());
    let recipe_dir = tmp.join("recipe");
    for f in files {
        let p = recipe_dir.join(f.path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(VmError::io(parent))?;
        }
        std::fs::write(&p, f.content).map_err(VmError::io(&p))?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(f.mode))
            .map_err(VmError::io(&p))?;
    }
    let out = tmp.join("image");
    make_dir_0755(&tmp)?;
    make_dir_0755(&out)?;

    let started = Instant::now();
    let mut child = tokio::process::Command::new("bash")
        .arg(recipe_dir.join("build.sh"))
        .arg(&out)
        .env("LABRUN_SUITE", &spec.suite)
        .env("LABRUN_MIRRORS", mirrors.join("\n"))
        .env("LABRUN_EXTRA_PACKAGES", spec.extra_packages.join(","))
        .env("LABRUN_DISK_GIB", spec.disk_gib.to_string())
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // Own process group, so a cancelled build stops mmdebstrap too.
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| VmError::ImageBuild {
            reason: format!("cannot run bash: {e}"),
            tail: String::new(),
        })?;
    let group = child.id().map(|pid| GroupKiller(pid as i32));

    let mut tail: VecDeque<String> = VecDeque::new();
    let mut remember = |line: String, on_line: &mut (dyn FnMut(&str) + Send)| {
        on_line(&line);
        if tail.len() == 40 {
            tail.pop_front();
        }
        tail.push_back(line);
    };
    let mut stdout = child.stdout.take().map(|s| BufReader::new(s).lines());
    let mut stderr = child.stderr.take().map(|s| BufReader::new(s).lines());
    while stdout.is_some() || stderr.is_some() {
        tokio::select! {
            l = next_line(&mut stdout), if stdout.is_some() => match l {
                Some(l) => remember(l, on_line),
                None => stdout = None,
            },
            l = next_line(&mut stderr), if stderr.is_some() => match l {
                Some(l) => remember(l, on_line),
                None => stderr = None,
            },
        }
    }
    let status = child.wait().await.map_err(|e| VmError::ImageBuild {
        reason: e.to_string(),
        tail: String::new(),
    })?;
    // The recipe exited: nothing left to kill.
    std::mem::forget(group);
    if !status.success() {
        return Err(VmError::ImageBuild {
            reason: format!("the recipe exited with {status}"),
            tail: Vec::from(tail).join("\n"),
        });
    }

    let manifest = ImageManifest {
        digest: digest.clone(),
        spec: spec.clone(),
        built: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        build_seconds: started.elapsed().as_secs_f64(),
    };
    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| VmError::ImageBuild {
        reason: e.to_string(),
        tail: String::new(),
    })?;
    crate::state::write_atomic(&out.join(MANIFEST), &json, 0o644)?;

    let final_dir = images.join(&digest);
    if final_dir.exists() {
        // --force: move the old one aside first, so the rename below is atomic.
        let old = images.join(format!(".old-{}-{}", &digest[..16], std::process::id()));
        std::fs::rename(&final_dir, &old).map_err(VmError::io(&final_dir))?;
        let _ = std::fs::remove_dir_all(&old);
    }
    std::fs::rename(&out, &final_dir).map_err(VmError::io(&final_dir))?;
    drop(guard);
    Ok(BaseImage {
        dir: final_dir,
        digest,
    })
}

async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut Option<tokio::io::Lines<R>>,
) -> Option<String> {
    match lines {
        Some(l) => l.next_line().await.ok().flatten(),
        None => None,
    }
}

fn make_dir_0755(p: &Path) -> Result<(), VmError> {
    std::fs::create_dir_all(p).map_err(VmError::io(p))?;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).map_err(VmError::io(p))
}

/// Removes the temporary build folder however the build ends, unless
/// something is still mounted beneath it (mmdebstrap mounts /proc and /sys
/// into the tree; a recursive delete must never walk into those).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.0.exists() || has_mounts_under(&self.0) {
            return;
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `.build-*-<pid>` folders whose labrun died (`kill -9`) without cleaning
/// up; skipped while their process lives or anything is mounted inside.
fn remove_abandoned_builds(images: &Path) {
    let Ok(entries) = std::fs::read_dir(images) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with(".build-") || name.starts_with(".old-")) {
            continue;
        }
        let pid = name.rsplit('-').next().and_then(|p| p.parse::<i32>().ok());
        let alive = pid
            .and_then(rustix::process::Pid::from_raw)
            .is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
        if !alive {
            drop(TempDir(e.path()));
        }
    }
}

fn has_mounts_under(dir: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return true;
    };
    info.lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .any(|mount_point| Path::new(mount_point).starts_with(dir))
}

/// SIGTERM to the recipe's process group when the build is abandoned;
/// mmdebstrap unmounts what it mounted on SIGTERM. Then waits briefly for it.
struct GroupKiller(i32);

impl Drop for GroupKiller {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.0) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
            for _ in 0..100 {
                if rustix::process::test_kill_process_group(pid).is_err() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incomplete_image_is_not_cached() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = ImageSpec::default();
        assert!(cached(tmp.path(), &spec).unwrap().is_none());
        let d = recipe::image_digest(&spec).unwrap();
        let dir = images_dir(tmp.path()).join(&d);
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["disk.qcow2", "vmlinuz", "initrd.img"] {
            std::fs::write(dir.join(f), "x").unwrap();
        }
        // Files without the manifest: a build died before finishing.
        assert!(cached(tmp.path(), &spec).unwrap().is_none());
        std::fs::write(dir.join(MANIFEST), "{}").unwrap();
        let img = cached(tmp.path(), &spec).unwrap().unwrap();
        assert_eq!(img.disk(), dir.join("disk.qcow2"));
    }

    #[test]
    fn abandoned_builds_of_dead_processes_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(".build-abc-999999999");
        let live = tmp
            .path()
            .join(format!(".build-abc-{}", std::process::id()));
        let image = tmp.path().join("0123");
        for d in [&dead, &live, &image] {
            std::fs::create_dir_all(d.join("x")).unwrap();
        }
        remove_abandoned_builds(tmp.path());
        assert!(!dead.exists());
        assert!(live.exists() && image.exists());
    }

    #[test]
    fn temp_dir_guard_removes_only_unmounted_trees() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join(".build-x");
        std::fs::create_dir_all(p.join("a/b")).unwrap();
        assert!(!has_mounts_under(&p));
        drop(TempDir(p.clone()));
        assert!(!p.exists());
        assert!(has_mounts_under(Path::new("/")));
    }
}
