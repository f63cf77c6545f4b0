//! `labrun site`: a store built from the committed runs under docs/ and
//! synthetic ones, written as a site, then read back as a reader would.

mod common;

use common::synthetic::{Synth, Template, repo_root};
use labrun_site::{SiteError, build, names};
use labrun_store::{Imported, Store, StoreError};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The committed packs under docs/, sorted.
fn committed_packs() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                walk(&p, out);
            } else if kind.is_file() && p.to_string_lossy().ends_with(".tar.gz") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo_root().join("docs"), &mut out);
    out.sort();
    out
}

/// A store in `dir` holding every committed single run (variants runs are
/// refused by import: skipped) and `synthetic` runs.
fn store_with(dir: &Path, committed: bool, synthetic: &[Synth]) -> Store {
    let mut store = Store::open(&dir.join("runs.sqlite")).unwrap();
    if committed {
        for pack in committed_packs() {
            match store.import(&pack, None) {
                Ok(_) | Err(StoreError::VariantsRun { .. }) => {}
                Err(e) => panic!("{}: {e}", pack.display()),
            }
        }
    }
    let template = Template::open();
    let runs = dir.join("synthetic");
    for s in synthetic {
        let run = template.make(&runs, s);
        assert!(matches!(
            store.import(&run, None).unwrap(),
            Imported::Added { .. }
        ));
    }
    store
}

/// The run `digest`'s pack, out of the store and opened.
fn opened(store: &mut Store, digest: &str) -> labrun_report::pack::OpenedRun {
    let dir = tempfile::tempdir().unwrap();
    let pack = store.write_pack(digest, dir.path()).unwrap();
    labrun_report::pack::open(&pack).unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `name="value"` attribute value of a page (hrefs, ids, ...).
fn attrs<'a>(page: &'a str, name: &str) -> Vec<&'a str> {
    let pat = format!(" {name}=\"");
    page.match_indices(&pat)
        .map(|(i, _)| {
            let start = i + pat.len();
            let end = start + page[start..].find('"').unwrap();
            &page[start..end]
        })
        .collect()
}

fn html_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            html_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "html") {
            out.push(p);
        }
    }
}

/// The page a site's tool page is, found from the index's link to it.
fn tool_page(out: &Path, tool: &str) -> String {
    read(&out.join(names::tool_page(tool)))
}

/// The chart `measure` of the line `anchor` on a page: its points' run
/// digests, medians and flags, in drawing order.
fn chart_points(page: &str, anchor: &str, measure: &str) -> Vec<(String, f64, Option<String>)> {
    let start = page
        .find(&format!("<figure id=\"{anchor}-{measure}\">"))
        .unwrap_or_else(|| panic!("no chart {anchor}-{measure}"));
    let end = start + page[start..].find("</figure>").unwrap();
    let chart = &page[start..end];
    chart
        .match_indices("<g class=\"point\"")
        .map(|(i, _)| {
            let tag_end = i + chart[i..].find('>').unwrap();
            let tag = &chart[i..tag_end];
            let run = attrs(tag, "data-run")[0].to_string();
            let median: f64 = attrs(tag, "data-median")[0].parse().unwrap();
            let flag = attrs(tag, "data-flag").first().map(|s| s.to_string());
            (run, median, flag)
        })
        .collect()
}

