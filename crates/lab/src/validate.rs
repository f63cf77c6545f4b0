//! `Lab::validate()`: every rule a type cannot express, all problems at
//! once. Pure: it reads nothing but the lab; the loader then points each
//! problem at its line.

use crate::artifact_check::{ArtifactUse, validate_artifact};
use crate::error::Problem;
use crate::schema::{DatasetSpec, ImageSpec, Lab, TargetSpec, ToolSpec, VmSpec};
use crate::validate_uri::LibvirtUri;
use labrun_artifact::Extract;
use labrun_evidence::{CommandTemplate, PLACEHOLDERS};
use labrun_vocab::vm_limits;
use std::collections::BTreeSet;

/// Host key algorithms an OpenSSH `known_hosts` line can carry.
const HOST_KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
];

impl Lab {
    /// Every problem of the lab, in file order as far as possible. Empty
    /// means the lab can be run.
    pub fn validate(&self) -> Vec<Problem> {
        // The rules are the file's: a noise floor's copy is checked as
        // its tool, before it is added.
        if let std::borrow::Cow::Owned(written) = self.as_written() {
            return written.validate();
        }
        let mut out = self.validate_without_variants();
        if self.has_variants()
            && let Err(mut problems) = self.variants()
        {
            out.append(&mut problems);
        }
        out
    }

    /// The lab as written, its variants aside.
    pub(crate) fn validate_without_variants(&self) -> Vec<Problem> {
        if let std::borrow::Cow::Owned(written) = self.as_written() {
            return written.validate_without_variants();
        }
        let mut out = Vec::new();
        if let Err(msg) = labrun_vocab::names::check_lab_name(&self.name) {
            out.push(Problem::new("name", msg));
        }
        if self.vm.is_some() && self.target.is_some() {
            out.push(Problem::new(
                "target",
                "a lab runs either in a VM (`vm:`) or on an existing machine (`target:`), not both: remove one",
            ));
        }
        if let Some(vm) = &self.vm {
            validate_vm(vm, &mut out);
        }
        if let Some(t) = &self.target {
            validate_target(t, "target", &mut out);
        }
        self.validate_hosts(&mut out);
        validate_dataset(&self.dataset, &mut out);
        if self.cycles == 0 {
            out.push(Problem::new(
                "cycles",
                "must be at least 1 (the protocol runs 3)",
            ));
        }
        if self.timeouts.step.as_secs() == 0 {
            out.push(Problem::new(
                "timeouts.step",
                "must be longer than 0s, e.g. `2h`",
            ));
        }
        if let Some(c) = self.cooldown
            && c > crate::schema::MAX_COOLDOWN
        {
            out.push(Problem::new(
                "cooldown",
                format!(
                    "{} before every timed step is too long: use at most {} (a run has dozens of timed steps)",
                    c.human(),
                    crate::schema::MAX_COOLDOWN.human()
                ),
            ));
        }
        if self.tools.is_empty() {
            out.push(Problem::new("tools", "a lab needs at least one tool"));
        }
        let mut seen = BTreeSet::new();
        for (i, tool) in self.tools.iter().enumerate() {
            if !seen.insert(tool.name.as_str()) {
                out.push(Problem::new(
                    format!("tools[{i}].name"),
                    format!(
                        "the tool name `{}` is used twice: tool names must be unique",
                        tool.name
                    ),
                ));
            }
            let at = format!("tools[{i}]");
            crate::series::validate_series(tool, &at, &mut out);
            if !tool.is_series() {
                validate_tool(tool, &at, &mut out);
            }
        }
        self.validate_series_names(&mut out);
        self.validate_python_suites(&mut out);
        self.validate_protocol(&mut out);
        self.validate_storage(&mut out);
        if let Some(c) = &self.compare {
            self.validate_compare(c, &mut out);
        }
        self.validate_noise_floor(&mut out);
        out
    }

