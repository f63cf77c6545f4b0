//! What can go wrong with a synthetic history, in words a user can act on.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("git-history generator: `{field}`: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },

    /// The cause is part of the message (not a `source`, so chains do not
    /// print it twice).
    #[error("{action} {}: {cause}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        cause: std::io::Error,
    },
}

impl HistoryError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        cause: std::io::Error,
    ) -> Self {
        HistoryError::Io {
            action,
            path: path.into(),
            cause,
        }
    }
}
