//! `labrun fetch`'s part for the lab's dataset: every archive it names
//! (`kind: archive`, each archive of a `trees:` series) into the cache,
//! checked by its pinned SHA-256. It takes the path bench takes
//! ([`crate::real_tree::fetch`]), so a machine that fetched needs no
//! network for them at bench time.

use super::fetch::{Bar, until_interrupted};
use crate::context::Context;
use crate::real_tree::fetch::{FetchedArchive, archives, fetch_archive};
use crate::terminal::one_line;
use labrun_lab::Lab;

/// Fetches every archive, printing a row for each once it is verified;
/// returns how many there were. A wrong digest stops at that archive with
/// nothing of it kept; SIGINT or SIGTERM stops with
/// [`super::fetch::Interrupted`] and no partial file left.
pub async fn fetch_all(ctx: &Context, lab: &Lab) -> anyhow::Result<usize> {
    until_interrupted(fetch_each(ctx, lab)).await?
}

async fn fetch_each(ctx: &Context, lab: &Lab) -> anyhow::Result<usize> {
    let wanted = archives(lab);
    for archive in &wanted {
        let mut bar = Bar::default();
        let got = fetch_archive(ctx, archive, &mut bar).await?;
        print_row(&archive.label(), &got);
    }
    Ok(wanted.len())
}

/// Laid out like a tool's row, so the table reads as one.
fn print_row(label: &str, got: &FetchedArchive) {
    let f = &got.fetched;
    safe_println!("{label}: from {}", one_line(&f.from.to_string()));
    safe_println!("  file     {}", f.path.display());
    safe_println!("  sha256   {} ok", f.sha256);
    // A `.deb`'s member is what the machine unpacks.
    if got.path != f.path {
        safe_println!("  member   {}", got.path.display());
    }
}