    /// Names unique and usable in folder names; a remote host has a remote
    /// URI and SSH to it, this host a local URI and none.
    fn validate_hosts(&self, out: &mut Vec<Problem>) {
        if !self.hosts.is_empty() && self.target.is_some() {
            out.push(Problem::new(
                "hosts",
                "`hosts:` are hypervisors for the lab's VMs; a lab with `target:` runs on that machine: remove one",
            ));
        }
        let mut seen = BTreeSet::new();
        for (i, h) in self.hosts.iter().enumerate() {
            let at = format!("hosts[{i}]");
            if let Err(msg) = labrun_vocab::names::check_lab_name(&h.name) {
                out.push(Problem::new(format!("{at}.name"), msg));
            }
            if !seen.insert(h.name.as_str()) {
                out.push(Problem::new(
                    format!("{at}.name"),
                    format!("the host name `{}` is used twice", h.name),
                ));
            }
            let uri = match crate::validate_uri::check(&h.uri) {
                Ok(uri) => uri,
                Err(msg) => {
                    out.push(Problem::new(format!("{at}.uri"), msg));
                    continue;
                }
            };
            let local = uri == LibvirtUri::Local;
            if let (LibvirtUri::Remote(remote), Some(ssh)) = (&uri, &h.ssh) {
                check_uri_names_the_ssh_host(remote, ssh, &format!("{at}.uri"), out);
            }
            match (&h.ssh, local) {
                (Some(_), true) => out.push(Problem::new(
                    format!("{at}.uri"),
                    format!(
                        "`{}` is this host's libvirt, but `ssh:` names another host: give that host's remote URI, e.g. `qemu+libssh://USER@HOST/system?keyfile=KEY&known_hosts=FILE`",
                        h.uri
                    ),
                )),
                (None, false) => out.push(Problem::new(
                    format!("{at}.ssh"),
                    format!(
                        "`{}` is a remote hypervisor: labrun also needs SSH to that host (`ssh: {{host, user, key, host_key}}`) to copy the disks and reach the guest",
                        h.uri
                    ),
                )),
                (Some(t), false) => validate_target(t, &format!("{at}.ssh"), out),
                (None, true) => {}
            }
        }
    }

    /// Each pair names two different tools of the lab, and a timed step
    /// when it names a phase; the margin reads.
    fn validate_compare(&self, c: &crate::schema::CompareSpec, out: &mut Vec<Problem>) {
        if let Some(m) = &c.margin {
            match labrun_evidence::compare::parse_fraction(m) {
                Ok(f) if f > 0.0 && f <= 1.0 => {}
                Ok(_) => out.push(Problem::new(
                    "compare.margin",
                    format!("`{m}` must be above 0 and at most 100%, e.g. 5%"),
                )),
                Err(e) => out.push(Problem::new("compare.margin", e)),
            }
        }
        if c.pairs.is_empty() {
            out.push(Problem::new(
                "compare.pairs",
                "name at least one pair: `- {baseline: restic, candidate: restic@0.14.0}`",
            ));
        }
        let names = self.tool_names_as_run();
        let known: Vec<&str> = names.iter().map(String::as_str).collect();
        let floor_copy = self.noise_floor.as_ref().map(|f| f.copy_name());
        for (i, p) in c.pairs.iter().enumerate() {
            for (side, name) in [("baseline", &p.baseline), ("candidate", &p.candidate)] {
                if floor_copy.as_ref() == Some(name) {
                    out.push(Problem::new(
                        format!("compare.pairs[{i}].{side}"),
                        format!("`{name}` is the noise floor's A/A copy: `noise_floor:` adds its pair itself, and every other verdict is read against it; remove this pair"),
                    ));
                } else if !known.contains(&name.as_str()) {
                    let hint = crate::suggest::nearest(name, known.iter().copied())
                        .map(|n| format!(" (did you mean `{n}`?)"))
                        .unwrap_or_default();
                    out.push(Problem::new(
                        format!("compare.pairs[{i}].{side}"),
                        format!(
                            "the lab has no tool `{name}`{hint}; its tools: {}",
                            known.join(", ")
                        ),
                    ));
                }
            }
            if let Some(why) = p.phase.as_ref().and_then(|phase| self.not_timed(phase)) {
                out.push(Problem::new(format!("compare.pairs[{i}].phase"), why));
            }
            if p.baseline == p.candidate {
                out.push(Problem::new(
                    format!("compare.pairs[{i}]"),
                    format!("compares `{}` with itself: for an A/A run (the machine's noise floor), write `noise_floor: {{tool: {}}}`: it adds an A/A copy of the tool and that pair", p.baseline, p.baseline),
                ));
            }
        }
    }

