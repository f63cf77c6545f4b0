//! The site in headless Chromium (Debian's `chromium`), exactly as
//! `report.html` is tested (crates/report/tests/html.rs): `index.html` and
//! a tool's page open from `file://` with no request leaving them, nothing
//! on the console, their own script run under the policy, their tables and
//! charts in the DOM, and a screenshot that is not blank.
//! `LABRUN_SCREENSHOT_DIR=DIR` keeps the checked screenshots as
//! `DIR/site-index.png` and `DIR/site-tool.png` (`scripts/site-screenshot.sh`).

mod common;
#[path = "../../report/tests/headless/mod.rs"]
mod headless;
use headless::{assert_not_blank, browse, fresh};

use common::synthetic::{Synth, Template, repo_root};
use labrun_site::names;
use labrun_store::{Store, StoreError};
use std::path::{Path, PathBuf};

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
