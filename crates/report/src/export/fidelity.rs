//! The metadata-fidelity table of `summary.md`: one row per tool, one
//! column per kind, then what each lost, with the first example.

use crate::summary::Summary;
use labrun_evidence::{MetadataKind, MetadataStatus};
use std::fmt::Write;

fn cell(status: MetadataStatus) -> &'static str {
    match status {
        MetadataStatus::Preserved => "kept",
        MetadataStatus::Lost => "**lost**",
        MetadataStatus::NotTested => "not tested",
    }
}

/// The Markdown section; nothing for a run without a fidelity fixture.
pub fn markdown(out: &mut String, s: &Summary) {
    if s.fidelity.is_empty() {
        return;
    }
    out.push_str("## Metadata fidelity\n\n");
    out.push_str(
        "What a backup and restore of labrun's fidelity fixture kept: modes other than 0644, \
         mtimes to the nanosecond (files, and directories), symlinks (dangling too), a hard-link \
         pair, nested empty directories, a sparse file's hole, names with spaces and non-ASCII \
         characters, a `user.` xattr. Informative only: content decides whether a restore \
         passes. \"not tested\": the fixture could not hold that kind on this filesystem.\n\n",
    );
    let mut header = vec!["Tool".to_string()];
    header.extend(MetadataKind::ALL.iter().map(|k| format!("`{}`", k.name())));
    let rows = s.fidelity.iter().map(|row| {
        let mut cells = vec![row.tool.clone()];
        cells.extend(MetadataKind::ALL.iter().map(|k| {
            row.checks
                .iter()
                .find(|c| c.kind == *k)
                .map_or("-", |c| cell(c.status))
                .to_string()
        }));
        cells
    });
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    super::markdown::table(out, &header, rows);
    for row in &s.fidelity {
        for c in row
            .checks
            .iter()
            .filter(|c| c.status == MetadataStatus::Lost)
        {
            let _ = writeln!(
                out,
                "- {} lost `{}`: {}",
                row.tool,
                c.kind.name(),
                c.detail.as_deref().unwrap_or("(no detail)")
            );
        }
        if !row.differing_cycles.is_empty() {
            let cycles: Vec<String> = row.differing_cycles.iter().map(u32::to_string).collect();
            let _ = writeln!(
                out,
                "- {}: cycle {} gave other verdicts than cycle {} (shown)",
                row.tool,
                cycles.join(", "),
                row.cycle
            );
        }
    }
    out.push('\n');
}
