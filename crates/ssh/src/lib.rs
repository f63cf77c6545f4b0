//! SSH client for labrun (russh).
//!
//! STATUS: lands with the VM issue.
