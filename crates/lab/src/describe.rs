//! What a lab will do, in words: the text `labrun check` prints.

use crate::schema::{DatasetSpec, ImageSpec, Lab, Machine, ToolSpec};
use labrun_artifact::ArtifactSpec;
use labrun_artifact::Extract;
use labrun_dataset::{DatasetParams, Footprint, FootprintRow, footprint};
use labrun_evidence::printable::printable;
use labrun_evidence::{DatasetProfile, Step};

/// `writeln!` for one line of the description, escaped as a whole: its
/// values come from the lab file, and none may drive the terminal or start
/// a line of its own (a fake "ok: ... is valid" under the real output).
macro_rules! push_line {
    ($s:expr, $($arg:tt)*) => {{
        $s.push_str(&printable(&format!($($arg)*)));
        $s.push('\n');
    }};
}

impl Lab {
    /// Dataset totals by class at the scale a run would use; a sparse
    /// file's allocated bytes beside its apparent size.
    pub fn dataset_footprint(&self, scale_override: Option<f64>) -> Footprint {
        match &self.dataset {
            DatasetSpec::Synthetic { seed, profile, .. } => footprint(&DatasetParams {
                seed: *seed,
                scale: self.scale(scale_override),
                profile: *profile,
            }),
            // The first commit of a generated history, as small files; a
            // repository's size is not known before it is read.
            // A real tree's size is measured on it (`check`), not known here.
            DatasetSpec::Files(_) | DatasetSpec::Archive(_) | DatasetSpec::Trees(_) => Footprint {
                rows: Vec::new(),
                files: 0,
                bytes: 0,
                allocated_bytes: 0,
            },
            DatasetSpec::GitHistory { generate, .. } => {
                let (files, bytes) = generate.as_ref().map_or((0, 0), |g| {
                    let files = u64::from(g.files);
                    (files, files * u64::from(g.mean_file_bytes))
                });
                Footprint {
                    rows: vec![FootprintRow {
                        class: "small files",
                        files,
                        bytes,
                    }],
                    files,
                    bytes,
                    allocated_bytes: bytes,
                }
            }
        }
    }

    /// The git-history source, for a lab whose dataset is one (and valid).
    pub fn history_source(&self) -> Option<labrun_evidence::HistorySource> {
        match &self.dataset {
            DatasetSpec::GitHistory {
                generate,
                repository,
                commits,
                every,
            } => crate::history::source(generate, repository, commits, every),
            DatasetSpec::Trees(d) => Some(d.history_source()),
            _ => None,
        }
    }

    /// The protocol's timed steps, in order.
    pub fn timed_steps(&self) -> Vec<Step> {
        labrun_evidence::protocol::timed_steps(&self.protocol)
    }

