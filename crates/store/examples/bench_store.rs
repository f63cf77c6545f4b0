//! `make bench-store`: imports N synthetic runs of the default lab's shape
//! (one committed pack, its identity varied per copy) into a fresh store,
//! then lists them; prints the time per imported run. Sizes are run side by
//! side so their ratio (linear is 1.0) is read against one machine.
//! Usage: bench_store PACK N...

use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let pack = PathBuf::from(args.next().ok_or("usage: bench_store PACK N...")?);
    let sizes: Vec<usize> = args
        .map(|a| a.to_string_lossy().parse())
        .collect::<Result<_, _>>()?;
    let opened = labrun_report::pack::open(&pack)?;
    let mut per_run = Vec::new();
    for &n in &sizes {
        let tmp = tempfile::tempdir()?;
        let mut store = labrun_store::Store::open(&tmp.path().join("runs.sqlite"))?;
        // The copies are made (and packed by the import) outside the timing
        // of the store itself only as far as packing is part of an import.
        let runs: Vec<PathBuf> = (0..n)
            .map(|i| synth_run(opened.dir(), tmp.path(), i))
            .collect::<Result<_, _>>()?;
        let start = Instant::now();
        for r in &runs {
            store.import(r, None)?;
        }
        let import = start.elapsed();
        let start = Instant::now();
        let listed = store.runs(&Default::default())?;
        let list = start.elapsed();
        assert_eq!(listed.len(), n, "every synthetic run is one row");
        let each = import.as_secs_f64() / n as f64;
        per_run.push(each);
        println!(
            "{n} runs: import {:.3} s ({:.2} ms/run), runs listed in {:.1} ms",
            import.as_secs_f64(),
            each * 1e3,
            list.as_secs_f64() * 1e3
        );
    }
    if let Some(first) = per_run.first() {
        for (n, each) in sizes.iter().zip(&per_run).skip(1) {
            println!(
                "{n} runs: per-run import time / {}'s = {:.2} (linear is 1.0)",
                sizes[0],
                each / first
            );
        }
    }
    Ok(())
}

/// A copy of the run in `src` with its own identity: a different run id in
/// a marker file, so its manifest (and digest) differs.
fn synth_run(src: &Path, into: &Path, i: usize) -> std::io::Result<PathBuf> {
    let dir = into.join(format!("run-{i:05}"));
    copy_tree(src, &dir)?;
    std::fs::write(dir.join("synthetic-id.txt"), format!("{i}\n"))?;
    Ok(dir)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let dest = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &dest)?;
        } else {
            std::fs::copy(e.path(), &dest)?;
        }
    }
    Ok(())
}