    /// The protocol's own rule (shared with the agent's plan check), with
    /// each problem at its step.
    fn validate_protocol(&self, out: &mut Vec<Problem>) {
        let history = self.dataset.is_history();
        // A command no step runs is most likely a misspelt one (`bakup:`).
        let run: BTreeSet<&str> = labrun_evidence::protocol::flat(&self.protocol)
            .filter_map(|s| s.as_run())
            .map(|r| r.command.as_str())
            .collect();
        for (i, tool) in self.tools.iter().enumerate() {
            for key in tool.commands.keys() {
                if run.contains(key.as_str())
                    || labrun_evidence::command::roles::ALL.contains(&key.as_str())
                {
                    continue;
                }
                let hint = crate::suggest::nearest(key, run.iter().copied())
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                out.push(Problem::new(
                    format!("tools[{i}].commands.{key}"),
                    format!("no step of the protocol runs `{key}`{hint}: remove it, or add a step `{{run: {key}}}` to `protocol:`"),
                ));
            }
        }
        for (at, message) in labrun_evidence::protocol::check(
            &self.protocol,
            self.tools.iter().map(|t| (t.name.as_str(), &t.commands)),
            history,
        ) {
            out.push(Problem::new(at.to_string(), message));
        }
        if history {
            self.validate_restores_by_snapshot(out);
        }
    }

    /// The history study restores snapshot k of many: a restore command
    /// that never names `{snapshot}` brings back the same one each time
    /// (`restore latest`), and every verify but the last fails.
    fn validate_restores_by_snapshot(&self, out: &mut Vec<Problem>) {
        let restores: BTreeSet<&str> = labrun_evidence::protocol::flat(&self.protocol)
            .filter_map(|s| s.as_run())
            .filter(|r| r.restores.is_some())
            .map(|r| r.command.as_str())
            .collect();
        for (i, tool) in self.tools.iter().enumerate() {
            for key in &restores {
                let Some(command) = tool.commands.get(*key) else {
                    continue;
                };
                let named = command
                    .argv
                    .iter()
                    .chain(command.cwd.iter())
                    .any(|a| a.contains("{snapshot}"));
                if !named {
                    out.push(Problem::new(
                        format!("tools[{i}].commands.{key}"),
                        "the history study restores every snapshot in turn, and this command never names `{snapshot}`: it would restore the same one each time; restore by the snapshot's label or id (restic: `--tag {snapshot}` on the backup and `restore latest --tag {snapshot}`)",
                    ));
                }
            }
        }
    }
}

/// Names end up in file names and run ids: keep them plain.
fn check_name(name: &str, path: &str, what: &str, out: &mut Vec<Problem>) {
    if !labrun_evidence::variant::is_plain_name(name) {
        out.push(Problem::new(
            path,
            format!("`{name}` is not a usable {what} name: 1-64 letters, digits, `.`, `_`, `-`, not starting with `.` or `-`"),
        ));
    }
}

