//! What one `labrun bench` needs, in one value: the command line turned
//! into a request, so nothing below the command reads its arguments (or
//! imports from it). Bringing a VM up and taking it down are `labrun up`'s
//! and `labrun down`'s work: the command hands them in as [`Machines`].

use crate::context::Context;
use futures::future::LocalBoxFuture;
use labrun_lab::{Lab, PlanOverrides};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone)]
pub struct BenchRequest {
    /// The global options (lab file, cache, state, `--host`).
    pub ctx: Context,
    /// What the command line changes for every lab (or variant) it runs.
    pub overrides: PlanOverrides,
    /// Where run folders are written.
    pub results: PathBuf,
    /// The static guest agent to push, when named (`--agent`).
    pub agent: Option<PathBuf>,
    /// `--until-conclusive N`.
    pub until_conclusive: Option<u32>,
    /// How a variant's VM is brought up in its shape and taken down.
    pub machines: &'static dyn Machines,
}

impl BenchRequest {
    /// The tools `--tools` names (all when `None`): the ones `up` installs.
    pub fn tools(&self) -> Option<&[String]> {
        self.overrides.tools.as_deref()
    }

    /// The same request on another context (a pool host, the host a run
    /// being attached to is on).
    pub fn on(&self, ctx: Context) -> BenchRequest {
        BenchRequest {
            ctx,
            ..self.clone()
        }
    }
}

/// A lab's VM brought up (with `tools` installed) or taken down.
pub trait Machines {
    fn up<'a>(
        &'a self,
        ctx: &'a Context,
        lab: &'a Lab,
        tools: Option<&'a [String]>,
    ) -> LocalBoxFuture<'a, anyhow::Result<ExitCode>>;
    fn down<'a>(&'a self, ctx: &'a Context) -> LocalBoxFuture<'a, anyhow::Result<()>>;
}
