//! `labrun compare`: verdicts between two tools of one run (paired) or a
//! tool of each of two runs (unpaired). Prints the table (or `--json`),
//! writes `compare.md` and `compare.json` into the candidate's run folder.
//! Exit status: 1 when a row is worse beyond the margin (CI gates on it),
//! 2 when nothing could be compared, 0 otherwise.

use crate::context::Context;
use labrun_report::compare::{self, Request, Settings, parse_fraction};
use labrun_report::pack::OpenedRun;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status when any row is worse (`slower`, `larger`) beyond the margin.
const WORSE: u8 = crate::exit::FAILED;
/// Exit status when the comparison could not be made (as clap's usage errors).
const NOT_COMPARED: u8 = crate::exit::NOTHING_DONE;

#[derive(clap::Args)]
pub struct Args {
    /// The run folder (results/<run-id>) or its pack: both tools' run, or
    /// the baseline's when RUN_B is given. With --db: a run of the store, by
    /// its digest (or a prefix) or run id.
    pub run: PathBuf,
    /// A second run folder or pack, the candidate's: an unpaired comparison.
    /// compare.md and compare.json go into the candidate's folder; for a
    /// pack, into a folder named after its run beside the pack.
    pub run_b: Option<PathBuf>,
    /// RUN and RUN_B are runs of this results store (an SQLite file or
    /// `postgres://USER@HOST:PORT/DB`; `--db` alone: the default store).
    /// Their packs are written to results/from-store/, and the comparison
    /// beside them.
    #[arg(
        long = "db",
        value_name = "FILE|URL",
        num_args = 0..=1,
        default_missing_value = ""
    )]
    pub db: Option<String>,
    /// The baseline tool, e.g. `restic@0.14.0`.
    #[arg(long, requires = "candidate", required_unless_present = "tool")]
    pub baseline: Option<String>,
    /// The candidate tool, e.g. `restic@0.19.1`.
    #[arg(long, requires = "baseline")]
    pub candidate: Option<String>,
    /// With two runs: the same tool on both sides.
    #[arg(long, requires = "run_b", conflicts_with_all = ["baseline", "candidate"])]
    pub tool: Option<String>,
    /// The difference that matters: `5%` or `0.05`.
    #[arg(long, default_value = "5%", value_parser = margin)]
    pub margin: f64,
    /// Family-wise error rate over all tested rows (Holm).
    #[arg(long, default_value_t = 0.05, value_parser = alpha)]
    pub alpha: f64,
    /// Flag a side whose relative standard deviation exceeds this.
    #[arg(long, default_value = "3.5%", value_parser = noise)]
    pub noise: f64,
    /// Print the comparison as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Compare two runs even when their host CPU, acceleration or guest
    /// kernel differ (the report names the difference).
    #[arg(long, requires = "run_b")]
    pub force: bool,
}

fn margin(text: &str) -> Result<f64, String> {
    let v = parse_fraction(text)?;
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err("the margin must be above 0% and at most 100%, e.g. 5%".into())
    }
}

fn noise(text: &str) -> Result<f64, String> {
    let v = parse_fraction(text)?;
    if v > 0.0 {
        Ok(v)
    } else {
        Err("the noise threshold must be above 0%, e.g. 3.5%".into())
    }
}

fn alpha(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 0.5 => Ok(v),
        _ => Err("alpha must be a probability between 0 and 0.5, e.g. 0.05".into()),
    }
}

impl Args {
    /// `run` and `run_b` are the folders to read (a pack's unpacked one).
    fn request(&self, run: PathBuf, run_b: Option<PathBuf>) -> Request {
        let (baseline, candidate) = match (&self.tool, &self.baseline, &self.candidate) {
            (Some(t), _, _) => (t.clone(), t.clone()),
            (None, Some(b), Some(c)) => (b.clone(), c.clone()),
            // clap requires --baseline and --candidate together, or --tool.
            _ => (String::new(), String::new()),
        };
        match run_b {
            None => Request::Paired {
                run,
                baseline,
                candidate,
            },
            Some(run_b) => Request::Unpaired {
                baseline_run: run,
                candidate_run: run_b,
                baseline,
                candidate,
                force: self.force,
            },
        }
    }
}

