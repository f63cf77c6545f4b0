//! What the run keeps going beside its steps: the cgroups of timed steps,
//! the storage network and server, the store of datasets kept between
//! rounds, the removals in the background and the tools' version commands.

use super::Halt;
use super::context::Context;
use super::tally::{Tally, removal_warning};
use crate::run::background::Background;
use crate::run::cgroup::Cgroups;
use crate::run::dataset_store::DatasetStore;
use crate::run::placeholders::RepoLocation;
use crate::run::remove::remove_trees;
use crate::run::storage::{self, Storage, StorageError};
use crate::run::tool_versions::{self, VersionProbe};
use labrun_evidence::{DatasetPlan, Plan};
use std::path::{Path, PathBuf};

pub(super) struct Services {
    /// Where timed steps' cgroups are made (or why they cannot be).
    pub cgroups: Cgroups,
    /// The storage network and server, while up (the plan's `storage`).
    storage: Option<Storage>,
    /// Datasets kept between the rounds of an interleaved run (the plan's
    /// `round`).
    pub datasets: Option<DatasetStore>,
    /// Removals going on beside untimed work; settled before every timed
    /// step (and every cache drop).
    background: Background,
    /// The tools' version commands, from the dataset's generation until the
    /// first timed step (or the run's end) collects them.
    versions: Option<VersionProbe>,
}

impl Services {
    pub fn new(datasets: Option<DatasetStore>) -> Services {
        Services {
            cgroups: Cgroups::open(),
            storage: None,
            datasets,
            background: Background::default(),
            versions: None,
        }
    }

    /// Before any step: the plan's storage network and server up, what was
    /// measured of them in `storage.json`.
    pub fn start_storage(
        &mut self,
        ctx: &Context,
        root: &Path,
        tally: &mut Tally,
    ) -> Result<(), Halt> {
        let Some(spec) = storage::wanted(ctx.plan) else {
            return Ok(());
        };
        let logs = tally
            .ev
            .path_of(&format!("{}/storage", labrun_evidence::files::LOGS_DIR));
        match Storage::start(spec, root, &logs, &ctx.interrupt) {
            Ok((up, record)) => {
                self.storage = Some(up);
                tally.ev.write_storage(&record)?;
                if let Some(w) = storage::probe::rtt_warning(spec.network.as_ref(), &record) {
                    tally.warn_once(w)?;
                }
                Ok(())
            }
            Err(StorageError::Interrupted(signal)) => Err(Halt::Signal(signal)),
            Err(e) => Err(Halt::Fatal(e.into())),
        }
    }

    /// The storage server stopped and its network removed (if they are up);
    /// what could not be undone is a warning.
    pub fn stop_storage(&mut self, tally: &mut Tally) {
        let Some(mut up) = self.storage.take() else {
            return;
        };
        for warning in up.stop() {
            let _ = tally.warn_once(warning);
        }
    }

    /// Where a tool reaches the repository folder `folder`: through the
    /// storage server while one is up, else here.
    pub fn location(&self, folder: &Path) -> RepoLocation {
        match &self.storage {
            Some(storage) => storage.location(folder),
            None => storage::local_location(folder),
        }
    }

    /// Removes `trees` on another thread, after the background jobs before
    /// it; the next timed step waits for it.
    pub fn remove_in_background(&mut self, trees: Vec<PathBuf>, tally: &mut Tally) {
        if trees.is_empty() {
            return;
        }
        let warnings = self.background.spawn("remove", move || {
            removal_warning(&remove_trees(&trees)).into_iter().collect()
        });
        for w in warnings {
            let _ = tally.warn_once(w);
        }
    }

    /// The tools' version commands asked now, collected by
    /// [`Services::collect_versions`].
    pub fn ask_versions(&mut self, plan: &Plan, tally: &Tally) {
        self.versions = Some(VersionProbe::start(plan, &tally.ev));
    }

    /// Waits for the tools' version commands, if they are still asked,
    /// and writes what they said. A run stopped before its first timed step
    /// kills them instead (`VersionProbe`'s drop) and has no versions.
    pub fn collect_versions(&mut self, tally: &mut Tally) -> Result<(), Halt> {
        if let Some(probe) = self.versions.take() {
            tally
                .ev
                .write_tool_versions(&probe.collect(tool_versions::DEADLINE))?;
        }
        Ok(())
    }

    /// Waits for what runs in the background; gives its warnings.
    pub fn settle_background(&mut self, tally: &mut Tally) -> Result<(), Halt> {
        for w in self.background.settle() {
            tally.warn_once(w)?;
        }
        Ok(())
    }

    /// Whether this run's dataset goes into the store at its end.
    pub fn keeps_dataset(&self, plan: &Plan) -> bool {
        self.datasets.is_some()
            && plan.round.as_ref().is_some_and(|r| r.keep_dataset)
            && matches!(plan.dataset, DatasetPlan::Synthetic { .. })
    }
}
