//! Lab files: everything a run needs, as data.
//!
//! STATUS: lands with the lab-schema issue.
