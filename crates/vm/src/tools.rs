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
    /// The verified file on the host (binary, or `.deb` when `deb`).
    pub local_path: PathBuf,
    /// Where the binary ends up in the guest (for a `.deb`: the path the
    /// package installs, e.g. `/usr/bin/kopia`).
    pub guest_path: String,
    /// SHA-256 the uploaded file must have.
    pub sha256: String,
    /// Install with `dpkg -i` instead of copying the binary into place.
    pub deb: bool,
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
        let upload_to = if t.deb {
            format!("/var/tmp/labrun-{}.deb", t.name)
        } else {
            t.guest_path.clone()
        };
        if let Some(parent) = std::path::Path::new(&upload_to).parent() {
            run(
                session,
                &t.name,
                &format!("mkdir -p {}", quote(&parent.to_string_lossy())),
            )
            .await?;
        }
        session
            .upload(&t.local_path, &upload_to, if t.deb { 0o644 } else { 0o755 })
            .await?;
        let uploaded = guest_sha256(session, &t.name, &upload_to).await?;
        if !uploaded.eq_ignore_ascii_case(&t.sha256) {
            return Err(VmError::ToolDigest {
                name: t.name.clone(),
                expected: t.sha256.clone(),
                guest: uploaded,
            });
        }
        let binary_sha256 = if t.deb {
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
        } else {
            uploaded.clone()
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