/// The baseline's run, then the candidate's if it is another.
fn open_runs(
    run: &std::path::Path,
    run_b: Option<&PathBuf>,
) -> Result<Vec<OpenedRun>, labrun_report::pack::PackError> {
    let mut opened = vec![labrun_report::pack::open(run)?];
    if let Some(run_b) = run_b {
        opened.push(labrun_report::pack::open(run_b)?);
    }
    Ok(opened)
}

/// Where the packs of runs compared from the store are written.
const FROM_STORE: &str = "results/from-store";

/// The packs of the store's runs `ids` names, written to [`FROM_STORE`].
async fn packs_from_store(db: &str, ids: Vec<String>) -> anyhow::Result<Vec<PathBuf>> {
    let location = crate::store_location::location_of(Some(db))?;
    let mut store = crate::store_location::open(location).await?;
    tokio::task::spawn_blocking(move || {
        let out = PathBuf::from(FROM_STORE);
        std::fs::create_dir_all(&out)
            .map_err(|e| anyhow::anyhow!("cannot make {}: {e}", out.display()))?;
        ids.iter()
            .map(|id| {
                let run = store.resolve(id).map_err(anyhow::Error::msg)?;
                Ok(store.write_pack(&run.digest, &out)?)
            })
            .collect()
    })
    .await?
}

pub async fn run(_ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    let settings = Settings {
        margin: args.margin,
        alpha: args.alpha,
        noise: args.noise,
        ..Settings::default()
    };
    let (run_path, run_b_path) = match &args.db {
        None => (args.run.clone(), args.run_b.clone()),
        Some(db) => {
            let mut ids = vec![args.run.to_string_lossy().into_owned()];
            ids.extend(args.run_b.iter().map(|r| r.to_string_lossy().into_owned()));
            match packs_from_store(db, ids).await {
                Ok(mut packs) => {
                    let first = packs.remove(0);
                    (first, packs.pop())
                }
                Err(e) => {
                    safe_eprintln!("labrun: error: {e:#}");
                    return Ok(ExitCode::from(NOT_COMPARED));
                }
            }
        }
    };
    let opened = match open_runs(&run_path, run_b_path.as_ref()) {
        Ok(opened) => opened,
        Err(e) => {
            safe_eprintln!("labrun: error: {e}");
            return Ok(ExitCode::from(NOT_COMPARED));
        }
    };
    let (run, run_b) = (&opened[0], opened.get(1));
    let candidate = run_b.unwrap_or(run);
    let request = args.request(
        run.dir().to_path_buf(),
        run_b.map(|r| r.dir().to_path_buf()),
    );
    let result = compare::compare(&request, &settings)
        .map_err(anyhow::Error::from)
        .and_then(|c| {
            let written = compare::write(&c, request.candidate_run())?;
            let out = candidate.default_output_dir();
            let written = candidate.publish(&written, &out)?;
            Ok((c, written))
        });
    let (comparison, written) = match result {
        Ok(done) => done,
        Err(e) => {
            safe_eprintln!("labrun: error: {e}");
            return Ok(ExitCode::from(NOT_COMPARED));
        }
    };
    if args.json {
        // to_json escapes control characters itself.
        print!("{}", compare::to_json(&comparison)?);
        for path in &written {
            safe_eprintln!("wrote {}", path.display());
        }
    } else {
        safe_print!("{}", compare::render::terminal(&comparison));
        safe_println!("The method is written in compare.md and compare.json.");
        for path in &written {
            safe_println!("wrote {}", path.display());
        }
    }
    Ok(if comparison.any_worse() {
        ExitCode::from(WORSE)
    } else {
        ExitCode::SUCCESS
    })
}
