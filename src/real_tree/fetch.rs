//! A lab's dataset archives into the artifact cache, each checked by its
//! pinned SHA-256. One path for `bench` (which then pushes the file into
//! the machine) and for `labrun fetch` (which takes them ahead of time so
//! a bench needs no network for them): a fetched archive is the very file
//! bench finds, and a wrong digest is refused the same way by both.

use super::{Wanted, wanted};
use crate::context::Context;
use anyhow::Context as _;
use labrun_artifact::{ArtifactSpec, Extract, FetchedArtifact, Progress, Source};
use labrun_lab::{DatasetSpec, Lab};
use std::path::PathBuf;

/// The name the fetcher and the extraction know every dataset archive by:
/// the extracted member is written under it in the cache, so it stays one
/// word (a tree's number is for people: [`DatasetArchive::label`]).
const NAME: &str = "dataset";

/// One archive the lab's dataset names.
pub struct DatasetArchive<'l> {
    /// Its place in a `trees:` series, counted from 1 as `check` counts;
    /// None for `kind: archive`.
    pub tree: Option<usize>,
    pub artifact: &'l ArtifactSpec,
    /// The lab's `unpacked_size:` in bytes, if it gives one.
    pub unpacked_size: Option<u64>,
}

impl<'l> DatasetArchive<'l> {
    /// The archive of the lab's tree `index` (from 0, in the lab's order).
    pub fn of(
        lab: &Lab,
        index: usize,
        artifact: &'l ArtifactSpec,
        unpacked_size: Option<u64>,
    ) -> DatasetArchive<'l> {
        let in_series = matches!(lab.dataset, DatasetSpec::Trees(_));
        DatasetArchive {
            tree: in_series.then_some(index + 1),
            artifact,
            unpacked_size,
        }
    }

    /// The most the tree may unpack to, from the size of the file fetched
    /// (the archive, or the `.deb` a member is taken from): the one bound
    /// of the member taken out, of `check`'s listing and of the unpack.
    pub fn max_unpacked(&self, fetched_size: u64) -> u64 {
        super::max_unpacked(fetched_size, self.unpacked_size)
    }

    /// "dataset", or "dataset tree N" in a series: a progress bar's and a
    /// table row's name.
    pub fn label(&self) -> String {
        match self.tree {
            None => NAME.to_string(),
            Some(n) => format!("{NAME} tree {n}"),
        }
    }

    /// What an error happened while doing, so a series says which tree.
    fn doing(&self) -> String {
        match self.tree {
            None => "fetching the dataset's archive".to_string(),
            Some(n) => format!("fetching the archive of the dataset's tree {n}"),
        }
    }
}

/// Every archive the lab's dataset names, in the lab's order: none for a
/// generated dataset or a folder.
pub fn archives(lab: &Lab) -> Vec<DatasetArchive<'_>> {
    wanted(lab)
        .into_iter()
        .enumerate()
        .filter_map(|(i, w)| match w {
            Wanted::Archive {
                artifact,
                unpacked_size,
            } => Some(DatasetArchive::of(lab, i, artifact, unpacked_size)),
            Wanted::Folder(_) => None,
        })
        .collect()
}

/// An archive in the cache, verified.
pub struct FetchedArchive {
    pub fetched: FetchedArtifact,
    /// The file the machine unpacks: the archive itself, or the member a
    /// `.deb` holds when the lab says `deb-member:` (taken out of it here).
    pub path: PathBuf,
}

