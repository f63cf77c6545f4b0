//! How a byte count is said to a user: one spelling for the lab's sizes and
//! the VM limits' messages.

/// `3GiB`, `512MiB`, `511.17MiB`, `1.5KiB`, `100B`: the largest binary unit
/// the value reaches, exact when it divides evenly.
pub fn human_bytes(bytes: u64) -> String {
    for (unit, mult) in [("TiB", 1u64 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)] {
        if bytes >= mult {
            return if bytes.is_multiple_of(mult) {
                format!("{}{unit}", bytes / mult)
            } else {
                format!("{:.2}{unit}", bytes as f64 / mult as f64)
            };
        }
    }
    if bytes >= 1 << 10 {
        return format!("{:.1}KiB", bytes as f64 / 1024.0);
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_binary_units_or_two_decimals() {
        assert_eq!(human_bytes(3 << 30), "3GiB");
        assert_eq!(human_bytes(4096 << 30), "4TiB");
        assert_eq!(human_bytes(536_000_000), "511.17MiB");
        assert_eq!(human_bytes(1536), "1.5KiB");
        assert_eq!(human_bytes(100), "100B");
    }
}
