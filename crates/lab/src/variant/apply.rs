//! One variant's overrides applied to a copy of the lab, each change noted
//! as the evidence will state it, and each impossible one as a problem at
//! the variant's line.

use super::VariantSpec;
use crate::error::Problem;
use crate::schema::{DatasetSpec, Lab, VmSpec};
use labrun_evidence::variant::Change;
use std::collections::BTreeMap;
use std::fmt::Display;

/// What applying a variant's parts (a matrix: one per axis) has done so
/// far: the changes, the problems, and which part set each field (two axes
/// setting one field is a contradiction, not an order to resolve).
#[derive(Default)]
pub(super) struct Applied {
    pub changes: Vec<Change>,
    pub problems: Vec<Problem>,
    set_by: BTreeMap<String, String>,
}

impl Applied {
    fn set(&mut self, at: &str, field: String, from: impl Display, to: impl Display) -> bool {
        if let Some(first) = self.set_by.get(&field) {
            self.problems.push(Problem::new(
                at,
                format!("`{field}` is already set by `{first}`: a variant can set each setting once (move it to one axis)"),
            ));
            return false;
        }
        self.set_by.insert(field.clone(), at.to_string());
        let (from, to) = (from.to_string(), to.to_string());
        if from != to {
            self.changes.push(Change { field, from, to });
        }
        true
    }
}

/// Applies `spec` (written at `at`, e.g. `variants[2]`) to `lab`.
pub(super) fn apply(lab: &mut Lab, spec: &VariantSpec, at: &str, out: &mut Applied) {
    apply_vm(lab, spec, at, out);
    apply_dataset(lab, spec, at, out);
    apply_tools(lab, spec, at, out);
    apply_storage(lab, spec, at, out);
}

fn apply_storage(lab: &mut Lab, spec: &VariantSpec, at: &str, out: &mut Applied) {
    let o = &spec.storage;
    let at = format!("{at}.storage");
    if let Some(v) = o.server
        && out.set(&at, "storage.server".into(), lab.storage.server, v)
    {
        lab.storage.server = v;
    }
    if let Some(v) = o.network {
        let before = lab
            .storage
            .network
            .map_or_else(|| "-".into(), |n| n.describe());
        if out.set(&at, "storage.network".into(), before, v.describe()) {
            lab.storage.network = Some(v);
        }
    }
}

