//! Everything that stops the storage network or its server from coming up,
//! each with what to do about it.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error(
        "the plan puts the repositories on a {server} server, which needs a network namespace of the agent's own: run labrun-agent as root (labrun's VM does)"
    )]
    NotRoot { server: String },
    #[error(
        "the plan puts the repositories on a {server} server, which needs `{program}` ({why}): install {package} on the machine under test (labrun's image has it)"
    )]
    MissingProgram {
        server: String,
        program: String,
        why: String,
        package: &'static str,
    },
    #[error("`{command}` failed: {message}")]
    Command { command: String, message: String },
    #[error(
        "this kernel has no netem queueing discipline (sch_netem), so `storage.network` cannot shape the network ({message}): run the lab in labrun's VM, whose Debian kernel has netem, or drop `storage.network` from the lab"
    )]
    NetemMissing { message: String },
    #[error(
        "{address} is already on {device}: another storage network is up (another labrun-agent running, or one killed before it could take it down); wait for it, or remove it with `ip link del {device}`"
    )]
    AddressInUse { address: String, device: String },
    #[error("the {server} server ended before it accepted a connection ({status}); its log: {log}")]
    ServerExited {
        server: String,
        status: String,
        log: String,
    },
    #[error(
        "the {server} server did not accept connections on {address} within {secs} s; its log: {log}"
    )]
    ServerTimeout {
        server: String,
        address: String,
        secs: u64,
        log: String,
    },
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// A stop signal came while the network was being set up.
    #[error("interrupted while the storage server started")]
    Interrupted(i32),
}

impl StorageError {
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StorageError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
