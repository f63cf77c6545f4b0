//! A base image placed on a hypervisor host over SSH (`HostShell::place_image`),
//! against a real sshd standing in for the host.

use labrun_ssh::test_support::Sshd;
use labrun_vm::remote::{ImageFile, RemoteHost};
use std::path::Path;

const KEY: &str = "5259edf0test";

fn image_files(dir: &Path) -> Vec<ImageFile> {
    ["disk.qcow2", "vmlinuz"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let local = dir.join(name);
            // Big enough that two uploads overlap in time.
            let bytes: Vec<u8> = (0..3_000_000u32)
                .map(|n| (n * 7 + i as u32) as u8)
                .collect();
            std::fs::write(&local, bytes).expect("write an image file");
            ImageFile {
                local,
                name: name.to_string(),
            }
        })
        .collect()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read the folder")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_uploads_of_one_image_at_once_leave_one_whole_copy() {
    let sshd = Sshd::start().expect("sshd");
    let local = tempfile::tempdir().expect("tempdir");
    let there = tempfile::tempdir().expect("tempdir");
    let files = image_files(local.path());
    let manifest = local.path().join("image.json");
    std::fs::write(&manifest, b"{\"recipe\":\"test\"}\n").expect("manifest");
    let host = RemoteHost {
        name: "rack2".into(),
        ssh: sshd.target(),
        dir: there.path().display().to_string(),
    };
    // An upload killed two days ago, and one going on now from elsewhere.
    let images = there.path().join("images");
    let stale = images.join(format!("{KEY}.part-1-000000001"));
    let live = images.join(format!("{KEY}.part-2-000000002"));
    for d in [&stale, &live] {
        std::fs::create_dir_all(d).expect("part folder");
    }
    let touched = std::process::Command::new("touch")
        .args(["-d", "2 days ago"])
        .arg(&stale)
        .status()
        .expect("touch");
    assert!(touched.success());

    let (a, b) = (
        host.connect().await.expect("first connection"),
        host.connect().await.expect("second connection"),
    );
    let quiet = |_: &str| {};
    let (ra, rb) = tokio::join!(
        a.place_image(KEY, &files, Some(&manifest), &quiet),
        b.place_image(KEY, &files, Some(&manifest), &quiet),
    );
    let (da, db) = (ra.expect("first upload"), rb.expect("second upload"));
    assert_eq!(da, db);
    let placed = images.join(KEY);
    assert_eq!(Path::new(&da), placed);
    for f in &files {
        let copy = std::fs::read(placed.join(&f.name)).expect("the placed file");
        assert!(
            copy == std::fs::read(&f.local).expect("the local file"),
            "{} differs",
            f.name
        );
    }
    assert_eq!(
        std::fs::read(placed.join("image.json")).expect("manifest placed"),
        std::fs::read(&manifest).expect("manifest")
    );
    // One copy in place; the loser's folder and the stale one are gone, the
    // other labrun's upload in progress is left to it.
    assert_eq!(
        entries(&images),
        [KEY.to_string(), format!("{KEY}.part-2-000000002")]
    );

    // The copy in place is what the next `up` finds: nothing is uploaded and
    // the folder (a guest's overlay may stand on it) is the same one.
    let inode =
        |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).expect("stat"));
    let before = inode(&placed.join("disk.qcow2"));
    let uploads = std::sync::atomic::AtomicU32::new(0);
    let count = |_: &str| {
        uploads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    };
    let again = a
        .place_image(KEY, &files, Some(&manifest), &count)
        .await
        .expect("placed already");
    assert_eq!(again, da);
    assert_eq!(uploads.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(inode(&placed.join("disk.qcow2")), before);
}
