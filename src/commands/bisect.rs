//! `labrun bisect TOOL --good A --bad B --phase restore`: the first commit
//! of a tool's source where a figure moves beyond the margin. The tool is a
//! series template built from a git source (`versions:` with
//! `commit: "{version}"`); the search is in `crate::bisect`, each probe a
//! `labrun bench` of the good commit against the probe, paired.
//!
//! Exit status: 0 when the first bad commit is found, 1 when the search
//! stopped without one (inconclusive, not slower, unmeasurable), 130 on
//! Ctrl-C (what was measured is kept; the same command continues).

use crate::bisect::commit_info::{self, named};
use crate::bisect::lab_probe::LabProber;
use crate::bisect::search::{self, Next, Outcome};
use crate::bisect::state::{Question, State};
use crate::bisect::{self, Event, git, short};
use crate::context::Context;
use crate::exit;
use anyhow::{Context as _, bail};
use labrun_artifact::build::BuildRecipe;
use labrun_artifact::build::source::SourceOrigin;
use labrun_artifact::build::source::git_cache::GitCache;
use labrun_artifact::spec::ArtifactSource;
use labrun_evidence::Step;
use labrun_lab::Lab;
use labrun_report::compare::FigureDef as _;
use labrun_report::compare::{Figure, Settings, parse_fraction};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The lab's series tool whose source is bisected.
    pub tool: String,
    /// A commit or tag where the figure is as it should be.
    #[arg(long)]
    pub good: String,
    /// A later commit or tag where it is worse.
    #[arg(long)]
    pub bad: String,
    #[command(flatten)]
    pub probe: ProbeArgs,
    /// Where the bisection's folder (its state and every probe's run) goes.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
}

/// How each probe (a commit paired against the good end or the anchor) is
/// run and judged: `bisect`'s and `track`'s, one set of arguments.
#[derive(clap::Args)]
pub struct ProbeArgs {
    /// The timed phase judged: `backup_full`, `backup_incremental`, `restore`, ...
    #[arg(long)]
    pub phase: String,
    /// The figure judged.
    #[arg(long, value_enum, default_value = "wall-time")]
    pub figure: FigureArg,
    /// The difference that counts: `5%` or `0.05`.
    #[arg(long, default_value = "5%", value_parser = margin)]
    pub margin: f64,
    /// Cycles (pairs) per probe before any is added.
    #[arg(long, default_value_t = 3)]
    pub cycles: u32,
    /// While a verdict of the probe's run is open, add up to N more pairs
    /// (`bench --until-conclusive`); 0 adds none.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub until_conclusive: u32,
}

impl ProbeArgs {
    /// A bisection's question over `commits` of `tool`.
    pub fn question(&self, tool: &str, commits: Vec<String>) -> Question {
        Question {
            tool: tool.to_string(),
            phase: self.phase.clone(),
            figure: Figure::from(self.figure),
            margin: self.margin,
            commits,
        }
    }

    /// The prober of `tool` from the lab `lab_text`, its runs in `runs`,
    /// each imported into `db` (None: bench's own default).
    pub fn prober(
        &self,
        ctx: &Context,
        lab_text: String,
        tool: &str,
        runs: PathBuf,
        db: Option<labrun_store::Location>,
    ) -> anyhow::Result<LabProber> {
        Ok(LabProber {
            lab_path: ctx.lab_path.clone(),
            lab_text,
            tool: tool.to_string(),
            phase: Step::named(self.phase.clone()),
            figure: Figure::from(self.figure),
            settings: Settings {
                margin: self.margin,
                ..Settings::default()
            },
            runs,
            cycles: self.cycles,
            until_conclusive: self.until_conclusive,
            cache: ctx.cache_dir.clone(),
            state: ctx.state_root.clone(),
            mirror: ctx.mirror.clone(),
            fetcher: labrun_artifact::Fetcher::new(labrun_artifact::FetchOptions::new(
                ctx.cache_dir.clone(),
                ctx.mirror.clone(),
            ))?,
            digests: Default::default(),
            db,
        })
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum FigureArg {
    WallTime,
    Cpu,
    PeakMemory,
    TreeMemory,
}

impl From<FigureArg> for Figure {
    fn from(f: FigureArg) -> Figure {
        match f {
            FigureArg::WallTime => Figure::WallTime,
            FigureArg::Cpu => Figure::Cpu,
            FigureArg::PeakMemory => Figure::PeakMemory,
            FigureArg::TreeMemory => Figure::TreeMemory,
        }
    }
}

pub(crate) fn margin(text: &str) -> Result<f64, String> {
    match parse_fraction(text)? {
        v if v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err("the margin must be above 0% and at most 100%, e.g. 5%".into()),
    }
}

pub async fn run(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    match bisect_cmd(ctx, args).await {
        Ok(code) => Ok(code),
        Err(e) if e.is::<bisect::Interrupted>() => {
            safe_eprintln!("labrun bisect: {e:#}");
            Ok(ExitCode::from(exit::INTERRUPTED))
        }
        Err(e) => {
            safe_eprintln!("labrun bisect: {e:#}");
            Ok(ExitCode::from(exit::FAILED))
        }
    }
}

async fn bisect_cmd(ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let (lab_text, lab) = probe_lab(ctx, &args.probe.phase)?;
    let copy = git_copy(ctx, &lab, &args.tool)?;
    let commits = git::commits_between(&copy, &args.good, &args.bad)?;
    let folder = args.results.join(format!(
        "bisect-{}-{}-{}",
        args.tool,
        short(&commits[0]),
        short(commits.last().map_or("", |c| c.as_str()))
    ));
    let question = args.probe.question(&args.tool, commits.clone());
    let (mut state, _) = State::open(&folder, question)?;
    state.save(&folder)?;
    safe_println!(
        "bisect {}: {} commits after {} up to {} ({}); at most {} probes; state and runs in {}",
        args.tool,
        commits.len() - 1,
        short(&commits[0]),
        short(commits.last().map_or("", |c| c.as_str())),
        args.bad,
        search::max_probes(commits.len()),
        folder.display()
    );
    let mut prober = args
        .probe
        .prober(ctx, lab_text, &args.tool, folder.join("runs"), None)?;
    let end = bisect::run(&mut state, &folder, &mut prober, &mut |e| show(&copy, e)).await?;
    let text = bisect::conclusion(&state, &end);
    let found = match end {
        Next::FirstBad(i) => Some(FirstBad::of(&copy, &commits[i])),
        _ => None,
    };
    let md = markdown(&state, &text, found.as_ref(), &copy);
    std::fs::write(folder.join("bisect.md"), md)
        .with_context(|| format!("cannot write {}", folder.join("bisect.md").display()))?;
    safe_println!("{text}");
    if let Some(found) = &found {
        safe_println!("{}", one_line(&found.subject));
        safe_println!(
            "files it changed against its first parent: {}",
            one_line(&found.files)
        );
    }
    Ok(if matches!(end, Next::FirstBad(_)) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::FAILED)
    })
}

