//! The plain-text table `bench` and `report` print: aligned columns, ASCII
//! only, then the warnings. Tool names, versions and warnings come from the
//! lab and the guest: each is escaped and kept on its line before it is
//! aligned, so it can neither drive the terminal nor break the table.

use super::cells;
use crate::figures::Figure;
use crate::summary::Summary;
use labrun_evidence::printable::{printable, printable_text};

const GAP: &str = "  ";

/// The results table and warnings as plain text, one line per tool.
pub fn render_terminal(s: &Summary) -> String {
    let shown: Vec<(&Figure, &str)> = s
        .phase_figures()
        .into_iter()
        .filter_map(|(f, c)| Some((f, c.terminal?)))
        .collect();
    let mut header: Vec<String> = [
        "tool",
        "full backup",
        "incremental",
        "restore",
        "repo after full",
        "growth",
    ]
    .map(String::from)
    .to_vec();
    header.extend(shown.iter().map(|(_, h)| format!("{h} full/incr/restore")));
    header.push("restore check".into());
    let mut rows = vec![header];
    for t in &s.tools {
        let [full, incr, restore] = s.roles.headline().map(|p| cells::phase_time(s, t, p));
        let mut row = vec![
            cells::tool_label(t),
            full,
            incr,
            restore,
            cells::repo_size(t),
            cells::growth(t),
        ];
        row.extend(shown.iter().map(|(f, _)| cells::medians(&s.roles, t, f)));
        row.push(cells::restore_check(t));
        rows.push(row);
    }
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| printable(c).into_owned()).collect())
        .collect();
    let mut out = format!("run {}\n", printable(&s.run_id));
    out.push_str(&aligned(&rows));
    if let Some(f) = &s.noise_floor {
        out.push_str(&format!(
            "\nnoise floor: {} against {} (A/A: one binary, two names)\n",
            printable(&f.copy),
            printable(&f.tool)
        ));
        out.push_str(&aligned(&f.table()));
    }
    for t in &s.trends {
        out.push_str(&format!(
            "\ntrend of {} (ratios to the anchor {}; summary.md has the tables):\n",
            printable(&t.tool),
            printable(&t.anchor)
        ));
        for r in &t.rows {
            out.push_str(&format!("  {}\n", printable(&super::trend::line(t, r))));
        }
        if let Some(d) = &s.decided {
            out.push_str(&format!("  pairs added: {}\n", d.line()));
        }
    }
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
