//! The two bounds of an unpack, counted in one place: entries, and file
//! bytes as each entry declares them (a sparse or huge declared size counts
//! in full), checked before the entry is written, so an archive bomb stops
//! at the first entry that crosses a bound.

use super::{Fault, UnpackLimits};
use crate::error::UnpackBound;

#[derive(Debug, Clone)]
pub(super) struct Budget {
    limits: UnpackLimits,
    bytes: u64,
    entries: u64,
}

impl Budget {
    pub fn new(limits: UnpackLimits) -> Budget {
        Budget {
            limits,
            bytes: 0,
            entries: 0,
        }
    }

    /// One more entry of any kind (folders, links and skipped specials too).
    pub fn add_entry(&mut self) -> Result<(), Fault> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            return Err(Fault::TooLarge(UnpackBound::Entries(
                self.limits.max_entries,
            )));
        }
        Ok(())
    }

    /// A file's declared size, before any of it is written.
    pub fn add_bytes(&mut self, declared: u64) -> Result<(), Fault> {
        self.bytes = self.bytes.saturating_add(declared);
        if self.bytes > self.limits.max_bytes {
            return Err(Fault::TooLarge(UnpackBound::Bytes(self.limits.max_bytes)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_is_crossed_by_the_entry_that_passes_it() {
        let mut b = Budget::new(UnpackLimits {
            max_bytes: 10,
            max_entries: 2,
        });
        assert!(b.add_entry().is_ok() && b.add_entry().is_ok());
        assert!(matches!(
            b.add_entry(),
            Err(Fault::TooLarge(UnpackBound::Entries(2)))
        ));
        assert!(b.add_bytes(10).is_ok());
        assert!(matches!(
            b.add_bytes(1),
            Err(Fault::TooLarge(UnpackBound::Bytes(10)))
        ));
        let mut huge = Budget::new(UnpackLimits {
            max_bytes: u64::MAX - 1,
            max_entries: 1,
        });
        assert!(huge.add_bytes(u64::MAX - 1).is_ok());
        assert!(huge.add_bytes(u64::MAX).is_err());
    }
}
