//! The order tools run in within a cycle. Rotated, so that no tool always
//! runs first (on a fresh disk, with a cold host) or always last.

/// Tool indexes for 1-based `cycle`: cycle `c` starts at tool `(c-1) % n`
/// when `rotate`, otherwise every cycle runs the plan's order.
pub fn cycle_order(tools: usize, cycle: u32, rotate: bool) -> Vec<usize> {
    if tools == 0 {
        return Vec::new();
    }
    let start = if rotate {
        (cycle.saturating_sub(1) as usize) % tools
    } else {
        0
    };
    (0..tools).map(|i| (start + i) % tools).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_one_step_per_cycle() {
        assert_eq!(cycle_order(3, 1, true), vec![0, 1, 2]);
        assert_eq!(cycle_order(3, 2, true), vec![1, 2, 0]);
        assert_eq!(cycle_order(3, 3, true), vec![2, 0, 1]);
        assert_eq!(cycle_order(3, 4, true), vec![0, 1, 2]);
        assert_eq!(cycle_order(2, 2, true), vec![1, 0]);
    }

    #[test]
    fn fixed_order_and_edge_cases() {
        assert_eq!(cycle_order(3, 2, false), vec![0, 1, 2]);
        assert_eq!(cycle_order(1, 5, true), vec![0]);
        assert!(cycle_order(0, 1, true).is_empty());
    }

    #[test]
    fn every_tool_runs_first_once_over_n_cycles() {
        let n = 4;
        let mut firsts: Vec<usize> = (1..=n as u32).map(|c| cycle_order(n, c, true)[0]).collect();
        firsts.sort();
        assert_eq!(firsts, vec![0, 1, 2, 3]);
    }
}
