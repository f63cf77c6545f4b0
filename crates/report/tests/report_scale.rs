//! Item 11 of issue 33: `report` time per record must not grow with the
//! number of records (25, 50, 100 MB took 1.6, 5.2, 27.5 s). Ignored: a
//! benchmark, not a test. `make bench-report` runs it (release) and prints
//! the time per record at two sizes and their ratio; no timing is asserted.
//! Sizes: `LABRUN_BENCH_REPORT_MB=20,60` (the default; these small records
//! come to 240,000 at 100 MB, past the 200,000 `report` keeps).

use labrun_evidence::{ExitStatus, Step, StepRecord};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

const TOOLS: [&str; 2] = ["restic", "borg"];
const STEPS: [Step; 5] = [
    Step::GENERATE,
    Step::INIT,
    Step::BACKUP_FULL,
    Step::BACKUP_INCREMENTAL,
    Step::RESTORE,
];

/// Writes a run of about `mb` megabytes of records; returns their number.
fn write_run(run: &Path, mb: u64) -> usize {
    std::fs::create_dir_all(run.join("raw")).unwrap();
    let file = std::fs::File::create(run.join("raw/records.jsonl")).unwrap();
    let mut out = std::io::BufWriter::new(file);
    let (mut bytes, mut count) = (0u64, 0usize);
    let mut cycle = 0;
    while bytes < mb << 20 {
        cycle += 1;
        for (order, tool) in TOOLS.iter().enumerate() {
            for (i, step) in STEPS.iter().enumerate() {
                let wall = 10.0 + ((cycle * 7 + i as u32 * 3) % 11) as f64;
                let r = StepRecord {
                    order: order as u32,
                    wall_secs: wall,
                    user_secs: wall * 0.8,
                    sys_secs: wall * 0.1,
                    max_rss_kib: 300_000,
                    exit: Some(ExitStatus {
                        code: Some(0),
                        signal: None,
                    }),
                    ok: true,
                    timed: *step != Step::GENERATE,
                    cache_dropped: true,
                    repo_size_bytes: Some(3_800_000_000 + cycle as u64),
                    ..StepRecord::blank("scale", tool, cycle, step.clone(), 0)
                };
                let line = serde_json::to_string(&r).unwrap();
                bytes += line.len() as u64 + 1;
                count += 1;
                writeln!(out, "{line}").unwrap();
            }
        }
    }
    out.flush().unwrap();
    count
}

#[test]
#[ignore = "a benchmark: make bench-report"]
fn report_time_per_record_at_two_sizes() {
    // `make test` runs every ignored test but skips this one by name; only
    // `make bench-report` names the sizes, so no other run of ignored tests
    // takes its minutes or passes a measurement off as a check.
    let sizes: Vec<u64> = std::env::var("LABRUN_BENCH_REPORT_MB")
        .expect("a measurement, not a check: run it with `make bench-report`")
        .split(',')
        .map(|s| s.trim().parse().expect("sizes in MB, e.g. 25,100"))
        .collect();
    let mut rates = Vec::new();
    for mb in sizes {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("run");
        let n = write_run(&run, mb);
        let start = Instant::now();
        labrun_report::make_report(&run).unwrap();
        let secs = start.elapsed().as_secs_f64();
        let per = secs / n as f64 * 1e6;
        println!("{mb} MB, {n} records: {secs:.2} s, {per:.2} µs per record");
        rates.push(per);
    }
    if let [first, .., last] = rates[..] {
        println!(
            "time per record, largest size / smallest: {:.2} (1 is linear)",
            last / first
        );
    }
}
