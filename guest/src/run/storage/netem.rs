//! `tc netem` on both ends of the pair: half the round trip each way, the
//! rate each way, and a queue long enough for the bandwidth-delay product
//! (netem's default of 1000 packets drops at 100 Mbit/s and 270 ms).

use super::cmd::run;
use super::error::StorageError;
use super::netns::Namespace;
use labrun_evidence::Network;

/// The bytes of a full-size Ethernet packet, the unit of netem's queue.
const PACKET_BYTES: f64 = 1500.0;
/// netem's own default queue, the least we ask for.
const MIN_LIMIT: u64 = 1000;
/// What a veth pair carries at most, for the queue of an unlimited rate.
const UNLIMITED_BITS_PER_SEC: f64 = 10e9;

/// Packets the queue must hold: twice what is in flight over a whole round
/// trip at the rate (twice, so a burst or small packets do not overflow it).
pub fn limit_packets(network: &Network) -> u64 {
    let rate = network
        .rate_bits_per_sec
        .map_or(UNLIMITED_BITS_PER_SEC, |r| r as f64);
    let in_flight = rate * (network.rtt_ms.max(0.0) / 1000.0) / 8.0 / PACKET_BYTES;
    MIN_LIMIT.max((2.0 * in_flight).ceil() as u64)
}

/// `netem delay <rtt/2>ms [rate <bits>bit] limit <packets>`.
pub fn netem_args(network: &Network) -> Vec<String> {
    let mut args = vec![
        "netem".to_string(),
        "delay".into(),
        format!("{}ms", network.rtt_ms / 2.0),
    ];
    if let Some(rate) = network.rate_bits_per_sec {
        args.push("rate".into());
        args.push(format!("{rate}bit"));
    }
    args.push("limit".into());
    args.push(limit_packets(network).to_string());
    args
}

/// Shapes both ends; a kernel without netem is said as such.
pub fn apply(ns: &Namespace, network: &Network) -> Result<(), StorageError> {
    let netem = netem_args(network);
    let netem: Vec<&str> = netem.iter().map(String::as_str).collect();
    let client = [
        &["tc", "qdisc", "add", "dev", &ns.client_dev, "root"][..],
        &netem,
    ]
    .concat();
    let server = [
        &["ip", "netns", "exec", &ns.name][..],
        &["tc", "qdisc", "add", "dev", &ns.server_dev, "root"],
        &netem,
    ]
    .concat();
    for argv in [client, server] {
        run(&argv).map_err(|e| match e {
            StorageError::Command { message, .. } if message.contains("qdisc kind is unknown") => {
                StorageError::NetemMissing { message }
            }
            e => e,
        })?;
    }
    Ok(())
}

/// `tc qdisc show` of both ends, as printed, for the record.
pub fn show(ns: &Namespace) -> Vec<String> {
    let client = run(&["tc", "qdisc", "show", "dev", &ns.client_dev]);
    let server = run(&[
        "ip",
        "netns",
        "exec",
        &ns.name,
        "tc",
        "qdisc",
        "show",
        "dev",
        &ns.server_dev,
    ]);
    [client, server]
        .into_iter()
        .map(|r| match r {
            Ok(text) => text.trim().to_string(),
            Err(e) => e.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_holds_the_bandwidth_delay_product() {
        let slow_far = Network {
            rtt_ms: 270.0,
            rate_bits_per_sec: Some(100_000_000),
        };
        // 100e6 bit/s * 0.27 s = 27e6 bit = 3.375e6 bytes = 2250 packets.
        assert_eq!(limit_packets(&slow_far), 4500);
        let near = Network {
            rtt_ms: 1.0,
            rate_bits_per_sec: Some(10_000_000),
        };
        assert_eq!(limit_packets(&near), 1000, "never below netem's default");
        let unlimited = Network {
            rtt_ms: 20.0,
            rate_bits_per_sec: None,
        };
        // 10e9 * 0.02 / 8 / 1500 = 16_666.7 packets in flight.
        assert_eq!(limit_packets(&unlimited), 33_334);
    }

    #[test]
    fn half_the_round_trip_each_way() {
        let n = Network {
            rtt_ms: 25.0,
            rate_bits_per_sec: Some(100_000_000),
        };
        assert_eq!(
            netem_args(&n),
            [
                "netem",
                "delay",
                "12.5ms",
                "rate",
                "100000000bit",
                "limit",
                "1000"
            ]
        );
        let n = Network {
            rtt_ms: 270.0,
            rate_bits_per_sec: None,
        };
        assert_eq!(netem_args(&n)[..3], ["netem", "delay", "135ms"]);
        assert_eq!(netem_args(&n)[3], "limit");
    }
}
