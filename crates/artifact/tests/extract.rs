//! Extraction of each archive kind, from small archives the test makes.

mod common;

use common::{payload, sha256_hex};
use labrun_artifact::{
    ArtifactError, ArtifactSource, ArtifactSpec, Extract, FetchedArtifact, InstallKind, Source,
    extract,
};
use std::io::Write;
use std::path::Path;

/// Puts `bytes` where the fetcher would (`artifacts/<sha>/<name>`).
fn fetched(root: &Path, file_name: &str, bytes: &[u8]) -> FetchedArtifact {
    let sha = sha256_hex(bytes);
    let dir = root.join("artifacts").join(&sha);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(file_name);
    std::fs::write(&path, bytes).unwrap();
    FetchedArtifact {
        name: "tool".into(),
        path,
        sha256: sha,
        from: Source::Cache,
    }
}

fn spec(extract: Extract, sha: &str) -> ArtifactSpec {
    ArtifactSpec {
        extract,
        ..ArtifactSpec::new(ArtifactSource::Url("https://example.invalid/x".into()), sha)
    }
}

fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data) in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o755);
        h.set_cksum();
        b.append_data(&mut h, path, *data).unwrap();
    }
    b.into_inner().unwrap()
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn bz2(data: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn xz(data: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zst(data: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(data, 1).unwrap()
}

/// A .deb as dpkg lays it out: an ar archive of debian-binary,
/// control.tar.* and data.tar.*.
fn deb(data_tar_name: &str, data_tar: &[u8]) -> Vec<u8> {
    let mut b = ar::Builder::new(Vec::new());
    let control = gz(&tar_of(&[("./control", b"Package: tool\n")]));
    for (id, body) in [
        ("debian-binary", &b"2.0\n"[..]),
        ("control.tar.gz", &control[..]),
        (data_tar_name, data_tar),
    ] {
        b.append(
            &ar::Header::new(id.as_bytes().to_vec(), body.len() as u64),
            body,
        )
        .unwrap();
    }
    b.into_inner().unwrap()
}

fn assert_binary(got: &labrun_artifact::Installable, want: &[u8]) {
    assert_eq!(got.kind, InstallKind::Binary);
    assert_eq!(std::fs::read(&got.path).unwrap(), want);
    assert_eq!(got.binary_sha256, sha256_hex(want));
    assert!(
        got.path.ends_with("extracted/tool"),
        "{}",
        got.path.display()
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&got.path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
}

#[test]
fn raw_bz2_and_gz_binaries() {
    let root = tempfile::tempdir().unwrap();
    let bin = payload(70_000);
    for (kind, file, bytes) in [
        (Extract::Raw, "tool_linux", bin.clone()),
        (Extract::Bz2, "tool_linux.bz2", bz2(&bin)),
        (Extract::Gz, "tool_linux.gz", gz(&bin)),
    ] {
        let f = fetched(root.path(), file, &bytes);
        let got = extract(&f, &spec(kind.clone(), &f.sha256)).unwrap();
        assert_binary(&got, &bin);
        assert!(got.path.starts_with(f.path.parent().unwrap()), "{kind:?}");
    }
}

#[test]
fn a_member_of_each_kind_of_tarball() {
    let root = tempfile::tempdir().unwrap();
    let bin = payload(30_000);
    let tarball = tar_of(&[
        ("tool-1.0-linux/LICENSE", b"MIT"),
        ("tool-1.0-linux/tool", &bin),
    ]);
    for (file, bytes) in [
        ("tool.tar.gz", gz(&tarball)),
        ("tool.tar.xz", xz(&tarball)),
        ("tool.tar.zst", zst(&tarball)),
        ("tool.tar", tarball.clone()),
    ] {
        let f = fetched(root.path(), file, &bytes);
        // `./` in front is the same member.
        let got = extract(
            &f,
            &spec(Extract::Tar("./tool-1.0-linux/tool".into()), &f.sha256),
        )
        .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_binary(&got, &bin);
    }
}

#[test]
fn a_missing_member_names_the_members_that_exist() {
    let root = tempfile::tempdir().unwrap();
    let f = fetched(
        root.path(),
        "tool.tar.gz",
        &gz(&tar_of(&[("dir/tool", b"x"), ("dir/README", b"y")])),
    );
    let err = extract(&f, &spec(Extract::Tar("tool".into()), &f.sha256)).unwrap_err();
    assert!(
        matches!(err, ArtifactError::MissingMember { count: 2, .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("`tool` is not in tool.tar.gz"), "{msg}");
    assert!(msg.contains("dir/tool, dir/README"), "{msg}");
}

#[test]
fn a_member_of_a_deb_with_each_data_compression() {
    let root = tempfile::tempdir().unwrap();
    let bin = payload(25_000);
    let data = tar_of(&[
        ("./usr/bin/tool", &bin),
        ("./usr/share/doc/tool/copyright", b"c"),
    ]);
    for (id, bytes) in [
        ("data.tar.xz", xz(&data)),
        ("data.tar.zst", zst(&data)),
        ("data.tar.gz", gz(&data)),
        ("data.tar", data.clone()),
    ] {
        let f = fetched(root.path(), "tool_1.0-1_amd64.deb", &deb(id, &bytes));
        let got = extract(
            &f,
            &spec(Extract::DebMember("usr/bin/tool".into()), &f.sha256),
        )
        .unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_binary(&got, &bin);
    }
}

#[test]
fn a_deb_built_by_dpkg_deb() {
    let work = tempfile::tempdir().unwrap();
    let pkg = work.path().join("pkg");
    std::fs::create_dir_all(pkg.join("DEBIAN")).unwrap();
    std::fs::create_dir_all(pkg.join("usr/bin")).unwrap();
    std::fs::write(
        pkg.join("DEBIAN/control"),
        "Package: tool\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@example.invalid>\n\
         Description: test\n",
    )
    .unwrap();
    let bin = payload(10_000);
    std::fs::write(pkg.join("usr/bin/tool"), &bin).unwrap();
    let out = work.path().join("tool.deb");
    let status = std::process::Command::new("dpkg-deb")
        .args(["--root-owner-group", "-Zxz", "--build"])
        .arg(&pkg)
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let root = tempfile::tempdir().unwrap();
    let f = fetched(
        root.path(),
        "tool_1.0_all.deb",
        &std::fs::read(&out).unwrap(),
    );
    let got = extract(
        &f,
        &spec(Extract::DebMember("usr/bin/tool".into()), &f.sha256),
    )
    .unwrap();
    assert_binary(&got, &bin);
}

#[test]
fn deb_install_keeps_the_deb_and_records_the_binary_digest() {
    let root = tempfile::tempdir().unwrap();
    let bin = payload(9_000);
    let f = fetched(
        root.path(),
        "tool_1.0-1_amd64.deb",
        &deb("data.tar.xz", &xz(&tar_of(&[("./usr/bin/tool", &bin)]))),
    );
    let got = extract(
        &f,
        &spec(Extract::DebInstall("/usr/bin/tool".into()), &f.sha256),
    )
    .unwrap();
    assert_eq!(got.path, f.path);
    assert_eq!(got.binary_sha256, sha256_hex(&bin));
    assert_eq!(
        got.kind,
        InstallKind::Deb {
            binary_path: "/usr/bin/tool".into()
        }
    );
}

#[test]
fn a_pinned_binary_digest_that_differs_is_refused_and_not_kept() {
    let root = tempfile::tempdir().unwrap();
    let bin = payload(4_000);
    let f = fetched(root.path(), "tool.gz", &gz(&bin));
    let mut s = spec(Extract::Gz, &f.sha256);
    s.binary_sha256 = Some(sha256_hex(b"another binary"));
    let err = extract(&f, &s).unwrap_err();
    assert!(
        matches!(err, ArtifactError::BinaryDigestMismatch { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains(&sha256_hex(&bin)), "{err}");
    let extracted = f.path.parent().unwrap().join("extracted");
    assert_eq!(
        std::fs::read_dir(&extracted).unwrap().count(),
        0,
        "nothing kept"
    );

    s.binary_sha256 = Some(sha256_hex(&bin));
    assert_binary(&extract(&f, &s).unwrap(), &bin);
}

#[test]
fn a_symlink_member_and_a_non_archive_are_explained() {
    let root = tempfile::tempdir().unwrap();
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_size(0);
    b.append_link(&mut h, "bin/tool", "../lib/tool-real")
        .unwrap();
    let f = fetched(root.path(), "t.tar", &b.into_inner().unwrap());
    let err = extract(&f, &spec(Extract::Tar("bin/tool".into()), &f.sha256)).unwrap_err();
    assert!(err.to_string().contains("../lib/tool-real"), "{err}");

    let f = fetched(root.path(), "x.deb", b"this is not an ar archive at all");
    let err = extract(
        &f,
        &spec(Extract::DebMember("usr/bin/tool".into()), &f.sha256),
    )
    .unwrap_err();
    assert!(matches!(err, ArtifactError::BadArchive { .. }), "{err:?}");

    let f = fetched(root.path(), "y.bz2", b"not bzip2");
    let err = extract(&f, &spec(Extract::Bz2, &f.sha256)).unwrap_err();
    assert!(matches!(err, ArtifactError::BadArchive { .. }), "{err:?}");
}

/// Issue 33, item 12: a small pinned archive that decompresses without end
/// (here 256 MiB and one byte of zeros, about 256 KiB of gzip) is refused
/// at the stated limit for a tool's binary, and nothing is kept.
#[test]
fn a_binary_past_the_size_limit_is_refused_and_not_kept() {
    // Concatenated gzip members are one stream to a gzip reader: the bomb
    // is one compressed MiB of zeros repeated, made in no time.
    let mib = gz(&[0u8; 1 << 20]);
    let zeros = |tail: &[u8]| -> Vec<u8> {
        let mut out = mib.repeat(256);
        out.extend(gz(tail));
        out
    };
    let bomb = zeros(&[0]);
    assert!(bomb.len() < 2 << 20, "a small file: {}", bomb.len());

    let root = tempfile::tempdir().unwrap();
    let f = fetched(root.path(), "tool.gz", &bomb);
    let err = extract(&f, &spec(Extract::Gz, &f.sha256)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("larger than 256 MiB") && text.contains("tool.gz"),
        "{text}"
    );
    let extracted = f.path.parent().unwrap().join("extracted");
    let kept: Vec<_> = std::fs::read_dir(&extracted)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(kept.is_empty(), "nothing kept: {kept:?}");

    // `deb-install` only hashes the member, but reads it under the same
    // limit: a data.tar.gz whose one member is 256 MiB and one byte.
    let mut header = tar::Header::new_gnu();
    header.set_path("./usr/bin/tool").unwrap();
    header.set_size((256 << 20) + 1);
    header.set_mode(0o755);
    header.set_cksum();
    let mut data = gz(header.as_bytes());
    // The member's last byte, its padding to 512 and the two end blocks.
    data.extend(zeros(&[0u8; 512 + 1024]));
    let f = fetched(root.path(), "tool.deb", &deb("data.tar.gz", &data));
    let err = extract(
        &f,
        &spec(Extract::DebInstall("/usr/bin/tool".into()), &f.sha256),
    )
    .unwrap_err();
    assert!(err.to_string().contains("larger than 256 MiB"), "{err}");
}
