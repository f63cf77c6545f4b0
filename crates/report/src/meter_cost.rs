//! What measuring cost: the agent's own CPU while the timed steps ran (it
//! waits for the tool and samples the tree), set against the steps' own.
//!
//! A step's share is the agent's CPU over the larger of the step's tree
//! CPU and its wall time (a step that mostly waits on the disk still gives
//! the agent a second per second to spend). The run's share adds the
//! agent's CPU over every timed step and divides by the sum of those bases.

use crate::format::step_name;
use labrun_evidence::StepRecord;
use serde::{Deserialize, Serialize};

/// A share at or above this is warned about (issue 12's limit).
pub const LIMIT: f64 = 0.01;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeterCost {
    /// Timed steps with tree figures the shares are made of.
    pub steps: usize,
    /// The agent's CPU over all of them, seconds.
    pub agent_cpu_secs: f64,
    /// The sampler's part of it, where the agent measured it.
    pub sampler_cpu_secs: Option<f64>,
    /// `agent_cpu_secs` over the steps' CPU (or wall time, if larger).
    pub share: f64,
    /// The sampler's share, on the same base.
    pub sampler_share: Option<f64>,
    /// The step with the largest share, and that share.
    pub worst_step: String,
    pub worst_share: f64,
    /// Steps at or above [`LIMIT`], with their shares.
    pub over_limit: Vec<(String, f64)>,
}

/// None when no timed step has tree figures (an old agent, no cgroup v2).
pub fn of(records: &[StepRecord]) -> Option<MeterCost> {
    let mut steps = 0;
    let (mut agent, mut base) = (0.0, 0.0);
    let mut sampler: Option<f64> = Some(0.0);
    let mut worst = (String::new(), -1.0);
    let mut over_limit = Vec::new();
    for r in records.iter().filter(|r| r.timed) {
        let (Some(t), Some(tree_cpu)) = (r.tree.as_ref(), crate::figures::TREE_CPU.of(r)) else {
            continue;
        };
        let step_base = tree_cpu.max(r.wall_secs).max(1e-9);
        let share = t.agent_cpu_secs / step_base;
        steps += 1;
        agent += t.agent_cpu_secs;
        base += step_base;
        sampler = sampler.zip(t.sampler_cpu_secs).map(|(a, b)| a + b);
        if share > worst.1 {
            worst = (step_name(r), share);
        }
        if share >= LIMIT {
            over_limit.push((step_name(r), share));
        }
    }
    (steps > 0).then(|| MeterCost {
        steps,
        agent_cpu_secs: agent,
        sampler_cpu_secs: sampler,
        share: agent / base,
        sampler_share: sampler.map(|s| s / base),
        worst_step: worst.0,
        worst_share: worst.1,
        over_limit,
    })
}

impl MeterCost {
    /// One sentence for a summary.
    pub fn sentence(&self) -> String {
        let sampling = match self.sampler_share {
            Some(s) => format!(" (sampling the tree: {})", percent(s)),
            None => String::new(),
        };
        format!(
            "the agent's own CPU while the {} timed steps ran was {} of theirs{sampling}; \
             the most in one step {} ({})",
            self.steps,
            percent(self.share),
            percent(self.worst_share),
            self.worst_step
        )
    }
}

pub fn percent(share: f64) -> String {
    format!("{:.2}%", share * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_evidence::{Step, TreeMeters};

    fn step(tool: &str, wall: f64, cpu: f64, agent: f64, sampler: Option<f64>) -> StepRecord {
        StepRecord {
            ok: true,
            timed: true,
            wall_secs: wall,
            tree: Some(TreeMeters {
                user_secs: Some(cpu),
                sys_secs: Some(0.0),
                agent_cpu_secs: agent,
                sampler_cpu_secs: sampler,
                ..TreeMeters::default()
            }),
            ..StepRecord::blank("r", tool, 1, Step::BACKUP_FULL, 0)
        }
    }

    #[test]
    fn shares_are_over_the_larger_of_cpu_and_wall() {
        let records = [
            // 4 s of CPU in 1 s of wall (4 CPUs): base 4 s.
            step("kopia", 1.0, 4.0, 0.02, Some(0.01)),
            // 0.5 s of CPU in 10 s of wall: base 10 s.
            step("borg", 10.0, 0.5, 0.2, Some(0.15)),
        ];
        let cost = of(&records).unwrap();
        assert_eq!(cost.steps, 2);
        assert!((cost.share - 0.22 / 14.0).abs() < 1e-12);
        assert!((cost.sampler_share.unwrap() - 0.16 / 14.0).abs() < 1e-12);
        assert_eq!(cost.worst_step, "borg cycle 1 backup_full");
        assert!((cost.worst_share - 0.02).abs() < 1e-12);
        assert_eq!(cost.over_limit.len(), 1);
        let s = cost.sentence();
        assert!(
            s.contains("1.57% of theirs (sampling the tree: 1.14%)"),
            "{s}"
        );
    }

    #[test]
    fn an_agent_that_did_not_time_its_sampler_gives_no_sampler_share() {
        let records = [
            step("a", 1.0, 1.0, 0.001, Some(0.0005)),
            step("b", 1.0, 1.0, 0.001, None),
        ];
        let cost = of(&records).unwrap();
        assert_eq!(cost.sampler_share, None);
        assert!(!cost.sentence().contains("sampling"));
    }

    #[test]
    fn no_tree_figures_no_cost() {
        let mut r = step("a", 1.0, 1.0, 0.1, None);
        r.tree = None;
        assert_eq!(of(&[r]), None);
    }
}
