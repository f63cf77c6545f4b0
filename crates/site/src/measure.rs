//! What the site charts, as data: a step's role in the run's protocol and
//! a figure of compare's. A new trend chart is one more entry in
//! [`MEASURES`].

use crate::load::SiteRun;
use labrun_evidence::Step;
use labrun_report::Stat;
use labrun_report::compare::{Figure, FigureDef as _};
use labrun_report::roles::Roles;

/// Which step of a run's protocol: found by its role ([`Roles`]), so labs
/// that name their steps differently still line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    FullBackup,
    IncrementalBackup,
    Restore,
}

impl Role {
    pub fn step(self, roles: &Roles) -> Option<&Step> {
        match self {
            Role::FullBackup => roles.full.as_ref(),
            Role::IncrementalBackup => roles.incremental.as_ref(),
            Role::Restore => roles.restore.as_ref(),
        }
    }
}

/// One chart of a tool's page.
#[derive(Debug)]
pub struct Measure {
    /// Plain words, used in anchors (`full-backup-wall-time`).
    pub id: &'static str,
    pub title: &'static str,
    pub role: Role,
    pub figure: Figure,
}

pub const MEASURES: [Measure; 4] = [
    Measure {
        id: "full-backup-wall-time",
        title: "full backup, wall time",
        role: Role::FullBackup,
        figure: Figure::WallTime,
    },
    Measure {
        id: "incremental-backup-wall-time",
        title: "incremental backup, wall time",
        role: Role::IncrementalBackup,
        figure: Figure::WallTime,
    },
    Measure {
        id: "restore-wall-time",
        title: "restore, wall time",
        role: Role::Restore,
        figure: Figure::WallTime,
    },
    Measure {
        id: "repository-size-after-full",
        title: "repository size after the full backup",
        role: Role::FullBackup,
        figure: Figure::RepoSize,
    },
];

impl Measure {
    pub fn unit(&self) -> labrun_report::figures::Unit {
        self.figure.def().unit
    }

    /// The step of `run` this measure reads.
    pub fn step<'a>(&self, run: &'a SiteRun) -> Option<&'a Step> {
        self.role.step(&run.summary.roles)
    }

    /// The report's own statistic (median, range over cycles) of `tool`'s
    /// successful measured cycles of the step: what its report page shows.
    pub fn stat(&self, run: &SiteRun, tool: &str) -> Option<Stat> {
        let step = self.step(run)?;
        let name = self.figure.def().name;
        Stat::of(
            run.summary
                .samples
                .iter()
                .filter(|s| {
                    s.metric == name
                        && s.metadata.tool == tool
                        && s.metadata.step == *step
                        && s.metadata.ok
                        && s.metadata.cycle > 0
                })
                .map(|s| s.value),
        )
    }
}