/// The lab every probe is written from (its text and its loaded form),
/// checked before anything is fetched or built: no `compare:` of its own
/// (each probe writes its pair), and `phase` timed.
pub(crate) fn probe_lab(ctx: &Context, phase: &str) -> anyhow::Result<(String, Lab)> {
    let lab_text = std::fs::read_to_string(&ctx.lab_path).with_context(|| {
        format!(
            "cannot read {}; give the lab file with -f",
            ctx.lab_path.display()
        )
    })?;
    let lab = Lab::load(&ctx.lab_path)?;
    if lab.compare.is_some() {
        bail!(
            "{} has a `compare:` block: bisect and track write their own pair (each probe against the good commit or the anchor); remove it from the lab you bisect or track with",
            ctx.lab_path.display()
        );
    }
    // Checked before anything is fetched or built: every probe's pair asks
    // about this phase.
    if let Some(why) = lab.not_timed(&Step::named(phase.to_string())) {
        bail!("--phase: {why}");
    }
    Ok((lab_text, lab))
}

/// The first bad commit named: its date and subject, and the files it
/// changed (or why git could not tell them).
struct FirstBad {
    subject: String,
    files: String,
}

impl FirstBad {
    fn of(copy: &GitCache, commit: &str) -> FirstBad {
        FirstBad {
            subject: format!("{}: {}", short(commit), named(copy, commit)),
            files: commit_info::files_changed(copy, commit)
                .map_or_else(|e| format!("(unknown: {e})"), |f| f.line()),
        }
    }
}

/// Repository text on one terminal line (a file name may hold a newline).
pub(crate) fn one_line(s: &str) -> String {
    crate::terminal::one_line(s).into_owned()
}

/// Repository text in one Markdown table cell.
pub(crate) fn cell(s: &str) -> String {
    one_line(s).replace('|', "\\|")
}

pub(crate) fn show(copy: &GitCache, event: Event) {
    match event {
        Event::Continued { probes } => {
            safe_println!("continuing: {probes} probe(s) on record are reused")
        }
        Event::Probing {
            n,
            bound,
            commit,
            left,
        } => safe_println!(
            "probe {n} (of at most {bound}): {} {} ({left} commits not probed)",
            short(commit),
            one_line(&named(copy, commit))
        ),
        Event::Probed { commit, outcome } => {
            safe_println!("probe {}: {}", short(commit), describe(outcome))
        }
    }
}

pub(crate) fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Skipped { why } => format!("skipped: {why}"),
        other => {
            let word = match other {
                Outcome::Good(_) => "good",
                Outcome::Bad(_) => "bad",
                _ => "inconclusive",
            };
            let m = other.measured().map_or(String::new(), |m| {
                let interval = m
                    .interval
                    .map(|[a, b]| format!(" [{a:.3}, {b:.3}]"))
                    .unwrap_or_default();
                format!(" (ratio {:.3}{interval}, {} pairs)", m.ratio, m.pairs)
            });
            format!("{word}{m}")
        }
    }
}

