//! The S3 server: Versity's versitygw (the lab's pinned binary) serving the
//! run's work root through its POSIX backend, where a bucket is a top-level
//! folder and an object a file under it. So a tool cycle's folder
//! `<root>/c1-restic` is the bucket `c1-restic`, and its repository folder
//! `<root>/c1-restic/repo` the objects under the prefix `repo/`: the bytes
//! the tool stores are where labrun measures and removes them, as for a
//! local repository. The credentials are made for the run.

use super::error::StorageError;
use std::io::Read;
use std::path::Path;

/// The run's access key and secret key.
#[derive(Debug, Clone, PartialEq)]
pub struct S3Keys {
    pub access: String,
    pub secret: String,
}

impl S3Keys {
    /// Fresh random keys (hex from the kernel's generator).
    pub fn generate() -> Result<S3Keys, StorageError> {
        let mut bytes = [0u8; 36];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| StorageError::io("cannot read", "/dev/urandom", e))?;
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        Ok(S3Keys {
            access: format!("labrun{}", hex(&bytes[..6])),
            secret: hex(&bytes[6..]),
        })
    }
}

/// `listen`: the server's address and port in its namespace.
pub fn argv(binary: &str, keys: &S3Keys, root: &Path, listen: &str) -> Vec<String> {
    vec![
        binary.to_string(),
        "--access".into(),
        keys.access.clone(),
        "--secret".into(),
        keys.secret.clone(),
        "--port".into(),
        listen.to_string(),
        "posix".into(),
        root.to_string_lossy().into_owned(),
    ]
}

/// Why `name` (a tool cycle's folder, `c1-restic`) cannot be an S3 bucket's
/// name, or None: 3 to 63 of lowercase letters, digits, `.` and `-`,
/// starting and ending with a letter or digit, no `..`.
pub fn bucket_name_problem(name: &str) -> Option<String> {
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-';
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !(3..=63).contains(&name.len()) {
        return Some(format!("`{name}` is not 3 to 63 characters long"));
    }
    if let Some(c) = name.chars().find(|c| !ok_char(*c)) {
        return Some(format!(
            "`{name}` has `{c}`, which a bucket name cannot have"
        ));
    }
    if !edge(name.chars().next()) || !edge(name.chars().last()) || name.contains("..") {
        return Some(format!(
            "`{name}` must start and end with a letter or digit and have no `..`"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fresh_and_fit_s3() {
        let a = S3Keys::generate().unwrap();
        let b = S3Keys::generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.access.len(), 6 + 12);
        assert_eq!(a.secret.len(), 60);
        assert!(a.secret.chars().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn serves_the_root_with_the_keys() {
        let keys = S3Keys {
            access: "a".into(),
            secret: "s".into(),
        };
        assert_eq!(
            argv(
                "/usr/local/bin/s3-server",
                &keys,
                Path::new("/w/r"),
                "10.250.0.2:7070"
            ),
            [
                "/usr/local/bin/s3-server",
                "--access",
                "a",
                "--secret",
                "s",
                "--port",
                "10.250.0.2:7070",
                "posix",
                "/w/r"
            ]
        );
    }

    #[test]
    fn bucket_names() {
        assert_eq!(bucket_name_problem("c1-restic"), None);
        assert_eq!(bucket_name_problem("c12-rustic.v2"), None);
        for bad in ["c1-restic@0.14.0", "c1-my_tool", "c1-Restic", "c1-x-", "c1"] {
            assert!(bucket_name_problem(bad).is_some(), "{bad}");
        }
    }
}
