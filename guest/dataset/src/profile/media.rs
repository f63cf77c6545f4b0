//! `media`: an already-compressed library, random bytes throughout (what
//! JPEG and H.264 look like to a compressor or a deduplicator).
//!
//! ```text
//! photos/GGG/IMG_NNNNNN.jpg   photo N, in folders of 200
//! videos/VID_KKKK.mp4         video K (0..8)
//! ```
//!
//! At scale 1 (6.10 GB, as the published set): 1,000 photos stratified
//! over 2,000,000..5,400,000 bytes (3.70 GB) and 8 videos stratified over
//! 200..400 MB (2.40 GB). As the published large files, `--scale` scales
//! the photo count (a photo keeps its size) and each video's size (there
//! are always 8).
//!
//! The change: a library grows by additions. New photos (same size law,
//! the last one cut to fit) totalling 5% of the tree's bytes, in
//! `photos/new-<change seed>-GGG/`.

use super::{Edit, FootprintRow, row, stratified, with_dirs};
use crate::layout::scale_count;
use crate::stream::{self, Keys, Tag};
use crate::tree::{Class, FileSpec, Tree};
use crate::{DatasetParams, DatasetProfile};

pub const PHOTOS: u64 = 1_000;
pub const PHOTO_MIN_BYTES: u64 = 2_000_000;
pub const PHOTO_SPAN_BYTES: u64 = 3_400_000;
pub const VIDEOS: u64 = 8;
pub const VIDEO_MIN_BYTES: u64 = 200_000_000;
pub const VIDEO_SPAN_BYTES: u64 = 200_000_000;
pub const PHOTOS_PER_FOLDER: u64 = 200;
pub const CHANGE_ADDED_PERCENT: u64 = 5;

fn photo_count(scale: f64) -> u64 {
    scale_count(PHOTOS, scale)
}

fn photo_sizes(n: u64) -> Vec<u64> {
    stratified(n, PHOTO_MIN_BYTES, PHOTO_SPAN_BYTES).collect()
}

fn video_sizes(scale: f64) -> Vec<u64> {
    stratified(VIDEOS, VIDEO_MIN_BYTES, VIDEO_SPAN_BYTES)
        .map(|s| scale_count(s, scale))
        .collect()
}

pub fn rows(scale: f64) -> Vec<FootprintRow> {
    let photos = photo_sizes(photo_count(scale));
    let videos = video_sizes(scale);
    vec![
        row(
            "photos (2-5.4 MB)",
            photos.len() as u64,
            photos.iter().sum(),
        ),
        row("videos", videos.len() as u64, videos.iter().sum()),
    ]
}

fn photo_path(folder: &str, index: u64, n: u64) -> String {
    let group_width = (n.saturating_sub(1) / PHOTOS_PER_FOLDER)
        .to_string()
        .len()
        .max(3);
    let width = n.saturating_sub(1).to_string().len().max(6);
    format!(
        "photos/{folder}{:0group_width$}/IMG_{index:0width$}.jpg",
        index / PHOTOS_PER_FOLDER
    )
}

pub fn tree(params: &DatasetParams) -> Tree {
    let n = photo_count(params.scale);
    let sizes = photo_sizes(n);
    let keys = Keys::content_of(DatasetProfile::Media, params.seed);
    let ranks = stream::permutation(&mut keys.stream(Tag::Shuffle, 0), n);
    let mut files: Vec<FileSpec> = ranks
        .iter()
        .enumerate()
        .map(|(index, &rank)| FileSpec {
            path: photo_path("", index as u64, n),
            class: Class::Small,
            index: index as u64,
            size: sizes[rank as usize],
            copies: Vec::new(),
        })
        .collect();
    for (index, size) in video_sizes(params.scale).into_iter().enumerate() {
        files.push(FileSpec {
            path: format!("videos/VID_{index:04}.mp4"),
            class: Class::LargeRandom,
            index: index as u64,
            size,
            copies: Vec::new(),
        });
    }
    with_dirs(files)
}

pub fn edits(params: &DatasetParams, change_seed: u64) -> Vec<Edit> {
    let total: u64 = rows(params.scale).iter().map(|r| r.bytes).sum();
    let target = ((total * CHANGE_ADDED_PERCENT + 50) / 100).max(1);
    let keys = Keys::change_of(DatasetProfile::Media, params.seed, change_seed);
    let mut rng = keys.stream(Tag::ChangeChoice, 0);
    let mut sizes = Vec::new();
    let mut added = 0;
    while added < target {
        let size = PHOTO_MIN_BYTES + stream::below(&mut rng, PHOTO_SPAN_BYTES);
        let size = size.min(target - added);
        sizes.push(size);
        added += size;
    }
    let n = sizes.len() as u64;
    let folder = format!("new-{change_seed}-");
    sizes
        .into_iter()
        .enumerate()
        .map(|(index, size)| Edit::Add {
            path: photo_path(&folder, index as u64, n),
            index: index as u64,
            size,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_one_is_6_10_gb_of_photos_and_videos() {
        let rows = rows(1.0);
        // Stratified midpoints: the mean of each law, times the count.
        assert_eq!(rows[0].files, 1_000);
        assert_eq!(rows[0].bytes, 1_000 * (2_000_000 + 1_700_000));
        assert_eq!(rows[1].files, 8);
        assert_eq!(rows[1].bytes, 8 * 300_000_000);
        assert_eq!(photo_path("", 999, 1_000), "photos/004/IMG_000999.jpg");
    }
}