fn dataset_label(v: &serde_json::Value) -> String {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn every_link_of_a_site_of_the_committed_runs_resolves_inside_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = store_with(tmp.path(), true, &[Synth::new("synthtool", "1.0.0", 0)]);
    let out = tmp.path().join("site");
    let built = build(&mut store, &out).unwrap();
    assert!(built.skipped.is_empty(), "{:?}", built.skipped);
    assert!(built.runs >= 11, "{} runs", built.runs);
    let mut pages = Vec::new();
    html_files(&out, &mut pages);
    let policy = labrun_report::export::html::content_security_policy();
    let mut links = 0;
    for page in &pages {
        let text = read(page);
        assert!(
            text.contains(&format!(
                "<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">"
            )),
            "{} lacks report.html's policy",
            page.display()
        );
        for attr in ["src", "href", "xlink:href", "action"] {
            for value in attrs(&text, attr) {
                let value = value.replace("&amp;", "&");
                if attr == "src" {
                    assert!(value.starts_with("data:"), "{}: {value}", page.display());
                    continue;
                }
                assert!(
                    !value.contains("//") && !value.contains(':'),
                    "{} links out of the site: {value}",
                    page.display()
                );
                let (file, fragment) = value.split_once('#').unwrap_or((&value, ""));
                let target = if file.is_empty() {
                    page.clone()
                } else {
                    page.parent().unwrap().join(file)
                };
                let target = target
                    .canonicalize()
                    .unwrap_or_else(|_| panic!("{}: {value} resolves to nothing", page.display()));
                assert!(target.starts_with(out.canonicalize().unwrap()), "{value}");
                if !fragment.is_empty() {
                    assert!(
                        attrs(&read(&target), "id").contains(&fragment),
                        "{}: no #{fragment} in {}",
                        page.display(),
                        target.display()
                    );
                }
                links += 1;
            }
        }
    }
    assert!(links > 50, "only {links} links");
    // Every run of the store has its own report page, and the index links
    // every tool of every run.
    let index = read(&out.join(names::INDEX));
    for stored in store.runs(&Default::default()).unwrap() {
        assert!(out.join(names::run_report(&stored.digest)).is_file());
        for tool in &stored.tools {
            assert!(
                attrs(&index, "href").contains(&names::tool_page(&tool.name).as_str()),
                "index lacks {}",
                tool.name
            );
        }
    }
}

#[test]
fn the_index_counts_each_tool_dataset_and_class_and_links_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let mut runs = vec![
        Synth::new("synthtool", "1.0.0", 0),
        Synth::new("synthtool", "1.1.0", 1),
        Synth::new("synthtool", "1.2.0", 2),
    ];
    let mut other_class = Synth::new("synthtool", "1.2.0", 3);
    other_class.vcpus = 8;
    runs.push(other_class);
    let mut store = store_with(tmp.path(), false, &runs);
    let out = tmp.path().join("site");
    build(&mut store, &out).unwrap();
    let index = read(&out.join(names::INDEX));
    let dataset = dataset_label(&runs[0].dataset);
    assert!(
        index.contains(&format!("<th scope=\"col\">{dataset}</th>")),
        "{index}"
    );
    // Two classes: two sections, each with its own cell for the tool.
    let cells: Vec<&str> = index
        .match_indices(">3 runs, newest 1.2.0 ")
        .chain(index.match_indices(">1 run, newest 1.2.0 "))
        .map(|(i, _)| &index[..i])
        .collect();
    assert_eq!(cells.len(), 2, "{index}");
    let tool_href = names::tool_page("synthtool");
    let line_links: Vec<&str> = attrs(&index, "href")
        .into_iter()
        .filter(|h| h.starts_with(&format!("{tool_href}#line-")))
        .collect();
    assert_eq!(line_links.len(), 2, "one link per class: {line_links:?}");
    assert_ne!(line_links[0], line_links[1]);
    // The tool's page has the two lines apart: never one mixed line.
    let page = tool_page(&out, "synthtool");
    for link in &line_links {
        let anchor = link.split_once('#').unwrap().1;
        let n = chart_points(&page, anchor, "full-backup-wall-time").len();
        assert!(n == 3 || n == 1, "{anchor}: {n} points");
    }
}

