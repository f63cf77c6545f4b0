//! What a lab will do, in words: the text `labrun check` prints.

use crate::schema::{DatasetSpec, ImageSpec, Lab, Machine, ToolSpec};
use labrun_artifact::ArtifactSpec;
use labrun_artifact::Extract;
use labrun_dataset::{DatasetParams, Layout, layout};
use labrun_evidence::Step;
use std::fmt::Write;

impl Lab {
    /// Dataset totals by class at the scale a run would use.
    pub fn dataset_layout(&self, scale_override: Option<f64>) -> Layout {
        match &self.dataset {
            DatasetSpec::Synthetic { seed, .. } => layout(&DatasetParams {
                seed: *seed,
                scale: self.scale(scale_override),
            }),
            // The first commit of a generated history, as small files; a
            // repository's size is not known before it is read.
            DatasetSpec::GitHistory {
                generate: Some(g), ..
            } => Layout {
                small_files: u64::from(g.files),
                small_bytes: u64::from(g.files) * u64::from(g.mean_file_bytes),
                ..Layout::default()
            },
            DatasetSpec::GitHistory { .. } => Layout::default(),
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
            DatasetSpec::Synthetic { .. } => None,
        }
    }

    /// Timed steps a full run makes: per tool and cycle, the protocol's.
    pub fn timed_step_count(&self, cycles: u32, tools: usize) -> u64 {
        Step::protocol().len() as u64 * u64::from(cycles) * tools as u64
    }

    /// A multi-line description; secrets are shown as `<secret>`.
    pub fn describe(&self, scale_override: Option<f64>) -> String {
        let mut s = String::new();
        let file = self.source.file.display();
        let _ = writeln!(s, "lab `{}` ({file}, digest {})", self.name, self.digest());
        if !self.description.trim().is_empty() {
            for line in self.description.trim().lines() {
                let _ = writeln!(s, "  {line}");
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
                let _ = writeln!(
                    s,
                    "machine: VM on {}: {} vCPU, {} memory, {} disk, image {image}, accel {}, disk cache {}, SSH wait up to {}",
                    vm.uri,
                    vm.vcpus,
                    vm.memory,
                    vm.disk,
                    vm.accel.as_str(),
                    vm.disk_cache.as_str(),
                    vm.ssh_timeout
                );
                if !vm.packages.is_empty() {
                    let _ = writeln!(s, "image packages: {}", vm.packages.join(" "));
                }
            }
            Machine::Target(t) => {
                let key = t.host_key.split_whitespace().take(2).collect::<Vec<_>>();
                let short = match key.as_slice() {
                    [kind, k] => format!("{kind} {}...", k.get(..24).unwrap_or(k)),
                    _ => t.host_key.clone(),
                };
                let _ = writeln!(
                    s,
                    "machine: existing host {}@{}:{} (key {}, host key pinned: {short})",
                    t.user,
                    t.host,
                    t.port,
                    t.key.display()
                );
            }
        }

        if let Some(source) = self.history_source() {
            crate::history::describe(&source, &mut s);
            describe_history_steps(self, &source, &mut s);
            let _ = writeln!(s, "tools ({}):", self.tools.len());
            for t in &self.tools {
                describe_tool(&mut s, t);
            }
            return s;
        }
        let scale = self.scale(scale_override);
        let l = self.dataset_layout(scale_override);
        match &self.dataset {
            DatasetSpec::Synthetic {
                seed, change_seed, ..
            } => {
                let change = change_seed.unwrap_or(seed.wrapping_add(1));
                let _ = writeln!(
                    s,
                    "dataset: synthetic, seed {seed}, change seed {change}, scale {scale}"
                );
            }
            DatasetSpec::GitHistory { .. } => {}
        }
        let rows = [
            ("small files", l.small_files, l.small_bytes),
            ("large random", l.large_random_files, l.large_random_bytes),
            ("low-entropy", l.low_entropy_files, l.low_entropy_bytes),
            ("duplicates", l.duplicate_files, l.duplicate_bytes),
            ("total", l.total_files(), l.total_bytes()),
        ];
        for (class, files, bytes) in rows {
            let _ = writeln!(s, "  {class:<13} {files:>7} files {:>9}", gb(bytes));
        }

        let steps = self.timed_step_count(self.cycles, self.tools.len());
        let names: Vec<&str> = Step::protocol().iter().map(|st| st.as_str()).collect();
        let _ = writeln!(
            s,
            "cycles: {}; timed steps: {} per tool and cycle ({}), {steps} in all; a step is stopped after {}",
            self.cycles,
            names.len(),
            names.join(", "),
            self.timeouts.step
        );

        let _ = writeln!(s, "tools ({}):", self.tools.len());
        for t in &self.tools {
            describe_tool(&mut s, t);
        }
        s
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
    let _ = writeln!(
        s,
        "cycles: {}; timed steps: {per_cycle}; a step is stopped after {}",
        lab.cycles, lab.timeouts.step
    );
}

fn describe_tool(s: &mut String, t: &ToolSpec) {
    let a = &t.artifact;
    let _ = writeln!(s, "  {} {} -> {}", t.name, t.version, t.install_path());
    let _ = writeln!(s, "    from    {}", source_of(a));
    let built = a.source().is_ok_and(|src| src.is_build());
    let what = if built { " (the built binary)" } else { "" };
    let _ = writeln!(s, "    sha256  {}{what}", a.sha256);
    if let Some(src) = &a.sha256_source {
        let _ = writeln!(s, "    digest  from {src}");
    }
    let binary = a
        .binary_sha256
        .as_deref()
        .unwrap_or("(recorded at fetch time)");
    if !built {
        let _ = writeln!(
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
        let _ = writeln!(s, "    env     {}", env.join(" "));
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
