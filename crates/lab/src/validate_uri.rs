//! The libvirt URIs a lab may name (`vm.uri`, a pool host's `uri`). libvirt
//! does much with a URI: `qemu+ext` runs a program on this host, `no_verify`
//! or `known_hosts_verify=ignore` accepts any host key, `netcat=`/`socket=`
//! run other commands on the far side, `qemu+tcp` is unencrypted. labrun
//! means only this host's QEMU or a QEMU over SSH whose host key is
//! checked, so only those forms pass, and a remote URI must name the
//! machine whose key `ssh:` pins (labrun copies the disks there).

/// The local forms (`crates/vm` takes `qemu:///` as "this host").
const LOCAL: &[&str] = &["qemu:///system", "qemu:///session"];

/// The SSH transports, and the query keys each may carry: keys that only
/// say which key file or known_hosts to use, or how to log in.
const REMOTE: &[(&str, &[&str])] = &[
    (
        "qemu+libssh",
        &["keyfile", "known_hosts", "known_hosts_verify", "sshauth"],
    ),
    ("qemu+ssh", &["keyfile"]),
];

/// Why a transport is refused, by scheme (the driver aside).
fn refused_transport(transport: &str) -> &'static str {
    match transport {
        "ext" => "libvirt's `ext` transport runs a program on this host",
        "tcp" => "a `tcp` connection is not encrypted and not authenticated",
        "tls" => "labrun reaches a pool host over SSH only, its host key pinned",
        "unix" => "a `unix` socket is this host's libvirt: write `qemu:///system`",
        "libssh2" => "labrun reaches a pool host through `libssh` or `ssh` only",
        _ => {
            "labrun supports `qemu:///system`, `qemu:///session` and `qemu+libssh://` or `qemu+ssh://`"
        }
    }
}

/// A remote URI's parts labrun checks against `ssh:`.
#[derive(Debug, PartialEq)]
pub struct RemoteUri {
    /// Lowercase, without IPv6 brackets.
    pub host: String,
    pub port: u16,
}

/// What a URI is, once accepted.
#[derive(Debug, PartialEq)]
pub enum LibvirtUri {
    Local,
    Remote(RemoteUri),
}

/// Checks `uri` against the forms labrun supports; the error says what is
/// refused and why.
pub fn check(uri: &str) -> Result<LibvirtUri, String> {
    if uri.chars().any(char::is_control) {
        return Err(format!(
            "{uri:?} has a control character (a line break?): write the URI on one line"
        ));
    }
    if uri.starts_with('-') {
        return Err(format!(
            "`{uri}` starts with `-` (it would read as an option): expected e.g. `qemu:///system`"
        ));
    }
    if LOCAL.contains(&uri) {
        return Ok(LibvirtUri::Local);
    }
    let Some((scheme, rest)) = uri.split_once("://") else {
        return Err(format!(
            "`{uri}` is not a libvirt URI: expected e.g. `qemu:///system`"
        ));
    };
    let (driver, transport) = scheme.split_once('+').unwrap_or((scheme, ""));
    if driver != "qemu" {
        return Err(format!(
            "`{scheme}` is not a QEMU URI: labrun runs its machines with QEMU (`qemu:///system` or `qemu+libssh://USER@HOST/system`)"
        ));
    }
    if transport.is_empty() {
        return Err(format!(
            "`{uri}`: this host's libvirt is `qemu:///system` or `qemu:///session` (no host, no query); another host's is `qemu+libssh://USER@HOST/system`"
        ));
    }
    let Some((_, allowed)) = REMOTE.iter().find(|(s, _)| *s == scheme) else {
        return Err(format!(
            "`{scheme}` is refused: {}",
            refused_transport(transport)
        ));
    };
    for (c, why) in [
        ('%', "libvirt decodes escapes, which would hide a key name"),
        (';', "libvirt reads it as another `&`"),
        ('#', "a fragment means nothing to libvirt"),
        (' ', "write paths without spaces"),
    ] {
        if uri.contains(c) {
            return Err(format!("`{uri}` has `{c}`: {why}"));
        }
    }
    let (authority_path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = authority_path
        .find('/')
        .map_or((authority_path, ""), |i| authority_path.split_at(i));
    if !matches!(path, "/system" | "/session") {
        return Err(format!(
            "`{uri}`: the path is `/system` or `/session` (which libvirt daemon on that host), not `{path}`"
        ));
    }
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let remote = host_and_port(host_port)
        .ok_or_else(|| format!("`{uri}` names no host: write `{scheme}://USER@HOST{path}`"))?;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !allowed.contains(&key) {
            return Err(format!(
                "`{uri}`: the query key `{key}` is refused ({}); `{scheme}` takes only {}",
                why_key(key),
                allowed
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if key == "known_hosts_verify" && value != "normal" {
            return Err(format!(
                "`{uri}`: `known_hosts_verify={value}` would accept a host key it cannot check: leave it out, or write `normal`"
            ));
        }
    }
    Ok(LibvirtUri::Remote(remote))
}

fn why_key(key: &str) -> &'static str {
    match key {
        "no_verify" => "it switches the host key check off",
        "command" | "netcat" | "proxy" => "it names a program to run",
        "socket" => "it reaches another socket than the host's libvirt",
        "known_hosts_verify" => "only `normal` checks the host key",
        _ => "labrun does not use it",
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; `None` without a host.
fn host_and_port(s: &str) -> Option<RemoteUri> {
    let (host, port) = match s.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']')?;
            (host, after.strip_prefix(':'))
        }
        None => match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        },
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        None => 22,
        Some(p) => p.parse().ok().filter(|p| *p > 0)?,
    };
    Some(RemoteUri {
        host: host.to_ascii_lowercase(),
        port,
    })
}

/// `ssh.host` as the URI would write it, to compare.
pub fn same_host(uri_host: &str, ssh_host: &str) -> bool {
    let ssh = ssh_host.trim_start_matches('[').trim_end_matches(']');
    uri_host.eq_ignore_ascii_case(ssh)
}

/// labrun's folder on a host: absolute and plain (`down --all` clears its
/// `images/` and `labs/`, so never the root or a path that climbs out).
pub fn check_workdir(dir: &str) -> Result<(), String> {
    if !dir.starts_with('/') || dir.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "`{dir}` is not an absolute folder without spaces: expected e.g. /var/tmp/labrun"
        ));
    }
    if dir.trim_end_matches('/').is_empty() {
        return Err(format!(
            "`{dir}` is the root: labrun keeps its images and labs in this folder and clears them at `down --all`; give a folder of its own, e.g. /var/tmp/labrun"
        ));
    }
    if dir.split('/').any(|part| part == ".." || part == ".") {
        return Err(format!(
            "`{dir}` has a `.` or `..` part: write the folder plainly, e.g. /var/tmp/labrun"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_ports() {
        let r = |h: &str, p| {
            Ok(LibvirtUri::Remote(RemoteUri {
                host: h.into(),
                port: p,
            }))
        };
        assert_eq!(
            check("qemu+ssh://u@Host.example/system"),
            r("host.example", 22)
        );
        assert_eq!(check("qemu+ssh://h:2222/session"), r("h", 2222));
        assert_eq!(
            check("qemu+libssh://u@[fd00::1]:22/system"),
            r("fd00::1", 22)
        );
        assert!(check("qemu+ssh://u@h:0/system").is_err());
        assert!(same_host("fd00::1", "[fd00::1]"));
    }
}
