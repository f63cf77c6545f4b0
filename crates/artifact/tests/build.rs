//! Builds from pinned source, for real, with the host's Go and Rust: a small
//! Go module served by a module proxy in a local folder (`GOPROXY=file://`),
//! and a small crate served by a directory registry that replaces crates.io
//! for the test's own cargo home. Nothing leaves the machine. A host without
//! `go`, `cargo` or `python3` fails these tests: they cannot pass by skipping.

use labrun_artifact::{
    ArtifactError, ArtifactSource, ArtifactSpec, BuildRecipe, CrateBuild, FetchOptions, Fetcher,
    GoBuild, NoProgress, Source,
};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

const MODULE: &str = "example.com/labrunhello";

fn installed_go() -> String {
    let out = Command::new("go")
        .args(["env", "GOVERSION"])
        .output()
        .expect("the build tests need `go` on PATH (Debian: golang-go)");
    assert!(out.status.success(), "go env GOVERSION failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn installed_rustc() -> String {
    let out = Command::new("rustc").arg("--version").output().unwrap();
    let line = String::from_utf8(out.stdout).unwrap();
    line.split_whitespace().nth(1).unwrap().to_string()
}

/// Writes `version` of the test module into a proxy folder and returns its
/// go.sum hash, computed here (Go's dirhash "h1": SHA-256 over the sorted
/// "sha256  name" lines of the zip's files, base64), not by the go command.
fn publish(proxy: &Path, version: &str, greeting: &str) -> String {
    let script = r#"
import base64, hashlib, json, os, sys, zipfile
proxy, module, version, greeting = sys.argv[1:5]
d = os.path.join(proxy, module, "@v")
os.makedirs(d, exist_ok=True)
gomod = "module %s\n\ngo 1.21\n" % module
files = {
    "go.mod": gomod,
    "main.go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("%s") }\n' % greeting,
}
prefix = "%s@%s/" % (module, version)
with zipfile.ZipFile(os.path.join(d, version + ".zip"), "w") as z:
    for name in sorted(files):
        z.writestr(prefix + name, files[name])
open(os.path.join(d, version + ".mod"), "w").write(gomod)
open(os.path.join(d, version + ".info"), "w").write(json.dumps({"Version": version, "Time": "2026-01-01T00:00:00Z"}))
with open(os.path.join(d, "list"), "a") as f:
    f.write(version + "\n")
summary = "".join("%s  %s\n" % (hashlib.sha256(files[n].encode()).hexdigest(), prefix + n) for n in sorted(files))
print("h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode())
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(proxy)
        .arg(MODULE)
        .arg(version)
        .arg(greeting)
        .output()
        .expect("the Go build test needs python3 to write its module proxy");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

struct GoLab {
    _tmp: tempfile::TempDir,
    proxy: PathBuf,
    cache: PathBuf,
}

impl GoLab {
    fn new() -> GoLab {
        let tmp = tempfile::tempdir().unwrap();
        let proxy = tmp.path().join("proxy");
        let cache = tmp.path().join("cache");
        GoLab {
            proxy,
            cache,
            _tmp: tmp,
        }
    }

    fn fetcher(&self, cache: &Path) -> Fetcher {
        let mut opts = FetchOptions::new(cache.to_path_buf(), None);
        opts.build_env = vec![
            (
                OsString::from("GOPROXY"),
                OsString::from(format!("file://{}", self.proxy.display())),
            ),
            ("GOSUMDB".into(), "off".into()),
        ];
        Fetcher::new(opts).unwrap()
    }
}

fn go_spec(version: &str, sum: &str, sha256: &str) -> ArtifactSpec {
    ArtifactSpec::new(
        ArtifactSource::Build(BuildRecipe::Go(GoBuild {
            module: MODULE.into(),
            version: version.into(),
            sum: sum.into(),
            package: ".".into(),
            toolchain: installed_go(),
            tags: vec![],
            ldflags: Some("-s -w".into()),
            binary: None,
        })),
        sha256,
    )
}

/// The digest a build reports when the pin is wrong.
fn actual_of(err: ArtifactError) -> String {
    match err {
        ArtifactError::BuiltDigestMismatch { actual, .. } => actual,
        other => panic!("expected a digest mismatch, got: {other}"),
    }
}

#[tokio::test]
#[ignore = "needs a Go build (the host's go): `make test` runs it"]
async fn a_go_module_is_built_pinned_cached_and_a_changed_pin_is_refused() {
    let lab = GoLab::new();
    let sum = publish(&lab.proxy, "v1.0.0", "hello from v1.0.0");
    let f = lab.fetcher(&lab.cache);

    // First build, with a placeholder pin: refused, the real digest named.
    let unpinned = go_spec("v1.0.0", &sum, &"0".repeat(64));
    let err = f
        .fetch("hello", &unpinned, &mut NoProgress)
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("nothing was installed") && msg.contains("pin `sha256: "),
        "{msg}"
    );
    let digest = actual_of(err);

    // Pinned: the cached build is used, nothing is built again.
    let pinned = go_spec("v1.0.0", &sum, &digest);
    let got = f.fetch("hello", &pinned, &mut NoProgress).await.unwrap();
    let Source::Build {
        cached,
        dir,
        toolchain,
        ..
    } = &got.from
    else {
        panic!("not a build: {:?}", got.from)
    };
    assert!(*cached, "the second fetch rebuilt");
    assert!(toolchain.contains(&installed_go()), "{toolchain}");
    let run = Command::new(&got.path).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout).trim(),
        "hello from v1.0.0"
    );
    let record = std::fs::read_to_string(dir.join("build.json")).unwrap();
    assert!(
        record.contains(&digest) && record.contains("CGO_ENABLED=0"),
        "{record}"
    );
    assert!(
        std::fs::read_to_string(dir.join("build.log"))
            .unwrap()
            .contains("go build")
    );

    // Another version under the old pin: built (other inputs) and refused.
    let sum2 = publish(&lab.proxy, "v1.0.1", "hello from v1.0.1");
    let moved = go_spec("v1.0.1", &sum2, &digest);
    let other = actual_of(f.fetch("hello", &moved, &mut NoProgress).await.unwrap_err());
    assert_ne!(other, digest);

    // A module whose hash is not the pinned one is never built.
    let forged = go_spec("v1.0.0", &sum2, &digest);
    match f
        .fetch("hello", &forged, &mut NoProgress)
        .await
        .unwrap_err()
    {
        ArtifactError::ModuleSumMismatch {
            expected, actual, ..
        } => {
            assert_eq!((expected, actual), (sum2.clone(), sum.clone()));
        }
        e => panic!("expected a module hash mismatch, got: {e}"),
    }

    // The same inputs from empty caches give the same bytes.
    let fresh = lab._tmp.path().join("cache-2");
    let again = lab
        .fetcher(&fresh)
        .fetch("hello", &pinned, &mut NoProgress)
        .await
        .unwrap();
    assert!(matches!(again.from, Source::Build { cached: false, .. }));
    assert_eq!(again.sha256, digest);
}

