//! A Python package built for real: attic 0.16 from PyPI (through the
//! host's pip), patched for OpenSSL 3, its wheels and msgpack's built in a
//! Debian bookworm root (mmdebstrap, as root) without network. Needs root,
//! mmdebstrap, the host's Debian archive and PyPI through pip: a host
//! without them fails these tests, they cannot pass by skipping. The suite
//! root is kept in the target's temporary folder across tests and runs
//! (about 90 s to make once); the wheel caches start empty.

use labrun_artifact::build::python::bundle;
use labrun_artifact::build::python::{PinnedDist, PinnedPatch};
use labrun_artifact::{
    ArtifactError, ArtifactSource, ArtifactSpec, BuildRecipe, FetchOptions, Fetcher, NoProgress,
    PythonBuild,
};
use std::path::{Path, PathBuf};
use std::process::Command;

const ATTIC_SDIST: &str = "6650cd28072101c2e05941e77b93a62f91da6179785e4e4b4880916c469bba2c";
const MSGPACK_SDIST: &str = "378cc8a6d3545b532dfd149da715abae4fda2a3adb6d74e525d0d5e51f46909b";
const CYTHON_WHEEL: &str = "95f1d6a83ef2729e67b3fa7318c829ce5b07ac64c084cd6af11c228e0364662c";
const PATCH_SHA: &str = "15a3ab15313737d7f03a3f6c8b1a69129b90a512bef68c296a5a00fdfa6869d9";

fn patch_path() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../labs/patches/attic-0.16-openssl3.patch")
        .display()
        .to_string()
}

fn attic() -> PythonBuild {
    PythonBuild {
        name: "attic".into(),
        version: "0.16".into(),
        sdist_sha256: ATTIC_SDIST.into(),
        file: None,
        suite: "bookworm".into(),
        python: Some(">=3.4,<3.12".into()),
        entry_point: "attic".into(),
        patches: vec![PinnedPatch {
            path: patch_path(),
            sha256: PATCH_SHA.into(),
        }],
        remove_files: [
            "crypto",
            "chunker",
            "hashindex",
            "platform_linux",
            "platform_freebsd",
            "platform_darwin",
        ]
        .iter()
        .map(|m| format!("attic/{m}.c"))
        .collect(),
        build_requires: vec![PinnedDist {
            name: "cython".into(),
            version: "0.29.37".into(),
            sha256: CYTHON_WHEEL.into(),
        }],
        requires: vec![PinnedDist {
            name: "msgpack-python".into(),
            version: "0.5.6".into(),
            sha256: MSGPACK_SDIST.into(),
        }],
        build_packages: vec!["libssl-dev".into(), "libacl1-dev".into()],
    }
}

fn spec(b: PythonBuild, sha256: &str) -> ArtifactSpec {
    ArtifactSpec::new(
        ArtifactSource::Build(BuildRecipe::Python(Box::new(b))),
        sha256,
    )
}

/// A cache folder whose suite roots are the shared ones (so only the first
/// test run pays for mmdebstrap), everything else empty.
fn fresh_cache(tmp: &Path) -> PathBuf {
    let roots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-roots");
    std::fs::create_dir_all(&roots).unwrap();
    let cache = tmp.join("cache");
    std::fs::create_dir_all(cache.join("python")).unwrap();
    std::os::unix::fs::symlink(&roots, cache.join("python/roots")).unwrap();
    cache
}

fn fetcher(cache: &Path) -> Fetcher {
    Fetcher::new(FetchOptions::new(cache.to_path_buf(), None)).unwrap()
}

async fn built_digest(cache: &Path, b: PythonBuild) -> Result<String, ArtifactError> {
    match fetcher(cache)
        .fetch("attic", &spec(b, &"0".repeat(64)), &mut NoProgress)
        .await
    {
        Err(ArtifactError::BuiltDigestMismatch { actual, .. }) => Ok(actual),
        Err(other) => Err(other),
        Ok(_) => panic!("a zero pin was accepted"),
    }
}

fn assert_root() {
    let uid = Command::new("id").arg("-u").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&uid.stdout).trim(),
        "0",
        "the Python build tests need root (mmdebstrap, unshare --net, chroot)"
    );
}