#[test]
fn a_tools_points_follow_its_versions_with_the_reports_statistic_and_flag_the_slower_step() {
    let tmp = tempfile::tempdir().unwrap();
    // Dates disagree with versions: 0.10.0 ran first, 0.9.0 last.
    let mut slow = Synth::new("synthtool", "0.11.0", 1);
    slow.slowdown = 1.6;
    let runs = [
        Synth::new("synthtool", "0.10.0", 0),
        slow,
        Synth::new("synthtool", "0.9.0", 2),
    ];
    let mut store = store_with(tmp.path(), false, &runs);
    let out = tmp.path().join("site");
    build(&mut store, &out).unwrap();
    let by_run: std::collections::BTreeMap<String, String> = store
        .runs(&Default::default())
        .unwrap()
        .into_iter()
        .map(|r| (r.digest, r.run_id))
        .collect();
    let page = tool_page(&out, "synthtool");
    let class = {
        let opened = opened(&mut store, by_run.keys().next().unwrap());
        let raw = labrun_report::evidence::load(opened.dir()).unwrap();
        labrun_report::MachineClass::of(raw.environment.as_ref().unwrap())
    };
    let anchor = names::line_anchor(&dataset_label(&runs[0].dataset), &class);
    let points = chart_points(&page, &anchor, "full-backup-wall-time");
    let order: Vec<&str> = points.iter().map(|(d, _, _)| by_run[d].as_str()).collect();
    assert_eq!(
        order,
        ["synthetic-00002", "synthetic-00000", "synthetic-00001"]
    );
    for (digest, median, _) in &points {
        // The point is the run's own summary: its report's median.
        let opened = opened(&mut store, digest);
        let summary = labrun_report::summarize(opened.dir()).unwrap();
        let full = summary.roles.full.clone().unwrap();
        let stat = summary.tools[0]
            .phase(&full)
            .unwrap()
            .stat(&labrun_report::figures::WALL_TIME)
            .unwrap();
        assert_eq!(*median, stat.median, "{}", by_run[digest]);
        assert!(stat.min < stat.max, "a point has an interval to draw");
        let href = format!("../{}", names::run_report(digest));
        assert!(attrs(&page, "href").contains(&href.as_str()), "{href}");
    }
    let flags: Vec<Option<&str>> = points.iter().map(|(_, _, f)| f.as_deref()).collect();
    assert_eq!(flags, [None, None, Some("slower")]);
    // Sizes did not change: nothing flagged on the size chart.
    let sizes = chart_points(&page, &anchor, "repository-size-after-full");
    assert!(sizes.iter().all(|(_, _, f)| f.is_none()), "{sizes:?}");
    // The flagged step is in the table at the top.
    let flagged_start = page.find("<section id=\"flagged\">").unwrap();
    let flagged =
        &page[flagged_start..flagged_start + page[flagged_start..].find("</section>").unwrap()];
    assert!(
        flagged.contains("<td>full backup, wall time</td>"),
        "{flagged}"
    );
    assert!(flagged.contains("<strong>slower</strong>"), "{flagged}");
    assert!(!flagged.contains("<strong>faster"), "{flagged}");
}

#[test]
fn the_dataset_page_puts_tools_side_by_side_and_names_the_best_per_step() {
    let tmp = tempfile::tempdir().unwrap();
    let mut slow = Synth::new("slowtool", "2.0.0", 1);
    slow.slowdown = 2.0;
    let mut store = store_with(
        tmp.path(),
        false,
        &[Synth::new("fasttool", "1.0.0", 0), slow],
    );
    let out = tmp.path().join("site");
    build(&mut store, &out).unwrap();
    let dataset = dataset_label(&Synth::new("x", "1", 0).dataset);
    let page = read(&out.join(names::dataset_page(&dataset)));
    let best_start = page.find("<h3>Best per step</h3>").unwrap();
    let best = &page[best_start..];
    let row = |step: &str| {
        let i = best.find(&format!("<td>{step}</td>")).unwrap();
        &best[i..i + best[i..].find("</tr>").unwrap()]
    };
    for step in [
        "full backup, wall time",
        "incremental backup, wall time",
        "restore, wall time",
    ] {
        let r = row(step);
        assert!(r.contains(">fasttool</a>"), "{r}");
        assert!(r.contains("faster than slowtool"), "{r}");
    }
    // Both tools in the side-by-side table.
    let side = &page[..best_start];
    assert!(side.contains(">fasttool</a>") && side.contains(">slowtool</a>"));
}