#[tokio::test]
async fn a_version_the_proxy_does_not_serve_names_the_step_and_keeps_the_log() {
    let lab = GoLab::new();
    let sum = publish(&lab.proxy, "v1.0.0", "hi");
    let f = lab.fetcher(&lab.cache);
    let err = f
        .fetch(
            "hello",
            &go_spec("v9.9.9", &sum, &"0".repeat(64)),
            &mut NoProgress,
        )
        .await
        .unwrap_err();
    let ArtifactError::Build { step, log, .. } = &err else {
        panic!("expected a build failure, got: {err}")
    };
    assert!(
        step.contains("go mod download example.com/labrunhello@v9.9.9"),
        "{step}"
    );
    // Said as at pin time, naming the way to reach any version.
    let text = err.to_string();
    assert!(
        text.contains("does not serve this version") && text.contains("build it from its source"),
        "{text}"
    );
    assert!(std::fs::read_to_string(log).unwrap().contains("v9.9.9"));
}

#[tokio::test]
async fn a_toolchain_other_than_the_pinned_one_is_refused_before_building() {
    let lab = GoLab::new();
    let sum = publish(&lab.proxy, "v1.0.0", "hi");
    let mut spec = go_spec("v1.0.0", &sum, &"0".repeat(64));
    // A release the file proxy cannot serve: the go command cannot switch.
    let ArtifactSource::Build(BuildRecipe::Go(go)) = &mut spec.source else {
        unreachable!("go_spec makes a Go build")
    };
    go.toolchain = "go1.99.0".into();
    let err = lab
        .fetcher(&lab.cache)
        .fetch("hello", &spec, &mut NoProgress)
        .await;
    match err.unwrap_err() {
        ArtifactError::Toolchain { wanted, .. } => assert_eq!(wanted, "go1.99.0"),
        e => panic!("expected a toolchain error, got: {e}"),
    }
    assert!(
        !lab.cache.join("builds").read_dir().unwrap().any(|e| e
            .unwrap()
            .path()
            .join("hello")
            .exists())
    );
}

