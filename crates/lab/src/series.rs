//! `versions:` on a tool: a release series. The tool is written once, its
//! artifact templated by `{version}` (and its pins by `{sum}` and
//! `{sha256}`), and each version carries its own pins:
//!
//! ```yaml
//! - name: restic
//!   version: "{version}"
//!   anchor: 0.19.1                 # every run includes it; the newest by default
//!   versions:
//!     - {version: 0.18.1, sum: "h1:...", sha256: 5c1b...}
//!     - {version: 0.19.1, sum: "h1:...", sha256: abb2...}
//!   artifact:
//!     go: {module: github.com/restic/restic, version: "v{version}", sum: "{sum}", ...}
//!     sha256: "{sha256}"
//! ```
//!
//! Loading expands it into one ordinary tool per version, `restic@0.18.1`,
//! `restic@0.19.1`, in the written (oldest-first) order, so the rotation
//! runs them interleaved in one plan like any tools. What the expansion
//! keeps is a [`Series`]: the members in order and the anchor, which the
//! plan hands to the report's trend. `labrun pin restic --series` writes the
//! pins.

use crate::error::Problem;
use crate::schema::{Lab, ToolSpec};
use labrun_artifact::ArtifactSpec;
use labrun_evidence::compare::SeriesPlan;
use serde::Deserialize;

/// One version of a series and its pins.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeriesVersion {
    /// Replaces `{version}` in the tool's `version` and artifact.
    pub version: String,
    /// A Go module's hash as go.sum writes it (`{sum}`); go builds only.
    #[serde(default)]
    pub sum: Option<String>,
    /// The artifact's SHA-256 for this version (`{sha256}`).
    #[serde(default)]
    pub sha256: Option<String>,
    /// The toolchain this version builds with, when it is not the
    /// template's (an old release that a new Go or rustc refuses).
    #[serde(default)]
    pub toolchain: Option<String>,
}

/// The placeholders a series template is written with.
const VERSION: &str = "{version}";
const SUM: &str = "{sum}";
const SHA256: &str = "{sha256}";

/// A series after expansion: its members' tool names in version order.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The tool as written (`restic`).
    pub tool: String,
    /// `restic@0.16.4`, ... in the written order (oldest first).
    pub members: Vec<String>,
    /// The member every run includes.
    pub anchor: String,
}

impl Series {
    pub fn to_plan(&self) -> SeriesPlan {
        SeriesPlan {
            tool: self.tool.clone(),
            members: self.members.clone(),
            anchor: self.anchor.clone(),
        }
    }
}

/// Most versions a series may list. Each is a tool of every cycle (a
/// run of n versions takes n times one tool's time), and validation and
/// expansion hold each member: as matrix and variants are capped
/// (`crate::variant::MAX_VARIANTS`), a typo or a generated list does not
/// become a week-long run or a check that runs out of memory.
pub const MAX_VERSIONS: usize = 64;

/// `restic` at `0.16.4` -> `restic@0.16.4`.
pub fn member_name(tool: &str, version: &str) -> String {
    format!("{tool}@{version}")
}

impl ToolSpec {
    /// Whether the tool is a series template (`versions:`).
    pub fn is_series(&self) -> bool {
        !self.versions.is_empty()
    }

    /// The anchor version: `anchor:`, else the last (newest) written.
    pub fn anchor_version(&self) -> Option<&str> {
        self.anchor
            .as_deref()
            .or_else(|| self.versions.last().map(|v| v.version.as_str()))
    }

    /// A copy of the tool without its series: a member built from a full
    /// clone would carry the whole version list (n members holding n
    /// versions each: 7,000 versions took 2.8 GB). Every field is named,
    /// so a new one cannot be left out silently.
    fn without_versions(&self) -> ToolSpec {
        let ToolSpec {
            name,
            version,
            artifact,
            install,
            env,
            secret_env,
            commands,
            args,
            snapshot_id_pattern,
            repository,
            versions: _,
            anchor: _,
        } = self;
        ToolSpec {
            name: name.clone(),
            version: version.clone(),
            artifact: artifact.clone(),
            install: install.clone(),
            env: env.clone(),
            secret_env: secret_env.clone(),
            commands: commands.clone(),
            args: args.clone(),
            snapshot_id_pattern: snapshot_id_pattern.clone(),
            repository: repository.clone(),
            versions: Vec::new(),
            anchor: None,
        }
    }

