//! The libvirt domain XML, as established by the hand-run trial in
//! `shared/notes/vm-on-this-host.md`: q35, direct kernel boot (a cloud image
//! boots its own bootloader), a virtio overlay disk, a read-only seed disk
//! (raw tar, or cloud-init NoCloud), the serial console to a file,
//! and slirp (`restrict=on`, SSH forwarded on 127.0.0.1 only) passed through
//! `qemu:commandline` because Debian 12's libvirt has passt disabled.

use crate::accel::Acceleration;
use crate::config::{DiskCache, IoTune};
use labrun_vocab::CpuList;
use std::path::PathBuf;

/// The XML namespace of labrun's `<metadata>` element.
pub const METADATA_NS: &str = "urn:labrun:domain:1";
/// Its prefix in the XML.
pub const METADATA_PREFIX: &str = "labrun";

/// What marks a domain as labrun's, and which lab and `up` made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabrunMetadata {
    pub lab_name: String,
    pub lab_path: PathBuf,
    pub state_dir: PathBuf,
    pub up_id: String,
    pub created: String,
}

/// How the guest starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Boot {
    /// labrun's own image: QEMU loads the kernel and initrd directly.
    Kernel { kernel: PathBuf, initrd: PathBuf },
    /// A cloud image: the firmware boots the disk's own bootloader.
    Disk,
}

/// Everything the XML needs.
#[derive(Debug, Clone)]
pub struct DomainSpec {
    pub name: String,
    pub acceleration: Acceleration,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub boot: Boot,
    pub overlay: PathBuf,
    pub seed: PathBuf,
    pub console_log: PathBuf,
    pub ssh_port: u16,
    pub disk_cache: DiskCache,
    /// Throttling of the main disk (a lab's `disk_profile`); none when empty.
    pub iotune: IoTune,
    /// The host CPU of each vCPU and of the emulator threads
    /// ([`crate::pinning`]); empty: nothing pinned, no `<cputune>`.
    pub pins: CpuList,
    pub metadata: LabrunMetadata,
}

/// The kernel command line. `quiet` and a small initrd roughly halve the boot
/// under TCG (printing to an emulated UART is slow).
pub const CMDLINE: &str = "root=/dev/vda rw console=ttyS0,115200 quiet";

pub fn domain_xml(s: &DomainSpec) -> String {
    let cpu = match s.acceleration {
        // TCG: expose every feature QEMU can emulate.
        Acceleration::Tcg => "<cpu mode='maximum' check='none'/>",
        Acceleration::Kvm => "<cpu mode='host-passthrough' check='none'/>",
    };
    let cache = match s.disk_cache {
        // O_DIRECT needs io='native' to be asynchronous.
        DiskCache::NoCache => " cache='none' io='native'".to_string(),
        other => format!(" cache='{}'", other.as_str()),
    };
    let os_boot = match &s.boot {
        Boot::Kernel { kernel, initrd } => format!(
            "<kernel>{}</kernel>\n    <initrd>{}</initrd>\n    <cmdline>{CMDLINE}</cmdline>",
            esc(&kernel.to_string_lossy()),
            esc(&initrd.to_string_lossy()),
        ),
        Boot::Disk => "<boot dev='hd'/>".to_string(),
    };
    let iotune = iotune_xml(&s.iotune);
    let cputune = cputune_xml(&s.pins);
    let m = &s.metadata;
    format!(
        r#"<domain type='{dtype}' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{name}</name>
  <metadata>
    <{p}:lab xmlns:{p}='{ns}'>
      <{p}:name>{lab}</{p}:name>
      <{p}:path>{lab_path}</{p}:path>
      <{p}:state-dir>{state_dir}</{p}:state-dir>
      <{p}:up-id>{up_id}</{p}:up-id>
      <{p}:created>{created}</{p}:created>
    </{p}:lab>
  </metadata>
  <memory unit='MiB'>{mem}</memory>
  <currentMemory unit='MiB'>{mem}</currentMemory>
  <vcpu placement='static'>{vcpus}</vcpu>{cputune}
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    {os_boot}
  </os>
  <features><acpi/><apic/></features>
  {cpu}
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2'{cache} discard='unmap'/>
      <source file='{overlay}'/>
      <target dev='vda' bus='virtio'/>{iotune}
    </disk>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file='{seed}'/>
      <target dev='vdb' bus='virtio'/>
      <serial>vmseed</serial>
      <readonly/>
    </disk>
    <serial type='file'>
      <source path='{console}'/>
      <target port='0'/>
    </serial>
    <rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>
    <memballoon model='none'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-netdev'/>
    <qemu:arg value='user,id=usernet0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:22'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='virtio-net-pci,netdev=usernet0,id=usernic0,bus=pcie.0,addr=0x10'/>
  </qemu:commandline>
</domain>
"#,
        dtype = crate::accel::domain_type(s.acceleration),
        name = esc(&s.name),
        p = METADATA_PREFIX,
        ns = METADATA_NS,
        lab = esc(&m.lab_name),
        lab_path = esc(&m.lab_path.to_string_lossy()),
        state_dir = esc(&m.state_dir.to_string_lossy()),
        up_id = esc(&m.up_id),
        created = esc(&m.created),
        mem = s.memory_mib,
        vcpus = s.vcpus,
        overlay = esc(&s.overlay.to_string_lossy()),
        seed = esc(&s.seed.to_string_lossy()),
        console = esc(&s.console_log.to_string_lossy()),
        port = s.ssh_port,
    )
}

