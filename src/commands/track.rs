//! `labrun track TOOL --phase restore [--every N | --tip]`: a tool's branch
//! followed commit by commit against the lab's anchor, for a systemd timer,
//! cron or a scheduled CI job. The loop is in `crate::track`; each point is
//! a probe of `crate::bisect::lab_probe` (the anchor against the commit,
//! paired), each step's commit is found by `crate::bisect`'s engine. This
//! file reads the arguments, wires them together and prints.
//!
//! Exit status: 0 when nothing new got slower, 1 when this run flagged a
//! step slower (so a timer's `OnFailure=` or a CI job's red mark tells
//! someone) or could not run, 130 on Ctrl-C (what was measured is kept; the
//! next run continues).

use crate::bisect::commit_info;
use crate::bisect::lab_probe::LabProber;
use crate::bisect::search::Next;
use crate::bisect::{self, git, short};
use crate::commands::bisect::{ProbeArgs, describe, git_copy, one_line, probe_lab};
use crate::context::Context;
use crate::exit;
use crate::store_location::DbArg;
use crate::track::select::Cadence;
use crate::track::state::{Found, Question, State};
use crate::track::{self, Bisector, Event};
use anyhow::Context as _;
use labrun_artifact::build::source::git_cache::GitCache;
use labrun_lab::Lab;
use labrun_report::compare::Figure;
use labrun_store::Location;
use labrun_store::{Imported, Store};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The lab's series tool whose branch is followed (its anchor version
    /// is what every commit is paired with).
    pub tool: String,
    /// The branch followed.
    #[arg(long, default_value = "main")]
    pub branch: String,
    /// Benchmark every Nth first-parent commit after the anchor (and the
    /// tip) instead of each one.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "tip")]
    pub every: u32,
    /// Benchmark only the branch's tip.
    #[arg(long)]
    pub tip: bool,
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// Where the track's folder (`track-TOOL-BRANCH`: its state, lock,
    /// report, every run and bisection) goes.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    #[command(flatten)]
    pub db: DbArg,
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    match track_cmd(ctx, args).await {
        Ok(code) => Ok(code),
        Err(e) if e.is::<bisect::Interrupted>() => {
            safe_eprintln!(
                "labrun track: interrupted: the run under way kept what it measured; every commit before it is on record, and the same command continues"
            );
            Ok(ExitCode::from(exit::INTERRUPTED))
        }
        Err(e) => {
            safe_eprintln!("labrun track: {e:#}");
            Ok(ExitCode::from(exit::FAILED))
        }
    }
}