/// A crate in a directory registry that replaces crates.io for the test's
/// own cargo home.
fn crate_registry(root: &Path, message: &str) -> PathBuf {
    let krate = root.join("vendor/labrun-hello");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"labrun-hello\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[[bin]]\nname = \"labrun-hello\"\npath = \"src/main.rs\"\n".to_string(),
        ),
        (
            "Cargo.lock",
            "version = 3\n\n[[package]]\nname = \"labrun-hello\"\nversion = \"0.1.0\"\n".to_string(),
        ),
        ("src/main.rs", format!("fn main() {{ println!(\"{message}\"); }}\n")),
    ];
    let mut sums = serde_json::Map::new();
    for (name, text) in &files {
        std::fs::write(krate.join(name), text).unwrap();
        sums.insert(
            name.to_string(),
            labrun_artifact::digest::sha256_reader(text.as_bytes())
                .unwrap()
                .0
                .into(),
        );
    }
    let checksum = serde_json::json!({"files": sums, "package": null});
    std::fs::write(krate.join(".cargo-checksum.json"), checksum.to_string()).unwrap();
    let home = root.join("cargo-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "[source.crates-io]\nreplace-with = \"local\"\n\n[source.local]\ndirectory = \"{}\"\n",
            root.join("vendor").display()
        ),
    )
    .unwrap();
    home
}

fn crate_spec(sha256: &str) -> ArtifactSpec {
    ArtifactSpec::new(
        ArtifactSource::Build(BuildRecipe::Crate(CrateBuild {
            name: "labrun-hello".into(),
            version: "0.1.0".into(),
            binary: "labrun-hello".into(),
            toolchain: installed_rustc(),
            features: vec![],
            no_default_features: false,
        })),
        sha256,
    )
}

#[tokio::test]
#[ignore = "needs a cargo build of a crate: `make test` runs it"]
async fn a_crate_is_built_pinned_and_cached() {
    let tmp = tempfile::tempdir().unwrap();
    let home = crate_registry(tmp.path(), "hello from a crate");
    let mut opts = FetchOptions::new(tmp.path().join("cache"), None);
    opts.build_env = vec![("CARGO_HOME".into(), home.into_os_string())];
    let f = Fetcher::new(opts).unwrap();

    let digest = actual_of(
        f.fetch("hello", &crate_spec(&"0".repeat(64)), &mut NoProgress)
            .await
            .unwrap_err(),
    );
    let got = f
        .fetch("hello", &crate_spec(&digest), &mut NoProgress)
        .await
        .unwrap();
    assert!(
        matches!(got.from, Source::Build { cached: true, .. }),
        "{:?}",
        got.from
    );
    let run = Command::new(&got.path).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&run.stdout).trim(),
        "hello from a crate"
    );

    // A toolchain the host does not have is refused before anything builds.
    let mut other = crate_spec(&digest);
    let ArtifactSource::Build(BuildRecipe::Crate(c)) = &mut other.source else {
        unreachable!("crate_spec makes a crate build")
    };
    c.toolchain = "1.0.0".into();
    assert!(matches!(
        f.fetch("hello", &other, &mut NoProgress).await.unwrap_err(),
        ArtifactError::Toolchain { .. }
    ));
}

/// `labrun pin`'s core for a build: the module hash from the go command
/// (here checked against the hash this test computes itself), then the
/// binary's digest, which a fetch with those pins accepts.
#[tokio::test]
#[ignore = "needs a Go build (the host's go): `make test` runs it"]
async fn a_go_build_is_pinned_by_building_it() {
    let lab = GoLab::new();
    let sum = publish(&lab.proxy, "v1.2.0", "hello from v1.2.0");
    let f = lab.fetcher(&lab.cache);
    // The pin being written: what the recipe says of `sum` does not count.
    let ArtifactSource::Build(recipe) = go_spec("v1.2.0", "h1:unpinned", &"0".repeat(64)).source
    else {
        unreachable!()
    };
    let pin = f
        .pin_build("hello", &recipe, &mut NoProgress)
        .await
        .unwrap();
    assert_eq!(pin.sum.as_deref(), Some(sum.as_str()));
    assert_eq!(pin.sha256.len(), 64);
    let pinned = go_spec("v1.2.0", &sum, &pin.sha256);
    let got = f.fetch("hello", &pinned, &mut NoProgress).await.unwrap();
    assert!(matches!(got.from, Source::Build { cached: true, .. }));
    assert_eq!(got.sha256, pin.sha256);

    // A version the proxy does not serve is said as such, naming the way out.
    let ArtifactSource::Build(missing) = go_spec("v9.9.9", "h1:x", &"0".repeat(64)).source else {
        unreachable!()
    };
    let err = f
        .pin_build("hello", &missing, &mut NoProgress)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("v9.9.9") && err.contains(labrun_artifact::build::go::PROXY_REFUSED),
        "{err}"
    );
}
