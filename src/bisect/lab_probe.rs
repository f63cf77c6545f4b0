//! How `labrun bisect` measures a commit: the lab's series tool built at
//! the good commit and at the probe, both pinned by the digests the builds
//! gave, written as a lab of their own (the user's lab with `versions:`
//! replaced), and run by `labrun bench` as any lab: the two members
//! interleaved cycle by cycle, `--until-conclusive` adding pairs. The probe's
//! figure is then read from the run's evidence by `labrun compare`'s own
//! paired statistics. Each probe's run folder is its evidence.

use super::search::{Measured, Outcome};
use anyhow::{Context as _, bail};
use labrun_artifact::spec::ArtifactSource;
use labrun_artifact::{Fetcher, NoProgress};
use labrun_evidence::Step;
use labrun_evidence::compare::ComparePair;
use labrun_lab::Lab;
use labrun_report::compare::FigureDef as _;
use labrun_report::compare::{Figure, Settings, Verdict, compare_paired, keep_asked};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// A digest no build gives: the placeholder pin of a member whose digest
/// its build is about to tell.
const UNPINNED: &str = "0000000000000000000000000000000000000000000000000000000000000000";

pub struct LabProber {
    /// The user's lab file and its text.
    pub lab_path: PathBuf,
    pub lab_text: String,
    /// The series tool bisected.
    pub tool: String,
    pub phase: Step,
    pub figure: Figure,
    pub settings: Settings,
    /// Where probe runs go (`<bisect folder>/runs`).
    pub runs: PathBuf,
    pub cycles: u32,
    /// Pairs `bench --until-conclusive` may add while a verdict is open.
    pub until_conclusive: u32,
    /// labrun's global options, passed on to each `labrun bench`.
    pub cache: PathBuf,
    pub state: PathBuf,
    pub mirror: Option<PathBuf>,
    /// Builds and copies to a target go through one fetcher (the cache's).
    pub fetcher: Fetcher,
    /// The digest of each commit built so far: the good commit is in every
    /// probe, and is built (or looked up) once.
    pub digests: BTreeMap<String, String>,
    /// The results store each probe's `labrun bench` imports its run into
    /// (`--db`); None: bench's own default (`LABRUN_DB`, the data folder).
    pub db: Option<labrun_store::Location>,
}

impl super::Prober for LabProber {
    async fn probe(
        &mut self,
        good: &str,
        commit: &str,
        ask: super::Ask,
    ) -> anyhow::Result<Outcome> {
        // Every probe runs against the good commit: when that does not
        // build, no probe can be measured, so the search stops here instead
        // of skipping every commit (and trying the same build again each time).
        let good_pin = self.build(good).await.with_context(|| {
            format!(
                "the good commit {} does not build, so no probe can run against it; name a good commit that builds (`--good`)",
                super::short(good)
            )
        })?;
        let pin = match self.build(commit).await {
            Ok(pin) => pin,
            Err(e) => {
                return Ok(Outcome::Skipped {
                    why: format!("the build of {} failed: {e:#}", super::short(commit)),
                });
            }
        };
        let pins = vec![(good.to_string(), good_pin), (commit.to_string(), pin)];
        let text =
            labrun_artifact::lab_edit::set_series_members(&self.lab_text, &self.tool, &pins, good)
                .map_err(|e| anyhow::anyhow!("{}: {e}", self.lab_path.display()))?;
        // The pair `--until-conclusive` adds cycles to (the lab has no
        // `compare:` of its own: the command refuses one). It asks about the
        // bisected row alone, so only that row keeps adding pairs and its
        // verdict is not Holm-adjusted over rows nobody asked about. JSON is
        // YAML's flow form: the pair is written as the lab reads it.
        // Its margin is the one the probe is decided at (beside a measured
        // step, the two-ends rule's), so `--until-conclusive` stops adding
        // pairs as soon as that is decided.
        let pair = serde_json::to_string(&self.pair(good, commit))?;
        let text = format!(
            "{text}\ncompare:\n  margin: {}%\n  pairs:\n    - {pair}\n",
            ask.margin * 100.0,
        );
        let probe_lab = ProbeLab::write(&self.lab_path, commit, &text)?;
        let lab = Lab::load(probe_lab.path())?;
        if let Some(target) = &lab.target {
            self.install_on_target(&lab, target, probe_lab.path())
                .await?;
        }
        let run = self
            .bench(probe_lab.path(), lab.target.is_none(), ask.bad_end)
            .await?;
        let Some(run) = run else {
            return Ok(Outcome::Skipped {
                why: format!(
                    "the run of {} failed before it measured anything (see the output above)",
                    super::short(commit)
                ),
            });
        };
        self.judge(&run, good, commit)
    }
}

