//! The lab name rule, one for `labrun check` and for `labrun up` (the vm
//! crate's `VmConfig::validate` calls it): the name becomes the libvirt
//! domain `labrun-<name>`, a state folder and the start of every run id, so
//! it is lowercase, short, and safe in a path and on a command line.

/// Longest lab name: `labrun-` + 40 stays well under libvirt's limits and
/// keeps run ids readable.
pub const MAX_LAB_NAME: usize = 40;

pub fn check_lab_name(name: &str) -> Result<(), String> {
    let ok = (1..=MAX_LAB_NAME).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        let hint = if name.chars().any(|c| c.is_ascii_uppercase()) {
            format!(" (e.g. `{}`)", name.to_ascii_lowercase().replace('.', "-"))
        } else {
            String::new()
        };
        Err(format!(
            "`{name}` is not a usable lab name: 1-{MAX_LAB_NAME} characters of a-z, 0-9, `-` or `_`, starting with a letter or digit{hint}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule() {
        for good in ["default", "debian12", "restic-borg-kopia", "a_b", "0x"] {
            assert!(check_lab_name(good).is_ok(), "{good}");
        }
        for bad in ["", "Bench.A", "bench.a", "-x", "_x", "a b", &"x".repeat(41)] {
            assert!(check_lab_name(bad).is_err(), "{bad}");
        }
        assert!(check_lab_name("Bench.A").unwrap_err().contains("`bench-a`"));
    }
}