#[tokio::test]
#[ignore = "needs root, mmdebstrap, the Debian archive and PyPI: `make test` runs it"]
async fn attic_builds_the_same_wheels_twice_and_they_run_in_the_suite() {
    assert_root();
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (c1, c2) = (fresh_cache(one.path()), fresh_cache(two.path()));
    let first = built_digest(&c1, attic()).await.unwrap();
    let second = built_digest(&c2, attic()).await.unwrap();
    assert_eq!(first, second, "two builds from empty caches differ");

    // Pinned, the cached build is taken and its manifest names each wheel.
    let got = fetcher(&c1)
        .fetch("attic", &spec(attic(), &first), &mut NoProgress)
        .await
        .unwrap();
    let manifest = bundle::read_manifest(&got.path).unwrap();
    let files: Vec<&str> = manifest.wheels.iter().map(|w| w.file.as_str()).collect();
    assert_eq!(
        files,
        [
            "Attic-0.16-cp311-cp311-linux_x86_64.whl",
            "msgpack_python-0.5.6-cp311-cp311-linux_x86_64.whl"
        ]
    );

    // The wheels install offline into a venv of the suite and the entry
    // point runs, crypto included (the OpenSSL 3 patch's part).
    let root = std::fs::read_dir(c1.join("python/roots"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.is_dir()
                && p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("bookworm-")
        })
        .unwrap();
    let inside = root.join("labrun-try");
    let _ = std::fs::remove_dir_all(&inside);
    std::fs::create_dir_all(&inside).unwrap();
    let unpacked = Command::new("tar")
        .arg("-xf")
        .arg(&got.path)
        .arg("-C")
        .arg(&inside)
        .status()
        .unwrap();
    assert!(unpacked.success());
    let script = "set -e; cd /labrun-try; sha256sum --strict -c SHA256SUMS; \
                  python3 -m venv /labrun-try/venv; \
                  /labrun-try/venv/bin/pip install -q --no-index --no-deps wheels/*.whl; \
                  /labrun-try/venv/bin/attic --help >/dev/null; \
                  /labrun-try/venv/bin/python -c 'from attic.crypto import AES; \
                  a = AES(b\"k\" * 32); print(a.encrypt(b\"labrun\").hex())'";
    let out = Command::new("unshare")
        .args(["--net", "--", "chroot"])
        .arg(&root)
        .args(["/bin/sh", "-c", script])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&inside);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
#[ignore = "needs root, mmdebstrap, the Debian archive and PyPI: `make test` runs it"]
async fn bad_inputs_stop_before_anything_is_built() {
    assert_root();
    let tmp = tempfile::tempdir().unwrap();
    let cache = fresh_cache(tmp.path());

    // An sdist whose digest is not the pin.
    let mut wrong = attic();
    wrong.requires[0].sha256 = "e".repeat(64);
    let msg = built_digest(&cache, wrong).await.unwrap_err().to_string();
    assert!(
        msg.contains("msgpack-python-0.5.6.tar.gz has SHA-256 378cc8a6")
            && msg.contains("nothing was built"),
        "{msg}"
    );

    // A name PyPI does not have.
    let mut missing = attic();
    missing.requires[0].name = "labrun-no-such-dist-zq".into();
    let msg = built_digest(&cache, missing).await.unwrap_err().to_string();
    assert!(msg.contains("serves no sdist"), "{msg}");
    assert!(msg.contains("labrun-no-such-dist-zq==0.5.6"), "{msg}");

    // A patch that does not apply: its hunk is named.
    let bad_patch = tmp.path().join("bad.patch");
    std::fs::write(
        &bad_patch,
        "--- a/attic/crypto.pyx\n+++ b/attic/crypto.pyx\n@@ -17,3 +17,3 @@\n \
         no such line one\n-no such line two\n+replacement\n no such line three\n",
    )
    .unwrap();
    let mut unpatchable = attic();
    unpatchable.patches.push(PinnedPatch {
        path: bad_patch.display().to_string(),
        sha256: labrun_artifact::digest::sha256_file(&bad_patch).unwrap(),
    });
    let msg = built_digest(&cache, unpatchable)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("attic/crypto.pyx: hunk #1 (at line 17) FAILED"),
        "{msg}"
    );

    // A patch changed under its pin.
    let mut changed = attic();
    changed.patches[0].sha256 = "f".repeat(64);
    let msg = built_digest(&cache, changed).await.unwrap_err().to_string();
    assert!(msg.contains("the lab pins ffff"), "{msg}");
}
