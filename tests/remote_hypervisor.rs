//! The remote-hypervisor fixture (tests/common/remote_hypervisor.rs) is what
//! remote-hypervisor tests take it for: a libvirt reachable only through the
//! remote protocol over SSH, on a veth to a namespace of its own, that runs
//! its domains as its own user in that namespace, and leaves nothing behind.
//!
//! Needs root, libvirt's client and daemon packages, QEMU and sshd (CI runs
//! `scripts/host-setup.sh` first); fails, never skips, when they are missing.

#[path = "common/remote_hypervisor.rs"]
mod remote_hypervisor;

use labrun_vm::hypervisor::Hypervisor;
use remote_hypervisor::RemoteHypervisor;
use std::io::{BufRead, BufReader, ErrorKind};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs `virsh -c URI ARGS` through the fixture; must succeed.
fn virsh_ok(rhv: &RemoteHypervisor, args: &[&str]) -> String {
    let out = rhv
        .virsh(args)
        .unwrap_or_else(|e| panic!("virsh {args:?}: {e}"));
    assert!(
        out.status.success(),
        "virsh -c {} {args:?} failed: {}\nsshd log:\n{}",
        rhv.uri(),
        text(&out),
        rhv.sshd_log()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A port on the root namespace's 127.0.0.1 that was free a moment ago (so
/// "refused there" later means the guest's forward is not there).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// A tiny TCG domain like labrun's (q35, slirp with the guest's port 22
/// forwarded on the host's 127.0.0.1, passed through qemu:commandline), with
/// one raw disk; no OS: QEMU running is all that is needed.
fn domain_xml(name: &str, disk: &Path, port: u16) -> String {
    format!(
        r#"<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{name}</name>
  <memory unit='MiB'>64</memory>
  <vcpu placement='static'>1</vcpu>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file='{disk}'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <memballoon model='none'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-netdev'/>
    <qemu:arg value='user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:22'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='virtio-net-pci,netdev=n0,id=nic0,bus=pcie.0,addr=0x10,romfile='/>
  </qemu:commandline>
</domain>
"#,
        disk = disk.display(),
    )
}

/// A connection from the root namespace must be refused (not time out: the
/// address answers, nothing listens on that port).
fn assert_refused(addr: SocketAddr, what: &str) {
    match TcpStream::connect_timeout(&addr, Duration::from_secs(10)) {
        Ok(_) => panic!("{what}: {addr} accepted a connection from the root namespace"),
        Err(e) => assert_eq!(
            e.kind(),
            ErrorKind::ConnectionRefused,
            "{what}: {addr}: {e}"
        ),
    }
}

/// The first line that comes back through a direct-tcpip channel (OpenSSH's
/// `ssh -W`) from the hypervisor host's sshd to `dest` as that host sees it:
/// the tunnel labrun opens to a guest's forwarded port.
fn first_line_through_tunnel(rhv: &RemoteHypervisor, dest: &str) -> String {
    let mut child = Command::new("ssh")
        .args([
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
        ])
        .args(["-o", "StrictHostKeyChecking=yes", "-o"])
        .arg(format!(
            "UserKnownHostsFile={}",
            rhv.known_hosts().display()
        ))
        .arg("-i")
        .arg(rhv.client_key())
        .args(["-p", &rhv.ssh_port().to_string(), "-W", dest])
        .arg(format!("{}@{}", rhv.user(), rhv.address()))
        // Kept open: the channel lives as long as ssh's stdin does.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ssh");
    let stdout = child.stdout.take().expect("ssh's stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    // A bound so a stuck tunnel fails the test instead of hanging it.
    let line = rx.recv_timeout(Duration::from_secs(60));
    let _ = child.kill();
    let out = child.wait_with_output().expect("ssh's output");
    line.unwrap_or_else(|_| {
        panic!(
            "nothing came back through ssh -W {dest}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Uploads a file into the user's home with labrun's own SSH client, as
/// labrun will upload disks; checks who owns it there.
fn upload_as_labrun_does(rhv: &RemoteHypervisor, local: &Path, remote: &Path) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let session = labrun_ssh::connect(&rhv.ssh_target(), Duration::from_secs(30))
            .await
            .unwrap_or_else(|e| panic!("labrun_ssh to the fixture: {e}\n{}", rhv.sshd_log()));
        let who = session.exec("id -un").await.expect("exec id -un");
        assert!(who.success(), "id -un: {who:?}");
        assert_eq!(String::from_utf8_lossy(&who.stdout).trim(), rhv.user());
        session
            .upload(local, &remote.to_string_lossy(), 0o600)
            .await
            .unwrap_or_else(|e| panic!("upload to {}: {e}", remote.display()));
    });
    let meta = std::fs::metadata(remote).expect("the uploaded file");
    assert_eq!(
        std::os::unix::fs::MetadataExt::uid(&meta),
        rhv.uid(),
        "{} is not the user's",
        remote.display()
    );
}

#[test]
#[ignore = "needs root, libvirt, QEMU and a network namespace: `make test` runs it"]
fn a_second_hypervisor_reachable_only_over_ssh_that_leaves_nothing() {
    let started = Instant::now();
    let rhv = RemoteHypervisor::start()
        .unwrap_or_else(|e| panic!("cannot start the remote hypervisor: {e}"));
    eprintln!(
        "fixture up in {:.1?} (its first connection, which started the session daemon: {:.1?}); URI {}",
        started.elapsed(),
        rhv.daemon_start_time(),
        rhv.uri()
    );
    assert_eq!(rhv.ssh_port(), 22);
    assert!(rhv.address().starts_with("10.251.") && rhv.address().ends_with(".2"));

    // The URI works from the root namespace, and the connection came in over
    // the veth, through the fixture's sshd, as the fixture's user.
    let version = virsh_ok(&rhv, &["version"]);
    assert!(version.contains("Running hypervisor: QEMU"), "{version}");
    let list = virsh_ok(&rhv, &["list", "--all", "--name"]);
    assert!(
        list.trim().is_empty(),
        "a fresh session has domains: {list}"
    );
    let accepted = format!(
        "Accepted publickey for {} from {} port",
        rhv.user(),
        rhv.peer_address()
    );
    assert!(rhv.sshd_log().contains(&accepted), "{}", rhv.sshd_log());

    // A direct-tcpip tunnel through the hypervisor host's sshd reaches its
    // 127.0.0.1 (there, its sshd answers on 127.0.0.1:22).
    let banner = first_line_through_tunnel(&rhv, "127.0.0.1:22");
    assert!(
        banner.starts_with("SSH-2.0-"),
        "through the tunnel: {banner:?}"
    );

    // The pinned host key is checked: another key, or none, is refused.
    let scratch = tempfile::tempdir().expect("tempdir");
    let wrong_line =
        labrun_ssh::generate_ed25519(&scratch.path().join("other"), "other").expect("another key");
    let wrong = scratch.path().join("wrong_known_hosts");
    std::fs::write(&wrong, format!("{} {wrong_line}\n", rhv.address())).expect("write");
    let out = rhv
        .virsh_with_uri(&rhv.uri_with_known_hosts(&wrong), &["version"])
        .expect("run virsh");
    assert!(!out.status.success(), "a wrong host key was accepted");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("HOST KEY VERIFICATION FAILED"),
        "{}",
        text(&out)
    );
    let empty = scratch.path().join("empty_known_hosts");
    std::fs::write(&empty, "").expect("write");
    let out = rhv
        .virsh_with_uri(&rhv.uri_with_known_hosts(&empty), &["version"])
        .expect("run virsh");
    assert!(!out.status.success(), "an unknown host key was accepted");

    // A disk uploaded the way labrun uploads, used by a domain made through
    // the URI: QEMU runs as the user, in the namespace.
    let local_disk = scratch.path().join("disk.raw");
    std::fs::write(&local_disk, vec![0u8; 1 << 20]).expect("write disk");
    let disk = rhv.home().join("disk.raw");
    upload_as_labrun_does(&rhv, &local_disk, &disk);
    let port = free_port();
    let name = format!("labrun-rhv-probe-{}", std::process::id());
    let xml = scratch.path().join("domain.xml");
    std::fs::write(&xml, domain_xml(&name, &disk, port)).expect("write xml");
    let created = Instant::now();
    virsh_ok(&rhv, &["create", &xml.to_string_lossy()]);
    eprintln!("transient domain created in {:.1?}", created.elapsed());
    let list = virsh_ok(&rhv, &["list", "--name"]);
    assert!(list.lines().any(|l| l.trim() == name), "{list}");
    let guest = format!("guest={name},");
    let qemu = rhv
        .processes()
        .into_iter()
        .find(|p| p.cmdline.contains("qemu-system-x86_64") && p.cmdline.contains(&guest))
        .unwrap_or_else(|| panic!("no QEMU of the user for {name}"));
    assert_eq!(qemu.uids, (rhv.uid(), rhv.uid()), "QEMU's uids");
    assert!(
        rhv.in_namespace(&qemu),
        "QEMU is not in the fixture's namespace"
    );
    let daemon = rhv
        .processes()
        .into_iter()
        .find(|p| p.cmdline.starts_with("/usr/sbin/libvirtd"))
        .expect("the user's session libvirtd");
    assert!(
        rhv.in_namespace(&daemon),
        "libvirtd is not in the namespace"
    );

    // The guest's forward listens on the namespace's 127.0.0.1 (QEMU's own
    // socket), answers there, and is not reachable from the root namespace.
    let listening = rhv
        .run_as_user(&format!("ss -Hltnp 'sport = :{port}'"))
        .expect("ss in the namespace");
    let listening = String::from_utf8_lossy(&listening.stdout);
    assert!(
        listening.contains(&format!("127.0.0.1:{port}"))
            && listening.contains(&format!("pid={}", qemu.pid)),
        "QEMU does not listen on 127.0.0.1:{port} in the namespace: {listening}"
    );
    let connect = rhv
        .run_as_user(&format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'"))
        .expect("connect in the namespace");
    assert!(connect.status.success(), "{}", text(&connect));
    assert_refused(
        SocketAddr::from(([127, 0, 0, 1], port)),
        "the root namespace's 127.0.0.1",
    );
    let address: std::net::Ipv4Addr = rhv.address().parse().expect("an IPv4 address");
    assert_refused(
        SocketAddr::from((address, port)),
        "the hypervisor's veth address",
    );

    virsh_ok(&rhv, &["destroy", &name]);
    let list = virsh_ok(&rhv, &["list", "--all", "--name"]);
    assert!(list.trim().is_empty(), "left after destroy: {list}");
    assert!(
        !rhv.processes().iter().any(|p| p.pid == qemu.pid),
        "QEMU still runs after destroy"
    );

    // labrun's own libvirt client (the `virt` crate, Connect::open, no auth
    // callback) takes the same URI: it starts a second domain, which is left
    // running for stop to take down. With no callback to ask, an unknown
    // host key is refused at once rather than prompted for.
    let hypervisor = Hypervisor::open(&rhv.uri())
        .unwrap_or_else(|e| panic!("labrun's Hypervisor::open({}): {e}", rhv.uri()));
    let xml_text = std::fs::read_to_string(&xml).expect("read xml");
    if let Err(e) = hypervisor.create(&xml_text) {
        panic!("labrun's Hypervisor::create: {e:?}");
    }
    let found = hypervisor.find(&name).expect("find").expect("the domain");
    assert!(found.active && !found.persistent, "{found:?}");
    drop(hypervisor);
    match Hypervisor::open(&rhv.uri_with_known_hosts(&empty)) {
        Ok(_) => panic!("labrun's client accepted an unknown host key"),
        Err(e) => eprintln!("unknown host key, labrun's client: {e}"),
    }
    match Hypervisor::open(&rhv.uri_with_known_hosts(&wrong)) {
        Ok(_) => panic!("labrun's client accepted a wrong host key"),
        Err(e) => assert!(
            e.to_string().contains("HOST KEY VERIFICATION FAILED"),
            "wrong host key, labrun's client: {e}"
        ),
    }

    let (user, uid, namespace, home) = (rhv.user(), rhv.uid(), rhv.namespace(), rhv.home());
    let stopping = Instant::now();
    rhv.stop()
        .unwrap_or_else(|e| panic!("stop left something: {e}"));
    eprintln!(
        "stopped in {:.1?}; whole test {:.1?}",
        stopping.elapsed(),
        started.elapsed()
    );
    let live: Vec<String> = remote_hypervisor::processes_left_by(&user, uid)
        .iter()
        .map(|p| format!("{} {}", p.pid, p.cmdline))
        .collect();
    assert!(live.is_empty(), "processes of uid {uid} left: {live:?}");
    assert!(
        !Command::new("id")
            .arg(&user)
            .output()
            .expect("run id")
            .status
            .success(),
        "user {user} left"
    );
    assert!(
        !Path::new("/run/netns").join(&namespace).exists(),
        "namespace {namespace} left"
    );
    assert!(!home.exists(), "{} left", home.display());
}
