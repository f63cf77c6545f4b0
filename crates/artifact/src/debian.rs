//! Debian's naming rules, each written once: an `apt:` source, a VM's
//! `packages:` and its `image: debian<N>` suite are all checked here, so a
//! typo is caught before apt runs (and nothing odd reaches its command line).

/// Debian policy 5.6.1: at least two characters of lowercase letters,
/// digits and `+ - .`, starting with a letter or digit.
pub fn is_package_name(name: &str) -> bool {
    name.len() >= 2
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c))
}

/// Debian policy 5.6.12, as far as a pin needs: an optional `epoch:`, then a
/// version starting with a digit, of letters, digits and `. + - ~ :`.
pub fn is_version(version: &str) -> bool {
    version.starts_with(|c: char| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".+-~:".contains(c))
}

/// A Debian suite or codename (`bookworm`, `trixie`, `sid`,
/// `bookworm-backports`): lowercase letters, digits and `-`, starting with a
/// letter.
pub fn is_suite_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 40
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names() {
        for good in ["restic", "borgbackup", "python3-msgpack", "g++", "0ad"] {
            assert!(is_package_name(good), "{good}");
        }
        for bad in ["", "r", "Restic", "-x", "+x", "a b", "a_b", "restic=1"] {
            assert!(!is_package_name(bad), "{bad}");
        }
    }

    #[test]
    fn versions() {
        for good in ["0.14.0-1+b5", "1:1.2.4-1", "1.4.5-1~bpo12+1"] {
            assert!(is_version(good), "{good}");
        }
        for bad in ["", "v1.0", "1.0 ", "latest", "1.0;rm"] {
            assert!(!is_version(bad), "{bad}");
        }
    }

    #[test]
    fn suites() {
        for good in ["bookworm", "sid", "bookworm-backports"] {
            assert!(is_suite_name(good), "{good}");
        }
        for bad in ["", "Sid", "12", "-x", "a/b"] {
            assert!(!is_suite_name(bad), "{bad}");
        }
    }
}
