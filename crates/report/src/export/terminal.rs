//! The plain-text table `bench` and `report` print: aligned columns, ASCII
//! only, then the warnings. Tool names, versions and warnings come from the
//! lab and the guest: each is escaped and kept on its line before it is
//! aligned, so it can neither drive the terminal nor break the table.

use super::cells;
use crate::figures;
use crate::summary::Summary;
use labrun_evidence::printable::{printable, printable_text};

const GAP: &str = "  ";

/// The results table and warnings as plain text, one line per tool.
pub fn render_terminal(s: &Summary) -> String {
    let header = [
        "tool",
        "full backup",
        "incremental",
        "restore",
        "repo after full",
        "growth",
        "peak MiB full/incr/restore",
        "tree MiB full/incr/restore",
        "tree CPU s full/incr/restore",
        "disk read full/incr/restore",
        "disk written full/incr/restore",
        "restore check",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = vec![header];
    for t in &s.tools {
        let [full, incr, restore] = s.roles.headline().map(|p| cells::phase_time(s, t, p));
        rows.push(vec![
            cells::tool_label(t),
            full,
            incr,
            restore,
            cells::repo_size(t),
            cells::growth(t),
            cells::medians(&s.roles, t, &figures::PEAK_MEMORY),
            cells::medians(&s.roles, t, &figures::TREE_MEMORY),
            cells::medians(&s.roles, t, &figures::TREE_CPU),
            cells::medians(&s.roles, t, &figures::DISK_READ),
            cells::medians(&s.roles, t, &figures::DISK_WRITTEN),
            cells::restore_check(t),
        ]);
    }
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| printable(c).into_owned()).collect())
        .collect();
    let mut out = format!("run {}\n", printable(&s.run_id));
    out.push_str(&aligned(&rows));
    for w in &s.warnings {
        out.push_str("warning: ");
        out.push_str(&printable(&w.message));
        out.push('\n');
    }
    // Whatever a future line adds: nothing in the table drives a terminal.
    printable_text(&out).into_owned()
}

/// Left-aligned columns separated by two spaces, a dashed line under the header.
fn aligned(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |r: &[String]| {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(s, w)| format!("{s:<w$}"))
            .collect();
        format!("{}\n", cells.join(GAP).trim_end())
    };
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        out.push_str(&line(r));
        if i == 0 {
            let dashes: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&line(&dashes));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        let rows = vec![
            vec!["tool".to_string(), "time".to_string()],
            vec!["restic".to_string(), "7.2 s".to_string()],
            vec!["borg".to_string(), "140 s, range 122-168".to_string()],
        ];
        assert_eq!(
            aligned(&rows),
            "tool    time\n\
             ------  --------------------\n\
             restic  7.2 s\n\
             borg    140 s, range 122-168\n"
        );
    }
}
