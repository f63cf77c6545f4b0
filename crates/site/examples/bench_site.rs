//! `make bench-site`: builds the site from N synthetic runs (a committed run
//! of the default lab, one tool kept; three tools, a release each run, so
//! every tool page has a long line) and prints the time per run. Sizes run
//! side by side in one process, so their ratio (linear is 1.0) is read
//! against one machine. The store is filled first and not timed (that is
//! `make bench-store`). Usage: bench_site N...

#[path = "../tests/common/synthetic.rs"]
mod synthetic;

use std::time::Instant;
use synthetic::{Synth, Template};

const TOOLS: [&str; 3] = ["restic", "borg", "kopia"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    if sizes.is_empty() {
        return Err("usage: bench_site N...".into());
    }
    let template = Template::open();
    let mut per_run = Vec::new();
    for &n in &sizes {
        let tmp = tempfile::tempdir()?;
        let mut store = labrun_store::Store::open(&tmp.path().join("runs.sqlite"))?;
        for i in 0..n {
            let tool = TOOLS[i % TOOLS.len()];
            let mut s = Synth::new(tool, &format!("1.{}.0", i / TOOLS.len()), i);
            // Every tenth release is slower: the site has flags to draw.
            s.slowdown = if (i / TOOLS.len()) % 10 == 9 {
                1.5
            } else {
                1.0
            };
            store.import(&template.make(&tmp.path().join("runs"), &s), None)?;
        }
        let start = Instant::now();
        let built = labrun_site::build(&mut store, &tmp.path().join("site"))?;
        let took = start.elapsed().as_secs_f64();
        assert_eq!(built.runs, n, "every synthetic run is shown");
        let each = took / n as f64;
        per_run.push(each);
        println!(
            "{n} runs: site built in {took:.2} s ({:.2} ms/run, {} pages)",
            each * 1e3,
            built.pages.len()
        );
        // The store's questions over the same runs: the listing, and one
        // tool's trend (which reads that tool's runs' packs).
        let start = Instant::now();
        let listed = store.runs(&Default::default())?;
        let list = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let trend = labrun_site::trend(&mut store, TOOLS[0])?;
        let trend_took = start.elapsed().as_secs_f64();
        assert_eq!(listed.len(), n);
        assert!(trend.is_some());
        println!(
            "{n} runs: runs listed in {:.1} ms, trend of {} ({} of its runs) in {:.2} s",
            list * 1e3,
            TOOLS[0],
            n.div_ceil(TOOLS.len()),
            trend_took
        );
    }
    for (n, each) in sizes.iter().zip(&per_run).skip(1) {
        println!(
            "{n} runs: per-run site time / {}'s = {:.2} (linear is 1.0)",
            sizes[0],
            each / per_run[0]
        );
    }
    Ok(())
}
