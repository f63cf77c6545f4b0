//! Synthetic runs for the site's tests and its benchmark: a committed run
//! of the default lab (3 cycles) with one tool kept, renamed, versioned,
//! put on another dataset or machine class, and its timed steps made
//! slower by a factor. Everything else is the committed evidence as is.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// The committed run the synthetic ones are made from, and its tool.
pub const TEMPLATE: &str =
    "docs/scale/harness-20261202T005609Z/harness-20261202T005609Z-2f74e6.tar.gz";
pub const TEMPLATE_TOOL: &str = "restic";

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What one synthetic run changes.
#[derive(Clone)]
pub struct Synth {
    pub tool: String,
    pub version: String,
    pub dataset: Value,
    /// Every timed step's wall time times this.
    pub slowdown: f64,
    /// The guest's vCPUs: another number is another machine class.
    pub vcpus: u32,
    /// Its identity, and its date: `index` days after the template's.
    pub index: usize,
}

impl Synth {
    pub fn new(tool: &str, version: &str, index: usize) -> Synth {
        Synth {
            tool: tool.into(),
            version: version.into(),
            dataset: serde_json::json!({"kind": "synthetic", "seed": 7, "scale": 0.01}),
            slowdown: 1.0,
            vcpus: 4,
            index,
        }
    }
}

/// The template's `raw/`, opened once.
pub struct Template {
    opened: labrun_report::pack::OpenedRun,
}

impl Template {
    pub fn open() -> Template {
        let pack = repo_root().join(TEMPLATE);
        Template {
            opened: labrun_report::pack::open(&pack)
                .unwrap_or_else(|e| panic!("the committed run {}: {e}", pack.display())),
        }
    }

    /// Writes the synthetic run folder `into/synthetic-<index>` and returns it.
    pub fn make(&self, into: &Path, s: &Synth) -> PathBuf {
        let run_id = format!("synthetic-{:05}", s.index);
        let dir = into.join(&run_id);
        let raw = dir.join("raw");
        copy_tree(&self.opened.dir().join("raw"), &raw);
        let plan_path = raw.join("plan.json");
        let mut plan: Value =
            serde_json::from_str(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
        plan["run_id"] = run_id.clone().into();
        plan["dataset"] = s.dataset.clone();
        let mut tool = plan["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == TEMPLATE_TOOL)
            .cloned()
            .unwrap();
        tool["name"] = s.tool.clone().into();
        tool["version"] = s.version.clone().into();
        plan["tools"] = Value::Array(vec![tool]);
        std::fs::write(&plan_path, serde_json::to_vec(&plan).unwrap()).unwrap();

        let records_path = raw.join("records.jsonl");
        let shift = s.index as u64 * 86_400_000;
        let mut out = String::new();
        for line in std::fs::read_to_string(&records_path).unwrap().lines() {
            let mut r: Value = serde_json::from_str(line).unwrap();
            let owner = r["tool"].as_str().unwrap_or("").to_string();
            if !owner.is_empty() && owner != TEMPLATE_TOOL {
                continue;
            }
            if !owner.is_empty() {
                r["tool"] = s.tool.clone().into();
            }
            r["run_id"] = run_id.clone().into();
            if let Some(ms) = r["started_unix_ms"].as_u64() {
                r["started_unix_ms"] = (ms + shift).into();
            }
            if r["timed"] == true
                && let Some(w) = r["wall_secs"].as_f64()
            {
                r["wall_secs"] = (w * s.slowdown).into();
            }
            out.push_str(&serde_json::to_string(&r).unwrap());
            out.push('\n');
        }
        std::fs::write(&records_path, out).unwrap();

        let env_path = raw.join("environment.json");
        let mut env: Value =
            serde_json::from_str(&std::fs::read_to_string(&env_path).unwrap()).unwrap();
        env["guest"]["cpus"] = s.vcpus.into();
        std::fs::write(&env_path, serde_json::to_vec(&env).unwrap()).unwrap();
        dir
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}
