//! The round trip as the tools will see it: TCP connects from the client
//! end to the server's port, each timed (a connect takes one round trip:
//! SYN out, SYN-ACK back).

use labrun_evidence::{Network, StorageRecord};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

pub const CONNECTS: usize = 5;
/// Below this share of the round trip asked for, the shaping did not hold.
const LEAST_SHARE: f64 = 0.8;

/// Milliseconds of each of `n` connects (a failed one is left out).
pub fn connect_rtts(address: SocketAddr, n: usize) -> Vec<f64> {
    (0..n)
        .filter_map(|_| {
            let start = Instant::now();
            let stream = TcpStream::connect_timeout(&address, Duration::from_secs(10)).ok()?;
            let ms = start.elapsed().as_secs_f64() * 1000.0;
            drop(stream);
            Some(ms)
        })
        .collect()
}

/// The warning when the measured round trip is far below the one asked for
/// (or could not be measured at all).
pub fn rtt_warning(network: Option<&Network>, record: &StorageRecord) -> Option<String> {
    let Some(median) = record.median_rtt_ms() else {
        return Some(format!(
            "the storage server at {} took no test connection: the round trip is not known",
            record.address
        ));
    };
    let asked = network?.rtt_ms;
    (median < LEAST_SHARE * asked).then(|| {
        format!(
            "the storage network's round trip measured {median:.2} ms (median of {} connects), below the {asked} ms the lab asks for: the shaping did not take effect as planned",
            record.connect_rtt_ms.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use labrun_evidence::Server;

    fn record(rtts: Vec<f64>) -> StorageRecord {
        StorageRecord {
            server: Server::Sftp,
            network: None,
            address: "10.250.0.2:22".into(),
            connect_rtt_ms: rtts,
            qdiscs: vec![],
            server_version: None,
        }
    }

    #[test]
    fn warns_only_when_far_below_the_plan() {
        let n = Network {
            rtt_ms: 50.0,
            rate_bits_per_sec: None,
        };
        assert_eq!(rtt_warning(Some(&n), &record(vec![49.0, 50.3, 51.0])), None);
        assert_eq!(rtt_warning(Some(&n), &record(vec![40.0, 41.0, 60.0])), None);
        let w = rtt_warning(Some(&n), &record(vec![0.1, 0.2, 39.0])).unwrap();
        assert!(w.contains("0.20 ms") && w.contains("50 ms"), "{w}");
        assert_eq!(rtt_warning(None, &record(vec![0.1])), None);
        assert!(
            rtt_warning(None, &record(vec![]))
                .unwrap()
                .contains("not known")
        );
    }
}
