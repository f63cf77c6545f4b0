//! From a lab to the plan the agent runs (`labrun_evidence::Plan`).

use crate::error::LabError;
use crate::schema::{DatasetSpec, Lab, ToolSpec};
use crate::validate::check_scale;
use labrun_artifact::{ArtifactSource, BuildRecipe, Extract};
use labrun_evidence::{DatasetPlan, Plan, Server, StoragePlan, ToolPlan};

/// What the command line may change for one run without editing the lab.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanOverrides {
    /// `--scale F`, from 0.0001 to 100 (the agent's range).
    pub scale: Option<f64>,
    /// `--cycles N`, at least 1.
    pub cycles: Option<u32>,
    /// `--tools a,b`: run only these, in the lab's order.
    pub tools: Option<Vec<String>>,
}

impl ToolSpec {
    /// Where the binary lives in the guest: `install:`, else the path a
    /// `deb-install` package puts it at, else `/usr/local/bin/<name>`.
    pub fn install_path(&self) -> String {
        // A Python package's entry point is in a venv of the tool's own.
        if let ArtifactSource::Build(BuildRecipe::Python(p)) = &self.artifact.source {
            return format!("/opt/labrun/{}/venv/bin/{}", self.name, p.entry_point);
        }
        if let Some(p) = &self.install {
            return p.clone();
        }
        match &self.artifact.extract {
            Extract::DebInstall(bin) => bin.clone(),
            _ => format!("/usr/local/bin/{}", self.name),
        }
    }

    /// The commands as they run on `server`: the server's commands in
    /// place of the tool's own, then the tool's `args` and the server's
    /// appended.
    pub fn effective_commands(&self, server: Server) -> labrun_evidence::ToolCommands {
        let form = self.repository.get(&server);
        let mut commands = self.commands.clone();
        if let Some(form) = form {
            commands.extend(form.commands.clone());
        }
        let extra = form.into_iter().flat_map(|f| &f.args);
        for (key, args) in self.args.iter().chain(extra) {
            if let Some(c) = commands.get_mut(key) {
                c.argv.extend(args.iter().cloned());
            }
        }
        commands
    }

    /// The tool as the agent sees it, its repository on `server`. Secrets
    /// stay in `env` (the only way they reach the tool) and are named in
    /// `secret_env` so that every writer of evidence redacts them.
    pub fn to_tool_plan(&self, server: Server) -> ToolPlan {
        let form = self.repository.get(&server);
        let mut env = self.env.clone();
        if let Some(form) = form {
            env.extend(form.env.clone());
        }
        ToolPlan {
            name: self.name.clone(),
            version: self.version.clone(),
            binary: self.install_path(),
            binary_sha256: self.artifact.binary_sha256.clone(),
            env,
            secret_env: self.secret_env.clone(),
            commands: self.effective_commands(server),
            snapshot_id_pattern: self.snapshot_id_pattern.clone(),
            repo: form.map(|f| f.repo.clone()),
        }
    }
}

impl Lab {
    /// `<lab>-<timestamp>-<digest>`, e.g. `default-20261129T1851Z-3fa2c1`;
    /// the caller formats the time (UTC, `%Y%m%dT%H%MZ`).
    pub fn run_id(&self, timestamp: &str) -> String {
        format!("{}-{timestamp}-{}", self.name, self.digest())
    }

    /// The tools a run uses: all of them, or the named subset in the lab's
    /// order (naming the noise floor's tool brings its A/A copy: the floor
    /// is measured wherever its tool runs). An unknown name is an error
    /// that lists the real ones.
    pub fn selected_tools(&self, names: Option<&[String]>) -> Result<Vec<&ToolSpec>, LabError> {
        let Some(names) = names else {
            return Ok(self.tools.iter().collect());
        };
        let names = &self.with_series(names);
        let known: Vec<String> = self.tools.iter().map(|t| t.name.clone()).collect();
        for n in names {
            if !known.contains(n) {
                return Err(LabError::UnknownTool {
                    lab: self.name.clone(),
                    name: n.clone(),
                    suggestion: crate::suggest::nearest(n, known.iter().map(String::as_str))
                        .map(str::to_string),
                    known,
                });
            }
        }
        if names.is_empty() {
            return Err(LabError::BadOverride {
                option: "--tools",
                message: format!("names no tool; the lab has: {}", known.join(", ")),
            });
        }
        let copy_of_named = |t: &ToolSpec| {
            self.noise_floor_pair()
                .is_some_and(|p| p.candidate == t.name && names.contains(&p.baseline))
        };
        Ok(self
            .tools
            .iter()
            .filter(|t| names.contains(&t.name) || copy_of_named(t))
            .collect())
    }

    /// `--tools` names with each series filled in: a series' own name
    /// (`restic`) stands for all its members, and a member brings the
    /// anchor, which every run of a series includes (its ratios are taken
    /// against it).
    fn with_series(&self, names: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut add = |n: &str| {
            if !out.iter().any(|o| o == n) {
                out.push(n.to_string());
            }
        };
        for n in names {
            match self.series_of(n) {
                Some(s) if &s.tool == n => s.members.iter().for_each(|m| add(m)),
                Some(s) => {
                    add(n);
                    add(&s.anchor);
                }
                None => add(n),
            }
        }
        out
    }

