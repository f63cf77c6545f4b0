//! `report.html`: escaping, every figure of `summary.md` in its tables, no
//! reference outside the file, same summary same bytes; then the page of a
//! committed run rendered by headless Chromium (Debian's `chromium`): no
//! request leaves the file, the DOM holds the run's figures, the
//! screenshot is not blank.

mod common;
mod headless;
use common::copy_dir;
use headless::{assert_not_blank, browse, fresh};
use labrun_report::export::{html, markdown};
use labrun_report::figures;
use labrun_report::{Summary, Warning, WarningKind, format, summarize};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> Summary {
    summarize(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name),
    )
    .unwrap()
}

const FIXTURES: [&str; 4] = ["two-tools", "tcg-no-cache-drop", "cut-short", "history"];

/// HTML entities back to characters (`&amp;` last, so `&amp;lt;` stays `&lt;`).
fn decode(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

fn strip_tags(s: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// The text of every `<td>`, `<th>` and `<dd>` of a page: tags stripped,
/// entities decoded, as a reader sees it.
fn cell_texts(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    for tag in ["td", "th", "dd"] {
        let (open, close) = (format!("<{tag}"), format!("</{tag}>"));
        let mut rest = page;
        while let Some(i) = rest.find(&open) {
            let after = &rest[i + open.len()..];
            // `<th` also starts `<thead`.
            if !(after.starts_with('>') || after.starts_with(' ')) {
                rest = after;
                continue;
            }
            let gt = after.find('>').expect("a tag's end");
            let body = &after[gt + 1..];
            let end = body.find(&close).expect("a closing tag");
            out.push(decode(&strip_tags(&body[..end])).trim().to_string());
            rest = &body[end..];
        }
    }
    out
}

/// Every cell of every table of `summary.md`, as text: Markdown's
/// emphasis, code marks and escaped pipes removed.
fn markdown_cells(md: &str) -> Vec<String> {
    md.lines()
        .filter(|l| l.starts_with("| "))
        .flat_map(|l| {
            l.trim_start_matches("| ")
                .trim_end_matches(" |")
                .split(" | ")
                .map(|c| c.replace("\\|", "|").replace("**", "").replace('`', ""))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every figure and heading of summary.md's tables is a cell of the page.
fn assert_tables_match_markdown(md: &str, cells: &[String], what: &str) {
    let expected = markdown_cells(md);
    assert!(
        expected.len() > 20,
        "{what}: too few Markdown cells to compare"
    );
    let missing: Vec<&String> = expected.iter().filter(|c| !cells.contains(c)).collect();
    assert!(
        missing.is_empty(),
        "{what}: summary.md cells not in report.html's tables: {missing:?}"
    );
}

/// Each tool's headline figures, formatted here from the summary's stats.
fn assert_headline_figures(s: &Summary, cells: &[String], what: &str) {
    let mut checked = 0;
    for t in &s.tools {
        for p in &t.phases {
            if let Some(wall) = p.stat(&figures::WALL_TIME) {
                let want = format::secs_range(&wall);
                assert!(
                    cells.iter().any(|c| c.starts_with(&want)),
                    "{what}: {} {} wall time {want} not in a cell",
                    t.tool,
                    p.phase
                );
                checked += 1;
            }
            if let Some(mem) = p.stat(&figures::PEAK_MEMORY) {
                let want = format::mib_range(&mem);
                assert!(
                    cells.iter().any(|c| c.starts_with(&want)),
                    "{what}: {want} not in a cell"
                );
            }
        }
        if let Some(size) = t.repo_size_after_full {
            let want = format::bytes_range(&size);
            assert!(
                cells.iter().any(|c| c.starts_with(&want)),
                "{what}: {want} not in a cell"
            );
        }
    }
    assert!(checked > 0, "{what}: no figure to check");
}

#[test]
fn every_table_figure_of_summary_md_is_in_the_page() {
    for name in FIXTURES {
        let s = fixture(name);
        let page = html::render(&s).unwrap();
        let cells = cell_texts(&page);
        assert_tables_match_markdown(&markdown::render(&s), &cells, name);
        if name != "cut-short" {
            assert_headline_figures(&s, &cells, name);
        }
    }
    // The history fixture's per-snapshot table is there, named.
    let page = html::render(&fixture("history")).unwrap();
    assert!(page.contains("<h2>Per snapshot (git history)</h2>"));
}

#[test]
fn warnings_come_first_and_stand_out() {
    let page = html::render(&fixture("tcg-no-cache-drop")).unwrap();
    let warnings = page
        .find("<div class=\"warnings\"")
        .expect("a warnings box");
    assert!(warnings < page.find("<h2>Results</h2>").unwrap());
    let boxed = &page[warnings..page[warnings..].find("</div>").unwrap() + warnings];
    assert!(boxed.contains("Software emulation"), "{boxed}");
    assert!(boxed.contains("Cache not dropped"), "{boxed}");
    let clean = html::render(&fixture("cut-short")).unwrap();
    let s = fixture("cut-short");
    assert_eq!(clean.contains("class=\"warnings\""), !s.warnings.is_empty());
}

#[test]
fn values_from_evidence_are_shown_never_run() {
    let mut s = fixture("two-tools");
    let evil = "<script>alert(1)</script>";
    s.run_id = format!("run{evil}");
    s.tools[0].tool = evil.to_string();
    s.tools[0].version = Some("\"><img src=x onerror=alert(2)>".into());
    s.warnings.push(Warning::new(
        WarningKind::StepsFailed,
        "<iframe src=\"http://labrun.invalid/\"></iframe> & more",
    ));
    let env = s.environment.as_mut().unwrap();
    env.host.cpu_model = Some("</td></tr></table><script>alert(3)</script>".into());
    env.tool_versions
        .insert(evil.to_string(), "v1 <b>bold</b>".into());
    s.binaries[0].path = "/usr/bin/<script>".into();

    let page = html::render(&s).unwrap();
    assert_eq!(page.matches("<script").count(), 1, "only the page's own");
    for raw in [
        "<img src=x",
        "<iframe",
        "<b>bold",
        "</td></tr></table><script",
    ] {
        assert!(!page.contains(raw), "{raw} reached the page as markup");
    }
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    let cells = cell_texts(&page);
    for shown in [
        format!("{evil} &quot;&gt;<img src=x onerror=alert(2)>"),
        "</td></tr></table><script>alert(3)</script>".to_string(),
        "v1 <b>bold</b>".to_string(),
        "/usr/bin/<script>".to_string(),
    ] {
        let shown = decode(&shown);
        assert!(cells.contains(&shown), "{shown:?} not shown as text");
    }
    assert!(page.contains("&lt;iframe src=&quot;http://labrun.invalid/&quot;&gt;"));
}

/// Every tag of a page, and what its `<style>` and `<script>` hold.
fn markup(page: &str) -> (Vec<&str>, Vec<&str>) {
    let tags: Vec<&str> = page
        .split('<')
        .skip(1)
        .map(|t| &t[..t.find('>').expect("a tag's end")])
        .collect();
    let inline = ["style", "script"]
        .iter()
        .map(|t| {
            let start = page.find(&format!("<{t}>")).expect(t) + t.len() + 2;
            &page[start..start + page[start..].find(&format!("</{t}>")).unwrap()]
        })
        .collect();
    (tags, inline)
}

#[test]
fn the_page_refers_to_nothing_outside_itself() {
    for name in FIXTURES {
        let page = html::render(&fixture(name)).unwrap();
        let (tags, inline) = markup(&page);
        assert!(tags.len() > 50, "{name}: too few tags");
        for tag in &tags {
            for bad in ["//", "http:", "https:", "url(", "@import"] {
                assert!(!tag.contains(bad), "{name}: {bad} in <{tag}>");
            }
            for (attr, allowed) in [("src=\"", "data:image/svg+xml,"), ("href=\"", "#")] {
                for (i, _) in tag.match_indices(attr) {
                    assert!(
                        tag[i + attr.len()..].starts_with(allowed),
                        "{name}: <{tag}> refers outside the page"
                    );
                }
            }
            for attr in ["srcset", "action=", "formaction", "poster", "background"] {
                assert!(!tag.contains(attr), "{name}: {attr} in <{tag}>");
            }
        }
        for code in inline {
            for bad in [
                "//",
                "url(",
                "@import",
                "http",
                "fetch",
                "XMLHttpRequest",
                "import(",
            ] {
                assert!(
                    !code.contains(bad),
                    "{name}: {bad} in inline style or script"
                );
            }
        }
        let csp = tags
            .iter()
            .find(|t| t.contains("Content-Security-Policy"))
            .expect("a policy");
        assert!(csp.contains("default-src 'none'") && csp.contains("img-src data:"));
        let images = tags.iter().filter(|t| t.starts_with("img ")).count();
        assert!(
            images >= 3,
            "{name}: the charts are inline ({images} images)"
        );
    }
}

#[test]
fn same_summary_same_bytes() {
    for name in FIXTURES {
        let s = fixture(name);
        let a = html::render(&s).unwrap();
        assert_eq!(a, html::render(&s.clone()).unwrap(), "{name}");
        assert_eq!(a, html::render(&fixture(name)).unwrap(), "{name}");
    }
}

// ---- In a browser ----

/// A committed run with 3 tools, 3 cycles, timelines and a fidelity table.
const RUN: &str =
    "../../docs/scale/harness-20261202T005609Z/harness-20261202T005609Z-2f74e6.tar.gz";
/// A copy of a packed run's `raw/` in a temp folder, summarized there.
fn render_run(pack: &Path, into: &Path) -> (Summary, PathBuf) {
    let opened = labrun_report::pack::open(pack)
        .unwrap_or_else(|e| panic!("no committed run at {}: {e}", pack.display()));
    let raw = opened.dir().join("raw");
    assert!(raw.is_dir(), "no raw/ in {}", pack.display());
    copy_dir(&raw, &into.join("raw"));
    let (summary, written) = labrun_report::make_report(into).unwrap();
    let page = into.join("report.html");
    assert!(written.contains(&page), "write_all writes report.html");
    (summary, page)
}

#[test]
fn chromium_opens_the_page_without_a_request_and_shows_its_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let run = Path::new(env!("CARGO_MANIFEST_DIR")).join(RUN);
    let (summary, page) = render_run(&run, &fresh(tmp.path(), "run"));

    // The method sees a page's requests: a page without the policy that
    // asks for an image is caught asking.
    let control = tmp.path().join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><p>control</p><img src=\"http://labrun.invalid/control.png\">",
    )
    .unwrap();
    let seen = browse(&control, "--dump-dom", &fresh(tmp.path(), "control"));
    assert_eq!(
        seen.page_requests,
        ["http://labrun.invalid/control.png"],
        "the net log must show the control page's request"
    );

    let dom = browse(&page, "--dump-dom", &fresh(tmp.path(), "dom"));
    assert!(
        dom.page_requests.is_empty(),
        "report.html made requests: {:?}",
        dom.page_requests
    );
    // Nothing on the console: no policy violation (its own style and script
    // allowed, nothing else tried), no script error.
    let console: Vec<&str> = dom
        .stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    assert!(
        dom.stdout.contains("<html lang=\"en\" class=\"js\">"),
        "the sorting script ran under the policy"
    );
    let cells = cell_texts(&dom.stdout);
    let md = std::fs::read_to_string(page.with_file_name("summary.md")).unwrap();
    assert_tables_match_markdown(&md, &cells, "the committed run");
    assert_headline_figures(&summary, &cells, "the committed run");
    let env = summary.environment.as_ref().unwrap();
    for v in [&env.host.cpu_model, &env.guest.kernel, &env.qemu_version] {
        let v = v.as_ref().unwrap();
        assert!(
            cells.iter().any(|c| c.contains(v.as_str())),
            "{v} not shown"
        );
    }
    let charts = dom.stdout.matches("<img src=\"data:image/svg+xml,").count();
    assert_eq!(charts, 4, "time, repo size, memory, timeline");

    let shot_dir = fresh(tmp.path(), "shot");
    let png = shot_dir.join("report.png");
    let shot = browse(&page, &format!("--screenshot={}", png.display()), &shot_dir);
    assert!(shot.page_requests.is_empty(), "{:?}", shot.page_requests);
    assert_not_blank(&png);
    keep_screenshot(&png);
}

/// `LABRUN_SCREENSHOT=PATH`: the checked screenshot is also copied there
/// (the user guide's picture, `scripts/guide-screenshot.sh`). What the test
/// checks is the same with or without it.
fn keep_screenshot(png: &Path) {
    let Some(dest) = std::env::var_os("LABRUN_SCREENSHOT") else {
        return;
    };
    std::fs::copy(png, &dest).unwrap_or_else(|e| {
        panic!(
            "LABRUN_SCREENSHOT: cannot write {}: {e}",
            Path::new(&dest).display()
        )
    });
}

// ---- Issue 33 item 3: only the page's own script runs ----

/// The text between the page's one `<script>` and its `</script>`.
fn own_script(page: &str) -> &str {
    let start = page.find("<script>").expect("the page's script") + "<script>".len();
    let end = start + page[start..].find("</script>").unwrap();
    &page[start..end]
}

#[test]
fn the_policy_allows_only_the_pages_own_script_by_its_hash() {
    use base64::Engine;
    use sha2::Digest;
    for name in FIXTURES {
        let page = html::render(&fixture(name)).unwrap();
        let (tags, _) = markup(&page);
        let csp = tags
            .iter()
            .find(|t| t.contains("Content-Security-Policy"))
            .expect("a policy");
        let script_src = csp
            .split(';')
            .find(|d| d.trim().starts_with("script-src"))
            .expect("a script-src directive");
        let hash = base64::engine::general_purpose::STANDARD
            .encode(sha2::Sha256::digest(own_script(&page).as_bytes()));
        assert_eq!(
            script_src.trim().trim_end_matches(['"', '/']).trim(),
            format!("script-src 'sha256-{hash}'"),
            "{name}: the page's own script alone, by its hash"
        );
        assert_eq!(page.matches("<script").count(), 1, "{name}: one script");
        for tag in &tags {
            let handler = tag
                .split_whitespace()
                .skip(1)
                .any(|attr| attr.to_ascii_lowercase().starts_with("on"));
            assert!(!handler, "{name}: an inline event handler in <{tag}>");
        }
    }
}

/// A script or handler that an escaping slip let into the page does not
/// run; the page's own still does (sorting).
#[test]
fn chromium_runs_the_pages_own_script_and_no_injected_one() {
    let tmp = tempfile::tempdir().unwrap();
    let page = html::render(&fixture("two-tools")).unwrap();
    let injected = page.replacen(
        "</main>",
        "<script>document.documentElement.classList.add(\"injected\")</script>\
         <img src=\"data:image/svg+xml,x\" onerror=\"document.documentElement.classList.add('handler')\">\
         </main>",
        1,
    );
    let path = tmp.path().join("report.html");
    std::fs::write(&path, injected).unwrap();
    let dom = browse(&path, "--dump-dom", &fresh(tmp.path(), "dom"));
    let root = dom
        .stdout
        .lines()
        .find(|l| l.starts_with("<html"))
        .unwrap_or_default()
        .to_string();
    assert!(root.contains("js"), "the page's own script ran: {root}");
    assert!(
        !root.contains("injected") && !root.contains("handler"),
        "an injected script ran: {root}"
    );
}
