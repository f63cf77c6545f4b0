//! Pinned artifacts: where a tool's binary comes from, the SHA-256 it must
//! have, and how to get the binary out of it.
//!
//! STATUS: the spec type is settled (the lab schema embeds it); fetching,
//! caching and extraction land with the artifacts issue.

pub mod spec;

pub use spec::{AptPackage, ArtifactSpec, Extract};