/// The `<iotune>` element of the main disk (empty when nothing is limited):
/// QEMU's block throttling, applied by libvirt to the disk's block node.
fn iotune_xml(t: &IoTune) -> String {
    if t.is_unlimited() {
        return String::new();
    }
    let mut out = String::from("\n      <iotune>");
    for (field, value) in t.limits() {
        out.push_str(&format!("\n        <{field}>{value}</{field}>"));
    }
    out.push_str("\n      </iotune>");
    out
}

/// The `<cputune>` element: one `<vcpupin>` per vCPU and `<emulatorpin>`
/// for QEMU's own threads; empty when nothing is pinned. An emulator left
/// unpinned floats over all host CPUs, vCPUs' included.
fn cputune_xml(pins: &CpuList) -> String {
    if pins.vcpus.is_empty() && pins.emulator.is_none() {
        return String::new();
    }
    let mut out = String::from("\n  <cputune>");
    for (vcpu, cpu) in pins.vcpus.iter().enumerate() {
        out.push_str(&format!("\n    <vcpupin vcpu='{vcpu}' cpuset='{cpu}'/>"));
    }
    if let Some(cpu) = pins.emulator {
        out.push_str(&format!("\n    <emulatorpin cpuset='{cpu}'/>"));
    }
    out.push_str("\n  </cputune>");
    out
}

/// Reads labrun's metadata element back (as libvirt returns it from
/// `virDomainGetMetadata`, or inside a full domain XML).
pub fn parse_metadata(xml: &str) -> Option<LabrunMetadata> {
    let field = |tag: &str| -> Option<String> {
        // libvirt may re-prefix the namespace; match on the local name.
        let start = xml.find(&format!(":{tag}>"))? + tag.len() + 2;
        let end = start + xml[start..].find("</")?;
        Some(unesc(&xml[start..end]))
    };
    if !xml.contains(METADATA_NS) {
        return None;
    }
    Some(LabrunMetadata {
        lab_name: field("name")?,
        lab_path: field("path")?.into(),
        state_dir: field("state-dir")?.into(),
        up_id: field("up-id")?,
        created: field("created")?,
    })
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
        .replace('"', "&quot;")
}