async fn track_cmd(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let (lab_text, lab) = probe_lab(ctx, &args.probe.phase)?;
    let copy = git_copy(ctx, &lab, &args.tool)?;
    let anchor = anchor_version(&lab, &args.tool)?;
    let db = args.db.location()?;
    // Refused before anything is built or run: a store that cannot be
    // opened would leave every run unimported.
    Store::connect(&db).with_context(|| {
        format!(
            "the results store {db} cannot be opened; give another with --db FILE|URL or LABRUN_DB"
        )
    })?;
    let folder = track_folder(&args.results, &args.tool, &args.branch);
    let _lock = track::lock::acquire(&folder)?;
    let line = line(&copy, &anchor, &args.branch)?;
    let figure = Figure::from(args.probe.figure);
    let question = Question {
        tool: args.tool.clone(),
        branch: args.branch.clone(),
        anchor: line[0].clone(),
        phase: args.probe.phase.clone(),
        figure,
        margin: args.probe.margin,
    };
    let mut state = State::open(&folder, question)?;
    let cadence = if args.tip {
        Cadence::Tip
    } else {
        Cadence::Every(args.every as usize)
    };
    safe_println!(
        "track {} on {}: {} first-parent commits after the anchor {} up to {}; state, runs and report in {}",
        args.tool,
        args.branch,
        line.len() - 1,
        short(&line[0]),
        short(line.last().map_or("", |c| c.as_str())),
        folder.display()
    );
    let probes = Probes {
        ctx,
        args: &args,
        lab_text,
        db: db.clone(),
    };
    let mut prober = probes.prober(folder.join("runs"))?;
    let mut bisector = LabBisector {
        probes: &probes,
        copy: &copy,
        folder: folder.clone(),
    };
    let describe_commit = |commit: &str| match commit_info::describe(&copy, commit) {
        Ok(info) => (info.date, info.subject),
        Err(e) => (String::new(), format!("(subject unknown: {e})")),
    };
    let mut import = |run: &Path| import(&db, run);
    let done = track::run(
        &mut state,
        &folder,
        &line,
        cadence,
        &mut prober,
        &mut bisector,
        &describe_commit,
        &mut import,
        &mut |e| show(&copy, e),
    )
    .await?;
    safe_println!(
        "{} commit(s) tracked now, {} on record; {} step(s) slower flagged ({} new); wrote {} and {}",
        done.tracked,
        state.points.len(),
        state.steps.len(),
        done.new_steps,
        folder.join(track::state::STATE_FILE).display(),
        folder.join(track::REPORT_FILE).display()
    );
    Ok(if done.new_steps > 0 {
        ExitCode::from(exit::FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

/// `RESULTS/track-TOOL-BRANCH`: one folder whatever the branch's name
/// holds (`release/0.19` is `release-0.19`).
fn track_folder(results: &Path, tool: &str, branch: &str) -> PathBuf {
    let branch = branch.replace(|c: char| !c.is_ascii_alphanumeric() && c != '.', "-");
    results.join(format!("track-{tool}-{branch}"))
}

/// The commit every point is paired with: the series' anchor version.
fn anchor_version(lab: &Lab, tool: &str) -> anyhow::Result<String> {
    let series = lab
        .series()
        .iter()
        .find(|s| s.tool == tool)
        .with_context(|| format!("`{tool}` is not a series tool of the lab"))?;
    Ok(series
        .anchor
        .strip_prefix(&format!("{tool}@"))
        .unwrap_or(&series.anchor)
        .to_string())
}

/// The first-parent line from the anchor to the branch's tip, fetched
/// first; the anchor alone when the tip is the anchor.
fn line(copy: &GitCache, anchor: &str, branch: &str) -> anyhow::Result<Vec<String>> {
    copy.refresh().map_err(anyhow::Error::msg)?;
    let anchor_id = git::resolve(copy, anchor)?;
    let tip = git::resolve(copy, branch)?;
    if anchor_id == tip {
        return Ok(vec![anchor_id]);
    }
    git::commits_between(copy, &anchor_id, &tip).with_context(|| {
        format!(
            "the branch `{branch}` must lead on from the lab's anchor {}: name the branch it is on (--branch), or make a commit of that branch the anchor (`anchor:` in the lab)",
            short(&anchor_id)
        )
    })
}

/// A run into the results store: its address.
fn import(db: &Location, run: &Path) -> Result<String, String> {
    let later = format!(
        "the run stays in {}; the next track imports it (or `labrun import '{}' --db '{db}'`)",
        run.display(),
        run.display(),
    );
    match Store::connect(db).and_then(|mut s| s.import(run, None)) {
        Ok(Imported::Added { digest, .. } | Imported::AlreadyPresent { digest }) => {
            Ok(format!("sha256:{digest}"))
        }
        Err(e) => Err(format!("{e}; {later}")),
    }
}

/// What every probe, a point's or a bisection's, is built from.
struct Probes<'a> {
    ctx: &'a Context,
    args: &'a Args,
    lab_text: String,
    db: Location,
}

impl Probes<'_> {
    fn prober(&self, runs: PathBuf) -> anyhow::Result<LabProber> {
        self.args.probe.prober(
            self.ctx,
            self.lab_text.clone(),
            &self.args.tool,
            runs,
            Some(self.db.clone()),
        )
    }
}

/// A step's commit found by `labrun bisect`'s engine, its state and runs in
/// `bisect-FROM-TO` in the track's folder (continued after an interruption).
struct LabBisector<'a> {
    probes: &'a Probes<'a>,
    copy: &'a GitCache,
    folder: PathBuf,
}

impl Bisector for LabBisector<'_> {
    async fn bisect(&mut self, from: &str, to: &str) -> anyhow::Result<(PathBuf, Found)> {
        let args = self.probes.args;
        let commits = git::commits_between(self.copy, from, to)?;
        let folder = self
            .folder
            .join(format!("bisect-{}-{}", short(from), short(to)));
        let question = args.probe.question(&args.tool, commits.clone());
        let (mut state, _) = bisect::state::State::open(&folder, question)?;
        state.save(&folder)?;
        safe_println!(
            "bisect {}..{}: {} commits; at most {} probes; state and runs in {}",
            short(from),
            short(to),
            commits.len() - 1,
            bisect::search::max_probes(commits.len()),
            folder.display()
        );
        let mut prober = self.probes.prober(folder.join("runs"))?;
        let copy = self.copy;
        let end = bisect::run(&mut state, &folder, &mut prober, &mut |e| {
            crate::commands::bisect::show(copy, e)
        })
        .await?;
        let found = match end {
            Next::FirstBad(i) => {
                let commit = commits[i].clone();
                let (date, subject) = match commit_info::describe(copy, &commit) {
                    Ok(info) => (info.date, info.subject),
                    Err(e) => (String::new(), format!("(subject unknown: {e})")),
                };
                Found::Commit {
                    commit,
                    date,
                    subject,
                }
            }
            _ => Found::Unresolved {
                conclusion: bisect::conclusion(&state, &end),
            },
        };
        Ok((folder, found))
    }
}

