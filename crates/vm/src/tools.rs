//! Pushing the lab's pinned tools into the guest, checking their SHA-256
//! again inside it (the digest the evidence carries is the guest's own).

use crate::error::VmError;
use labrun_ssh::Session;
use labrun_ssh::shell_quote as quote;
use std::path::PathBuf;

/// One tool to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInstall {
    pub name: String,
    /// The verified file on the host (binary, `.deb` or wheel bundle).
    pub local_path: PathBuf,
    /// Where the binary ends up in the guest (for a `.deb`: the path the
    /// package installs, e.g. `/usr/bin/kopia`).
    pub guest_path: String,
    /// SHA-256 the uploaded file must have.
    pub sha256: String,
    /// How the file becomes the tool.
    pub how: GuestInstall,
}

/// How an uploaded file becomes the tool in the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestInstall {
    /// The file is the binary, copied to `guest_path`.
    Binary,
    /// A `.deb` installed with `dpkg -i`.
    Deb,
    /// A wheel bundle (labrun-artifact's `build::python::bundle`): each
    /// wheel's SHA-256 checked against its `SHA256SUMS`, then installed
    /// offline into a venv of the guest's python3 whose entry point is
    /// `guest_path` (`<venv>/bin/<entry point>`).
    PythonVenv { venv: String },
}

/// What the guest reports after installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledTool {
    pub name: String,
    pub guest_path: String,
    /// SHA-256 of the uploaded file, computed in the guest (equals the pin).
    pub uploaded_sha256: String,
    /// SHA-256 of the binary at `guest_path`, computed in the guest.
    pub binary_sha256: String,
}

pub async fn install_tools(
    session: &Session,
    tools: &[ToolInstall],
) -> Result<Vec<InstalledTool>, VmError> {
    let mut out = Vec::with_capacity(tools.len());
    for t in tools {
        let upload_to = match &t.how {
            GuestInstall::Binary => t.guest_path.clone(),
            GuestInstall::Deb => format!("/var/tmp/labrun-{}.deb", t.name),
            GuestInstall::PythonVenv { .. } => format!("/var/tmp/labrun-{}.wheels.tar", t.name),
        };
        if let Some(parent) = std::path::Path::new(&upload_to).parent() {
            run(
                session,
                &t.name,
                &format!("mkdir -p {}", quote(&parent.to_string_lossy())),
            )
            .await?;
        }
        let mode = match t.how {
            GuestInstall::Binary => 0o755,
            GuestInstall::Deb | GuestInstall::PythonVenv { .. } => 0o644,
        };
        session.upload(&t.local_path, &upload_to, mode).await?;
        let uploaded = guest_sha256(session, &t.name, &upload_to).await?;
        if !uploaded.eq_ignore_ascii_case(&t.sha256) {
            return Err(VmError::ToolDigest {
                name: t.name.clone(),
                expected: t.sha256.clone(),
                guest: uploaded,
            });
        }
        let binary_sha256 = match &t.how {
            GuestInstall::Binary => uploaded.clone(),
            GuestInstall::Deb => {
                run(
                    session,
                    &t.name,
                    &format!(
                        "DEBIAN_FRONTEND=noninteractive dpkg -i {}",
                        quote(&upload_to)
                    ),
                )
                .await?;
                guest_sha256(session, &t.name, &t.guest_path).await?
            }
            GuestInstall::PythonVenv { venv } => {
                run(
                    session,
                    &t.name,
                    &venv_script(&upload_to, venv, &t.guest_path),
                )
                .await?;
                guest_sha256(session, &t.name, &t.guest_path).await?
            }
        };
        out.push(InstalledTool {
            name: t.name.clone(),
            guest_path: t.guest_path.clone(),
            uploaded_sha256: uploaded,
            binary_sha256,
        });
    }
    Ok(out)
}

/// The guest's commands for a wheel bundle: unpack it beside itself, check
/// every wheel against the bundle's `SHA256SUMS` (a wheel changed between
/// host and guest stops here, named by `sha256sum`), make a fresh venv with
/// the guest's python3 and install the wheels without an index (the guest
/// has no network: the bundle holds every dependency).
fn venv_script(bundle: &str, venv: &str, entry_point: &str) -> String {
    let dir = format!("{bundle}.d");
    format!(
        "set -e; rm -rf {d}; mkdir -p {d}; tar -xf {b} -C {d}; cd {d}; \
         sha256sum --strict --quiet -c SHA256SUMS; rm -rf {v}; python3 -m venv {v}; \
         {v}/bin/pip install --quiet --no-index --no-deps --disable-pip-version-check \
         wheels/*.whl; test -x {e}",
        d = quote(&dir),
        b = quote(bundle),
        v = quote(venv),
        e = quote(entry_point),
    )
}

/// `sha256  path` lines, the format `sha256sum -c` reads.
pub fn digest_lines(tools: &[InstalledTool]) -> String {
    tools
        .iter()
        .map(|t| format!("{}  {}\n", t.binary_sha256, t.guest_path))
        .collect()
}

async fn guest_sha256(session: &Session, name: &str, path: &str) -> Result<String, VmError> {
    let stdout = run(session, name, &format!("sha256sum {}", quote(path))).await?;
    Ok(stdout.split_whitespace().next().unwrap_or("").to_string())
}

async fn run(session: &Session, name: &str, command: &str) -> Result<String, VmError> {
    let o = session.exec(command).await?;
    if o.exit_code != Some(0) {
        return Err(VmError::ToolInstall {
            name: name.to_string(),
            command: command.to_string(),
            code: o.exit_code,
            stderr: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wheels are checked before the venv is made, and the entry point last.
    #[test]
    fn the_venv_script_checks_the_wheels_first() {
        let s = venv_script(
            "/var/tmp/labrun-attic.wheels.tar",
            "/opt/labrun/attic/venv",
            "/opt/labrun/attic/venv/bin/attic",
        );
        let check = s.find("sha256sum --strict --quiet -c SHA256SUMS").unwrap();
        assert!(check < s.find("python3 -m venv").unwrap(), "{s}");
        assert!(
            s.contains("tar -xf /var/tmp/labrun-attic.wheels.tar -C"),
            "{s}"
        );
        assert!(
            s.ends_with("test -x /opt/labrun/attic/venv/bin/attic"),
            "{s}"
        );
    }

    #[test]
    fn digest_lines_are_sha256sum_format() {
        let t = InstalledTool {
            name: "restic".into(),
            guest_path: "/usr/local/bin/restic".into(),
            uploaded_sha256: "aa".into(),
            binary_sha256: "bb".into(),
        };
        assert_eq!(digest_lines(&[t]), "bb  /usr/local/bin/restic\n");
    }
}