fn validate_vm(vm: &VmSpec, out: &mut Vec<Problem>) {
    if let Err(msg) = crate::validate_uri::check(&vm.uri) {
        out.push(Problem::new("vm.uri", msg));
    }
    let rules = [
        ("vm.vcpus", vm_limits::check_vcpus(vm.vcpus)),
        ("vm.memory", vm_limits::check_memory(vm.memory.bytes())),
        ("vm.disk", vm_limits::check_disk(vm.disk.bytes())),
        (
            "vm.ssh_timeout",
            vm_limits::check_ssh_timeout(vm.ssh_timeout.as_secs()),
        ),
    ];
    for (path, rule) in rules {
        if let Err(msg) = rule {
            out.push(Problem::new(path, msg));
        }
    }
    for (field, msg) in vm.disk_profile.iotune().problems() {
        out.push(Problem::new(format!("vm.disk_profile.{field}"), msg));
    }
    // The host's own CPUs are checked where the host is known (`check`
    // here, `up` on its hypervisor): these are the rules of the list alone.
    for (field, msg) in vm.cpu_pinning.iter().flat_map(|p| p.problems(vm.vcpus)) {
        let path = match field {
            "emulator" => "vm.cpu_pinning.emulator",
            _ => "vm.cpu_pinning",
        };
        out.push(Problem::new(path, msg));
    }
    for (i, p) in vm.packages.iter().enumerate() {
        if !is_debian_package(p) {
            out.push(Problem::new(
                format!("vm.packages[{i}]"),
                format!("`{p}` is not a Debian package name (lowercase letters, digits, `+-.`, optionally `=version`)"),
            ));
        }
    }
    if let ImageSpec::Debian(suite) = &vm.image
        && !labrun_artifact::debian::is_suite_name(suite)
    {
        out.push(Problem::new(
            "vm.image.debian",
            format!("`{suite}` is not a Debian suite name: e.g. bookworm, trixie, sid"),
        ));
    }
    if let ImageSpec::Cloud(a) = &vm.image {
        if !vm.packages.is_empty() {
            // The guest has no network (slirp restrict=on) and a cloud image
            // is booted as published: nothing can install packages into it.
            out.push(Problem::new(
                "vm.packages",
                "a cloud image is booted as it is and its guest has no network, so labrun cannot add packages to it: drop `packages:` (and tools that need them), or use `image: debian12`, which labrun builds with them",
            ));
        }
        out.extend(validate_artifact(
            a,
            "vm.image.cloud",
            ArtifactUse::DiskImage,
        ));
    }
}

/// An SSH login as `target:` or a host's `ssh:` names it (`at`: its path).
fn validate_target(t: &TargetSpec, at: &str, out: &mut Vec<Problem>) {
    if t.host.trim().is_empty() || t.host.contains(char::is_whitespace) || t.host.contains('@') {
        out.push(Problem::new(
            format!("{at}.host"),
            format!(
                "`{}` is not a host name or address (the user goes in `user:`)",
                t.host
            ),
        ));
    }
    if t.port == 0 {
        out.push(Problem::new(
            format!("{at}.port"),
            "0 is not a port: expected 1-65535 (22 by default)",
        ));
    }
    if t.user.trim().is_empty() || t.user.contains(char::is_whitespace) {
        out.push(Problem::new(
            format!("{at}.user"),
            "expected the user name to log in as",
        ));
    }
    if t.key.as_os_str().is_empty() {
        out.push(Problem::new(
            format!("{at}.key"),
            "expected the path of the private key file",
        ));
    }
    if let Err(msg) = crate::validate_uri::check_workdir(&t.workdir) {
        out.push(Problem::new(format!("{at}.workdir"), msg));
    }
    check_host_key(&t.host_key, &format!("{at}.host_key"), out);
}

/// A pool host's URI and its `ssh:` are one machine: the disks go over
/// `ssh:`, its key pinned, and the domain is defined through the URI.
fn check_uri_names_the_ssh_host(
    uri: &crate::validate_uri::RemoteUri,
    ssh: &TargetSpec,
    at: &str,
    out: &mut Vec<Problem>,
) {
    if !crate::validate_uri::same_host(&uri.host, &ssh.host) {
        out.push(Problem::new(
            at,
            format!(
                "names the host `{}`, but `ssh.host` is `{}`: the URI and `ssh:` must be the same machine (labrun copies the disks over `ssh:`, its host key pinned, and defines the domain through the URI)",
                uri.host, ssh.host
            ),
        ));
    } else if uri.port != ssh.port {
        out.push(Problem::new(
            at,
            format!(
                "reaches SSH on port {}, but `ssh.port` is port {}: the URI and `ssh:` must be the same sshd",
                uri.port, ssh.port
            ),
        ));
    }
}