fn show(copy: &GitCache, event: Event) {
    match event {
        Event::Planned { on_record, to_run } => match (on_record, to_run) {
            (0, n) => safe_println!("{n} commit(s) to track"),
            (k, 0) => safe_println!("nothing new: {k} commit(s) on record, none to run"),
            (k, n) => safe_println!("continuing: {k} commit(s) on record; {n} new to track"),
        },
        Event::Tracking { n, of, commit } => safe_println!(
            "track {n} of {of}: {} {}",
            short(commit),
            one_line(&commit_info::named(copy, commit))
        ),
        Event::Tracked { commit, outcome } => {
            safe_println!("tracked {}: {}", short(commit), describe(outcome))
        }
        Event::NotImported { run, why } => {
            safe_eprintln!("labrun track: warning: {run} not imported: {why}")
        }
        Event::Flagged { step } => safe_println!(
            "slower: {} against {} beyond the margin, {} commit(s) apart{}",
            short(&step.to),
            short(&step.from),
            step.commits,
            if step.commits > 1 {
                "; bisecting".to_string()
            } else {
                format!("; the commit that made it: {}", step.to)
            }
        ),
        Event::Resolved { step } => match &step.found {
            Found::Commit {
                commit,
                date,
                subject,
            } => safe_println!(
                "step {}..{}: first bad commit {commit} {date} \"{}\"",
                short(&step.from),
                short(&step.to),
                one_line(subject)
            ),
            Found::Unresolved { conclusion } => safe_println!(
                "step {}..{}: no commit named: {conclusion}",
                short(&step.from),
                short(&step.to)
            ),
            Found::Pending => {}
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_branch_name_makes_one_folder_under_results() {
        let results = Path::new("results");
        for branch in ["release/0.19", "../..", "a/../../b"] {
            let folder = track_folder(results, "toy", branch);
            assert_eq!(folder.parent(), Some(results), "{branch}: {folder:?}");
        }
        assert_eq!(
            track_folder(results, "toy", "release/0.19"),
            Path::new("results/track-toy-release-0.19")
        );
    }
}