/// The archive file, fetched and checked through the artifact cache (the
/// cache first, then `--mirror`, then its source); a `.deb`'s member taken
/// out of it when the lab says `deb-member:`. A digest that is not the
/// pinned one is an error naming both, and no copy is kept.
pub async fn fetch_archive(
    ctx: &Context,
    archive: &DatasetArchive<'_>,
    progress: &mut dyn Progress,
) -> anyhow::Result<FetchedArchive> {
    let fetcher = labrun_artifact::Fetcher::new(labrun_artifact::FetchOptions::new(
        ctx.cache_dir.clone(),
        ctx.mirror.clone(),
    ))?;
    let label = archive.label();
    let mut progress = Labelled {
        label: &label,
        inner: progress,
    };
    let spec = archive.artifact;
    let fetched = fetcher
        .fetch_whole_archive(NAME, spec, &mut progress)
        .await
        .with_context(|| archive.doing())?;
    if spec.extract == Extract::Raw {
        let path = fetched.path.clone();
        return Ok(FetchedArchive { fetched, path });
    }
    let size = std::fs::metadata(&fetched.path)
        .with_context(|| format!("reading the size of {}", fetched.path.display()))?
        .len();
    let bound = archive.max_unpacked(size);
    let (for_extract, spec) = (fetched.clone(), spec.clone());
    let out = tokio::task::spawn_blocking(move || {
        labrun_artifact::extract::extract_dataset_member(&for_extract, &spec, bound)
    })
    .await?
    .with_context(|| archive.doing())?;
    Ok(FetchedArchive {
        fetched,
        path: out.path,
    })
}

/// Says the archive's label where the fetcher says its name, so each bar
/// of a series names its tree.
struct Labelled<'a> {
    label: &'a str,
    inner: &'a mut dyn Progress,
}

impl Progress for Labelled<'_> {
    fn start(&mut self, _: &str, source: &Source, total: Option<u64>) {
        self.inner.start(self.label, source, total);
    }

    fn advance(&mut self, bytes: u64) {
        self.inner.advance(bytes);
    }

    fn finish(&mut self) {
        self.inner.finish();
    }

    fn notice(&mut self, message: &str) {
        self.inner.notice(message);
    }

    fn step(&mut self, _: &str, what: &str) {
        self.inner.step(self.label, what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab(dataset: &str) -> Lab {
        let yaml = format!(
            r#"name: archives
{dataset}
tools:
  - name: tool
    version: "1"
    artifact: {{file: /nonexistent/tool, sha256: "{zero}"}}
    commands:
      init: ["{{bin}}", init, "{{repo}}"]
      backup: ["{{bin}}", backup, "{{repo}}", "{{source}}"]
      restore: ["{{bin}}", restore, "{{repo}}", "{{snapshot}}", "{{target}}"]
"#,
            zero = "0".repeat(64)
        );
        Lab::from_text(&yaml, "lab.yaml").expect("the lab loads")
    }

    fn sha(c: char) -> String {
        c.to_string().repeat(64)
    }

    #[test]
    fn an_archive_dataset_is_one_archive_called_dataset() {
        let lab = lab(&format!(
            "dataset: {{kind: archive, artifact: {{file: /a/src.tar.gz, sha256: \"{}\"}}}}",
            sha('a')
        ));
        let found = archives(&lab);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].label(), "dataset");
        assert_eq!(found[0].artifact.sha256, sha('a'));
    }

    #[test]
    fn a_series_names_each_archive_by_its_place_and_skips_folders() {
        let lab = lab(&format!(
            "dataset:\n  kind: trees\n  trees:\n    - files: /srv/v1\n    - archive: {{artifact: {{file: /a/v2.tar.gz, sha256: \"{}\"}}}}\n    - archive: {{artifact: {{file: /a/v3.tar.gz, sha256: \"{}\"}}}}",
            sha('b'),
            sha('c')
        ));
        let found: Vec<(String, String)> = archives(&lab)
            .iter()
            .map(|a| (a.label(), a.artifact.sha256.clone()))
            .collect();
        assert_eq!(
            found,
            vec![
                ("dataset tree 2".to_string(), sha('b')),
                ("dataset tree 3".to_string(), sha('c')),
            ]
        );
    }

    #[test]
    fn a_generated_dataset_has_no_archive() {
        let lab = lab("dataset: {kind: synthetic, seed: 1, scale: 0.001}");
        assert!(archives(&lab).is_empty());
    }
}