/// `ssh-ed25519 AAAA...` with an optional comment: the server's key, as
/// `ssh-keyscan` or `/etc/ssh/ssh_host_ed25519_key.pub` shows it.
fn check_host_key(line: &str, path: &str, out: &mut Vec<Problem>) {
    let mut words = line.split_whitespace();
    let (Some(kind), key) = (words.next(), words.next()) else {
        out.push(Problem::new(path, "expected the server's host key: `ssh-ed25519 AAAA...` (see /etc/ssh/ssh_host_ed25519_key.pub)"));
        return;
    };
    if !HOST_KEY_TYPES.contains(&kind) {
        let hint = if key.is_some_and(|k| HOST_KEY_TYPES.contains(&k)) {
            " (drop the host name in front: only `TYPE KEY` is pinned)".to_string()
        } else {
            crate::suggest::nearest(kind, HOST_KEY_TYPES.iter().copied())
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default()
        };
        out.push(Problem::new(
            path,
            format!(
                "`{kind}` is not a host key type: expected one of {}{hint}",
                HOST_KEY_TYPES.join(", ")
            ),
        ));
        return;
    }
    let Some(key) = key else {
        out.push(Problem::new(
            path,
            format!("`{kind}` without its key: expected `{kind} AAAA...`"),
        ));
        return;
    };
    let base64 = key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c));
    if !base64 || key.len() % 4 != 0 || !key.starts_with("AAAA") {
        out.push(Problem::new(path, "the key is not base64 as OpenSSH writes it (`AAAA...`): copy the whole line of the .pub file"));
        return;
    }
    // The connection's own parser: a type name that does not match the key
    // blob (an ed25519 key labelled ssh-rsa) fails here, not at `bench`.
    if let Err(e) = labrun_ssh::check_host_key_line(line) {
        let msg = e.to_string();
        out.push(Problem::new(
            path,
            msg.trim_start_matches("SSH: ").to_string(),
        ));
    }
}

fn validate_dataset(d: &DatasetSpec, out: &mut Vec<Problem>) {
    match d {
        DatasetSpec::Synthetic { scale, .. } => {
            if let Err(msg) = check_scale(*scale) {
                out.push(Problem::new("dataset.scale", msg));
            }
        }
        DatasetSpec::GitHistory {
            generate,
            repository,
            commits,
            every,
        } => crate::history::validate(generate, repository, commits, every, out),
        DatasetSpec::Files(d) => crate::real_tree::validate_folder(d, out),
        DatasetSpec::Archive(d) => crate::real_tree::validate_archive(d, out),
        DatasetSpec::Trees(d) => crate::real_tree::validate_trees(d, out),
    }
}

/// The agent's own rule ([`labrun_dataset::DatasetParams::validate`]): what
/// `check` accepts, the guest generates.
pub fn check_scale(scale: f64) -> Result<(), String> {
    labrun_dataset::DatasetParams::published(labrun_dataset::DatasetParams::DEFAULT_SEED, scale)
        .validate()
        .map_err(|e| e.to_string())
}

/// One tool's problems (a series member's, checked at its entry).
pub(crate) fn tool_problems(tool: &ToolSpec, at: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    validate_tool(tool, at, &mut out);
    out
}

