//! The protocol: the steps of one tool cycle, in order, as data. The
//! published cycle (SPEC 4) is [`published`]; a lab may write its own list
//! (`protocol:`), and the plan carries it to the agent, which runs the list
//! as written. Lab file and plan share these types.
//!
//! Written in a lab as a list whose items are either a bare word for the
//! agent's own work (`source`, `change`, `verify`) or a mapping that runs a
//! tool command:
//!
//! ```yaml
//! protocol:
//!   - source                                  # the pristine source tree
//!   - {run: init}
//!   - {run: backup, name: backup_full, makes: s1}
//!   - change                                  # the seeded 5% change
//!   - {run: backup, name: backup_incremental, makes: s2}
//!   - {run: restore, restores: s2, repo_size: false}
//!   - verify                                  # the restore against s2's tree
//!   - {run: check}                            # any command the tools define
//! ```

use crate::step::Step;
use serde::{Deserialize, Serialize};

/// One step of a tool cycle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StepForm", into = "StepForm")]
pub enum ProtocolStep {
    /// The tool cycle's pristine source tree (a copy of the generated one,
    /// or the previous tool cycle's reset). Recorded as `generate`.
    Source,
    /// The seeded 5% change of SPEC 3, in place. The k-th change of a
    /// protocol uses seed `change_seed + k - 1`: rounds of change and backup
    /// pile up snapshots that differ.
    Change { name: Step },
    /// The metadata-fidelity fixture (modes, mtimes, links, an empty
    /// directory, a sparse file, odd names, an xattr) written to a folder of
    /// its own, which is `{source}` for the steps after it: back it up,
    /// restore it, and the `verify` after that reports, kind by kind, what
    /// the tool kept.
    Fixture,
    /// The restore target hashed and compared with the tree of the snapshot
    /// the last restore restored.
    Verify { name: Step },
    /// A command of the tool.
    Run(RunStep),
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunStep {
    /// In records, logs and reports; the command's key unless named.
    pub name: Step,
    /// The key of the tool's command (`backup`, `check`, `stats`).
    pub command: String,
    /// The label of the snapshot this command makes of the source tree as it
    /// is now (`{snapshot}` is the label; the id comes from `snapshot_id`).
    pub makes: Option<String>,
    /// Restores this snapshot into `{target}` (emptied first); a `verify`
    /// after it compares what it restored with the snapshot's tree.
    pub restores: Option<String>,
    /// Works on this snapshot otherwise (`forget`, `diff`): `{snapshot}` is
    /// its id.
    pub snapshot: Option<String>,
    /// Measured as a phase of the report (whole tree, timeline).
    pub timed: bool,
    /// Drop the page cache first (default: when timed).
    pub drop_cache: bool,
    /// Measure the repository after it.
    pub repo_size: bool,
    /// A tool without this command skips the step (e.g. `compact`).
    pub optional: bool,
    /// Kill the tool (SIGKILL to its whole tree) this long after its start:
    /// an interrupted backup. The step passes when it was killed, or when it
    /// finished first (the record says which).
    pub kill_after_secs: Option<f64>,
}

impl RunStep {
    /// A timed step running `command`, cache dropped first, repository
    /// measured after: the published cycle's kind of step.
    pub fn new(name: Step, command: &str) -> RunStep {
        RunStep {
            name,
            command: command.to_string(),
            makes: None,
            restores: None,
            snapshot: None,
            timed: true,
            drop_cache: true,
            repo_size: true,
            optional: false,
            kill_after_secs: None,
        }
    }

    /// The snapshot label `{snapshot}` stands for, if any.
    pub fn snapshot_label(&self) -> Option<&str> {
        self.makes
            .as_deref()
            .or(self.restores.as_deref())
            .or(self.snapshot.as_deref())
    }
}

impl ProtocolStep {
    /// The name its records carry.
    pub fn name(&self) -> Step {
        match self {
            ProtocolStep::Source => Step::GENERATE,
            ProtocolStep::Change { name } => name.clone(),
            ProtocolStep::Fixture => Step::FIXTURE,
            ProtocolStep::Verify { name } => name.clone(),
            ProtocolStep::Run(r) => r.name.clone(),
        }
    }

