//! How a protocol step is written in a lab (and a plan): a bare word for the
//! agent's own work, or a mapping: `run:` a tool command, `do:` the agent's
//! work with a name, or `each_commit:` a block of steps.

use super::{EachCommit, KillPoint, ProtocolStep, RunStep};
use crate::step::Step;
use serde::{Deserialize, Serialize};

/// The written form: a word, or a mapping with `run:` (a tool command) or
/// `do:` (the agent's work, when it needs a name).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(super) enum StepForm {
    Word(String),
    Map(Box<StepMap>),
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
                f.write_str("a step: `source`, `change`, `verify`, `commit`, {run: <command>, ...} or {each_commit: [...]}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StepForm, E> {
                Ok(StepForm::Word(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<StepForm, A::Error> {
                StepMap::deserialize(value::MapAccessDeserializer::new(map))
                    .map(|m| StepForm::Map(Box::new(m)))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StepMap {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    each_commit: Option<Vec<ProtocolStep>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<u32>,
    #[serde(default, rename = "do", skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    makes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    restores: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    over: Option<String>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kill_after: Option<KillFraction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    may_fail: Option<bool>,
}

/// `kill_after: {fraction: 0.5, of: backup_reference}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KillFraction {
    fraction: f64,
    of: String,
}

const AGENT_WORDS: &str = "`source`, `change`, `fixture`, `verify` or `commit`";

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
        "commit" => unnamed(ProtocolStep::Commit),
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
        if let Some(steps) = m.each_commit {
            return each_commit(
                steps,
                m.from,
                m.run.is_some() || m.agent.is_some() || m.name.is_some(),
            );
        }
        if m.from.is_some() {
            return Err(
                "`from:` belongs to an `each_commit:` block (the first commit it runs for)".into(),
            );
        }
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
                    && m.over.is_none()
                    && m.snapshot.is_none()
                    && m.timed.is_none()
                    && m.drop_cache.is_none()
                    && m.repo_size.is_none()
                    && m.optional.is_none()
                    && m.kill_after_secs.is_none()
                    && m.kill_after.is_none()
                    && m.may_fail.is_none();
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
                if m.over.is_some() && m.restores.is_none() {
                    return Err(format!(
                        "step {name}: `over:` names the older snapshot a restore goes over: add `restores:` with the snapshot it restores"
                    ));
                }
                let kill = kill_point(&name, m.kill_after_secs, m.kill_after)?;
                let timed = m.timed.unwrap_or(true);
                Ok(ProtocolStep::Run(RunStep {
                    name: Step::named(name),
                    command,
                    makes: m.makes,
                    restores: m.restores,
                    over: m.over,
                    snapshot: m.snapshot,
                    timed,
                    drop_cache: m.drop_cache.unwrap_or(timed),
                    repo_size: m.repo_size.unwrap_or(true),
                    optional: m.optional.unwrap_or(false),
                    kill,
                    may_fail: m.may_fail.unwrap_or(false),
                }))
            }
        }
    }
}

/// The latest kill point: the agent waits this long at most (and holds it
/// as a `Duration`, which cannot hold every float).
pub const MAX_KILL_AFTER_SECS: f64 = 604_800.0;

fn kill_point(
    name: &str,
    secs: Option<f64>,
    fraction: Option<KillFraction>,
) -> Result<Option<KillPoint>, String> {
    match (secs, fraction) {
        (Some(_), Some(_)) => Err(format!(
            "step {name}: `kill_after_secs` or `kill_after`, not both (one kill point)"
        )),
        (Some(secs), None) if !(secs.is_finite() && secs > 0.0) => Err(format!(
            "step {name}: kill_after_secs must be a number of seconds above 0, not {secs}"
        )),
        (Some(secs), None) if secs > MAX_KILL_AFTER_SECS => Err(format!(
            "step {name}: kill_after_secs must be at most {MAX_KILL_AFTER_SECS} (a week: no step runs that long; the step timeout is 2h by default), not {secs}"
        )),
        (Some(secs), None) => Ok(Some(KillPoint::AfterSecs(secs))),
        (None, Some(k)) if !(k.fraction > 0.0 && k.fraction < 1.0) => Err(format!(
            "step {name}: kill_after.fraction is a share of {}'s time, above 0 and below 1, not {}",
            k.of, k.fraction
        )),
        (None, Some(k)) => {
            Step::check_name(&k.of)?;
            Ok(Some(KillPoint::FractionOf {
                fraction: k.fraction,
                step: Step::named(k.of),
            }))
        }
        (None, None) => Ok(None),
    }
}

fn each_commit(
    steps: Vec<ProtocolStep>,
    from: Option<u32>,
    more: bool,
) -> Result<ProtocolStep, String> {
    if more {
        return Err("an `each_commit:` block is a list of steps (and `from:`), not a step itself: put `run:`/`do:`/`name:` on the steps inside it".into());
    }
    let from = from.unwrap_or(1);
    if from == 0 {
        return Err("`from:` counts commits from 1 (the series' first commit)".into());
    }
    Ok(ProtocolStep::EachCommit(EachCommit { from, steps }))
}

/// An agent step that may be named: the bare word under its default name,
/// `{do: word, name: ...}` otherwise.
fn agent_word(word: &str, name: Step, default: Step) -> StepForm {
    if name == default {
        return StepForm::Word(word.into());
    }
    StepForm::Map(Box::new(StepMap {
        agent: Some(word.into()),
        name: Some(name.to_string()),
        ..StepMap::default()
    }))
}

impl From<ProtocolStep> for StepForm {
    fn from(step: ProtocolStep) -> StepForm {
        match step {
            ProtocolStep::Source => StepForm::Word("source".into()),
            ProtocolStep::Change { name } => agent_word("change", name, Step::CHANGE),
            ProtocolStep::Fixture => StepForm::Word("fixture".into()),
            ProtocolStep::Commit => StepForm::Word("commit".into()),
            ProtocolStep::EachCommit(block) => StepForm::Map(Box::new(StepMap {
                each_commit: Some(block.steps),
                from: (block.from != 1).then_some(block.from),
                ..StepMap::default()
            })),
            ProtocolStep::Verify { name } => agent_word("verify", name, Step::VERIFY),
            ProtocolStep::Run(r) => StepForm::Map(Box::new(StepMap {
                name: (r.name.as_str() != r.command).then(|| r.name.to_string()),
                run: Some(r.command),
                makes: r.makes,
                restores: r.restores,
                over: r.over,
                snapshot: r.snapshot,
                timed: Some(r.timed),
                drop_cache: Some(r.drop_cache),
                repo_size: Some(r.repo_size),
                optional: r.optional.then_some(true),
                kill_after_secs: match &r.kill {
                    Some(KillPoint::AfterSecs(secs)) => Some(*secs),
                    _ => None,
                },
                kill_after: match r.kill {
                    Some(KillPoint::FractionOf { fraction, step }) => Some(KillFraction {
                        fraction,
                        of: step.to_string(),
                    }),
                    _ => None,
                },
                may_fail: r.may_fail.then_some(true),
                ..StepMap::default()
            })),
        }
    }
}
