//! The host's side of a real-tree dataset (issue 31): a folder of the
//! user's or a pinned archive, made reachable on the machine under test
//! before the agent starts ([`push`]), and sized for `labrun check`
//! ([`survey`]). An archive comes through the artifact cache ([`fetch`]),
//! by bench or ahead of time by `labrun fetch`.

pub mod describe;
pub mod fetch;
mod member_listing;
pub mod push;
pub mod survey;

use crate::bench::layout::RemoteRun;
use crate::context::Context;
use labrun_evidence::{DatasetPlan, HistorySource, Plan, TreeSource};
use labrun_lab::real_tree::{DEFAULT_EXPANSION, TreeSpec};
use labrun_lab::{DatasetSpec, Lab, Machine};
use labrun_ssh::Session;

/// One tree as the lab names it, in the plan's order.
enum Wanted<'l> {
    Folder(&'l str),
    Archive {
        artifact: &'l labrun_artifact::ArtifactSpec,
        unpacked_size: Option<u64>,
    },
}

fn wanted(lab: &Lab) -> Vec<Wanted<'_>> {
    match &lab.dataset {
        DatasetSpec::Files(d) => vec![Wanted::Folder(&d.path)],
        DatasetSpec::Archive(d) => vec![Wanted::Archive {
            artifact: &d.artifact,
            unpacked_size: d.unpacked_size.map(|s| s.bytes()),
        }],
        DatasetSpec::Trees(d) => d
            .trees
            .iter()
            .map(|t| match t {
                TreeSpec::Files(p) => Wanted::Folder(p),
                TreeSpec::Archive(a) => Wanted::Archive {
                    artifact: &a.artifact,
                    unpacked_size: a.unpacked_size.map(|s| s.bytes()),
                },
            })
            .collect(),
        DatasetSpec::Synthetic { .. } | DatasetSpec::GitHistory { .. } => Vec::new(),
    }
}

/// The plan's real trees, to be pointed at the machine's copies.
fn sources(plan: &mut Plan) -> Vec<&mut TreeSource> {
    match &mut plan.dataset {
        DatasetPlan::Tree(t) => vec![&mut t.source],
        DatasetPlan::GitHistory {
            source: HistorySource::Trees { trees, .. },
        } => trees.iter_mut().collect(),
        _ => Vec::new(),
    }
}

/// Where the host writes what it pushed, in the run's raw evidence.
pub const PUSH_FILE: &str = "dataset-push.json";

/// Makes every real tree of the plan reachable on the machine under test
/// and points the plan at it. Pushed sizes and times are said as notes.
pub async fn ready_trees(
    ctx: &Context,
    lab: &Lab,
    session: &Session,
    remote: &RemoteRun,
    plan: &mut Plan,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<push::Pushed>> {
    let mut pushed = Vec::new();
    let on_target = matches!(lab.machine(), Machine::Target(_));
    let wanted = wanted(lab);
    let sources = sources(plan);
    for (i, (want, source)) in wanted.iter().zip(sources).enumerate() {
        let (ready, how) = match want {
            // On a machine of the user's, the folder is theirs, there.
            Wanted::Folder(path) if on_target => {
                *source = TreeSource::Folder {
                    path: (*path).to_string(),
                    manifest_sha256: None,
                };
                continue;
            }
            Wanted::Folder(path) => {
                let local = push::host_folder(&lab.source.file, path);
                push::push_folder(session, remote, &local, note).await?
            }
            Wanted::Archive {
                artifact,
                unpacked_size,
            } => {
                let TreeSource::Archive { format, .. } = source else {
                    anyhow::bail!(
                        "tree {}: the plan does not name an archive (a bug in labrun)",
                        i + 1
                    );
                };
                let format = *format;
                let archive = fetch::DatasetArchive::of(lab, i, artifact, *unpacked_size);
                let got =
                    fetch::fetch_archive(ctx, &archive, &mut labrun_artifact::NoProgress).await?;
                // By the file fetched, as the member taken out of it and
                // `check`'s listing are bounded.
                let max_bytes = archive.max_unpacked(std::fs::metadata(&got.fetched.path)?.len());
                push::push_archive(session, remote, &got.path, format, max_bytes, note).await?
            }
        };
        *source = ready;
        pushed.push(how);
    }
    Ok(pushed)
}

/// The most an archive of `size` bytes may unpack to: 10% above its
/// declared size, else the expansion past which it is taken for a bomb.
pub fn max_unpacked(size: u64, declared: Option<u64>) -> u64 {
    declared.map_or(size.saturating_mul(DEFAULT_EXPANSION), |s| {
        s.saturating_add(s / 10)
    })
}
