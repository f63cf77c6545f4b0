//! SHA-256 as labrun writes it: the evidence crate's one helper, shared by
//! the host (pins, caches) and the agent (binary checks, manifests).

pub use labrun_evidence::digest::*;
