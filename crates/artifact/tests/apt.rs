//! The `apt` source against the host's real archive: restic as the host's
//! apt offers it, checked against the SHA-256 in apt's signed index, then
//! extracted and run.

use labrun_artifact::{
    AptPackage, ArtifactSource, ArtifactSpec, Extract, FetchOptions, Fetcher, InstallKind,
    NoProgress, Source, extract,
};
use std::process::Command;

/// The candidate version and its SHA-256 as apt's index lists them, read
/// with apt-cache here rather than through the crate under test.
fn candidate(package: &str) -> (String, String) {
    let policy = Command::new("apt-cache")
        .args(["policy", package])
        .output()
        .unwrap();
    let policy = String::from_utf8(policy.stdout).unwrap();
    let version = policy
        .lines()
        .find_map(|l| l.trim().strip_prefix("Candidate: "))
        .filter(|v| *v != "(none)")
        .unwrap_or_else(|| panic!("apt offers no {package}; run `apt-get update`:\n{policy}"))
        .to_string();
    let show = Command::new("apt-cache")
        .args(["show", &format!("{package}={version}")])
        .output()
        .unwrap();
    let sha = String::from_utf8(show.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("SHA256: ").map(str::to_string))
        .unwrap();
    (version, sha)
}

fn apt_spec(version: &str, sha: &str, extract: Extract) -> ArtifactSpec {
    let package = AptPackage {
        package: "restic".into(),
        version: version.into(),
        suite: None,
    };
    ArtifactSpec {
        sha256_source: Some("apt-cache show".into()),
        extract,
        ..ArtifactSpec::new(ArtifactSource::Apt(package), sha)
    }
}

#[tokio::test]
async fn restic_from_the_hosts_apt_is_verified_extracted_and_runs() {
    let (version, sha) = candidate("restic");
    let cache = tempfile::tempdir().unwrap();
    let fetcher = Fetcher::new(FetchOptions::new(cache.path().to_path_buf(), None)).unwrap();
    let spec = apt_spec(&version, &sha, Extract::DebMember("usr/bin/restic".into()));

    let got = fetcher
        .fetch("restic", &spec, &mut NoProgress)
        .await
        .unwrap();
    assert_eq!(
        got.from,
        Source::Apt {
            package: "restic".into(),
            version: version.clone()
        }
    );
    let deb_name = got.path.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        deb_name.starts_with(&format!("restic_{}_", version.replace(':', "%3a"))),
        "{deb_name}"
    );
    // No temporary apt folder is left behind in the cache.
    let leftovers: Vec<_> = std::fs::read_dir(cache.path().join("artifacts"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from(&sha)]);

    let bin = extract(&got, &spec).unwrap();
    let out = Command::new(&bin.path).arg("version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let upstream = version.split(['-', '+']).next().unwrap();
    assert!(
        out.status.success() && text.contains(&format!("restic {upstream}")),
        "{text}"
    );

    // deb-install records the same binary digest, keeping the .deb.
    let install = apt_spec(
        &version,
        &sha,
        Extract::DebInstall("/usr/bin/restic".into()),
    );
    let inst = extract(&got, &install).unwrap();
    assert_eq!(inst.binary_sha256, bin.binary_sha256);
    assert_eq!(inst.path, got.path);
    assert!(matches!(inst.kind, InstallKind::Deb { .. }));

    // Second time: from the cache. Then, with a fresh cache, from a mirror
    // folder holding the .deb under apt's name: apt is not needed.
    let again = fetcher
        .fetch("restic", &spec, &mut NoProgress)
        .await
        .unwrap();
    assert_eq!(again.from, Source::Cache);
    let mirror = tempfile::tempdir().unwrap();
    std::fs::copy(&got.path, mirror.path().join(&deb_name)).unwrap();
    let cache2 = tempfile::tempdir().unwrap();
    let offline = Fetcher::new(FetchOptions::new(
        cache2.path().to_path_buf(),
        Some(mirror.path().to_path_buf()),
    ))
    .unwrap();
    let mirrored = offline
        .fetch("restic", &spec, &mut NoProgress)
        .await
        .unwrap();
    assert_eq!(mirrored.from, Source::Mirror(mirror.path().join(&deb_name)));
}

#[tokio::test]
async fn an_unknown_apt_version_is_explained_and_a_wrong_digest_refused() {
    let (version, sha) = candidate("restic");
    let cache = tempfile::tempdir().unwrap();
    let fetcher = Fetcher::new(FetchOptions::new(cache.path().to_path_buf(), None)).unwrap();

    let missing = apt_spec(
        "0.0.1-99",
        &sha,
        Extract::DebMember("usr/bin/restic".into()),
    );
    let err = fetcher
        .fetch("restic", &missing, &mut NoProgress)
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("apt-get download restic=0.0.1-99"), "{msg}");
    assert!(msg.contains("apt-cache policy restic"), "{msg}");

    let mut wrong = sha.into_bytes();
    wrong[0] = if wrong[0] == b'0' { b'1' } else { b'0' };
    let wrong = String::from_utf8(wrong).unwrap();
    let bad = apt_spec(
        &version,
        &wrong,
        Extract::DebMember("usr/bin/restic".into()),
    );
    let err = fetcher
        .fetch("restic", &bad, &mut NoProgress)
        .await
        .unwrap_err();
    assert!(
        matches!(err, labrun_artifact::ArtifactError::DigestMismatch { .. }),
        "{err:?}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(cache.path().join("artifacts"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