    /// Why `step` cannot be judged: it is not one of the protocol's timed
    /// steps (the message lists them). None when it is one.
    pub fn not_timed(&self, step: &Step) -> Option<String> {
        let timed = self.timed_steps();
        (!timed.contains(step)).then(|| {
            format!(
                "`{step}` is not a timed step of the lab's protocol; its timed steps: {}",
                timed
                    .iter()
                    .map(Step::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// Timed steps a full run makes: per tool and cycle, the protocol's.
    pub fn timed_step_count(&self, cycles: u32, tools: usize) -> u64 {
        self.timed_steps().len() as u64 * u64::from(cycles) * tools as u64
    }

    /// A multi-line description; secrets are shown as `<secret>`.
    pub fn describe(&self, scale_override: Option<f64>) -> String {
        let mut s = String::new();
        let file = self.source.file.display();
        push_line!(s, "lab `{}` ({file}, digest {})", self.name, self.digest());
        if !self.description.trim().is_empty() {
            for line in self.description.trim().lines() {
                push_line!(s, "  {line}");
            }
        }

        match self.machine() {
            Machine::Vm(vm) => {
                let image = match &vm.image {
                    ImageSpec::Debian12 => {
                        "debian12 (built from the host's apt sources)".to_string()
                    }
                    ImageSpec::Debian(suite) => {
                        format!("Debian {suite} (built from the host's apt archive)")
                    }
                    ImageSpec::Cloud(a) => format!("cloud image {}", source_of(a)),
                };
                let on = match self.hosts.as_slice() {
                    [] => vm.uri.clone(),
                    [one] => format!("host `{}` ({})", one.name, one.uri),
                    many => format!(
                        "a pool of {} hosts ({}; variants spread over them, side by side)",
                        many.len(),
                        many.iter()
                            .map(|h| format!("`{}`", h.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                push_line!(
                    s,
                    "machine: VM on {on}: {} vCPU, {} memory, {} disk, image {image}, accel {}, disk cache {}, disk speed {}, SSH wait up to {}",
                    vm.vcpus,
                    vm.memory,
                    vm.disk,
                    vm.accel.as_str(),
                    vm.disk_cache.as_str(),
                    vm.disk_profile.describe(),
                    vm.ssh_timeout
                );
                if !vm.packages.is_empty() {
                    push_line!(s, "image packages: {}", vm.packages.join(" "));
                }
                for h in &self.hosts {
                    match &h.ssh {
                        Some(t) => push_line!(
                            s,
                            "host `{}`: {} over SSH to {}@{}:{} (host key pinned), disks in {}",
                            h.name,
                            h.uri,
                            t.user,
                            t.host,
                            t.port,
                            t.workdir
                        ),
                        None => push_line!(s, "host `{}`: this machine, {}", h.name, h.uri),
                    }
                }
            }
            Machine::Target(t) => {
                let key = t.host_key.split_whitespace().take(2).collect::<Vec<_>>();
                let short = match key.as_slice() {
                    [kind, k] => format!("{kind} {}...", k.get(..24).unwrap_or(k)),
                    _ => t.host_key.clone(),
                };
                push_line!(
                    s,
                    "machine: existing host {}@{}:{} (key {}, host key pinned: {short})",
                    t.user,
                    t.host,
                    t.port,
                    t.key.display()
                );
            }
        }

        describe_storage(self, &mut s);

        if let Some(source) = self.history_source() {
            crate::history::describe(&source, &mut s);
            if self.protocol != labrun_evidence::protocol::history() {
                describe_protocol(&mut s, &self.protocol);
            }
            describe_history_steps(self, &source, &mut s);
            describe_tools(self, &mut s);
            return s;
        }
        let scale = self.scale(scale_override);
        let f = self.dataset_footprint(scale_override);
        match &self.dataset {
            DatasetSpec::Synthetic {
                seed,
                change_seed,
                profile,
                ..
            } => {
                let change = change_seed.unwrap_or(seed.wrapping_add(1));
                let shape = match profile {
                    DatasetProfile::Published => String::new(),
                    p => format!(", profile {p}"),
                };
                push_line!(
                    s,
                    "dataset: synthetic{shape}, seed {seed}, change seed {change}, scale {scale}"
                );
            }
            DatasetSpec::GitHistory { .. } | DatasetSpec::Trees(_) => {}
            DatasetSpec::Files(d) => {
                push_line!(s, "dataset: {}", crate::real_tree::describe_plan(&d.plan()));
            }
            DatasetSpec::Archive(d) => {
                push_line!(
                    s,
                    "dataset: {}, {}",
                    crate::real_tree::describe_plan(&d.plan()),
                    d.artifact.provenance()
                );
            }
        }
        // A real tree's size is read from it by `check`, not from the lab.
        let rows = f.rows.iter().map(|r| (r.class, r.files, r.bytes));
        for (class, files, bytes) in rows.chain([("total", f.files, f.bytes)]) {
            if self.dataset.is_real() {
                break;
            }
            push_line!(s, "  {class:<25} {files:>7} files {:>9}", gb(bytes));
        }
        if f.allocated_bytes != f.bytes {
            push_line!(
                s,
                "  {:<25} {:>13} {:>9} (the rest of the apparent size is holes)",
                "allocated on disk",
                "",
                gb(f.allocated_bytes)
            );
        }

        let steps = self.timed_step_count(self.cycles, self.tools.len());
        let timed = self.timed_steps();
        let names: Vec<&str> = timed.iter().map(Step::as_str).collect();
        if self.protocol != labrun_evidence::protocol::published() {
            describe_protocol(&mut s, &self.protocol);
        }
        push_line!(
            s,
            "cycles: {}; timed steps: {} per tool and cycle ({}), {steps} in all; a step is stopped after {}",
            self.cycles,
            names.len(),
            names.join(", "),
            self.timeouts.step
        );

        describe_tools(self, &mut s);
        describe_variants(self, scale_override, &mut s);
        describe_comparisons(self, &mut s);
        s
    }
}

/// Each variant, the boot it runs in, every setting it changes, and the
/// size of a dataset it changes.
fn describe_variants(lab: &Lab, scale_override: Option<f64>, s: &mut String) {
    let Ok(variants) = lab.variants() else {
        return;
    };
    if variants.is_empty() {
        return;
    }
    let boots = crate::variant::boots(&variants);
    push_line!(
        s,
        "variants ({}, in run order; {boots} VM boot(s), one per machine shape, never timed; the variants of a boot run cycle by cycle, rotated):",
        variants.len()
    );
    for v in &variants {
        let r = &v.record;
        push_line!(
            s,
            "  {} (boot {}): {}",
            r.name,
            r.boot + 1,
            r.changes_text("")
        );
        if v.lab.dataset != lab.dataset {
            let f = v.lab.dataset_footprint(scale_override);
            let allocated = if f.allocated_bytes == f.bytes {
                String::new()
            } else {
                format!(" ({} allocated)", gb(f.allocated_bytes))
            };
            push_line!(
                s,
                "    dataset: {} files, {}{allocated}",
                f.files,
                gb(f.bytes)
            );
        }
    }
}

/// The cycles line of a git-history lab: init, then a backup and a
/// restore per snapshot.
fn describe_history_steps(lab: &Lab, source: &labrun_evidence::HistorySource, s: &mut String) {
    let per_cycle = match crate::history::snapshot_count(source) {
        Some(n) => {
            let steps = 1 + 2 * u64::from(n);
            let all = steps * u64::from(lab.cycles) * lab.tools.len() as u64;
            format!("{steps} per tool and cycle (init, {n} backups, {n} restores), {all} in all")
        }
        None => "per tool and cycle: init, then a backup and a restore per selected commit".into(),
    };
    push_line!(
        s,
        "cycles: {}; timed steps: {per_cycle}; a step is stopped after {}",
        lab.cycles,
        lab.timeouts.step
    );
}

/// Where the repositories live, and the server binaries labrun installs.
fn describe_storage(lab: &Lab, s: &mut String) {
    let st = &lab.storage;
    let network = st
        .network
        .map_or_else(|| "the link unshaped".to_string(), |n| n.describe());
    match st.server {
        labrun_evidence::Server::Local => {
            push_line!(s, "repositories: on the machine's own disk")
        }
        server => push_line!(
            s,
            "repositories: on a {server} server inside the machine, in a network namespace of the agent's ({network})"
        ),
    }
    for (kind, server) in &lab.servers {
        let tool = server.as_install(*kind);
        push_line!(
            s,
            "  server {} {} -> {}",
            tool.name,
            tool.version,
            tool.install_path()
        );
        push_line!(s, "    from    {}", source_of(&tool.artifact));
        push_line!(s, "    sha256  {}", tool.artifact.sha256);
    }
}

/// Each tool; the noise floor's A/A copy in one line, as what it is.
fn describe_tools(lab: &Lab, s: &mut String) {
    push_line!(s, "tools ({}):", lab.tools.len());
    let floor = lab.noise_floor_pair();
    for t in &lab.tools {
        match &floor {
            Some(p) if p.candidate == t.name => push_line!(
                s,
                "  {}: the noise floor, an A/A copy of {} (the same binary and settings)",
                t.name,
                p.baseline
            ),
            _ => describe_tool(s, t),
        }
    }
}

fn describe_tool(s: &mut String, t: &ToolSpec) {
    let a = &t.artifact;
    push_line!(s, "  {} {} -> {}", t.name, t.version, t.install_path());
    push_line!(s, "    from    {}", source_of(a));
    let built = a.source.is_build();
    let what = if built { " (the built binary)" } else { "" };
    push_line!(s, "    sha256  {}{what}", a.sha256);
    if let Some(src) = &a.sha256_source {
        push_line!(s, "    digest  from {src}");
    }
    let binary = a
        .binary_sha256
        .as_deref()
        .unwrap_or("(recorded at fetch time)");
    if !built {
        push_line!(
            s,
            "    extract {}, binary sha256 {binary}",
            short_extract(&a.extract)
        );
    }
    if !t.env.is_empty() {
        let env: Vec<String> = t
            .env
            .iter()
            .map(|(k, v)| {
                if t.secret_env.contains(k) {
                    format!("{k}=<secret>")
                } else {
                    format!("{k}={v}")
                }
            })
            .collect();
        push_line!(s, "    env     {}", env.join(" "));
    }
    for (key, extra) in &t.args {
        push_line!(s, "    args    {key}: ... {}", extra.join(" "));
    }
    for (server, form) in &t.repository {
        push_line!(s, "    on {server:<5} {{repo}} = {}", form.repo);
    }
}

fn short_extract(e: &Extract) -> String {
    match e {
        Extract::Raw => "raw (the file is the binary)".into(),
        Extract::Bz2 => "bz2".into(),
        Extract::Gz => "gz".into(),
        Extract::Tar(m) => format!("tar member {m}"),
        Extract::DebMember(m) => format!(".deb member {m}"),
        Extract::DebInstall(b) => format!("whole .deb installed with dpkg -i, providing {b}"),
    }
}

/// `https://...`, `file /path`, `apt restic 0.14.0-1+b5`.
fn source_of(a: &ArtifactSpec) -> String {
    a.provenance()
}

/// Decimal units, as the published comparison counts (the one formatter).
fn gb(bytes: u64) -> String {
    labrun_evidence::human::bytes(bytes as f64)
}

/// A lab's own protocol, one step a line: what it runs and on what.
fn describe_protocol(s: &mut String, steps: &[labrun_evidence::ProtocolStep]) {
    push_line!(s, "protocol ({} steps per tool and cycle):", steps.len());
    describe_steps(s, steps, "  ");
}

fn describe_steps(s: &mut String, steps: &[labrun_evidence::ProtocolStep], indent: &str) {
    use labrun_evidence::ProtocolStep;
    use labrun_evidence::protocol::KillPoint;
    for step in steps {
        let what = match step {
            ProtocolStep::EachCommit(block) => {
                push_line!(s, "{indent}each commit from commit {}:", block.from);
                describe_steps(s, &block.steps, &format!("{indent}  "));
                continue;
            }
            ProtocolStep::Commit => {
                "the tree moved to the next commit (untimed; records say generate, then change)"
                    .to_string()
            }
            ProtocolStep::Source => "the pristine source tree (untimed)".to_string(),
            ProtocolStep::Change { .. } => "the seeded 5% change (untimed)".to_string(),
            ProtocolStep::Fixture => {
                "the metadata-fidelity fixture, {source} from here on (untimed)".to_string()
            }
            ProtocolStep::Verify { .. } => {
                "the restore checked against its snapshot's tree (untimed)".to_string()
            }
            ProtocolStep::Run(r) => {
                let mut parts = vec![format!("runs `{}`", r.command)];
                if let Some(l) = &r.makes {
                    parts.push(format!("makes {l}"));
                }
                if let Some(l) = &r.restores {
                    parts.push(match &r.over {
                        Some(older) => format!("restores {l} over {older}'s tree"),
                        None => format!("restores {l}"),
                    });
                }
                if let Some(l) = &r.snapshot {
                    parts.push(format!("on {l}"));
                }
                parts.push(if r.timed {
                    "timed".into()
                } else {
                    "untimed".into()
                });
                if r.timed && !r.drop_cache {
                    parts.push("warm cache".into());
                }
                if r.repo_size {
                    parts.push("repository size after".into());
                }
                if r.optional {
                    parts.push("skipped by tools without it".into());
                }
                match &r.kill {
                    Some(KillPoint::AfterSecs(k)) => parts.push(format!("killed after {k} s")),
                    Some(KillPoint::FractionOf { fraction, step }) => {
                        parts.push(format!("killed at {fraction} of {step}'s time"))
                    }
                    None => {}
                }
                if r.may_fail {
                    parts.push("may fail".into());
                }
                parts.join(", ")
            }
        };
        push_line!(s, "{indent}{:<20} {what}", step.name().as_str());
    }
}

/// The verdicts each run will end with.
fn describe_comparisons(lab: &Lab, s: &mut String) {
    for series in lab.series() {
        push_line!(
            s,
            "series {} ({} versions, oldest first): every run includes the anchor {}; the trend gives each version's ratio to it and a verdict for each adjacent step",
            series.tool,
            series.members.len(),
            series.anchor
        );
    }
    let Some(c) = &lab.compare else {
        return;
    };
    push_line!(
        s,
        "comparisons (paired by cycle, margin {}; the method is written into every summary):",
        c.margin.as_deref().unwrap_or("5%")
    );
    for p in &c.pairs {
        let floor = if c.noise_floor.as_ref() == Some(p) {
            ": A/A, the noise floor every other verdict is read against"
        } else {
            ""
        };
        let only = match (&p.phase, p.figure) {
            (None, None) => String::new(),
            (phase, figure) => format!(
                ", only {} of {}",
                // The figure as the lab writes it (`wall_time`).
                figure
                    .and_then(|f| serde_json::to_value(f).ok())
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "every figure".to_string()),
                phase.as_ref().map_or("every phase", |p| p.as_str())
            ),
        };
        push_line!(
            s,
            "  {} against {} (baseline){only}{floor}",
            p.candidate,
            p.baseline
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::Lab;

    const HOSTILE: &str = r#"name: hostile
description: "one\x1b[2J\n\r✓ lab is valid\u202e"
vm: {vcpus: 1, memory: 1GiB, disk: 4GiB}
dataset: {kind: synthetic, seed: 1, scale: 0.01}
cycles: 1
tools:
  - name: restic
    version: "0.14.0\nok: lab.yaml is valid\x07"
    artifact:
      url: "https://example.invalid/restic\x1b[31m.bz2"
      sha256: 9d7e8c210736f3f15ed7cf425ab56aa5259b07d8422b958494bfd4359b5024d1
      sha256_source: "the site\x1b]0;owned\x07"
      extract: bz2
    env: {RESTIC_PASSWORD: "x\x1b[2J"}
    commands:
      version: ["{bin}", version]
      init: ["{bin}", init, -r, "{repo}"]
      backup: ["{bin}", backup, -r, "{repo}", "{source}"]
      restore: ["{bin}", restore, latest, -r, "{repo}", --target, "{target}"]
      snapshots: ["{bin}", snapshots, -r, "{repo}"]
"#;

    #[test]
    fn a_pool_of_hosts_is_described_host_by_host() {
        let text = HOSTILE.replace(
            "dataset: {kind",
            "hosts:\n  - name: here\n  - name: rack2\n    uri: qemu+libssh://bench@10.0.0.2/session\n    ssh: {host: 10.0.0.2, user: bench, key: k, host_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDYCZFgOBmVSFzHX7jn1QRTq3YwwYgdCKmVASoHTtMtL}\ndataset: {kind",
        );
        let d = Lab::from_text(&text, "lab.yaml")
            .expect("a valid lab")
            .describe(None);
        assert!(
            d.contains("VM on a pool of 2 hosts (`here`, `rack2`"),
            "{d}"
        );
        assert!(
            d.contains("host `here`: this machine, qemu:///system"),
            "{d}"
        );
        assert!(
            d.contains("host `rack2`: qemu+libssh://bench@10.0.0.2/session over SSH to bench@10.0.0.2:22 (host key pinned), disks in /var/tmp/labrun"),
            "{d}"
        );
    }

    #[test]
    fn a_profile_is_described_by_its_own_classes_and_a_sparse_file_by_its_allocation() {
        let lab = |dataset: &str| {
            let text = HOSTILE.replace("{kind: synthetic, seed: 1, scale: 0.01}", dataset);
            Lab::from_text(&text, "lab.yaml").expect("a valid lab")
        };
        let vm = lab("{kind: synthetic, profile: vm-image, seed: 1, scale: 0.01}").describe(None);
        assert!(
            vm.contains("dataset: synthetic, profile vm-image, seed 1"),
            "{vm}"
        );
        // 20 GiB * 0.01 apparent; about 27.5% of it allocated (59 MB).
        assert!(vm.contains("sparse disk image"), "{vm}");
        assert!(vm.contains("215 MB"), "{vm}");
        let allocated = vm
            .lines()
            .find(|l| l.contains("allocated on disk"))
            .unwrap_or_else(|| panic!("no allocation line in {vm}"));
        let fp = labrun_dataset::footprint(&labrun_dataset::DatasetParams {
            seed: 1,
            scale: 0.01,
            profile: labrun_evidence::DatasetProfile::VmImage,
        });
        let share = fp.allocated_bytes as f64 / fp.bytes as f64;
        assert!((0.25..0.30).contains(&share), "{share}");
        assert!(
            allocated.contains(&super::gb(fp.allocated_bytes)),
            "{allocated}"
        );
        let tiny = lab("{kind: synthetic, profile: tiny-files, scale: 0.01}").describe(None);
        assert!(tiny.contains("  empty"), "{tiny}");
        assert!(tiny.contains("10000 files"), "{tiny}");
        assert!(!tiny.contains("allocated on disk"), "{tiny}");
        let published = lab("{kind: synthetic, seed: 1, scale: 0.01}").describe(None);
        assert!(
            published.contains("dataset: synthetic, seed 1,"),
            "{published}"
        );
        assert!(published.contains("duplicates"), "{published}");
        let err = Lab::from_text(
            &HOSTILE.replace("scale: 0.01}", "scale: 0.01, profile: tiny}"),
            "lab.yaml",
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(err.contains("tiny-files"), "{err}");
    }

    #[test]
    fn lab_text_is_escaped_and_kept_on_its_line() {
        let lab = Lab::from_text(HOSTILE, "lab.yaml").expect("a valid lab");
        let text = lab.describe(None);
        let raw: Vec<char> = text
            .chars()
            .filter(|&c| c != '\n' && labrun_evidence::printable::is_hazard(c))
            .collect();
        assert!(raw.is_empty(), "{raw:?} in:\n{text}");
        for shown in [
            "  one\\x1b[2J\n",
            "  \\r✓ lab is valid\\u{202e}\n",
            "restic 0.14.0\\nok: lab.yaml is valid\\x07 -> ",
            "restic\\x1b[31m.bz2",
            "from the site\\x1b]0;owned\\x07",
            "RESTIC_PASSWORD=x\\x1b[2J",
        ] {
            assert!(text.contains(shown), "no {shown:?} in:\n{text}");
        }
        assert!(!text.lines().any(|l| l.starts_with("ok:")), "{text}");
    }

    #[test]
    fn check_says_how_fast_the_disk_may_go() {
        let named = HOSTILE.replace("disk: 4GiB}", "disk: 4GiB, disk_profile: hdd}");
        let text = Lab::from_text(&named, "lab.yaml").unwrap().describe(None);
        assert!(
            text.contains("disk speed hdd (total_bytes_sec=150000000, total_iops_sec=200)"),
            "{text}"
        );
        let custom = HOSTILE.replace(
            "disk: 4GiB}",
            "disk: 4GiB, disk_profile: {read_iops_sec: 100}}",
        );
        let text = Lab::from_text(&custom, "lab.yaml").unwrap().describe(None);
        assert!(
            text.contains("disk speed custom (read_iops_sec=100)"),
            "{text}"
        );
    }
}