/// `bisect.md`: the conclusion, the first bad commit's files, then every
/// commit in order, the given and probed ones named by date and subject.
fn markdown(state: &State, conclusion: &str, found: Option<&FirstBad>, copy: &GitCache) -> String {
    let q = &state.question;
    let mut out = format!(
        "# labrun bisect: `{}`, {} of {}, margin {:.0}%\n\n{conclusion}\n\n",
        q.tool,
        q.figure.title(),
        q.phase,
        q.margin * 100.0
    );
    if let Some(found) = found {
        out.push_str(&format!(
            "{}\n\nFiles it changed against its first parent: {}\n\n",
            one_line(&found.subject),
            one_line(&found.files)
        ));
    }
    out.push_str("| # | commit | date, subject | outcome | evidence |\n|---|---|---|---|---|\n");
    for (i, (commit, outcome)) in q.commits.iter().zip(&state.outcomes).enumerate() {
        let (text, run) = match outcome {
            None if i == 0 => ("good (given)".to_string(), String::new()),
            None => ("not probed".to_string(), String::new()),
            Some(o) => (
                describe(o),
                o.measured().map(|m| m.run.clone()).unwrap_or_default(),
            ),
        };
        let subject = if i == 0 || outcome.is_some() {
            cell(&named(copy, commit))
        } else {
            String::new()
        };
        out.push_str(&format!(
            "| {i} | `{commit}` | {subject} | {} | {} |\n",
            cell(&text),
            cell(&run)
        ));
    }
    labrun_report::export::escape::markdown_page(&out)
}

/// labrun's copy of the git repository the tool's source builds come from
/// (a URL or a local path): the one its builds read, so each probe's commit
/// is there already.
pub(crate) fn git_copy(ctx: &Context, lab: &Lab, tool: &str) -> anyhow::Result<GitCache> {
    let Some(series) = lab.series().iter().find(|s| s.tool == tool) else {
        bail!(
            "`{tool}` is not a series tool of the lab: bisect needs `versions:` on it and its artifact built from `source: {{git: {{repo: ..., commit: \"{{version}}\"}}}}`"
        );
    };
    let member = lab
        .tools
        .iter()
        .find(|t| series.members.contains(&t.name))
        .with_context(|| format!("the series `{tool}` has no member"))?;
    let ArtifactSource::Build(BuildRecipe::Source(source)) = &member.artifact.source else {
        bail!("`{tool}` is not built from a `source:`: bisect builds every commit from git");
    };
    let SourceOrigin::Git(git) = &source.origin else {
        bail!(
            "`{tool}` is built from a source archive: bisect needs `source: {{git: ...}}` to list the commits"
        );
    };
    Ok(GitCache::new(&ctx.cache_dir, &git.repo))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::search::Measured;
    use std::process::Command;

    /// A repository of two commits, the second with a subject holding a
    /// `|` and a file name holding a newline, and labrun's copy of it.
    fn repo() -> (tempfile::TempDir, tempfile::TempDir, GitCache, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(["-c", "commit.gpgsign=false"])
                .args(args)
                .env("GIT_AUTHOR_DATE", "2025-03-14T12:00:00Z")
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(dir.path().join("main.go"), "a").unwrap();
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "first"]);
        std::fs::write(dir.path().join("main.go"), "b").unwrap();
        std::fs::write(dir.path().join("odd\nname.go"), "c").unwrap();
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "restore | one pack at a time"]);
        let ids = git(&["rev-list", "--reverse", "HEAD"])
            .lines()
            .map(String::from)
            .collect();
        let cache = tempfile::tempdir().unwrap();
        let copy = GitCache::new(cache.path(), &format!("file://{}", dir.path().display()));
        copy.refresh().unwrap();
        (dir, cache, copy, ids)
    }

    #[test]
    fn bisect_md_names_each_probed_commit_and_the_first_bad_ones_files() {
        let (_repo, _cache, copy, ids) = repo();
        let mut state = State::new(Question {
            tool: "toy".into(),
            phase: "restore".into(),
            figure: Figure::WallTime,
            margin: 0.05,
            commits: ids.clone(),
        });
        state.outcomes[1] = Some(Outcome::Bad(Measured {
            ratio: 2.2,
            interval: Some([1.8, 2.6]),
            pairs: 3,
            run: "results/r".into(),
        }));
        let end = Next::FirstBad(1);
        let text = bisect::conclusion(&state, &end);
        let found = FirstBad::of(&copy, &ids[1]);
        let md = markdown(&state, &text, Some(&found), &copy);
        assert!(
            md.contains("2025-03-14 \"restore \\| one pack at a time\""),
            "the subject and date, its `|` kept out of the table's columns:\n{md}"
        );
        assert!(
            md.contains("2025-03-14 \"first\""),
            "the good end too:\n{md}"
        );
        assert!(
            md.contains("Files it changed against its first parent: main.go, odd\\nname.go"),
            "the files, the newline shown, not obeyed:\n{md}"
        );
        // Every table row has its five cells: six unescaped `|`.
        for row in md.lines().filter(|l| l.starts_with("| ")) {
            let bars = row
                .match_indices('|')
                .filter(|&(at, _)| !row[..at].ends_with('\\'));
            assert_eq!(bars.count(), 6, "{row}");
        }
    }
}