impl LabProber {
    fn member(&self, commit: &str) -> String {
        labrun_lab::series::member_name(&self.tool, commit)
    }

    /// The probe's question: the good commit against `commit`, on the
    /// bisected phase and figure only.
    fn pair(&self, good: &str, commit: &str) -> ComparePair {
        ComparePair {
            phase: Some(self.phase.clone()),
            figure: Some(self.figure),
            ..ComparePair::of(self.member(good), self.member(commit))
        }
    }

    /// The series member for `commit`: the template with the commit put
    /// in, as the lab loader expands it (its digest is what is being found).
    fn member_artifact(&self, commit: &str) -> anyhow::Result<labrun_artifact::ArtifactSpec> {
        let template = labrun_lab::series::template(&self.lab_text, &self.tool)
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.lab_path.display()))?;
        let version = labrun_lab::series::SeriesVersion {
            version: commit.to_string(),
            sum: None,
            sha256: Some(UNPINNED.to_string()),
            toolchain: None,
        };
        let member = template
            .series_member(&version)
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.lab_path.display()))?;
        Ok(member.artifact)
    }

    /// Builds the member (or finds it in labrun's build cache) and gives
    /// its binary's digest.
    async fn build(&mut self, commit: &str) -> anyhow::Result<String> {
        if let Some(digest) = self.digests.get(commit) {
            return Ok(digest.clone());
        }
        let artifact = self.member_artifact(commit)?;
        let ArtifactSource::Build(recipe) = &artifact.source else {
            bail!(
                "`{}` is not built from source: bisect builds each commit, so its artifact must be a `source:` build with `git: {{commit: \"{{version}}\"}}`",
                self.tool
            );
        };
        let pin = self
            .fetcher
            .pin_build(&self.member(commit), recipe, &mut NoProgress)
            .await?;
        self.digests.insert(commit.to_string(), pin.sha256.clone());
        Ok(pin.sha256)
    }

    /// On an existing machine the members' binaries are copied to their
    /// `install:` paths (a VM's `up` installs them itself).
    async fn install_on_target(
        &self,
        lab: &Lab,
        target: &labrun_lab::TargetSpec,
        lab_file: &Path,
    ) -> anyhow::Result<()> {
        let session = labrun_ssh::connect(
            &crate::bench::machine::ssh_target(lab_file, target),
            std::time::Duration::from_secs(30),
        )
        .await
        .context("connecting to the lab's target to install the probe's binaries")?;
        for tool in lab
            .tools
            .iter()
            .filter(|t| t.name.starts_with(&format!("{}@", self.tool)))
        {
            let install = tool.install.as_deref().with_context(|| {
                format!(
                    "`{}` runs on an existing machine: give it `install: /some/folder/{{version}}/{}` so each commit's binary has a path of its own",
                    self.tool, self.tool
                )
            })?;
            let fetched = self
                .fetcher
                .fetch(&tool.name, &tool.artifact, &mut NoProgress)
                .await?;
            let folder = install.rsplit_once('/').map_or("/", |(d, _)| d);
            session
                .exec(&format!("mkdir -p '{}'", folder.replace('\'', "'\\''")))
                .await?;
            session.upload(&fetched.path, install, 0o755).await?;
        }
        Ok(())
    }

    /// `labrun -f LAB bench` of the probe's lab; the run folder it made, or
    /// None when it made none. Ctrl-C reaches the child too (one process
    /// group): it stops, keeps its evidence, and so does this.
    /// `all_at_once`: the cycles and the whole `--until-conclusive` cap as
    /// one fixed number of pairs (the bad end's).
    async fn bench(
        &self,
        lab_file: &Path,
        vm: bool,
        all_at_once: bool,
    ) -> anyhow::Result<Option<PathBuf>> {
        let (cycles, until_conclusive) = if all_at_once {
            (self.cycles + self.until_conclusive, 0)
        } else {
            (self.cycles, self.until_conclusive)
        };
        std::fs::create_dir_all(&self.runs)
            .with_context(|| format!("cannot create {}", self.runs.display()))?;
        let before = run_folders(&self.runs);
        let exe = std::env::current_exe().context("cannot find labrun's own binary")?;
        let mut cmd = tokio::process::Command::new(exe);
        cmd.arg("-f")
            .arg(lab_file)
            .arg("--cache")
            .arg(&self.cache)
            .arg("--state")
            .arg(&self.state);
        if let Some(m) = &self.mirror {
            cmd.arg("--mirror").arg(m);
        }
        cmd.args(["bench", "--plain", "--cycles"])
            .arg(cycles.to_string())
            .arg("--results")
            .arg(&self.runs);
        if let Some(db) = &self.db {
            cmd.arg("--db").arg(db.to_string());
        }
        if until_conclusive > 0 {
            cmd.arg("--until-conclusive")
                .arg(until_conclusive.to_string());
        }
        if vm {
            cmd.args(["--up", "--down"]);
        }
        let status = cmd
            .stdin(Stdio::null())
            .status()
            .await
            .context("cannot run labrun bench")?;
        if status.code() == Some(i32::from(crate::exit::INTERRUPTED)) {
            return Err(super::Interrupted.into());
        }
        let made: Vec<PathBuf> = run_folders(&self.runs)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        Ok(made.into_iter().max())
    }

    /// The probe's figure against the good commit's, from the run's records.
    fn judge(&self, run_dir: &Path, good: &str, commit: &str) -> anyhow::Result<Outcome> {
        let run = labrun_report::evidence::load(run_dir)
            .with_context(|| format!("cannot read the run {}", run_dir.display()))?;
        let pair = self.pair(good, commit);
        // The run's looks: pairs added one at a time are judged by the
        // sequential rule, as the run's own summary judges them.
        let settings = Settings {
            looks: labrun_report::compare::lab_settings(&run).looks,
            ..self.settings
        };
        let mut comparison = compare_paired(&run, &pair.baseline, &pair.candidate, &settings)?;
        keep_asked(&mut comparison, &pair);
        let Some(row) = comparison.row(&self.phase, self.figure) else {
            return Ok(Outcome::Skipped {
                why: format!(
                    "the run {} has no {} of {}",
                    run_dir.display(),
                    self.figure.title(),
                    self.phase
                ),
            });
        };
        let Some(ratio) = row.ratio else {
            return Ok(Outcome::Skipped {
                why: format!(
                    "the run {} gave no ratio: {}",
                    run_dir.display(),
                    row.note.clone().unwrap_or_default()
                ),
            });
        };
        let measured = Measured {
            ratio,
            interval: row.interval,
            pairs: row.pairs.unwrap_or(0),
            run: run_dir.display().to_string(),
        };
        // The margin's judgment (the bad end's; a probe between the ends is
        // judged again against both, in `two_ends`): did it get worse
        // beyond the margin? Bad is
        // compare's `worse` verdict (on the one row asked about);
        // good is an interval whose upper end stays below 1 + margin (a
        // probe that may be faster is still not worse, where compare's
        // two-sided "no change" would wait for more pairs); anything
        // else cannot be told.
        let not_worse = row
            .interval
            .is_some_and(|[_, high]| high < 1.0 + self.settings.margin);
        Ok(match row.verdict {
            Verdict::Worse => Outcome::Bad(measured),
            _ if not_worse => Outcome::Good(measured),
            Verdict::Better | Verdict::NoChange => Outcome::Good(measured),
            Verdict::Inconclusive => Outcome::Inconclusive(measured),
        })
    }
}

/// The run folders under `runs`.
fn run_folders(runs: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(runs)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("raw").is_dir())
        .collect()
}

/// A probe's lab, written beside the user's (so its relative paths mean
/// what they mean there) and removed when the probe is done: the run
/// folder keeps a copy in `raw/lab.yaml`.
struct ProbeLab(tempfile::NamedTempFile);

impl ProbeLab {
    fn write(lab_path: &Path, commit: &str, text: &str) -> anyhow::Result<ProbeLab> {
        let dir = lab_path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let file = tempfile::Builder::new()
            .prefix(&format!(".labrun-bisect-{}-", super::short(commit)))
            .suffix(".yaml")
            .tempfile_in(dir)
            .with_context(|| format!("cannot write a probe's lab in {}", dir.display()))?;
        std::fs::write(file.path(), text)
            .with_context(|| format!("cannot write {}", file.path().display()))?;
        Ok(ProbeLab(file))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}