#[test]
fn strings_from_packs_are_shown_as_text_never_as_markup() {
    let tmp = tempfile::tempdir().unwrap();
    let mut hostile = Synth::new("<script>alert(1)</script>", "1.0\"><b>x</b>", 0);
    hostile.dataset =
        serde_json::json!({"kind": "files", "name": "my \"quoted\" & 'single' <i>data</i>"});
    let mut store = store_with(tmp.path(), false, &[hostile]);
    let out = tmp.path().join("site");
    build(&mut store, &out).unwrap();
    let mut pages = Vec::new();
    html_files(&out, &mut pages);
    assert!(pages.len() >= 4, "{pages:?}");
    let mut seen_tool = 0;
    let mut seen_dataset = 0;
    for page in &pages {
        let text = read(page);
        for raw in ["<script>alert", "<b>x</b>", "<i>data</i>", "\"quoted\""] {
            assert!(
                !text.contains(raw),
                "{} holds {raw} unescaped",
                page.display()
            );
        }
        seen_tool += text
            .matches("&lt;script&gt;alert(1)&lt;/script&gt;")
            .count();
        seen_dataset += text
            .matches("my &quot;quoted&quot; &amp; &#39;single&#39; &lt;i&gt;data&lt;/i&gt;")
            .count();
        // Only the page's own script element.
        assert_eq!(text.matches("<script").count(), 1, "{}", page.display());
    }
    assert!(seen_tool >= 3, "the tool's name is shown ({seen_tool})");
    assert!(seen_dataset >= 3, "the dataset is shown ({seen_dataset})");
    // Its page's file name is made from the name, never the name itself.
    let files: BTreeSet<String> = std::fs::read_dir(out.join("tools"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 1);
    assert!(files.iter().all(|f| {
        f.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    }));
}

#[test]
fn a_folder_that_is_not_an_earlier_site_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = store_with(tmp.path(), false, &[Synth::new("synthtool", "1.0.0", 0)]);

    let mine = tmp.path().join("my-folder");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("thesis.txt"), "years of work").unwrap();
    let err = build(&mut store, &mine).unwrap_err();
    assert!(matches!(err, SiteError::ForeignOut { .. }), "{err}");
    assert!(
        err.to_string().contains("pass a new or empty folder"),
        "{err}"
    );
    assert_eq!(read(&mine.join("thesis.txt")), "years of work");
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 1);

    let file = tmp.path().join("a-file");
    std::fs::write(&file, "mine").unwrap();
    assert!(matches!(
        build(&mut store, &file).unwrap_err(),
        SiteError::ForeignOut { .. }
    ));
    assert_eq!(read(&file), "mine");

    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&mine, &link).unwrap();
    assert!(matches!(
        build(&mut store, &link).unwrap_err(),
        SiteError::LinkOut { .. }
    ));
    assert_eq!(std::fs::read_dir(&mine).unwrap().count(), 1);

    // Nothing was left beside them either.
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".labrun-site"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn an_earlier_site_or_an_empty_folder_is_replaced_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = store_with(tmp.path(), false, &[Synth::new("synthtool", "1.0.0", 0)]);
    let out = tmp.path().join("site");
    std::fs::create_dir(&out).unwrap();
    build(&mut store, &out).unwrap();
    assert!(out.join(labrun_site::MARKER).is_file());
    std::fs::write(out.join("tools").join("stale.html"), "old").unwrap();
    let again = build(&mut store, &out).unwrap();
    assert!(
        !out.join("tools").join("stale.html").exists(),
        "the old site is gone"
    );
    assert!(out.join(names::INDEX).is_file());
    assert_eq!(again.runs, 1);
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".labrun-site"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_run_whose_kept_pack_is_gone_is_left_out_and_said() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store = store_with(
        tmp.path(),
        false,
        &[
            Synth::new("synthtool", "1.0.0", 0),
            Synth::new("synthtool", "1.1.0", 1),
        ],
    );
    let gone = store.runs(&Default::default()).unwrap()[0].digest.clone();
    // The pack leaves the store (as a hand-edited or damaged store would
    // lose it); its rows stay.
    drop(store);
    let conn = rusqlite::Connection::open(tmp.path().join("runs.sqlite")).unwrap();
    conn.execute("DELETE FROM packs WHERE digest = ?1", [&gone])
        .unwrap();
    drop(conn);
    let mut store = Store::open(&tmp.path().join("runs.sqlite")).unwrap();
    let out = tmp.path().join("site");
    let built = build(&mut store, &out).unwrap();
    assert_eq!(built.runs, 1);
    assert_eq!(built.skipped.len(), 1);
    assert_eq!(built.skipped[0].digest, gone);
    assert!(
        built.skipped[0].reason.contains("import the run again"),
        "{:?}",
        built.skipped
    );
    let index = read(&out.join(names::INDEX));
    assert!(
        index.contains(&format!("sha256:{gone}")),
        "the index says which run is left out"
    );
}