    /// What the run's report is asked for: the lab's compare pairs, and
    /// its series for the trend. None when it asks for neither.
    pub fn compare_plan(&self) -> Option<labrun_evidence::compare::ComparePlan> {
        let mut plan = match &self.compare {
            Some(c) => c.to_plan()?,
            None if self.series.is_empty() => return None,
            None => labrun_evidence::compare::ComparePlan {
                pairs: Vec::new(),
                margin: None,
                noise_floor: None,
                series: Vec::new(),
            },
        };
        plan.series = self.series.iter().map(|s| s.to_plan()).collect();
        Some(plan)
    }

    /// The plan for one run of this lab.
    pub fn to_plan(&self, run_id: &str, o: &PlanOverrides) -> Result<Plan, LabError> {
        if let Some(s) = o.scale {
            check_scale(s).map_err(|message| LabError::BadOverride {
                option: "--scale",
                message,
            })?;
        }
        if o.cycles == Some(0) {
            return Err(LabError::BadOverride {
                option: "--cycles",
                message: "must be at least 1".into(),
            });
        }
        let tools = self
            .selected_tools(o.tools.as_deref())?
            .into_iter()
            .map(|t| t.to_tool_plan(self.storage.server))
            .collect();
        let dataset = match &self.dataset {
            DatasetSpec::Synthetic {
                seed,
                scale,
                change_seed,
                profile,
            } => DatasetPlan::Synthetic {
                seed: *seed,
                scale: o.scale.unwrap_or(*scale),
                change_seed: Some(change_seed.unwrap_or(seed.wrapping_add(1))),
                profile: *profile,
            },
            DatasetSpec::GitHistory {
                generate,
                repository,
                commits,
                every,
            } => {
                if o.scale.is_some() {
                    return Err(LabError::BadOverride {
                        option: "--scale",
                        message: "applies to the synthetic dataset only: a git-history lab sizes its history with `generate.files` and `generate.commits`".into(),
                    });
                }
                let source = crate::history::source(generate, repository, commits, every)
                    .ok_or_else(|| LabError::Invalid {
                        file: self.source.file.display().to_string(),
                        problems: self.validate(),
                    })?;
                DatasetPlan::GitHistory { source }
            }
            DatasetSpec::Files(d) => {
                refuse_scale_of_real_tree(o.scale)?;
                DatasetPlan::Tree(d.plan())
            }
            DatasetSpec::Archive(d) => {
                refuse_scale_of_real_tree(o.scale)?;
                DatasetPlan::Tree(d.plan())
            }
            DatasetSpec::Trees(d) => {
                refuse_scale_of_real_tree(o.scale)?;
                DatasetPlan::GitHistory {
                    source: d.history_source(),
                }
            }
        };
        Ok(Plan {
            schema_version: labrun_evidence::SCHEMA_VERSION,
            run_id: run_id.to_string(),
            cycles: o.cycles.unwrap_or(self.cycles),
            first_cycle: 1,
            dataset,
            tools,
            protocol: self.protocol.clone(),
            drop_caches: true,
            rotate_tools: true,
            step_timeout_secs: Some(self.timeouts.step.as_secs()),
            trim: true,
            cooldown_secs: self.cooldown.map(|c| c.as_secs()).filter(|s| *s > 0),
            storage: self.storage_plan(),
            round: None,
        })
    }

    /// The plan's `storage`: none for repositories on the machine's own disk.
    pub fn storage_plan(&self) -> Option<StoragePlan> {
        let server = self.storage.server;
        if server == Server::Local {
            return None;
        }
        let installed = self.servers.get(&server);
        Some(StoragePlan {
            server,
            network: self.storage.network.map(|n| n.to_network()),
            binary: installed.map(|s| s.as_install(server).install_path()),
            binary_sha256: installed.and_then(|s| s.artifact.binary_sha256.clone()),
            version: installed.map(|s| s.version.clone()),
        })
    }

    /// Every binary `up` installs: the selected tools, then every server the
    /// lab pins (a variant sharing the machine may use any of them).
    pub fn installs(&self, tools: Option<&[String]>) -> Result<Vec<ToolSpec>, LabError> {
        let mut all: Vec<ToolSpec> = self.selected_tools(tools)?.into_iter().cloned().collect();
        all.extend(self.servers.iter().map(|(kind, s)| s.as_install(*kind)));
        Ok(all)
    }

    /// The dataset scale a run uses, after an optional `--scale`.
    pub fn scale(&self, scale_override: Option<f64>) -> f64 {
        match &self.dataset {
            DatasetSpec::Synthetic { scale, .. } => scale_override.unwrap_or(*scale),
            // A history is sized by its generator or its repository.
            DatasetSpec::GitHistory { .. } => 1.0,
            // A real tree has the size it has.
            DatasetSpec::Files(_) | DatasetSpec::Archive(_) | DatasetSpec::Trees(_) => 1.0,
        }
    }
}

/// `--scale` sizes the generated dataset; a real tree has the size it has.
fn refuse_scale_of_real_tree(scale: Option<f64>) -> Result<(), LabError> {
    match scale {
        Some(_) => Err(LabError::BadOverride {
            option: "--scale",
            message: "applies to the synthetic dataset only: a real tree has the size it has; for a quicker look at a big tree add `sample: {fraction: 0.1}` to the dataset".into(),
        }),
        None => Ok(()),
    }
}
