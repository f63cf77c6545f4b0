//! libvirt and QEMU really take a disk profile: a transient domain made from
//! labrun's own XML writer is created paused (nothing boots: a throwaway
//! qcow2 and seed), `virsh blkdeviotune` reads the limits back from the
//! running QEMU, and the domain is destroyed. Needs root, libvirtd and QEMU
//! (`make test` runs `scripts/host-setup.sh` first). Whatever happens, the
//! domain and its files are gone at the end.

use labrun_vm::xml::{Boot, DomainSpec, LabrunMetadata, domain_xml};
use labrun_vm::{Acceleration, DiskCache, DiskProfile, IoTune};
use std::collections::BTreeMap;
use std::process::Command;

mod common;
use common::{Domain, unavailable, virsh};

fn domain_exists(name: &str) -> bool {
    String::from_utf8_lossy(&virsh(&["list", "--all", "--name"]).stdout)
        .lines()
        .any(|l| l.trim() == name)
}

/// `virsh blkdeviotune DOMAIN vda` as field -> value.
fn blkdeviotune(domain: &str) -> BTreeMap<String, u64> {
    let out = virsh(&["blkdeviotune", domain, "vda"]);
    assert!(
        out.status.success(),
        "virsh blkdeviotune: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

/// A loopback port nothing listens on (QEMU binds the SSH forward at start).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Creates the domain paused with `iotune`, reads the limits back.
fn applied(name: &str, iotune: IoTune) -> BTreeMap<String, u64> {
    // Under /var/tmp: libvirt's QEMU user must reach the files.
    let dir = tempfile::Builder::new()
        .prefix("labrun-iotune-test-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let overlay = dir.path().join("disk.qcow2");
    let seed = dir.path().join("seed.img");
    let made = Command::new("qemu-img")
        .args(["create", "-q", "-f", "qcow2"])
        .arg(&overlay)
        .arg("64M")
        .status()
        .unwrap();
    assert!(made.success(), "qemu-img create failed");
    std::fs::write(&seed, vec![0u8; 1 << 20]).unwrap();
    let spec = DomainSpec {
        name: name.to_string(),
        acceleration: Acceleration::Tcg,
        vcpus: 1,
        memory_mib: 128,
        boot: Boot::Disk,
        overlay,
        seed,
        console_log: dir.path().join("console.log"),
        ssh_port: free_port(),
        disk_cache: DiskCache::NoCache,
        iotune,
        pins: Default::default(),
        metadata: LabrunMetadata {
            lab_name: "iotune-test".into(),
            lab_path: "/nonexistent/iotune-test.yaml".into(),
            state_dir: dir.path().to_path_buf(),
            up_id: "test".into(),
            created: "2026-12-02T00:00:00Z".into(),
        },
    };
    let xml = dir.path().join("domain.xml");
    std::fs::write(&xml, domain_xml(&spec)).unwrap();
    let _domain = Domain(name.to_string());
    let out = virsh(&["create", "--paused", xml.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "virsh create --paused refused labrun's XML: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    blkdeviotune(name)
}

#[test]
#[ignore = "needs root, libvirt and QEMU: `make test` runs it"]
fn libvirt_applies_each_profile_to_the_running_qemu() {
    // Asked to run, it checks or fails: it never passes unrun.
    if let Some(why) = unavailable() {
        panic!("the iotune test cannot run on this machine: {why}");
    }
    let custom = IoTune {
        read_bytes_sec: Some(20_000_000),
        write_bytes_sec: Some(10_000_000),
        write_iops_sec: Some(300),
        ..IoTune::default()
    };
    for profile in [
        DiskProfile::Hdd,
        DiskProfile::Ssd,
        DiskProfile::Custom(custom),
        DiskProfile::Unthrottled,
    ] {
        let name = format!(
            "labrun-iotune-test-{}-{}",
            profile.name(),
            std::process::id()
        );
        let got = applied(&name, profile.iotune());
        assert!(!domain_exists(&name), "{name} was left behind");
        // Every field libvirt reports: the profile's value, 0 (no limit)
        // for the rest.
        let want = profile.iotune();
        for (field, value) in want.fields() {
            assert_eq!(
                got.get(field).copied(),
                Some(value.unwrap_or(0)),
                "{} {field}: libvirt reports {got:?}",
                profile.name()
            );
        }
    }
}
