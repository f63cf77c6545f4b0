//! Which runs compare: two runs share a group when `labrun compare` finds
//! no difference of dataset, protocol or machine between them (its own
//! rules, [`crate::compare::dataset_differences`] and
//! [`crate::compare::machine_differences`]). Each run is held against the
//! first run of each group so far, so a run joins at most one group; a group
//! of one gets no letter.

use super::entry::Opened;

pub(super) fn assign(runs: &mut [Opened]) {
    // Per group, the index of its first run and its members.
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for i in 0..runs.len() {
        if runs[i].evidence_dir.is_none() {
            continue;
        }
        let joined = groups
            .iter_mut()
            .find(|(first, _)| comparable(&runs[*first], &runs[i]));
        match joined {
            Some((_, members)) => members.push(i),
            None => groups.push((i, vec![i])),
        }
    }
    let shared = groups.iter().filter(|(_, m)| m.len() > 1);
    for (n, (_, members)) in shared.enumerate() {
        let letter = group_name(n);
        for &m in members {
            runs[m].entry.group = Some(letter.clone());
        }
    }
}

fn comparable(a: &Opened, b: &Opened) -> bool {
    let (Some(a_dir), Some(b_dir)) = (&a.evidence_dir, &b.evidence_dir) else {
        return false;
    };
    crate::compare::machine_differences(a.environment.as_ref(), b.environment.as_ref()).is_empty()
        && crate::compare::dataset_differences(a_dir, a.plan.as_ref(), b_dir, b.plan.as_ref())
            .is_empty()
}

/// A, B, ..., Z, AA, AB, ...
fn group_name(mut n: usize) -> String {
    let mut name = Vec::new();
    loop {
        name.push(b'A' + (n % 26) as u8);
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    name.reverse();
    String::from_utf8_lossy(&name).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_letters_then_pairs() {
        assert_eq!(group_name(0), "A");
        assert_eq!(group_name(25), "Z");
        assert_eq!(group_name(26), "AA");
        assert_eq!(group_name(27), "AB");
    }
}
