//! Run summaries from raw evidence. STATUS: lands with the bench issue.
