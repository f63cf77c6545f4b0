//! `labrun track` end to end without a VM: the toy backup tool of
//! `bisect`'s test (eight commits on `main`, the fifth makes every backup
//! 1.5 s slower), its anchor the first commit, built from each commit it
//! tracks and run paired with the anchor on an OpenSSH server this test
//! starts on 127.0.0.1 as the lab's machine. Tracked every third commit the
//! step lies between two points three commits apart, so it is bisected; the
//! track must name the planted commit, refuse a second tracker while one
//! runs, continue after Ctrl-C, do nothing new when run again, and, tracking
//! every commit, name the planted commit from its neighbours alone.

mod toy_repo;

use labrun_ssh::test_support::Sshd;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Three pairs a commit (two more while a verdict is open), a margin of
/// 50%: the planted step is about 6x; the toy's backups are too short for a
/// 5% margin to see through their noise in a few pairs (as in bisect's test).
const ARGS: [&str; 8] = [
    "--phase",
    "backup_full",
    "--cycles",
    "3",
    "--until-conclusive",
    "2",
    "--margin",
    "50%",
];

struct Setup {
    dir: tempfile::TempDir,
    lab: PathBuf,
    ids: Vec<String>,
    _sshd: Sshd,
}

impl Setup {
    fn track(&self, cadence: &[&str]) -> Command {
        let d = self.dir.path();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_labrun"));
        cmd.arg("-f")
            .arg(&self.lab)
            .arg("--cache")
            .arg(d.join("cache"))
            .arg("--state")
            .arg(d.join("state"))
            .args(["track", "toy"])
            .args(cadence)
            .args(ARGS)
            .arg("--results")
            .arg(d.join("results"))
            .arg("--db")
            .arg(d.join("store/runs.sqlite"))
            .stdin(Stdio::null());
        cmd
    }

    fn folder(&self) -> PathBuf {
        self.dir.path().join("results/track-toy-main")
    }