fn validate_tool(tool: &ToolSpec, at: &str, out: &mut Vec<Problem>) {
    // `restic@0.14.0`: a variant of the tool `restic` (its own version or
    // settings), named so the report can set the two side by side.
    match tool.name.split_once('@') {
        Some((base, variant)) => {
            check_name(base, &format!("{at}.name"), "tool", out);
            check_name(
                variant,
                &format!("{at}.name"),
                "tool variant (after `@`)",
                out,
            );
        }
        None => check_name(&tool.name, &format!("{at}.name"), "tool", out),
    }
    if tool.version.trim().is_empty() {
        out.push(Problem::new(
            format!("{at}.version"),
            "expected the version under test, e.g. `0.19.1`",
        ));
    }
    out.extend(validate_artifact(
        &tool.artifact,
        &format!("{at}.artifact"),
        ArtifactUse::ToolBinary,
    ));

    if let Some(install) = &tool.install {
        if !install.starts_with('/')
            || install.contains(char::is_whitespace)
            || install.ends_with('/')
        {
            out.push(Problem::new(
                format!("{at}.install"),
                format!("`{install}` is not an absolute file path in the guest, e.g. `/usr/local/bin/{}`", tool.name),
            ));
        }
        if let Extract::DebInstall(bin) = &tool.artifact.extract
            && bin != install
        {
            out.push(Problem::new(
                format!("{at}.install"),
                format!("the package installs `{bin}` (`deb-install`), but `install:` says `{install}`: remove `install:` or make them equal"),
            ));
        }
    }

    if let Some(pattern) = &tool.snapshot_id_pattern {
        let path = format!("{at}.snapshot_id_pattern");
        if let Err(why) = labrun_evidence::snapshot_id::compile(pattern) {
            out.push(Problem::new(path.clone(), format!("`{pattern}`: {why}")));
        }
        if tool
            .commands
            .contains_key(labrun_evidence::command::roles::SNAPSHOT_ID)
        {
            out.push(Problem::new(
                path,
                "the tool has a `snapshot_id` command too: keep one way to learn the id (the pattern reads the backup's output, the command runs the tool again)",
            ));
        }
    }

    for (name, value) in &tool.env {
        // The agent substitutes placeholders in env values too.
        check_placeholders(
            value,
            &format!("{at}.env.{name}"),
            &mut BTreeSet::new(),
            out,
        );
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            out.push(Problem::new(
                format!("{at}.env.{name}"),
                format!("`{name}` is not an environment variable name (letters, digits, `_`)"),
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (i, name) in tool.secret_env.iter().enumerate() {
        let path = format!("{at}.secret_env[{i}]");
        if !seen.insert(name) {
            out.push(Problem::new(path, format!("`{name}` is listed twice")));
            continue;
        }
        match tool.env.get(name) {
            None => {
                let hint = crate::suggest::nearest(name, tool.env.keys().map(String::as_str))
                    .map(|n| format!(" (did you mean `{n}`?)"))
                    .unwrap_or_default();
                out.push(Problem::new(
                    path,
                    format!("`{name}` is not in `env`: a secret is an `env` entry whose value is hidden; add `{name}: ...` under `env`{hint}"),
                ));
            }
            Some(value) if value.is_empty() => {
                out.push(Problem::new(
                    format!("{at}.env.{name}"),
                    "a secret cannot be empty",
                ));
            }
            Some(value) => {
                // A password on a command line shows in `ps` and in logs.
                // On the machine's own disk and on every server it names.
                let servers = std::iter::once(labrun_evidence::Server::Local)
                    .chain(tool.repository.keys().copied());
                let mut flagged = BTreeSet::new();
                let every_form = servers.flat_map(|server| tool.effective_commands(server));
                for (key, cmd) in every_form {
                    if flagged.contains(&key) {
                        continue;
                    }
                    if cmd
                        .argv
                        .iter()
                        .chain(cmd.cwd.iter())
                        .any(|a| a.contains(value.as_str()))
                    {
                        out.push(Problem::new(
                            format!("{at}.commands.{key}"),
                            format!("contains the value of the secret `{name}`: a secret reaches the tool only through its environment variable, never a command line"),
                        ));
                        flagged.insert(key);
                    }
                }
            }
        }
    }

    // A tool that binds its tree once, at init (duplicacy's `-repository`),
    // backs up without naming it again.
    let init_names_source = tool.commands.get("init").is_some_and(|init| {
        init.argv
            .iter()
            .chain(init.cwd.iter())
            .any(|a| placeholders(a).contains(&"source"))
    });
    for (key, cmd) in &tool.commands {
        let key_rule = if key == "backup" && init_names_source {
            "backup-bound-at-init"
        } else {
            key.as_str()
        };
        validate_command(cmd, &format!("{at}.commands.{key}"), key_rule, out);
    }
    for (key, extra) in &tool.args {
        if !tool.commands.contains_key(key) {
            let keys: Vec<&str> = tool.commands.keys().map(String::as_str).collect();
            out.push(Problem::new(
                format!("{at}.args.{key}"),
                format!(
                    "`{}` has no command `{key}` to add arguments to; its commands: {}",
                    tool.name,
                    keys.join(", ")
                ),
            ));
        }
        let mut used = BTreeSet::new();
        for (i, arg) in extra.iter().enumerate() {
            check_placeholders(arg, &format!("{at}.args.{key}[{i}]"), &mut used, out);
        }
    }
}

fn validate_command(cmd: &CommandTemplate, at: &str, key: &str, out: &mut Vec<Problem>) {
    if cmd.argv.is_empty() || cmd.argv[0].trim().is_empty() {
        out.push(Problem::new(
            format!("{at}.argv"),
            "an empty command: expected an argv list starting with the program, e.g. [\"{bin}\", \"init\"]",
        ));
        return;
    }
    let mut used = BTreeSet::new();
    for (i, arg) in cmd.argv.iter().enumerate() {
        check_placeholders(arg, &format!("{at}.argv[{i}]"), &mut used, out);
    }
    if let Some(cwd) = &cmd.cwd {
        check_placeholders(cwd, &format!("{at}.cwd"), &mut used, out);
    }
    // Each step must name what it works on, or it works on something else.
    let needs = match key {
        "init" => Some(("repo", "the repository it creates")),
        "backup" => Some(("source", "the folder it backs up")),
        "restore" => Some((
            "target",
            "the folder it restores into (in argv or as `cwd`)",
        )),
        _ => None,
    };
    if let Some((placeholder, what)) = needs
        && !used.contains(placeholder)
    {
        out.push(Problem::new(
            at,
            format!("never uses `{{{placeholder}}}`, {what}: the agent decides where it is"),
        ));
    }
}

/// The `{name}` placeholders of one argument, by the agent's own rule
/// ([`labrun_evidence::command::next_placeholder`]).
pub fn placeholders(arg: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = arg;
    while let Some((_, name, after)) = labrun_evidence::command::next_placeholder(rest) {
        out.push(name);
        rest = after;
    }
    out
}

/// An argument's placeholders are all known ones.
pub(crate) fn check_argument(arg: &str, path: &str, out: &mut Vec<Problem>) {
    check_placeholders(arg, path, &mut BTreeSet::new(), out);
}

fn check_placeholders<'a>(
    arg: &'a str,
    path: &str,
    used: &mut BTreeSet<&'a str>,
    out: &mut Vec<Problem>,
) {
    for word in placeholders(arg) {
        if PLACEHOLDERS.contains(&word) {
            used.insert(word);
            continue;
        }
        let hint = crate::suggest::nearest(word, PLACEHOLDERS.iter().copied())
            .map(|n| format!("did you mean `{{{n}}}`? "))
            .unwrap_or_default();
        out.push(Problem::new(
            path,
            format!(
                "unknown placeholder `{{{word}}}`: {hint}known: {}",
                PLACEHOLDERS
                    .iter()
                    .map(|p| format!("{{{p}}}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ));
    }
}

/// A package name, `=version` optionally pinning it (Debian's rules:
/// [`labrun_artifact::debian`]).
fn is_debian_package(p: &str) -> bool {
    use labrun_artifact::debian;
    match p.split_once('=') {
        Some((name, version)) => debian::is_package_name(name) && debian::is_version(version),
        None => debian::is_package_name(p),
    }
}

#[cfg(test)]
mod tests {
    use super::placeholders;

    #[test]
    fn placeholder_scan() {
        assert_eq!(placeholders("{bin}"), vec!["bin"]);
        assert_eq!(placeholders("--path={repo}/x{work}"), vec!["repo", "work"]);
        assert_eq!(placeholders("echo ${HOME} {reop}"), vec!["reop"]);
        assert_eq!(placeholders("find . -exec ls {} +"), Vec::<&str>::new());
        assert_eq!(placeholders("{{bin}}"), vec!["bin"]);
        assert_eq!(placeholders("awk '{print $1}'"), Vec::<&str>::new());
        assert_eq!(placeholders("{unclosed"), Vec::<&str>::new());
    }
}
