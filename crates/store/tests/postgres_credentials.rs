//! The PostgreSQL password comes from PGPASSWORD or the pgpass file, never
//! from the URL; a refused login says where to put it. One test: it sets
//! this process's environment, which other tests must not share.

use labrun_store::test_support::{Auth, TestPostgres};
use labrun_store::{Location, Store, StoreError};
use std::os::unix::fs::PermissionsExt;

#[test]
#[ignore = "needs PostgreSQL (Debian's postgresql): `make test` runs it"]
fn the_password_comes_from_pgpassword_or_a_private_pgpass_file() {
    let server = TestPostgres::start(Auth::Password("s3cret:x".into())).unwrap();
    server.create_database("team").unwrap();
    let location = Location::Postgres(server.url("team"));
    let dir = tempfile::tempdir().unwrap();
    let pgpass = dir.path().join("pgpass");
    // SAFETY: this test binary has this one test; nothing else reads the
    // environment while it runs.
    unsafe {
        std::env::remove_var("PGPASSWORD");
        std::env::set_var("PGPASSFILE", &pgpass);
    }

    let refused = Store::connect(&location)
        .err()
        .expect("no password: refused");
    assert!(matches!(refused, StoreError::Refused { .. }), "{refused}");
    assert!(refused.to_string().contains("PGPASSWORD"), "{refused}");

    let line = format!("127.0.0.1:{}:team:labrun:s3cret\\:x\n", server.port());
    std::fs::write(&pgpass, &line).unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = Store::connect(&location).err();
    assert!(
        matches!(err, Some(StoreError::Refused { .. })),
        "a pgpass file others can read is not used, as libpq does: {err:?}"
    );

    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    Store::connect(&location).expect("the pgpass file's password");

    std::fs::remove_file(&pgpass).unwrap();
    unsafe { std::env::set_var("PGPASSWORD", "s3cret:x") };
    Store::connect(&location).expect("PGPASSWORD");
    unsafe { std::env::set_var("PGPASSWORD", "wrong") };
    let err = Store::connect(&location).err().expect("a wrong password");
    assert!(matches!(err, StoreError::Refused { .. }), "{err}");
    assert!(!err.to_string().contains("wrong"), "{err}");

    unsafe { std::env::set_var("PGPASSWORD", "s3cret:x") };
    let missing = Location::Postgres(server.url("nosuchdb"));
    let err = Store::connect(&missing).err().expect("no such database");
    assert!(matches!(err, StoreError::NoDatabase { .. }), "{err}");
    assert!(err.to_string().contains("createdb"), "{err}");
}
