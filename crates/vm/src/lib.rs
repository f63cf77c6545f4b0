//! The VM: image, domain, lifecycle.
//!
//! STATUS: lands with the VM issue.
