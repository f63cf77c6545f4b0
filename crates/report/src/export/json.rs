//! `summary.json`: the whole [`Summary`], samples included, for machines.

use super::Exporter;
use crate::error::{ReportError, Result};
use crate::summary::Summary;

pub struct Json;

impl Exporter for Json {
    fn file_name(&self) -> &'static str {
        "summary.json"
    }

    fn serialize(&self, summary: &Summary) -> Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(summary).map_err(|e| ReportError::Render {
            what: "summary.json",
            message: e.to_string(),
        })?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}