fn unesc(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&apos;", "'")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DiskProfile;

    fn spec(accel: Acceleration, cache: DiskCache) -> DomainSpec {
        DomainSpec {
            name: "labrun-demo".into(),
            acceleration: accel,
            vcpus: 4,
            memory_mib: 3072,
            boot: Boot::Kernel {
                kernel: "/c/images/d/vmlinuz".into(),
                initrd: "/c/images/d/initrd.img".into(),
            },
            overlay: "/s/demo-1/overlay.qcow2".into(),
            seed: "/s/demo-1/seed.img".into(),
            console_log: "/s/demo-1/console.log".into(),
            ssh_port: 40123,
            disk_cache: cache,
            iotune: IoTune::default(),
            pins: CpuList::default(),
            metadata: LabrunMetadata {
                lab_name: "demo".into(),
                lab_path: "/w/R&D <lab>.yaml".into(),
                state_dir: "/s/demo-1".into(),
                up_id: "u1".into(),
                created: "2026-11-29T10:00:00Z".into(),
            },
        }
    }

    #[test]
    fn tcg_domain_has_what_the_trial_found_necessary() {
        let x = domain_xml(&spec(Acceleration::Tcg, DiskCache::NoCache));
        for needle in [
            "<domain type='qemu'",
            "<cpu mode='maximum' check='none'/>",
            "machine='q35'",
            "<memory unit='MiB'>3072</memory>",
            "<vcpu placement='static'>4</vcpu>",
            "<kernel>/c/images/d/vmlinuz</kernel>",
            "<cmdline>root=/dev/vda rw console=ttyS0,115200 quiet</cmdline>",
            "type='qcow2' cache='none' io='native'",
            "<serial>vmseed</serial>",
            "<readonly/>",
            "<source path='/s/demo-1/console.log'/>",
            "<memballoon model='none'/>",
            "<rng model='virtio'>",
            "user,id=usernet0,restrict=on,hostfwd=tcp:127.0.0.1:40123-:22",
            "bus=pcie.0,addr=0x10",
            "xmlns:labrun='urn:labrun:domain:1'",
        ] {
            assert!(x.contains(needle), "missing {needle} in\n{x}");
        }
        // No libvirt-managed network: only slirp through the command line.
        assert!(!x.contains("<interface"));
        // Paths are escaped.
        assert!(x.contains("/w/R&amp;D &lt;lab&gt;.yaml"));
    }

    #[test]
    fn a_cloud_image_boots_from_its_disk() {
        let mut s = spec(Acceleration::Tcg, DiskCache::NoCache);
        s.boot = Boot::Disk;
        let x = domain_xml(&s);
        assert!(x.contains("<boot dev='hd'/>"), "{x}");
        assert!(!x.contains("<kernel>") && !x.contains("<cmdline>"), "{x}");
    }

    #[test]
    fn kvm_and_cache_variants() {
        let x = domain_xml(&spec(Acceleration::Kvm, DiskCache::Writeback));
        assert!(x.contains("<domain type='kvm'"));
        assert!(x.contains("host-passthrough"));
        assert!(x.contains("cache='writeback'"));
        assert!(!x.contains("io='native'"));
    }

    #[test]
    fn a_disk_profile_throttles_the_main_disk_only() {
        let unthrottled = domain_xml(&spec(Acceleration::Tcg, DiskCache::NoCache));
        assert!(!unthrottled.contains("<iotune>"), "{unthrottled}");
        let mut s = spec(Acceleration::Tcg, DiskCache::NoCache);
        s.iotune = DiskProfile::Hdd.iotune();
        let x = domain_xml(&s);
        let main_disk = &x[x.find("<disk").unwrap()..x.find("</disk>").unwrap()];
        assert!(
            main_disk.contains(
                "<target dev='vda' bus='virtio'/>\n      <iotune>\n        \
                 <total_bytes_sec>150000000</total_bytes_sec>\n        \
                 <total_iops_sec>200</total_iops_sec>\n      </iotune>"
            ),
            "{x}"
        );
        // The seed disk is read once at boot: never throttled.
        assert_eq!(x.matches("<iotune>").count(), 1);
        s.iotune = IoTune {
            read_bytes_sec: Some(1),
            write_iops_sec: Some(2),
            ..IoTune::default()
        };
        let x = domain_xml(&s);
        assert!(x.contains("<read_bytes_sec>1</read_bytes_sec>"), "{x}");
        assert!(x.contains("<write_iops_sec>2</write_iops_sec>"), "{x}");
        assert!(!x.contains("total_"), "{x}");
    }

    /// The pinnings the tests give a domain: `auto` of 4 vCPUs on a fake
    /// host of 8 cores / 16 threads, and a list with an emulator CPU.
    fn pinnings() -> Vec<CpuList> {
        use crate::pinning::{Topology, choose, tests::fake_sys};
        use labrun_vocab::CpuPinning;
        let sys = fake_sys(8, 2, &[]);
        let topo = Topology::read(sys.path()).unwrap();
        let auto = choose(Some(&CpuPinning::Auto), 4, &topo).unwrap().unwrap();
        let list = CpuPinning::Cpus(CpuList {
            vcpus: vec![2, 3, 10, 11],
            emulator: Some(1),
        });
        let list = choose(Some(&list), 4, &topo).unwrap().unwrap();
        vec![auto.cpus, list.cpus]
    }

    #[test]
    fn pinned_vcpus_get_a_cputune_and_unpinned_ones_none() {
        let unpinned = domain_xml(&spec(Acceleration::Kvm, DiskCache::NoCache));
        assert!(!unpinned.contains("cputune"), "{unpinned}");
        let mut s = spec(Acceleration::Kvm, DiskCache::NoCache);
        let [auto, list] = <[CpuList; 2]>::try_from(pinnings()).unwrap();
        s.pins = auto;
        let x = domain_xml(&s);
        assert!(
            x.contains(
                "<vcpu placement='static'>4</vcpu>\n  <cputune>\n    \
                 <vcpupin vcpu='0' cpuset='4'/>\n    <vcpupin vcpu='1' cpuset='5'/>\n    \
                 <vcpupin vcpu='2' cpuset='6'/>\n    <vcpupin vcpu='3' cpuset='7'/>\n    \
                 <emulatorpin cpuset='3'/>\n  </cputune>"
            ),
            "{x}"
        );
        s.pins = list;
        let x = domain_xml(&s);
        assert!(x.contains("<vcpupin vcpu='2' cpuset='10'/>"), "{x}");
        assert!(x.contains("<emulatorpin cpuset='1'/>"), "{x}");
        // Emulator threads left to float: vCPU pins only.
        s.pins.emulator = None;
        assert!(!domain_xml(&s).contains("emulatorpin"));
    }

    #[test]
    fn metadata_round_trips() {
        let s = spec(Acceleration::Tcg, DiskCache::NoCache);
        let x = domain_xml(&s);
        assert_eq!(parse_metadata(&x).unwrap(), s.metadata);
        // As virDomainGetMetadata returns it (namespace re-declared).
        let got = "<labrun:lab xmlns:labrun=\"urn:labrun:domain:1\"><labrun:name>demo</labrun:name><labrun:path>/x</labrun:path><labrun:state-dir>/s</labrun:state-dir><labrun:up-id>u</labrun:up-id><labrun:created>c</labrun:created></labrun:lab>";
        assert_eq!(parse_metadata(got).unwrap().lab_name, "demo");
        assert!(parse_metadata("<domain/>").is_none());
    }

    #[test]
    #[ignore = "needs libvirt's virt-xml-validate (libvirt-clients): `make test` runs it"]
    fn validates_against_libvirts_schema() {
        let tool = std::path::Path::new("/usr/bin/virt-xml-validate");
        assert!(
            tool.exists(),
            "virt-xml-validate is not installed: install libvirt-clients (scripts/host-setup.sh)"
        );
        let tmp = tempfile::tempdir().unwrap();
        for (a, c, disk_boot, profile) in [
            (
                Acceleration::Tcg,
                DiskCache::NoCache,
                false,
                DiskProfile::Hdd,
            ),
            (
                Acceleration::Kvm,
                DiskCache::Unsafe,
                false,
                DiskProfile::Ssd,
            ),
            (
                Acceleration::Tcg,
                DiskCache::NoCache,
                true,
                DiskProfile::Unthrottled,
            ),
        ] {
            let p = tmp.path().join("d.xml");
            let mut s = spec(a, c);
            s.iotune = profile.iotune();
            if disk_boot {
                s.boot = Boot::Disk;
            }
            std::fs::write(&p, domain_xml(&s)).unwrap();
            validate(tool, &p);
        }
        // The pinned domains: auto on 8 cores / 16 threads, and a list.
        for pins in pinnings() {
            let p = tmp.path().join("pinned.xml");
            let mut s = spec(Acceleration::Kvm, DiskCache::NoCache);
            s.pins = pins;
            std::fs::write(&p, domain_xml(&s)).unwrap();
            validate(tool, &p);
        }
    }

    fn validate(tool: &std::path::Path, xml: &std::path::Path) {
        let out = std::process::Command::new(tool)
            .arg(xml)
            .arg("domain")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
