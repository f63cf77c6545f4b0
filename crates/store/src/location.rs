//! Where the default store lives: nothing to set up. Root's store is the
//! system's (/var/lib/labrun); an ordinary user's is in the XDG data folder.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// Which store: an SQLite file, or a PostgreSQL server by URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// `postgres://` or `postgresql://` URL, without a password.
    Postgres(String),
}

impl Location {
    /// `--db VALUE`: a PostgreSQL URL, else a path to an SQLite file.
    pub fn parse(value: &str) -> Self {
        if value.starts_with("postgres://") || value.starts_with("postgresql://") {
            Location::Postgres(value.to_string())
        } else {
            Location::Sqlite(PathBuf::from(value))
        }
    }

    /// The default store (see [`default_db_path`]).
    pub fn default_sqlite() -> Option<Self> {
        default_db_path().map(Location::Sqlite)
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(url),
        }
    }
}

/// The database file's name inside the data folder.
pub const DB_FILE: &str = "runs.sqlite";

/// The default store's database: `/var/lib/labrun/runs.sqlite` for root,
/// else `$XDG_DATA_HOME/labrun/runs.sqlite` (`~/.local/share` when unset).
pub fn default_db_path() -> Option<PathBuf> {
    data_dir(is_root(), |k| std::env::var_os(k)).map(|d| d.join(DB_FILE))
}

fn data_dir(root: bool, env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    if root {
        return Some(PathBuf::from("/var/lib/labrun"));
    }
    // XDG: a relative XDG_DATA_HOME is invalid and is ignored.
    if let Some(xdg) = env("XDG_DATA_HOME").map(PathBuf::from)
        && xdg.is_absolute()
    {
        return Some(xdg.join("labrun"));
    }
    env("HOME").map(|h| PathBuf::from(h).join(".local/share/labrun"))
}

/// `/proc/self` is owned by the process's effective user.
fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.into())
    }

    #[test]
    fn root_uses_the_systems_data_folder() {
        assert_eq!(
            data_dir(true, env_of(&[("XDG_DATA_HOME", "/x")])),
            Some(PathBuf::from("/var/lib/labrun"))
        );
    }

    #[test]
    fn a_user_uses_xdg_data_home_then_home() {
        assert_eq!(
            data_dir(false, env_of(&[("XDG_DATA_HOME", "/x"), ("HOME", "/h")])),
            Some(PathBuf::from("/x/labrun"))
        );
        assert_eq!(
            data_dir(false, env_of(&[("XDG_DATA_HOME", "rel"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.local/share/labrun"))
        );
        assert_eq!(data_dir(false, env_of(&[])), None);
    }
}