    pub fn timed(&self) -> bool {
        matches!(self, ProtocolStep::Run(r) if r.timed)
    }

    pub fn as_run(&self) -> Option<&RunStep> {
        match self {
            ProtocolStep::Run(r) => Some(r),
            _ => None,
        }
    }
}

/// The names of the steps of `steps` that are timed, in order: the phases a
/// report shows.
pub fn timed_steps(steps: &[ProtocolStep]) -> Vec<Step> {
    steps
        .iter()
        .filter(|s| s.timed())
        .map(|s| s.name())
        .collect()
}

/// The published cycle (SPEC 4): init, full backup, 5% change, incremental
/// backup, restore, verify; the four tool commands timed.
pub fn published() -> Vec<ProtocolStep> {
    let run = RunStep::new;
    vec![
        ProtocolStep::Source,
        ProtocolStep::Run(run(Step::INIT, "init")),
        ProtocolStep::Run(RunStep {
            makes: Some("s1".into()),
            ..run(Step::BACKUP_FULL, "backup")
        }),
        ProtocolStep::Change { name: Step::CHANGE },
        ProtocolStep::Run(RunStep {
            makes: Some("s2".into()),
            ..run(Step::BACKUP_INCREMENTAL, "backup")
        }),
        ProtocolStep::Run(RunStep {
            restores: Some("s2".into()),
            repo_size: false,
            ..run(Step::RESTORE, "restore")
        }),
        ProtocolStep::Verify { name: Step::VERIFY },
    ]
}

/// The written form: a word, or a mapping with `run:` (a tool command) or
/// `do:` (the agent's work, when it needs a name).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
enum StepForm {
    Word(String),
    Map(StepMap),
}

// By hand, not `untagged`: serde's untagged error ("did not match any
// variant") would hide the mapping's own message (an unknown key, a wrong type).
impl<'de> Deserialize<'de> for StepForm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StepForm, D::Error> {
        use serde::de::{self, MapAccess, Visitor, value};

        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StepForm;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a step: `source`, `change`, `verify`, or {run: <command>, ...}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StepForm, E> {
                Ok(StepForm::Word(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<StepForm, A::Error> {
                StepMap::deserialize(value::MapAccessDeserializer::new(map)).map(StepForm::Map)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepMap {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run: Option<String>,
    #[serde(default, rename = "do", skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    makes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    restores: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    drop_cache: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    repo_size: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    optional: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kill_after_secs: Option<f64>,
}

const AGENT_WORDS: &str = "`source`, `change`, `fixture` or `verify`";

fn named_or(name: Option<String>, default: Step) -> Result<Step, String> {
    match name {
        None => Ok(default),
        Some(n) => Step::check_name(&n).map(|()| Step::named(n)),
    }
}

fn agent_step(word: &str, name: Option<String>) -> Result<ProtocolStep, String> {
    let unnamed = |step: ProtocolStep| match &name {
        None => Ok(step),
        Some(_) => Err(format!(
            "`{word}` takes no name: only `change`, `verify` and `run:` steps are named"
        )),
    };
    match word {
        "source" => unnamed(ProtocolStep::Source),
        "change" => Ok(ProtocolStep::Change {
            name: named_or(name, Step::CHANGE)?,
        }),
        "fixture" => unnamed(ProtocolStep::Fixture),
        "verify" => Ok(ProtocolStep::Verify {
            name: named_or(name, Step::VERIFY)?,
        }),
        "generate" => Err(format!(
            "`generate` is written `source` in a protocol (its records are called generate); the agent's steps are {AGENT_WORDS}"
        )),
        other => Err(format!(
            "unknown step {other:?}: the agent's own steps are {AGENT_WORDS}; a tool command is written {{run: {other}}}"
        )),
    }
}

impl TryFrom<StepForm> for ProtocolStep {
    type Error = String;

    fn try_from(form: StepForm) -> Result<ProtocolStep, String> {
        let m = match form {
            StepForm::Word(word) => return agent_step(&word, None),
            StepForm::Map(m) => m,
        };
        match (m.run, m.agent) {
            (Some(_), Some(_)) => Err(
                "a step has `run:` (a tool command) or `do:` (the agent's work), not both".into(),
            ),
            (None, None) => Err(format!(
                "a step needs `run: <command>` or `do:` {AGENT_WORDS}"
            )),
            (None, Some(word)) => {
                let only_name = m.makes.is_none()
                    && m.restores.is_none()
                    && m.snapshot.is_none()
                    && m.timed.is_none()
                    && m.drop_cache.is_none()
                    && m.repo_size.is_none()
                    && m.optional.is_none()
                    && m.kill_after_secs.is_none();
                if !only_name {
                    return Err(format!(
                        "`do: {word}` takes only a `name`: the agent's steps are not timed and use no snapshot"
                    ));
                }
                agent_step(&word, m.name)
            }
            (Some(command), None) => {
                let name = m.name.unwrap_or_else(|| command.clone());
                Step::check_name(&name)?;
                let given = [&m.makes, &m.restores, &m.snapshot]
                    .iter()
                    .filter(|s| s.is_some())
                    .count();
                if given > 1 {
                    return Err(format!(
                        "step {name}: `makes`, `restores` and `snapshot` exclude one another (one snapshot per step)"
                    ));
                }
                if let Some(secs) = m.kill_after_secs
                    && !(secs.is_finite() && secs > 0.0)
                {
                    return Err(format!(
                        "step {name}: kill_after_secs must be a number of seconds above 0, not {secs}"
                    ));
                }
                let timed = m.timed.unwrap_or(true);
                Ok(ProtocolStep::Run(RunStep {
                    name: Step::named(name),
                    command,
                    makes: m.makes,
                    restores: m.restores,
                    snapshot: m.snapshot,
                    timed,
                    drop_cache: m.drop_cache.unwrap_or(timed),
                    repo_size: m.repo_size.unwrap_or(true),
                    optional: m.optional.unwrap_or(false),
                    kill_after_secs: m.kill_after_secs,
                }))
            }
        }
    }
}

impl From<ProtocolStep> for StepForm {
    fn from(step: ProtocolStep) -> StepForm {
        match step {
            ProtocolStep::Source => StepForm::Word("source".into()),
            ProtocolStep::Change { name } if name == Step::CHANGE => {
                StepForm::Word("change".into())
            }
            ProtocolStep::Change { name } => StepForm::Map(StepMap {
                agent: Some("change".into()),
                name: Some(name.to_string()),
                ..StepMap::default()
            }),
            ProtocolStep::Fixture => StepForm::Word("fixture".into()),
            ProtocolStep::Verify { name } if name == Step::VERIFY => {
                StepForm::Word("verify".into())
            }
            ProtocolStep::Verify { name } => StepForm::Map(StepMap {
                agent: Some("verify".into()),
                name: Some(name.to_string()),
                ..StepMap::default()
            }),
            ProtocolStep::Run(r) => StepForm::Map(StepMap {
                name: (r.name.as_str() != r.command).then(|| r.name.to_string()),
                run: Some(r.command),
                makes: r.makes,
                restores: r.restores,
                snapshot: r.snapshot,
                timed: Some(r.timed),
                drop_cache: Some(r.drop_cache),
                repo_size: Some(r.repo_size),
                optional: r.optional.then_some(true),
                kill_after_secs: r.kill_after_secs,
                agent: None,
            }),
        }
    }
}

/// Every problem of a protocol that no single step shows: the order of the
/// agent's steps, snapshot labels, names, and commands the tools lack. The
/// one rule for the lab check and the agent's plan check; each problem with
/// the index of its step. `tools`: each tool's name and commands.
pub fn check<'a>(
    steps: &[ProtocolStep],
    tools: impl IntoIterator<Item = (&'a str, &'a crate::ToolCommands)>,
) -> Vec<(usize, String)> {
    let tools: Vec<(&str, &crate::ToolCommands)> = tools.into_iter().collect();
    let mut out = Vec::new();
    if steps.first() != Some(&ProtocolStep::Source) {
        out.push((
            0,
            "a protocol starts with `source` (the tool cycle's pristine source tree)".to_string(),
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    let mut made: Vec<&str> = Vec::new();
    let mut restored = false;
    // A missing command is said once per tool, at the first step running it.
    let mut missing = std::collections::BTreeSet::new();
    for (i, step) in steps.iter().enumerate() {
        let mut problem = |m: String| out.push((i, m));
        let name = step.name();
        if !names.insert(name.clone()) {
            problem(format!(
                "two steps are called {name}: give one a `name:` (records and reports tell steps apart by name)"
            ));
        }
        match step {
            ProtocolStep::Source if i > 0 => problem("`source` comes once, first".into()),
            ProtocolStep::Source => {}
            ProtocolStep::Fixture => {}
            ProtocolStep::Change { .. } => {}
            ProtocolStep::Verify { .. } => {
                if !std::mem::take(&mut restored) {
                    problem("`verify` checks what a restore put in {target}: it follows a step with `restores:`".into());
                }
            }
            ProtocolStep::Run(r) => {
                if [Step::GENERATE, Step::CHANGE, Step::FIXTURE].contains(&r.name) {
                    problem(format!(
                        "{} is the name of an agent step: name this one otherwise",
                        r.name
                    ));
                }
                if let Some(label) = r.makes.as_deref() {
                    if made.contains(&label) {
                        problem(format!(
                            "snapshot {label} is made twice: give each backup its own label"
                        ));
                    }
                    made.push(label);
                }
                for label in [&r.restores, &r.snapshot].into_iter().flatten() {
                    if !made.contains(&label.as_str()) {
                        problem(format!(
                            "uses snapshot {label}, which no earlier step `makes:` (made so far: {})",
                            if made.is_empty() {
                                "none".to_string()
                            } else {
                                made.join(", ")
                            }
                        ));
                    }
                }
                restored |= r.restores.is_some();
                for &(tool, commands) in &tools {
                    match commands.get(&r.command) {
                        None if r.optional => {}
                        None if !missing.insert((tool, r.command.as_str())) => {}
                        None => problem(format!(
                            "runs `{}`, which tool {} has no command for: add `commands.{}` to it, or mark the step `optional: true`",
                            r.command, tool, r.command
                        )),
                        Some(c)
                            if r.snapshot_label().is_none()
                                && (c
                                    .argv
                                    .iter()
                                    .chain(c.cwd.iter())
                                    .any(|a| a.contains("{snapshot}"))) =>
                        {
                            problem(format!(
                                "runs {}'s `{}`, which uses {{snapshot}}, but names no snapshot: add `makes:`, `restores:` or `snapshot:`",
                                tool, r.command
                            ))
                        }
                        Some(_) => {}
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<ProtocolStep, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn the_published_cycle_round_trips() {
        let json = serde_json::to_string(&published()).unwrap();
        let back: Vec<ProtocolStep> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, published());
        let names: Vec<String> = published().iter().map(|s| s.name().to_string()).collect();
        assert_eq!(
            names,
            [
                "generate",
                "init",
                "backup_full",
                "change",
                "backup_incremental",
                "restore",
                "verify"
            ]
        );
    }

    #[test]
    fn a_step_labrun_never_saw() {
        let s = parse(r#"{"run":"stats","repo_size":false}"#).unwrap();
        let r = s.as_run().unwrap();
        assert_eq!(r.name, Step::named("stats"));
        assert!(r.timed && r.drop_cache && !r.repo_size);
        let s = parse(r#"{"run":"check","name":"check_untimed","timed":false}"#).unwrap();
        assert!(!s.timed() && !s.as_run().unwrap().drop_cache);
    }

    #[test]
    fn mistakes_are_named() {
        for (json, says) in [
            (r#""prune""#, "{run: prune}"),
            (r#""generate""#, "written `source`"),
            (r#"{"run":"x","do":"verify"}"#, "not both"),
            (r#"{"makes":"s1"}"#, "needs `run"),
            (r#"{"do":"change","timed":true}"#, "takes only a `name`"),
            (r#"{"do":"source","name":"x"}"#, "takes no name"),
            (r#"{"run":"b","makes":"s1","restores":"s1"}"#, "exclude"),
            (r#"{"run":"b","kill_after_secs":0}"#, "above 0"),
            (r#"{"run":"Check"}"#, "a-z"),
        ] {
            let e = parse(json).unwrap_err();
            assert!(e.contains(says), "{json}: {e}");
        }
    }
}