    fn state(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.folder().join("track.json")).expect("track.json");
        serde_json::from_str(&text).expect("track.json is whole JSON")
    }

    /// Every run folder under the track's folder (points' and bisections').
    fn runs(&self) -> Vec<PathBuf> {
        let mut runs = Vec::new();
        let mut stack = vec![self.folder()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.join("raw").is_dir() {
                    runs.push(path);
                } else if path.is_dir() {
                    stack.push(path);
                }
            }
        }
        runs.sort();
        runs
    }
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Waits for `what` (a deadline that only stops a hung test: the track
/// itself is never timed).
fn wait_for(child: &mut Child, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(1800);
    while !done() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the tracker ended ({status}) before {what}");
        }
        assert!(Instant::now() < deadline, "no {what} after 30 minutes");
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn points(state: &serde_json::Value) -> Vec<String> {
    state["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["commit"].as_str().expect("commit").to_string())
        .collect()
}

#[test]
#[ignore = "needs sshd and a Go toolchain: `make test` runs it"]
fn track_flags_the_step_bisects_it_and_names_the_planted_commit() {
    let sshd = Sshd::start().expect("sshd");
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("toy");
    let ids = toy_repo::write(&repo);
    let lab = toy_repo::lab(dir.path(), &sshd, &repo, &ids[0]);
    let s = Setup {
        dir,
        lab,
        ids,
        _sshd: sshd,
    };
    let slow = &s.ids[toy_repo::SLOW_COMMIT];

    // A tracker, in a process group of its own so Ctrl-C reaches it and
    // its `labrun bench` together, as at a terminal.
    let log = s.dir.path().join("first.log");
    let mut first = {
        use std::os::unix::process::CommandExt as _;
        s.track(&["--every", "3"])
            .process_group(0)
            .stdout(std::fs::File::create(&log).expect("log"))
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run labrun track")
    };
    let lock = s.folder().join("track.lock");
    wait_for(&mut first, "the lock", || {
        std::fs::read_to_string(&lock).is_ok_and(|t| t.starts_with("held by process"))
    });

    // A second tracker while the first runs: refused, told who holds it.
    let second = s
        .track(&["--every", "3"])
        .output()
        .expect("run labrun track");
    assert_eq!(second.status.code(), Some(1), "{}", text(&second));
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(said.contains("another labrun track is running"), "{said}");
    assert!(
        said.contains(&format!("held by process {}", first.id())),
        "{said}"
    );

    // Ctrl-C once the first commit is on record.
    wait_for(&mut first, "a tracked commit", || {
        s.folder().join("track.json").is_file() && !points(&s.state()).is_empty()
    });
    let status = Command::new("kill")
        .args(["-INT", "--", &format!("-{}", first.id())])
        .status()
        .expect("kill");
    assert!(status.success());
    let status = first.wait().expect("wait");
    assert!(!status.success(), "interrupted: {status}");
    let kept = points(&s.state());
    assert!(!kept.is_empty() && kept.len() < 3, "{kept:?}");
    assert_eq!(kept[0], s.ids[3], "every third commit, oldest first");

    // The same command continues: the rest of the points, the step flagged
    // between the 4th and 7th commits, bisected to the planted one. Exit 1:
    // a new step slower.
    let out = s
        .track(&["--every", "3"])
        .output()
        .expect("run labrun track");
    let said = text(&out);
    println!("{said}");
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("continuing: {} commit(s) on record", kept.len())),
        "{said}"
    );
    assert!(said.contains(&format!("first bad commit {slow}")), "{said}");
    let state = s.state();
    assert_eq!(
        points(&state),
        s.ids[3..8]
            .iter()
            .step_by(3)
            .chain([&s.ids[7]])
            .cloned()
            .collect::<Vec<_>>(),
        "{state}"
    );
    assert_eq!(state["steps"][0]["from"], s.ids[3].as_str(), "{state}");
    assert_eq!(state["steps"][0]["to"], s.ids[6].as_str(), "{state}");
    assert_eq!(
        state["steps"][0]["found"]["commit"],
        slow.as_str(),
        "{state}"
    );
    assert_eq!(state["steps"][0]["found"]["subject"], "commit 4", "{state}");
    for p in state["points"].as_array().expect("points") {
        assert!(
            p["stored"]
                .as_str()
                .is_some_and(|d| d.starts_with("sha256:")),
            "every run imported: {p}"
        );
        assert!(p["outcome"]["interval"].is_array(), "{p}");
    }
    assert_eq!(state["points"][0]["outcome"]["kind"], "good", "{state}");
    assert_eq!(state["points"][1]["outcome"]["kind"], "bad", "{state}");
    let md = std::fs::read_to_string(s.folder().join("track.md")).expect("track.md");
    assert!(md.contains(slow.as_str()), "{md}");
    assert!(md.contains("commit 6"), "each commit's subject: {md}");

    // Again: nothing new is run, imported or bisected.
    let runs = s.runs();
    let out = s
        .track(&["--every", "3"])
        .output()
        .expect("run labrun track");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("nothing new: 3 commit(s) on record"),
        "{}",
        text(&out)
    );
    assert_eq!(s.runs(), runs, "no run was made");
    assert_eq!(s.state(), state);

    // Every commit: the ones between are tracked too, and the step between
    // neighbours names the planted commit with no bisection.
    let out = s.track(&[]).output().expect("run labrun track");
    let said = text(&out);
    println!("{said}");
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("the commit that made it: {slow}")),
        "{said}"
    );
    let state = s.state();
    assert_eq!(points(&state).len(), 7, "{state}");
    assert_eq!(state["steps"][0]["to"], slow.as_str(), "{state}");
    assert!(state["steps"][0]["bisection"].is_null(), "{state}");
    assert_eq!(
        state["steps"][1]["to"],
        s.ids[6].as_str(),
        "the bisection kept"
    );
}
