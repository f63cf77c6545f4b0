//! `labrun pin` writes the lab file (issue 45, item 11): through a link to
//! the real file, atomically, and never over an edit made while it waited.

use labrun_artifact::write_lab;

#[test]
fn a_linked_lab_is_written_through_the_link() {
    let tmp = tempfile::tempdir().unwrap();
    let real_dir = tmp.path().join("labs");
    std::fs::create_dir(&real_dir).unwrap();
    let real = real_dir.join("lab.yaml");
    std::fs::write(&real, "old\n").unwrap();
    let link = tmp.path().join("lab.yaml");
    std::os::unix::fs::symlink("labs/lab.yaml", &link).unwrap();

    write_lab(&link, "old\n", "new\n").unwrap();
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "new\n");
    // No temporary file left beside either.
    assert_eq!(std::fs::read_dir(&real_dir).unwrap().count(), 1);
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
}

#[test]
fn a_lab_changed_since_it_was_read_is_not_written_over() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("lab.yaml");
    std::fs::write(&path, "as pin read it\n").unwrap();
    // Edited while pin waited on the checksum list.
    std::fs::write(&path, "as the user edited it\n").unwrap();

    let err = write_lab(&path, "as pin read it\n", "pinned\n").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("changed since"), "{text}");
    assert!(text.contains("run `labrun pin` again"), "{text}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "as the user edited it\n"
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);

    // Unchanged, it is written.
    write_lab(&path, "as the user edited it\n", "pinned\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "pinned\n");
}
