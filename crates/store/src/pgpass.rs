//! The PostgreSQL password, as libpq finds it: `PGPASSWORD`, else the first
//! matching line of the pgpass file (`PGPASSFILE`, else `~/.pgpass`), whose
//! lines are `host:port:database:user:password`, `*` matching anything and
//! `\` escaping `:` and `\`. Like libpq, a pgpass file others can read is
//! not used.

use postgres::Config;
use postgres::config::Host;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

pub(crate) fn password_for(config: &Config) -> Option<String> {
    if let Some(p) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
        return Some(p);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let meta = std::fs::metadata(&file).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(&file).ok()?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        // libpq matches a socket connection as `localhost`.
        _ => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let want = [
        host.as_str(),
        port.as_str(),
        config.get_dbname().unwrap_or(""),
        config.get_user().unwrap_or(""),
    ];
    lookup(&text, want)
}

/// The password of the first line whose four fields match `want`.
fn lookup(text: &str, want: [&str; 4]) -> Option<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(fields)
        .find(|f| {
            f[..4]
                .iter()
                .zip(want)
                .all(|(have, w)| have == "*" || have == w)
        })
        .map(|f| f[4].clone())
}

/// A line's five fields, unescaped; `None` for a line without five.
fn fields(line: &str) -> Option<Vec<String>> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.last_mut()?.push(chars.next().unwrap_or('\\')),
            // The password is the rest of the line, colons and all.
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut()?.push(c),
        }
    }
    (out.len() == 5).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_line_wins_with_wildcards_and_escapes() {
        let text = "# a comment\n\
                    db.example:5432:other:alice:no\n\
                    127.0.0.1:*:labrun:alice:s\\:e\\\\cret:tail\n\
                    *:*:*:*:fallback\n";
        assert_eq!(
            lookup(text, ["127.0.0.1", "5433", "labrun", "alice"]).as_deref(),
            Some("s:e\\cret:tail")
        );
        assert_eq!(
            lookup(text, ["127.0.0.1", "5433", "x", "bob"]).as_deref(),
            Some("fallback")
        );
        assert_eq!(lookup("short:line\n", ["a", "b", "c", "d"]), None);
    }
}
