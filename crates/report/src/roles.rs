//! Which steps of a tool cycle the headline results are: read from what the
//! plan says each step does (`makes:` a snapshot, `restores:` one), never
//! from what the steps are called. A lab whose backups are `b1` and `b2`
//! gets the same Results table as the published cycle.

use crate::evidence::PlanView;
use labrun_evidence::Step;
use labrun_evidence::protocol::{self, ProtocolStep};
use serde::{Deserialize, Serialize};

/// The steps the Results table shows side by side. A role the protocol has
/// no step for is None (its cells are empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    /// The first backup: the first step that makes a snapshot, into the
    /// empty repository `init` made. The repository size after it is the
    /// "size after full".
    pub full: Option<Step>,
    /// The first later backup (the next step that makes a snapshot, of the
    /// changed tree): the growth is the size after it minus after `full`.
    pub incremental: Option<Step>,
    /// The first step that restores a snapshot.
    pub restore: Option<Step>,
    /// Every step that makes a snapshot, in protocol order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backups: Vec<Step>,
    /// Every step that restores one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restores: Vec<Step>,
    /// Every step that checks a restore against its snapshot's tree (the
    /// agent's `verify`, whatever the lab named it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verifies: Vec<Step>,
}

impl Default for Roles {
    /// Those of the published cycle: what evidence without a protocol ran.
    fn default() -> Self {
        Roles::of_protocol(&protocol::published())
    }
}

impl Roles {
    /// The roles a protocol's steps play.
    pub fn of_protocol(steps: &[ProtocolStep]) -> Roles {
        let mut backups: Vec<Step> = Vec::new();
        let mut restores: Vec<Step> = Vec::new();
        let mut verifies: Vec<Step> = Vec::new();
        for s in protocol::flat(steps) {
            if let ProtocolStep::Verify { name } = s
                && !verifies.contains(name)
            {
                verifies.push(name.clone());
            }
        }
        for r in protocol::flat(steps).filter_map(ProtocolStep::as_run) {
            let into = if r.makes.is_some() {
                &mut backups
            } else if r.restores.is_some() {
                &mut restores
            } else {
                continue;
            };
            if !into.contains(&r.name) {
                into.push(r.name.clone());
            }
        }
        Roles {
            full: backups.first().cloned(),
            incremental: backups.get(1).cloned(),
            restore: restores.first().cloned(),
            backups,
            restores,
            verifies,
        }
    }

    /// The roles of a run's plan; a plan from before the protocol was data
    /// (or none at all) ran the published cycle.
    pub fn of_plan(plan: Option<&PlanView>) -> Roles {
        match plan.and_then(|p| p.protocol.as_deref()) {
            Some(steps) => Roles::of_protocol(steps),
            None => Roles::default(),
        }
    }

    /// Whether these are the published cycle's (then `summary.json` need
    /// not say them).
    pub fn is_published(&self) -> bool {
        *self == Roles::default()
    }

    /// The three headline phases: full backup, incremental, restore.
    pub fn headline(&self) -> [Option<&Step>; 3] {
        [
            self.full.as_ref(),
            self.incremental.as_ref(),
            self.restore.as_ref(),
        ]
    }

    pub fn is_backup(&self, step: &Step) -> bool {
        self.backups.contains(step)
    }

    pub fn is_restore(&self, step: &Step) -> bool {
        self.restores.contains(step)
    }

    pub fn is_verify(&self, step: &Step) -> bool {
        self.verifies.contains(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_evidence::RunStep;

    #[test]
    fn the_published_cycle() {
        let r = Roles::default();
        assert_eq!(
            r.headline(),
            [
                Some(&Step::BACKUP_FULL),
                Some(&Step::BACKUP_INCREMENTAL),
                Some(&Step::RESTORE)
            ]
        );
        assert!(r.is_published());
    }

    #[test]
    fn roles_come_from_makes_and_restores_not_names() {
        let run = |name: &str, command: &str| RunStep::new(Step::named(name), command);
        let steps = vec![
            ProtocolStep::Source,
            ProtocolStep::Run(run("setup", "init")),
            ProtocolStep::Run(RunStep {
                makes: Some("a".into()),
                ..run("b1", "backup")
            }),
            ProtocolStep::Change { name: Step::CHANGE },
            ProtocolStep::Run(RunStep {
                makes: Some("b".into()),
                ..run("b2", "backup")
            }),
            ProtocolStep::Run(RunStep {
                makes: Some("c".into()),
                ..run("b3", "backup")
            }),
            ProtocolStep::Run(RunStep {
                restores: Some("b".into()),
                ..run("r1", "restore")
            }),
            // Works on a snapshot, but neither makes nor restores one.
            ProtocolStep::Run(RunStep {
                snapshot: Some("a".into()),
                ..run("backup_full", "forget")
            }),
            ProtocolStep::Verify {
                name: Step::named("v1"),
            },
        ];
        let r = Roles::of_protocol(&steps);
        assert_eq!(
            r.headline(),
            [
                Some(&Step::named("b1")),
                Some(&Step::named("b2")),
                Some(&Step::named("r1"))
            ]
        );
        assert_eq!(r.backups.len(), 3);
        assert!(!r.is_backup(&Step::BACKUP_FULL), "a name is not a role");
        assert!(r.is_verify(&Step::named("v1")) && !r.is_verify(&Step::VERIFY));
        assert!(!r.is_published());
    }
}
