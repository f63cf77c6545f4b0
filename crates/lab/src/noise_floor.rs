//! `noise_floor: {tool: restic}`: the machine's noise, measured in the run
//! itself. The lab gains an A/A copy of the tool (the same artifact, install
//! path, environment, commands and arguments under a second name,
//! `restic@aa`), run interleaved in every cycle like any tool, and the
//! implicit compare pair (`restic` against `restic@aa`). Their ratio's
//! interval is the floor the report reads every other verdict against:
//! two copies of one binary differ by noise alone.
//!
//! The lab keeps what was written apart from what it adds: `validate()`
//! and a variant's overrides see the lab as written, and the copy is added
//! after them ([`Lab::add_noise_floor`]), so a variant that tunes `restic`
//! tunes its copy too.

use crate::error::Problem;
use crate::schema::{CompareSpec, Lab};
use labrun_evidence::compare::ComparePair;
use serde::Deserialize;
use std::borrow::Cow;

/// The tool whose A/A copy measures the floor.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoiseFloorSpec {
    /// A tool of this lab (`restic`, `restic@0.14.0`).
    pub tool: String,
}

impl NoiseFloorSpec {
    /// The copy's name: `restic@aa`, or `restic@0.14.0-aa` for a tool that
    /// is already a variant (a name holds one `@`).
    pub fn copy_name(&self) -> String {
        match self.tool.split_once('@') {
            Some(_) => format!("{}-aa", self.tool),
            None => format!("{}@aa", self.tool),
        }
    }

    /// The implicit pair: the tool as baseline, its copy as candidate.
    pub fn pair(&self) -> ComparePair {
        ComparePair::of(self.tool.clone(), self.copy_name())
    }
}

/// Whether the floor's copy and pair are in the lab yet, and so what
/// [`Lab::as_written`] takes out again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FloorState {
    #[default]
    AsWritten,
    Added {
        /// The lab had no `compare:`: the floor's pair made one.
        made_compare: bool,
    },
}

impl Lab {
    /// The floor's A/A pair, once its copy is among the tools (after
    /// loading; not in a variant that left the tool out).
    pub fn noise_floor_pair(&self) -> Option<ComparePair> {
        let spec = self.noise_floor.as_ref()?;
        let copy = spec.copy_name();
        self.tools
            .iter()
            .any(|t| t.name == copy)
            .then(|| spec.pair())
    }

    /// Adds the copy right after its tool and the pair after the lab's own
    /// pairs. Nothing when there is no `noise_floor:`, when it is added
    /// already, or when the tool is not in the lab (`validate()` says why,
    /// or a variant left it out).
    pub(crate) fn add_noise_floor(&mut self) {
        if self.floor_state != FloorState::AsWritten {
            return;
        }
        let Some(spec) = self.noise_floor.clone() else {
            return;
        };
        let Some(at) = self.tools.iter().position(|t| t.name == spec.tool) else {
            return;
        };
        let mut copy = self.tools[at].clone();
        copy.name = spec.copy_name();
        // The very file the tool runs, not a second install of it.
        copy.install = Some(self.tools[at].install_path());
        self.tools.insert(at + 1, copy);
        let made_compare = self.compare.is_none();
        let compare = self.compare.get_or_insert_with(|| CompareSpec {
            margin: None,
            pairs: Vec::new(),
            noise_floor: None,
        });
        compare.pairs.push(spec.pair());
        compare.noise_floor = Some(spec.pair());
        self.floor_state = FloorState::Added { made_compare };
    }

    /// The lab without what [`Lab::add_noise_floor`] added: what the
    /// checks and a variant's overrides apply to.
    pub(crate) fn as_written(&self) -> Cow<'_, Lab> {
        let FloorState::Added { made_compare } = self.floor_state else {
            return Cow::Borrowed(self);
        };
        let mut lab = self.clone();
        lab.floor_state = FloorState::AsWritten;
        if let Some(spec) = &self.noise_floor {
            let copy = spec.copy_name();
            lab.tools.retain(|t| t.name != copy);
        }
        if made_compare {
            lab.compare = None;
        } else if let Some(c) = &mut lab.compare
            && let Some(pair) = c.noise_floor.take()
        {
            c.pairs.retain(|p| *p != pair);
        }
        Cow::Owned(lab)
    }

    /// The tool exists, and its copy's name is a usable tool name that no
    /// tool of the lab has already.
    pub(crate) fn validate_noise_floor(&self, out: &mut Vec<Problem>) {
        let Some(spec) = &self.noise_floor else {
            return;
        };
        let names = self.tool_names_as_run();
        let known: Vec<&str> = names.iter().map(String::as_str).collect();
        if !known.contains(&spec.tool.as_str()) {
            let hint = crate::suggest::nearest(&spec.tool, known.iter().copied())
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            out.push(Problem::new(
                "noise_floor.tool",
                format!(
                    "the lab has no tool `{}`{hint}; its tools: {}",
                    spec.tool,
                    known.join(", ")
                ),
            ));
            return;
        }
        let copy = spec.copy_name();
        if !labrun_evidence::variant::is_tool_name(&copy) {
            out.push(Problem::new(
                "noise_floor.tool",
                format!("the A/A copy's name `{copy}` is not a usable tool name (at most 64 characters a part): shorten the tool's name"),
            ));
        }
        if known.contains(&copy.as_str()) {
            out.push(Problem::new(
                "noise_floor.tool",
                format!("the noise floor adds the A/A copy `{copy}` itself, but a tool of that name is written already: remove that tool (and any pair naming it)"),
            ));
        }
        // On S3 a tool cycle's folder is a bucket, which cannot hold `@`.
        if self.storage.server == labrun_evidence::Server::S3 {
            out.push(Problem::new(
                "noise_floor",
                format!("on S3 storage a tool's name names a bucket, and the copy `{copy}` has an `@`: measure the floor on another storage, or write the copy as a tool of its own"),
            ));
        }
    }
}
