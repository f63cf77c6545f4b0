//! The site in headless Chromium (Debian's `chromium`), exactly as
//! `report.html` is tested (crates/report/tests/html.rs): `index.html` and
//! a tool's page open from `file://` with no request leaving them, nothing
//! on the console, their own script run under the policy, their tables and
//! charts in the DOM, and a screenshot that is not blank.
//! `LABRUN_SCREENSHOT_DIR=DIR` keeps the checked screenshots as
//! `DIR/site-index.png` and `DIR/site-tool.png` (`scripts/site-screenshot.sh`).

mod common;

use common::synthetic::{Synth, Template, repo_root};
use labrun_site::names;
use labrun_store::{Store, StoreError};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

fn chromium() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("chromium"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!("no chromium on PATH: install chromium (scripts/host-setup.sh does)")
    })
}

struct Browsed {
    stdout: String,
    stderr: String,
    /// Requests the page made (not Chromium's own updater, clock, sign-in).
    page_requests: Vec<String>,
}

/// Opens `page` in headless Chromium with `mode` (`--dump-dom` or
/// `--screenshot=FILE`), logging the network stack. Nothing can leave the
/// machine: every name resolves to nothing and every connection goes to a
/// closed port on loopback; the net log still names each request tried.
fn browse(page: &Path, mode: &str, dir: &Path) -> Browsed {
    let net_log = dir.join("net-log.json");
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1400,2400",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-extensions",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-features=NetworkTimeServiceQuerying",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=127.0.0.1:9",
            "--enable-logging=stderr",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("--log-net-log={}", net_log.display()))
        .arg(mode)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("chromium did not start ({e}): install chromium (scripts/host-setup.sh does)")
        });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium hung for {BROWSER_TIMEOUT:?} on {}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert!(status.success(), "chromium failed ({status}):\n{stderr}");
    Browsed {
        stdout: std::fs::read_to_string(&out).unwrap(),
        page_requests: page_requests(&net_log),
        stderr,
    }
}

/// The URLs of requests the net log shows a page (a frame with an origin,
/// here `file://`'s opaque one) making. Chromium's own background requests
/// have no initiator ("not an origin") and no file:// isolation key.
fn page_requests(net_log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(net_log).unwrap();
    let log: serde_json::Value = serde_json::from_str(&text).expect("a complete net log");
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .expect("the net log names its event types");
    let events = log["events"].as_array().expect("net log events");
    assert!(!events.is_empty(), "an empty net log observes nothing");
    events
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .map(|e| &e["params"])
        .filter(|p| {
            let initiator = p["initiator"].as_str().unwrap_or("");
            let key = p["network_isolation_key"].as_str().unwrap_or("");
            initiator != "not an origin" || key.contains("file://")
        })
        .filter_map(|p| p["url"].as_str().map(str::to_string))
        .collect()
}

fn fresh(dir: &Path, name: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Decodes the screenshot: a page that drew nothing is one colour.
fn assert_not_blank(png: &Path) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png).expect("a screenshot"),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let bytes = &buf[..info.buffer_size()];
    let px = info.color_type.samples() * (info.bit_depth as usize).div_ceil(8);
    let pixels: Vec<&[u8]> = bytes.chunks(px).collect();
    assert!(
        pixels.len() > 1000 * 1000,
        "a {}x{} screenshot",
        info.width,
        info.height
    );
    let background = pixels[0];
    let drawn = pixels.iter().filter(|p| **p != background).count();
    let colours: std::collections::BTreeSet<&[u8]> = pixels.iter().copied().collect();
    assert!(
        drawn * 50 > pixels.len() && colours.len() > 16,
        "the screenshot is blank: {drawn} of {} pixels drawn, {} colours",
        pixels.len(),
        colours.len()
    );
}

