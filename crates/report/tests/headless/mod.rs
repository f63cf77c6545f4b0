//! Headless Chromium for the pages' tests (`report.html` here, the site in
//! crates/site/tests/chromium.rs, which includes this file by path): one
//! way to open a page with nothing able to leave the machine, read what it
//! requested, and check a screenshot is not blank.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

pub fn chromium() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("chromium"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!("no chromium on PATH: install chromium (scripts/host-setup.sh does)")
    })
}

pub struct Browsed {
    pub stdout: String,
    pub stderr: String,
    /// Requests the page made (not Chromium's own updater, clock, sign-in).
    pub page_requests: Vec<String>,
}

/// Opens `page` in headless Chromium with `mode` (`--dump-dom` or
/// `--screenshot=FILE`), logging the network stack. Nothing can leave the
/// machine: every name resolves to nothing and every connection goes to a
/// closed port on loopback; the net log still names each request tried.
pub fn browse(page: &Path, mode: &str, dir: &Path) -> Browsed {
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
pub fn page_requests(net_log: &Path) -> Vec<String> {
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

pub fn fresh(dir: &Path, name: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Decodes the screenshot: a page that drew nothing is one colour.
pub fn assert_not_blank(png: &Path) {
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
