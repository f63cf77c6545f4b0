//! Pinned artifacts: where a tool's binary comes from, the SHA-256 it must
//! have, and how to get the binary out of it.
//!
//! ```text
//! Fetcher::fetch  cache -> mirror folder -> url | file | apt   (SHA-256 checked)
//!                 or a build from pinned source: go | crate | source tree (archive
//!                 or git, pinned by its tree id)                 (cached by inputs)
//! extract         raw | bz2 | gz | tar member | deb member | deb-install
//! checksums       upstream checksum lists, for `labrun pin`
//! lab_edit        writing a pin into the lab file, comments kept
//! redirect        which redirects a download follows; every hop recorded
//! stale           partial files a killed run left, found by their free lock
//! ```
//! The library never prints: progress goes through the [`Progress`] trait.

pub mod apt;
pub mod apt_sources;
pub mod build;
pub mod cache;
pub mod checksums;
pub mod debian;
pub mod digest;
pub mod error;
pub mod extract;
pub mod fetcher;
pub mod http;
pub mod lab_edit;
pub mod pin;
pub mod progress;
pub mod redirect;
pub mod resolve;
pub mod source;
pub mod spec;
pub mod stale;
pub mod url_credentials;

pub use cache::Cache;
pub use checksums::PublishedDigest;
pub use error::ArtifactError;
pub use extract::{InstallKind, Installable, extract};
pub use fetcher::{FetchOptions, FetchedArtifact, Fetcher};
pub use http::NetPolicy;
pub use pin::{BuildPin, ManualPin, PinOutcome, PinRequest, write_lab};
pub use progress::{NoProgress, Progress};
pub use resolve::{Resolution, resolve_offline};
pub use source::{FileName, Source};
pub use spec::{
    AptPackage, ArtifactSource, ArtifactSpec, BuildRecipe, CrateBuild, Extract, GoBuild,
    PythonBuild, SourceBuild, SpecProblem,
};
pub use url_credentials::without_credentials;