/// The committed runs under docs/ and a synthetic release series of
/// restic with a slower step, so the tool page has a flag to show.
fn site(dir: &Path) -> PathBuf {
    let mut store = Store::open(&dir.join("runs.sqlite")).unwrap();
    let mut packs = Vec::new();
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.to_string_lossy().ends_with(".tar.gz") {
                out.push(p);
            }
        }
    }
    walk(&repo_root().join("docs"), &mut packs);
    for pack in packs {
        match store.import(&pack, None) {
            Ok(_) | Err(StoreError::VariantsRun { .. }) => {}
            Err(e) => panic!("{}: {e}", pack.display()),
        }
    }
    let template = Template::open();
    for (i, (version, slowdown)) in [
        ("0.16.0", 1.0),
        ("0.17.0", 1.0),
        ("0.18.0", 1.5),
        ("0.19.1", 1.5),
    ]
    .into_iter()
    .enumerate()
    {
        let mut s = Synth::new("restic", version, i);
        s.slowdown = slowdown;
        store
            .import(&template.make(&dir.join("synthetic"), &s), None)
            .unwrap();
    }
    let out = dir.join("site");
    labrun_site::build(&mut store, &out).unwrap();
    out
}

#[test]
#[ignore = "needs chromium: `make test` runs it"]
fn chromium_opens_the_index_and_a_tool_page_without_a_request_and_shows_their_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let out = site(tmp.path());

    // The method sees a page's requests: a page without the policy that
    // asks for an image is caught asking.
    let control = tmp.path().join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><p>control</p><img src=\"http://labrun.invalid/control.png\">",
    )
    .unwrap();
    let seen = browse(&control, "--dump-dom", &fresh(tmp.path(), "control"));
    assert_eq!(seen.page_requests, ["http://labrun.invalid/control.png"]);

    for (name, rel, charts) in [
        ("index", names::INDEX.to_string(), 0),
        ("tool", names::tool_page("restic"), 4),
    ] {
        let page = out.join(&rel);
        let dom = browse(
            &page,
            "--dump-dom",
            &fresh(tmp.path(), &format!("{name}-dom")),
        );
        assert!(
            dom.page_requests.is_empty(),
            "{rel} made requests: {:?}",
            dom.page_requests
        );
        let console: Vec<&str> = dom
            .stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .collect();
        assert!(console.is_empty(), "{rel}: console messages: {console:?}");
        assert!(
            dom.stdout.contains("<html lang=\"en\" class=\"js\">"),
            "{rel}: the sorting script ran under the policy"
        );
        assert!(
            dom.stdout.contains(">restic</a>") || dom.stdout.contains("labrun site: restic"),
            "{rel}"
        );
        assert!(
            dom.stdout.matches("<svg ").count() >= charts,
            "{rel}: its charts are in the DOM"
        );
        if name == "tool" {
            assert!(
                dom.stdout.contains("data-flag=\"slower\""),
                "the flagged step is drawn"
            );
            assert!(dom.stdout.contains("<strong>slower</strong>"), "and listed");
        } else {
            assert!(
                dom.stdout.contains("4 runs, newest 0.19.1"),
                "the synthetic series' cell"
            );
        }
        let shot_dir = fresh(tmp.path(), &format!("{name}-shot"));
        let png = shot_dir.join(format!("site-{name}.png"));
        let shot = browse(&page, &format!("--screenshot={}", png.display()), &shot_dir);
        assert!(shot.page_requests.is_empty(), "{:?}", shot.page_requests);
        assert_not_blank(&png);
        keep_screenshot(&png);
    }
}

/// `LABRUN_SCREENSHOT_DIR=DIR`: the checked screenshot is also copied
/// there (the guide's pictures). What the test checks is the same without.
fn keep_screenshot(png: &Path) {
    let Some(dir) = std::env::var_os("LABRUN_SCREENSHOT_DIR") else {
        return;
    };
    let dest = Path::new(&dir).join(png.file_name().unwrap());
    std::fs::copy(png, &dest).unwrap_or_else(|e| {
        panic!(
            "LABRUN_SCREENSHOT_DIR: cannot write {}: {e}",
            dest.display()
        )
    });
}
