//! libvirt through the `virt` crate: create (transient), find, tear down,
//! list labrun's domains. Calls are blocking and short; async callers wrap
//! them in `spawn_blocking` where it matters.

use crate::error::VmError;
use crate::xml::{self, LabrunMetadata};
use virt::connect::Connect;
use virt::domain::Domain;
use virt::error::ErrorNumber;

/// libvirt's VIR_DOMAIN_METADATA_ELEMENT.
const METADATA_ELEMENT: i32 = 2;

/// A domain as labrun sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainInfo {
    pub name: String,
    /// running, paused, shut off, crashed, ...
    pub state: String,
    pub active: bool,
    pub persistent: bool,
    pub metadata: Option<LabrunMetadata>,
}

/// A running domain and its vCPUs: what shares the host's cores with a lab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningDomain {
    pub name: String,
    pub vcpus: u32,
}

pub struct Hypervisor {
    conn: Connect,
    uri: String,
}

/// Why starting a domain failed, as far as `up` needs to know.
#[derive(Debug)]
pub enum StartError {
    /// The forwarded port was taken between the probe and the start: retry
    /// with another.
    PortInUse(String),
    Other(VmError),
}

impl Hypervisor {
    pub fn open(uri: &str) -> Result<Hypervisor, VmError> {
        // libvirt prints every error to stderr by default; labrun reports
        // the ones that matter itself ("domain not found" is routine here).
        virt::error::clear_error_callback();
        let conn = Connect::open(Some(uri)).map_err(|e| {
            let (uri, reason) = (uri.to_string(), e.message().to_string());
            if crate::preflight::is_local_uri(&uri) {
                VmError::Libvirtd { uri, reason }
            } else {
                VmError::RemoteLibvirtd { uri, reason }
            }
        })?;
        Ok(Hypervisor {
            conn,
            uri: uri.to_string(),
        })
    }

    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Starts a transient domain: it has no definition to undefine, so
    /// nothing persistent survives a crash of labrun or of the host.
    pub fn create(&self, domain_xml: &str) -> Result<(), StartError> {
        match self.conn.create_domain_xml(domain_xml, 0) {
            Ok(_domain) => Ok(()),
            Err(e) if e.message().contains("host forwarding rule") => {
                Err(StartError::PortInUse(e.message().to_string()))
            }
            Err(e) => Err(StartError::Other(VmError::Libvirt(format!(
                "starting the domain failed: {} (the QEMU log is {}/<name>.log)",
                e.message(),
                qemu_log_dir(&self.uri)
            )))),
        }
    }

    pub fn find(&self, name: &str) -> Result<Option<DomainInfo>, VmError> {
        match self.conn.lookup_domain_by_name(name) {
            Ok(d) => Ok(Some(info(&d)?)),
            Err(e) if is(&e, ErrorNumber::NoDomain) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Destroys (if running or paused) and undefines (if persistent) the
    /// domain. Returns what it was, or None when there was none.
    pub fn remove(&self, name: &str) -> Result<Option<DomainInfo>, VmError> {
        let d = match self.conn.lookup_domain_by_name(name) {
            Ok(d) => d,
            Err(e) if is(&e, ErrorNumber::NoDomain) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let before = info(&d)?;
        // Either may fail because the domain stopped (or vanished) on its
        // own meanwhile: that is the wanted end state too.
        if before.active
            && let Err(e) = d.destroy()
            && !is(&e, ErrorNumber::OperationInvalid)
            && !is(&e, ErrorNumber::NoDomain)
        {
            return Err(e.into());
        }
        if before.persistent
            && let Err(e) = d.undefine()
            && !is(&e, ErrorNumber::NoDomain)
        {
            return Err(e.into());
        }
        Ok(Some(before))
    }

    /// Every running domain but `except` (the lab's own), by name.
    pub fn running_domains_except(&self, except: &str) -> Result<Vec<RunningDomain>, VmError> {
        let mut out = Vec::new();
        for d in self
            .conn
            .list_all_domains(virt::sys::VIR_CONNECT_LIST_DOMAINS_ACTIVE)?
        {
            // Either may fail for a domain that stopped since the listing.
            let (Ok(name), Ok(info)) = (d.name(), d.info()) else {
                continue;
            };
            if name != except {
                out.push(RunningDomain {
                    name,
                    vcpus: info.nr_virt_cpu,
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Every domain carrying labrun's metadata, plus any named `labrun-*`.
    pub fn labrun_domains(&self) -> Result<Vec<DomainInfo>, VmError> {
        let mut out = Vec::new();
        for d in self.conn.list_all_domains(0)? {
            let i = match info(&d) {
                Ok(i) => i,
                // Vanished between listing and asking.
                Err(_) => continue,
            };
            if i.metadata.is_some() || i.name.starts_with("labrun-") {
                out.push(i);
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

/// Where libvirt keeps QEMU's own log of a domain: the system daemon's
/// folder, or the session's under the user's cache.
fn qemu_log_dir(uri: &str) -> String {
    if uri.ends_with("/session") {
        "~/.cache/libvirt/qemu/log".into()
    } else {
        "/var/log/libvirt/qemu".into()
    }
}

fn is(e: &virt::error::Error, n: ErrorNumber) -> bool {
    e.code() == virt::enumutil::Enum::Known(n)
}

fn info(d: &Domain) -> Result<DomainInfo, VmError> {
    use virt::domain::DomainState;
    use virt::enumutil::Enum;
    let (state, _) = d.state()?;
    let state = match state {
        Enum::Known(DomainState::Running) | Enum::Known(DomainState::Blocked) => "running",
        Enum::Known(DomainState::Paused) => "paused",
        Enum::Known(DomainState::Shutdown) => "shutting down",
        Enum::Known(DomainState::Shutoff) => "shut off",
        Enum::Known(DomainState::Crashed) => "crashed",
        Enum::Known(DomainState::PMSuspended) => "suspended",
        _ => "unknown",
    }
    .to_string();
    let metadata = d
        .metadata(METADATA_ELEMENT, Some(xml::METADATA_NS), 0)
        .ok()
        .and_then(|m| xml::parse_metadata(&m));
    Ok(DomainInfo {
        name: d.name()?,
        state,
        active: d.is_active()?,
        persistent: d.is_persistent()?,
        metadata,
    })
}
