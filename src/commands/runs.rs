//! `labrun runs [DIR] [--json]`: the runs under `results/` (or DIR), packs
//! too, newest first, and which of them `labrun compare` takes as
//! comparable. Reading is the report crate's ([`labrun_report::runs`]); this
//! file only prints.

use crate::context::Context;
use labrun_report::runs::{self, Listed, RunEntry};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The folder of runs: run folders and packs (`*.tar.gz`). Default:
    /// `results`, where `bench` writes them.
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// One JSON array on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// List the runs of a results store instead of a folder's: an SQLite
    /// file or `postgres://USER@HOST:PORT/DB`; `--db` alone: LABRUN_DB's
    /// store, else the default one (LABRUN_DB alone never turns the
    /// listing of a folder into the store's). `labrun import` and `bench` fill it.
    #[arg(
        long = "db",
        value_name = "FILE|URL",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with = "dir"
    )]
    pub db: Option<String>,
    #[command(flatten)]
    pub filter: StoreFilter,
}

/// Which of a store's runs to list (each only with --db).
#[derive(clap::Args)]
pub struct StoreFilter {
    /// Only runs that ran this tool.
    #[arg(long, requires = "db")]
    pub tool: Option<String>,
    /// Only runs of the lab of this `name:` (`--lab` names a lab file).
    #[arg(long = "lab-name", value_name = "NAME", requires = "db")]
    pub lab_name: Option<String>,
    /// Only runs whose dataset's description holds this, e.g. `synthetic`.
    #[arg(long, requires = "db")]
    pub dataset: Option<String>,
    /// Only runs whose machine class holds this, e.g. `tcg` or `4 vCPU`.
    #[arg(long, requires = "db")]
    pub machine: Option<String>,
    /// Only runs finished on or after this UTC date or time (`2026-12-01`).
    #[arg(long, requires = "db")]
    pub since: Option<String>,
    /// Only runs finished before this UTC date or time.
    #[arg(long, requires = "db")]
    pub until: Option<String>,
}

/// Where `bench` writes its runs unless told otherwise.
const RESULTS: &str = "results";