/// Leaves out of `lab` the tools that cannot name a repository on its
/// server (kopia has no rest-server backend), noting which; a plain lab
/// naming such a tool is refused instead, by `validate()`.
pub(super) fn leave_out_tools_without_a_form(lab: &mut Lab, out: &mut Applied) {
    let server = lab.storage.server;
    if server == labrun_evidence::Server::Local {
        return;
    }
    let names = |tools: &[crate::schema::ToolSpec]| {
        tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    // The lab's order, before any is left out.
    let all = names(&lab.tools);
    let (kept, left): (Vec<_>, Vec<_>) = std::mem::take(&mut lab.tools)
        .into_iter()
        .partition(|t| t.repository.contains_key(&server));
    lab.tools = kept;
    if left.is_empty() {
        return;
    }
    out.changes.push(Change {
        field: "tools".into(),
        from: all,
        to: format!(
            "{} ({} cannot name a repository on {server}: no `repository.{server}`)",
            if lab.tools.is_empty() {
                "none".to_string()
            } else {
                names(&lab.tools)
            },
            names(&left)
        ),
    });
}

fn apply_vm(lab: &mut Lab, spec: &VariantSpec, at: &str, out: &mut Applied) {
    let o = &spec.vm;
    if *o == Default::default() {
        return;
    }
    if lab.target.is_some() {
        out.problems.push(Problem::new(
            format!("{at}.vm"),
            "this lab runs on an existing machine (`target:`): there is no VM for a variant to change",
        ));
        return;
    }
    let vm = lab.vm.get_or_insert_with(VmSpec::default);
    let at_vm = format!("{at}.vm");
    if let Some(v) = o.vcpus
        && out.set(&at_vm, "vm.vcpus".into(), vm.vcpus, v)
    {
        vm.vcpus = v;
    }
    if let Some(v) = o.memory
        && out.set(&at_vm, "vm.memory".into(), vm.memory, v)
    {
        vm.memory = v;
    }
    if let Some(v) = o.disk_cache
        && out.set(
            &at_vm,
            "vm.disk_cache".into(),
            vm.disk_cache.as_str(),
            v.as_str(),
        )
    {
        vm.disk_cache = v;
    }
    if let Some(v) = o.disk_profile
        && out.set(
            &at_vm,
            "vm.disk_profile".into(),
            vm.disk_profile.describe(),
            v.describe(),
        )
    {
        vm.disk_profile = v;
    }
}

fn apply_dataset(lab: &mut Lab, spec: &VariantSpec, at: &str, out: &mut Applied) {
    let o = &spec.dataset;
    if *o == Default::default() {
        return;
    }
    let at_ds = format!("{at}.dataset");
    let DatasetSpec::Synthetic {
        seed,
        scale,
        change_seed,
        profile,
    } = &mut lab.dataset
    else {
        out.problems.push(Problem::new(
            at_ds,
            "the lab's dataset is a git history: a variant can change only the synthetic dataset's settings",
        ));
        return;
    };
    if let Some(v) = o.seed
        && out.set(&at_ds, "dataset.seed".into(), *seed, v)
    {
        *seed = v;
    }
    if let Some(v) = o.scale {
        if let Err(msg) = crate::validate::check_scale(v) {
            out.problems
                .push(Problem::new(format!("{at_ds}.scale"), msg));
        } else if out.set(&at_ds, "dataset.scale".into(), *scale, v) {
            *scale = v;
        }
    }
    if let Some(v) = o.change_seed {
        let before = change_seed.map_or_else(|| "-".to_string(), |s| s.to_string());
        if out.set(&at_ds, "dataset.change_seed".into(), before, v) {
            *change_seed = Some(v);
        }
    }
    if let Some(v) = o.profile
        && out.set(&at_ds, "dataset.profile".into(), *profile, v)
    {
        *profile = v;
    }
}

fn apply_tools(lab: &mut Lab, spec: &VariantSpec, at: &str, out: &mut Applied) {
    for (name, o) in &spec.tools {
        let at_tool = format!("{at}.tools.{name}");
        let known: Vec<String> = lab.tools.iter().map(|t| t.name.clone()).collect();
        // A series' own name (`restic` of `versions:`) tunes every version.
        let targets: Vec<usize> = match lab.series_of(name).filter(|s| &s.tool == name) {
            Some(series) => (0..lab.tools.len())
                .filter(|&i| series.members.contains(&lab.tools[i].name))
                .collect(),
            None => lab
                .tools
                .iter()
                .position(|t| &t.name == name)
                .into_iter()
                .collect(),
        };
        if targets.is_empty() {
            let hint = crate::suggest::nearest(name, known.iter().map(String::as_str))
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            out.problems.push(Problem::new(
                at_tool,
                format!(
                    "the lab has no tool `{name}`{hint}; its tools: {}",
                    known.join(", ")
                ),
            ));
            continue;
        }
        for (n, &i) in targets.iter().enumerate() {
            // The change is said once, for the name the variant wrote.
            let mut quiet = Applied::default();
            let said = if n == 0 { &mut *out } else { &mut quiet };
            apply_tool(&mut lab.tools[i], name, o, &at_tool, said);
        }
    }
}

fn apply_tool(
    tool: &mut crate::schema::ToolSpec,
    name: &str,
    o: &super::ToolOverride,
    at_tool: &str,
    out: &mut Applied,
) {
    for (key, args) in &o.args {
        if !tool.commands.contains_key(key) {
            let keys: Vec<&str> = tool.commands.keys().map(String::as_str).collect();
            out.problems.push(Problem::new(
                format!("{at_tool}.args.{key}"),
                format!(
                    "`{name}` has no command `{key}` to add arguments to; its commands: {}",
                    keys.join(", ")
                ),
            ));
            continue;
        }
        let own = tool.args.entry(key.clone()).or_default();
        let before = if own.is_empty() {
            "-".to_string()
        } else {
            own.join(" ")
        };
        // Two axes may both add to one command (a compression level
        // and a thread count): appended in axis order, each noted.
        let mut after = own.clone();
        after.extend(args.iter().cloned());
        out.changes.push(Change {
            field: format!("tools.{name}.args.{key}"),
            from: before,
            to: after.join(" "),
        });
        *own = after;
    }
    for (key, value) in &o.env {
        let secret = tool.secret_env.iter().any(|s| s == key);
        let old = tool.env.get(key);
        // A secret's values are never written; that it changed is.
        let (before, after) = match old {
            _ if !secret => (old.cloned().unwrap_or_else(|| "-".into()), value.clone()),
            Some(v) if v == value => ("<redacted>".into(), "<redacted>".into()),
            Some(_) => ("<redacted>".into(), "<another secret>".into()),
            None => ("-".into(), "<redacted>".into()),
        };
        if out.set(at_tool, format!("tools.{name}.env.{key}"), before, after) {
            tool.env.insert(key.clone(), value.clone());
        }
    }
}
