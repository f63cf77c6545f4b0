//! `track.md`: the track's state as a page: the question, each tracked
//! commit in line order with its date, subject, ratio and interval against
//! the anchor, then the flagged steps and the commit each names. Everything
//! from the repository (subjects) is escaped as a table cell.

use super::state::{Found, State};
use crate::bisect::short;
use crate::commands::bisect::{cell, describe};
use labrun_report::compare::FigureDef as _;

pub fn page(state: &State) -> String {
    let q = &state.question;
    let mut out = format!(
        "# labrun track: `{}` on `{}`, {} of {}, margin {:.0}%\n\n\
         Every commit against the anchor `{}`: the ratio is the commit's figure over the anchor's, paired in one run.\n\n",
        cell(&q.tool),
        cell(&q.branch),
        q.figure.title(),
        q.phase,
        q.margin * 100.0,
        q.anchor
    );
    out.push_str("## Commits\n\n| # | commit | date | subject | against the anchor | evidence | store |\n|---|---|---|---|---|---|---|\n");
    let mut points: Vec<_> = state.points.iter().collect();
    points.sort_by_key(|p| p.position);
    for p in points {
        out.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} | {} |\n",
            p.position,
            short(&p.commit),
            cell(&p.date),
            cell(&p.subject),
            cell(&describe(&p.outcome)),
            cell(
                &p.outcome
                    .measured()
                    .map(|m| m.run.clone())
                    .unwrap_or_default()
            ),
            cell(p.stored.as_deref().unwrap_or("not imported"))
        ));
    }
    out.push_str("\n## Steps slower beyond the margin\n\n");
    if state.steps.is_empty() {
        out.push_str("None flagged.\n");
    } else {
        out.push_str("| from | to | commits | the commit that made it | bisection |\n|---|---|---|---|---|\n");
        for s in &state.steps {
            let found = match &s.found {
                Found::Commit {
                    commit,
                    date,
                    subject,
                } => format!("`{commit}` {date} \"{subject}\""),
                Found::Unresolved { conclusion } => format!("not found: {conclusion}"),
                Found::Pending => "not bisected yet: the next run bisects it".into(),
            };
            out.push_str(&format!(
                "| `{}` | `{}` | {} | {} | {} |\n",
                short(&s.from),
                short(&s.to),
                s.commits,
                cell(&found),
                cell(s.bisection.as_deref().unwrap_or("none: one commit apart"))
            ));
        }
    }
    labrun_report::export::escape::markdown_page(&out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::search::{Measured, Outcome};
    use crate::track::state::{Point, Question, Step};
    use labrun_report::compare::Figure;

    #[test]
    fn each_commit_and_the_named_commit_of_each_step() {
        let mut state = State::new(Question {
            tool: "toy".into(),
            branch: "main".into(),
            anchor: "a".repeat(40),
            phase: "backup_full".into(),
            figure: Figure::WallTime,
            margin: 0.05,
        });
        state.points.push(Point {
            commit: "c".repeat(40),
            position: 3,
            date: "2025-03-14".into(),
            subject: "backup | slower".into(),
            outcome: Outcome::Bad(Measured {
                ratio: 2.0,
                interval: Some([1.8, 2.2]),
                pairs: 3,
                run: "runs/r".into(),
            }),
            stored: Some("sha256:0123".into()),
        });
        state.steps.push(Step {
            from: "a".repeat(40),
            to: "c".repeat(40),
            commits: 3,
            bisection: Some("track/bisect-x".into()),
            found: Found::Commit {
                commit: "b".repeat(40),
                date: "2025-03-13".into(),
                subject: "read twice".into(),
            },
        });
        let md = page(&state);
        assert!(md.contains("backup \\| slower"), "{md}");
        assert!(
            md.contains("bad (ratio 2.000 [1.800, 2.200], 3 pairs)"),
            "{md}"
        );
        assert!(
            md.contains(&format!("`{}` 2025-03-13", "b".repeat(40))),
            "{md}"
        );
        assert!(md.contains("track/bisect-x"), "{md}");
        for row in md.lines().filter(|l| l.starts_with("| ")) {
            let bars = row
                .match_indices('|')
                .filter(|&(at, _)| !row[..at].ends_with('\\'))
                .count();
            assert!(bars == 8 || bars == 6, "{row}");
        }
    }
}