    /// The template with one version's values put in: an ordinary tool.
    /// A missing pin stays its placeholder (which `validate()` names).
    pub fn series_member(&self, v: &SeriesVersion) -> Result<ToolSpec, String> {
        let mut tool = self.without_versions();
        tool.name = member_name(&self.name, &v.version);
        tool.version = self.version.replace(VERSION, &v.version);
        // Members of a series on an existing machine need a binary each.
        tool.install = self
            .install
            .as_ref()
            .map(|i| i.replace(VERSION, &v.version));
        let mut artifact = serde_json::to_value(&self.artifact)
            .map_err(|e| format!("cannot expand the artifact: {e}"))?;
        fill(&mut artifact, v);
        if let Some(tc) = &v.toolchain {
            for kind in ["go", "crate"] {
                if let Some(slot) = artifact.get_mut(kind).and_then(|b| b.get_mut("toolchain")) {
                    *slot = serde_json::Value::String(tc.clone());
                }
            }
        }
        tool.artifact = serde_json::from_value::<ArtifactSpec>(artifact).map_err(|e| {
            format!(
                "version {}: the artifact does not read back: {e}",
                v.version
            )
        })?;
        Ok(tool)
    }
}

/// Every string of the artifact with the version's values in place.
fn fill(value: &mut serde_json::Value, v: &SeriesVersion) {
    match value {
        serde_json::Value::String(s) => {
            let mut out = s.replace(VERSION, &v.version);
            if let Some(sum) = &v.sum {
                out = out.replace(SUM, sum);
            }
            if let Some(sha) = &v.sha256 {
                out = out.replace(SHA256, sha);
            }
            *s = out;
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|i| fill(i, v)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|i| fill(i, v)),
        _ => {}
    }
}

/// The series rules of one tool as written, at `at` (`tools[0]`). Each
/// member is then checked as an ordinary tool by the caller.
pub(crate) fn validate_series(tool: &ToolSpec, at: &str, out: &mut Vec<Problem>) {
    if !tool.is_series() {
        if tool.anchor.is_some() {
            out.push(Problem::new(
                format!("{at}.anchor"),
                "`anchor:` names a version of `versions:`, and the tool has none: add `versions:` or remove `anchor:`",
            ));
        }
        return;
    }
    if tool.versions.len() > MAX_VERSIONS {
        // Each member is checked and run as a tool: refused before any is made.
        out.push(Problem::new(
            format!("{at}.versions"),
            format!(
                "lists {} versions; a series runs at most {MAX_VERSIONS} (each version is a tool of every cycle): split it into several labs, or drop versions (`labrun bisect` finds a change between two versions)",
                tool.versions.len()
            ),
        ));
        return;
    }
    if tool.name.contains('@') {
        out.push(Problem::new(
            format!("{at}.name"),
            format!("a series names its members `{}@<version>` itself: write the tool's name without `@`", tool.name),
        ));
    }
    if !tool.version.contains(VERSION) {
        out.push(Problem::new(
            format!("{at}.version"),
            "a tool with `versions:` writes `version: \"{version}\"` (each member gets its own)",
        ));
    }
    let written = serde_json::to_string(&tool.artifact).unwrap_or_default();
    if !written.contains(VERSION) {
        out.push(Problem::new(
            format!("{at}.artifact"),
            "a series' artifact must say where the version goes: write `{version}` in the module version, URL or apt version",
        ));
    }
    if tool.artifact.sha256 != SHA256 {
        out.push(Problem::new(
            format!("{at}.artifact.sha256"),
            "in a series each version pins its own digest: write `sha256: \"{sha256}\"` here and `sha256:` in each entry of `versions:`",
        ));
    }
    // A module build from the proxy has a `sum`; a `source:` build that
    // happens to build with Go is pinned by its tree and has none.
    let go = matches!(
        tool.artifact.source,
        labrun_artifact::spec::ArtifactSource::Build(labrun_artifact::build::BuildRecipe::Go(_))
    );
    let pin_cmd = format!("run `labrun pin {} --series` to write it", tool.name);
    let mut seen = std::collections::BTreeSet::new();
    for (j, v) in tool.versions.iter().enumerate() {
        let vat = format!("{at}.versions[{j}]");
        if !seen.insert(v.version.as_str()) {
            out.push(Problem::new(
                format!("{vat}.version"),
                format!("the version {} is listed twice: keep one", v.version),
            ));
        }
        let mut missing = Vec::new();
        if go && v.sum.is_none() {
            missing.push("`sum:` (the module's hash)");
        }
        if v.sha256.is_none() {
            missing.push("`sha256:`");
        }
        if !missing.is_empty() {
            out.push(Problem::new(
                vat.clone(),
                format!(
                    "version {} has no {} pin: {pin_cmd}",
                    v.version,
                    missing.join(" and ")
                ),
            ));
        }
        if !go && v.sum.is_some() {
            out.push(Problem::new(
                format!("{vat}.sum"),
                "`sum:` is a Go module's hash, and this artifact is not a go build: remove it",
            ));
        }
        match tool.series_member(v) {
            Err(why) => out.push(Problem::new(vat.clone(), why)),
            Ok(member) => {
                // The member's own rules: its artifact's at this entry (a
                // pin of this version), the rest once, at the tool's own
                // lines (the same for every version).
                for p in crate::validate::tool_problems(&member, &vat) {
                    let field = p.path.strip_prefix(&format!("{vat}.")).unwrap_or(&p.path);
                    if field.starts_with("artifact") {
                        if missing.is_empty() {
                            out.push(Problem::new(
                                vat.clone(),
                                format!("version {}: {field}: {}", v.version, p.message),
                            ));
                        }
                    } else if j == 0 && !field.starts_with("name") {
                        out.push(Problem::new(format!("{at}.{field}"), p.message));
                    }
                }
                if let Err(msg) = check_member_name(&member.name) {
                    out.push(Problem::new(format!("{vat}.version"), msg));
                }
            }
        }
    }
    if let Some(anchor) = &tool.anchor
        && !tool.versions.iter().any(|v| &v.version == anchor)
    {
        let listed: Vec<&str> = tool.versions.iter().map(|v| v.version.as_str()).collect();
        out.push(Problem::new(
            format!("{at}.anchor"),
            format!(
                "the anchor {anchor} is not one of the versions ({}): name one of them, or remove `anchor:` for the newest",
                listed.join(", ")
            ),
        ));
    }
}