/// The same runs in a PostgreSQL store give the same site, page for page,
/// as in an SQLite one.
#[test]
#[ignore = "needs PostgreSQL (Debian's postgresql): `make test` runs it"]
fn a_postgres_store_gives_the_same_site_as_an_sqlite_one() {
    use labrun_store::Location;
    use labrun_store::test_support::{Auth, TestPostgres};
    let tmp = tempfile::tempdir().unwrap();
    let mut sqlite = store_with(tmp.path(), true, &[]);
    let server = TestPostgres::start(Auth::Trust).unwrap();
    server.create_database("team").unwrap();
    let mut postgres = Store::connect(&Location::Postgres(server.url("team"))).unwrap();
    for pack in committed_packs() {
        match postgres.import(&pack, None) {
            Ok(_) | Err(StoreError::VariantsRun { .. }) => {}
            Err(e) => panic!("{}: {e}", pack.display()),
        }
    }
    let (a, b) = (
        tmp.path().join("from-sqlite"),
        tmp.path().join("from-postgres"),
    );
    let built_a = build(&mut sqlite, &a).unwrap();
    let built_b = build(&mut postgres, &b).unwrap();
    assert!(built_a.runs >= 10 && built_a.skipped.is_empty());
    assert_eq!(built_a.runs, built_b.runs);
    // The store lists runs in import order, which differs between the two.
    let sorted = |mut p: Vec<_>| {
        p.sort();
        p
    };
    assert_eq!(sorted(built_a.pages.clone()), sorted(built_b.pages.clone()));
    for page in &built_a.pages {
        let (pa, pb) = (a.join(page), b.join(page));
        assert_eq!(std::fs::read(&pa).ok(), std::fs::read(&pb).ok(), "{page:?}");
    }
}

/// `labrun trend TOOL`: the tool's runs in version order, the planted
/// slower release named as the first worse step of the times it slows, a
/// faster one as the first better step, and nothing for a tool not run.
#[test]
fn the_trend_of_a_tool_names_its_first_worse_and_first_better_step() {
    let tmp = tempfile::tempdir().unwrap();
    let mut slow = Synth::new("synthtool", "0.11.0", 1);
    slow.slowdown = 1.6;
    let runs = [
        Synth::new("synthtool", "0.10.0", 0),
        slow,
        Synth::new("synthtool", "0.12.0", 2),
    ];
    let mut store = store_with(tmp.path(), false, &runs);
    let text = labrun_site::trend(&mut store, "synthtool")
        .unwrap()
        .expect("the tool ran");
    assert!(text.contains("runs: 0.10.0 -> 0.11.0 -> 0.12.0"), "{text}");
    assert!(
        text.contains("first worse step: 0.10.0 -> 0.11.0 (slower"),
        "{text}"
    );
    assert!(
        text.contains("first better step: 0.11.0 -> 0.12.0 (faster"),
        "{text}"
    );
    assert_eq!(
        labrun_site::trend(&mut store, "no-such-tool").unwrap(),
        None
    );
}