pub async fn run(_ctx: &Context, args: Args) -> anyhow::Result<ExitCode> {
    if let (None, Some(db)) = (&args.dir, args.db.clone()) {
        return from_store(db, args).await;
    }
    let given = args.dir.is_some();
    let dir = args.dir.unwrap_or_else(|| PathBuf::from(RESULTS));
    let read = dir.clone();
    let listed =
        match tokio::task::spawn_blocking(move || runs::list(&read, std::time::SystemTime::now()))
            .await?
        {
            Ok(listed) => listed,
            // No results/ yet: nothing has run here, which is no error.
            Err(e) if !given && e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => anyhow::bail!("cannot read the folder of runs {}: {e}", dir.display()),
        };
    if args.json {
        // JSON for programs: escaped the JSON way, so it parses the same.
        let json = serde_json::to_string_pretty(&listed)?;
        println!("{}", labrun_evidence::printable::printable_json(&json));
        return Ok(ExitCode::SUCCESS);
    }
    if listed.is_empty() {
        safe_println!(
            "no runs in {} (`labrun bench` writes them to {RESULTS}/)",
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    safe_print!("{}", table(&listed));
    Ok(ExitCode::SUCCESS)
}

const HEADER: [&str; 9] = [
    "CMP", "ID", "LAB", "STARTED", "STATUS", "CYCLES", "TOOLS", "DATASET", "MACHINE",
];
const NONE: &str = "-";

fn row(r: &RunEntry) -> [String; 9] {
    let or_none = |v: &Option<String>| v.clone().unwrap_or_else(|| NONE.into());
    let dataset = match (&r.dataset, r.variants.is_empty()) {
        (_, false) => format!("variants: {}", r.variants.join(", ")),
        (Some(d), true) => d.clone(),
        (None, true) => NONE.into(),
    };
    [
        or_none(&r.group),
        if r.packed {
            format!("{} (pack)", r.id)
        } else {
            r.id.clone()
        },
        or_none(&r.lab),
        or_none(&r.started),
        r.status.describe(),
        r.cycles_text(),
        r.tools_text(),
        dataset,
        or_none(&r.machine_class),
    ]
}

/// The table, then one line per unreadable item, then what the letters mean.
fn table(listed: &[Listed]) -> String {
    let rows: Vec<[String; 9]> = listed
        .iter()
        .filter_map(|l| match l {
            Listed::Run(r) => Some(row(r)),
            Listed::Unreadable { .. } => None,
        })
        .collect();
    let mut widths = HEADER.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut text: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        // The last column is not padded.
        if let (Some(last), Some(cell)) = (text.last_mut(), cells.last()) {
            *last = cell.clone();
        }
        text.join("  ") + "\n"
    };
    let mut out = line(&HEADER.map(String::from));
    for r in &rows {
        out.push_str(&line(r));
    }
    for l in listed {
        if let Listed::Unreadable { path, unreadable } = l {
            out.push_str(&format!("{}: unreadable: {unreadable}\n", path.display()));
        }
    }
    if rows.iter().any(|r| r[0] != NONE) {
        out.push_str(
            "\nRuns with the same CMP letter measured the same dataset and protocol on the same \
             machine: `labrun compare RUN_A RUN_B --tool TOOL` compares them. '-': none of the \
             others.\n",
        );
    }
    out
}

/// The runs of a results store, oldest import first.
async fn from_store(db: String, args: Args) -> anyhow::Result<ExitCode> {
    let location = crate::store_location::location_of(Some(&db))?;
    let f = args.filter;
    let filter = labrun_store::RunFilter {
        tool: f.tool,
        lab: f.lab_name,
        dataset: f.dataset,
        machine: f.machine,
        since: f.since,
        until: f.until,
        ..Default::default()
    };
    let mut store = crate::store_location::open(location.clone()).await?;
    let stored = tokio::task::spawn_blocking(move || store.runs(&filter)).await??;
    if args.json {
        let json = serde_json::to_string_pretty(&stored.iter().map(as_json).collect::<Vec<_>>())?;
        println!("{}", labrun_evidence::printable::printable_json(&json));
        return Ok(ExitCode::SUCCESS);
    }
    if stored.is_empty() {
        safe_println!(
            "no runs in the store {location} match (`labrun import PACK|RUN_DIR` adds runs)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    safe_println!("DIGEST        FINISHED              RUN  TOOLS  MACHINE  FROM");
    for r in &stored {
        let digest = r.digest.get(..12).unwrap_or(&r.digest);
        let tools: Vec<String> = r
            .tools
            .iter()
            .map(|t| match &t.version {
                Some(v) => format!("{}@{v}", t.name),
                None => t.name.clone(),
            })
            .collect();
        safe_println!(
            "{digest}  {}  {}  {}  {}  {}",
            r.finished_at.as_deref().unwrap_or("?"),
            r.run_id,
            tools.join(","),
            r.machine_class.as_deref().unwrap_or("?"),
            r.origin.as_deref().unwrap_or("?"),
        );
    }
    safe_println!(
        "{} run(s); compare two with `labrun compare DIGEST DIGEST --db ... --tool NAME`",
        stored.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// One stored run for `--json`.
fn as_json(r: &labrun_store::StoredRun) -> serde_json::Value {
    serde_json::json!({
        "digest": r.digest,
        "run_id": r.run_id,
        "lab": r.lab,
        "lab_sha256": r.lab_digest,
        "tools": r.tools.iter().map(|t| serde_json::json!({"name": t.name, "version": t.version})).collect::<Vec<_>>(),
        "dataset": r.dataset,
        "machine_class": r.machine_class,
        "acceleration": r.acceleration,
        "finished_at": r.finished_at,
        "imported_at": r.imported_at,
        "origin": r.origin,
    })
}