fn check_member_name(name: &str) -> Result<(), String> {
    if labrun_evidence::variant::is_tool_name(name) {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a usable tool name (`[a-z0-9._-]`, at most 64 characters a part)"
        ))
    }
}

impl Lab {
    /// The series of this lab, after loading.
    pub fn series(&self) -> &[Series] {
        &self.series
    }

    /// Replaces each series template by its members, in place. Runs after
    /// `validate()` (a template with a missing pin never gets here).
    pub(crate) fn expand_series(&mut self) {
        let mut tools = Vec::with_capacity(self.tools.len());
        for tool in std::mem::take(&mut self.tools) {
            if !tool.is_series() {
                tools.push(tool);
                continue;
            }
            let anchor = tool.anchor_version().unwrap_or_default().to_string();
            let mut members = Vec::new();
            for v in &tool.versions {
                if let Ok(member) = tool.series_member(v) {
                    members.push(member.name.clone());
                    tools.push(member);
                }
            }
            self.series.push(Series {
                anchor: member_name(&tool.name, &anchor),
                tool: tool.name.clone(),
                members,
            });
        }
        self.tools = tools;
    }

    /// The tools' names as a run has them: a series template (before it is
    /// expanded) as its members. What pairs and the noise floor may name.
    pub(crate) fn tool_names_as_run(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in &self.tools {
            if t.is_series() {
                out.extend(t.versions.iter().map(|v| member_name(&t.name, &v.version)));
            } else {
                out.push(t.name.clone());
            }
        }
        out
    }

    /// No member of a series has the name of a tool written beside it.
    pub(crate) fn validate_series_names(&self, out: &mut Vec<Problem>) {
        for (i, tool) in self.tools.iter().enumerate() {
            for (j, v) in tool.versions.iter().enumerate() {
                let member = member_name(&tool.name, &v.version);
                if self.tools.iter().any(|t| t.name == member) {
                    out.push(Problem::new(
                        format!("tools[{i}].versions[{j}].version"),
                        format!("this version is the tool `{member}`, and a tool of that name is written already: remove one"),
                    ));
                }
            }
        }
    }

    /// The series whose member or template is `name`.
    pub(crate) fn series_of(&self, name: &str) -> Option<&Series> {
        self.series
            .iter()
            .find(|s| s.tool == name || s.members.iter().any(|m| m == name))
    }
}

/// The series template `tool` as `text` writes it, read without the lab's
/// checks (its pins are what `labrun pin --series` is about to write).
pub fn template(text: &str, tool: &str) -> Result<ToolSpec, String> {
    let t = tool_as_written(text, tool)?;
    match t.is_series() {
        true => Ok(t),
        false => Err(format!("tool `{tool}` has no `versions:` list")),
    }
}

/// The tool `tool` as `text` writes it, without the lab's checks (a pin
/// about to be written may be missing or wrong).
pub fn tool_as_written(text: &str, tool: &str) -> Result<ToolSpec, String> {
    let lab = crate::load::parse_unchecked(text)
        .ok_or("the lab does not parse: run `labrun check` for where")?;
    lab.tools
        .into_iter()
        .find(|t| t.name == tool)
        .ok_or_else(|| format!("the lab has no tool `{tool}`"))
}
