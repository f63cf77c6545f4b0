//! `vm-image`: one large sparse file, a virtual machine's raw disk, changed
//! in place.
//!
//! ```text
//! images/disk.img   20 GiB apparent at scale 1, in 64 KiB blocks
//! ```
//!
//! Which blocks are written is drawn block by block from one stream of the
//! seed: 14% random blocks, 13.5% low-entropy blocks (16 symbols, as the
//! published low-entropy files), the other 72.5% holes (never written, so
//! the file takes about 27.5% of its apparent size on disk). `--scale`
//! scales the block count. A block's bytes come from its own stream
//! (tag of its kind, index = block number).
//!
//! The change, through the same file (no rewrite, holes stay holes): 5% of
//! the written blocks are overwritten with new bytes of their kind, and
//! 0.5% as many blocks as are written are written into holes (random).

use super::{Applied, Footprint, choose, row};
use crate::change::check_target;
use crate::error::DatasetError;
use crate::generate::{self, create_file, dir_entry, file_entry};
use crate::pool::{self, Worker};
use crate::scan::hash_into;
use crate::stream::{self, Content, Keys, Tag};
use crate::{ChangedRegion, DatasetParams, DatasetProfile, Progress};
use labrun_evidence::Manifest;
use sha2::{Digest, Sha256};
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The unit of the block map, and of every write.
pub const BLOCK: u64 = 64 * 1024;
/// 20 GiB at scale 1.
pub const BLOCKS: u64 = (20 << 30) / BLOCK;
/// Of every 1,000 blocks, about this many are random...
pub const RANDOM_PER_MILLE: u64 = 140;
/// ...and up to this many (the rest of them) low-entropy.
pub const WRITTEN_PER_MILLE: u64 = 275;
pub const CHANGE_OVERWRITE_PERCENT: u64 = 5;
/// Blocks written into holes per change, per 1,000 written blocks.
pub const CHANGE_FILL_PER_MILLE: u64 = 5;
const DIR: &str = "images";
const PATH: &str = "images/disk.img";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Hole,
    Written(Content),
}

impl Block {
    fn tag(content: Content) -> Tag {
        match content {
            Content::Random => Tag::LargeRandom,
            Content::LowEntropy => Tag::LowEntropy,
        }
    }
}

fn block_map(params: &DatasetParams) -> Vec<Block> {
    let blocks = crate::layout::scale_count(BLOCKS, params.scale);
    let keys = Keys::content_of(DatasetProfile::VmImage, params.seed);
    let mut rng = keys.stream(Tag::BlockMap, 0);
    (0..blocks)
        .map(|_| match stream::below(&mut rng, 1000) {
            v if v < RANDOM_PER_MILLE => Block::Written(Content::Random),
            v if v < WRITTEN_PER_MILLE => Block::Written(Content::LowEntropy),
            _ => Block::Hole,
        })
        .collect()
}

pub fn footprint(params: &DatasetParams) -> Footprint {
    let map = block_map(params);
    let written = map.iter().filter(|b| **b != Block::Hole).count() as u64;
    let apparent = map.len() as u64 * BLOCK;
    Footprint {
        rows: vec![row("sparse disk image", 1, apparent)],
        files: 1,
        bytes: apparent,
        allocated_bytes: written * BLOCK,
    }
}

/// Fills `buf` (one block) with block `index`'s bytes from `keys`.
fn fill_block(keys: &Keys, tag: Tag, content: Content, index: u64, buf: &mut [u8]) {
    stream::fill(&mut keys.stream(tag, index), content, buf);
}

pub fn generate(
    out: &Path,
    params: &DatasetParams,
    progress: Progress,
) -> Result<Manifest, DatasetError> {
    params.validate()?;
    generate::prepare_out(out)?;
    let fp = footprint(params);
    generate::check_free_space(out, fp.allocated_bytes)?;
    generate::make_dir(&out.join(DIR))?;
    let path = out.join(PATH);
    let map = block_map(params);
    let keys = Keys::content_of(DatasetProfile::VmImage, params.seed);
    // One job: the file is hashed in order, holes as the zeros they read as.
    let digests = pool::run(&[()], &[0], 1, fp.allocated_bytes, progress, |_, worker| {
        let file = create_file(&path)?;
        file.set_len(fp.bytes)
            .map_err(|e| DatasetError::io("setting the size of", &path, e))?;
        let zeros = vec![0u8; BLOCK as usize];
        let mut hasher = Sha256::new();
        for (index, block) in map.iter().enumerate() {
            if worker.aborted() {
                return Err(generate::aborted());
            }
            match *block {
                Block::Hole => hasher.update(&zeros),
                Block::Written(content) => {
                    let buf = &mut worker.buf[..BLOCK as usize];
                    fill_block(&keys, Block::tag(content), content, index as u64, buf);
                    file.write_all_at(buf, index as u64 * BLOCK)
                        .map_err(|e| DatasetError::io("writing", &path, e))?;
                    hasher.update(&*buf);
                    worker.add(BLOCK);
                }
            }
        }
        Ok(hex::encode(hasher.finalize()))
    })?;
    let mut manifest = Manifest::default();
    manifest.entries.push(dir_entry(DIR.into()));
    for digest in digests {
        manifest
            .entries
            .push(file_entry(PATH.into(), fp.bytes, digest));
    }
    manifest.sort();
    Ok(manifest)
}

/// One changed block: where, and which stream its new bytes come from.
struct Write {
    block: u64,
    tag: Tag,
    content: Content,
}

/// The change's writes, by block number.
fn writes(params: &DatasetParams, change_seed: u64) -> Vec<Write> {
    let map = block_map(params);
    let (mut written, mut holes) = (Vec::new(), Vec::new());
    for (i, b) in map.iter().enumerate() {
        match b {
            Block::Hole => holes.push(i as u64),
            Block::Written(content) => written.push((i as u64, *content)),
        }
    }
    let w = written.len() as u64;
    let keys = Keys::change_of(DatasetProfile::VmImage, params.seed, change_seed);
    let mut rng = keys.stream(Tag::ChangeChoice, 0);
    let overwrite = ((w * CHANGE_OVERWRITE_PERCENT + 50) / 100).max(1).min(w);
    let fill = ((w * CHANGE_FILL_PER_MILLE + 500) / 1000).max(1);
    let mut out: Vec<Write> = choose(&mut rng, w, overwrite)
        .into_iter()
        .map(|k| {
            let (block, content) = written[k as usize];
            Write {
                block,
                tag: Block::tag(content),
                content,
            }
        })
        .collect();
    out.extend(
        choose(&mut rng, holes.len() as u64, fill)
            .into_iter()
            .map(|k| Write {
                block: holes[k as usize],
                tag: Tag::Added,
                content: Content::Random,
            }),
    );
    out.sort_by_key(|w| w.block);
    out
}

pub fn regions(params: &DatasetParams, change_seed: u64) -> Vec<ChangedRegion> {
    writes(params, change_seed)
        .into_iter()
        .map(|w| ChangedRegion {
            path: PATH.into(),
            offset: w.block * BLOCK,
            len: BLOCK,
        })
        .collect()
}

/// Writes the changed blocks in place, then hashes the file again.
pub fn apply(
    dir: &Path,
    params: &DatasetParams,
    change_seed: u64,
    progress: Progress,
) -> Result<Applied, DatasetError> {
    let path = dir.join(PATH);
    let size = footprint(params).bytes;
    check_target(&path, size)?;
    let writes = writes(params, change_seed);
    let keys = Keys::change_of(DatasetProfile::VmImage, params.seed, change_seed);
    let total = writes.len() as u64 * BLOCK + size;
    let digests = pool::run(&[()], &[0], 1, total, progress, |_, worker| {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| DatasetError::io("opening", &path, e))?;
        for w in &writes {
            let buf = &mut worker.buf[..BLOCK as usize];
            fill_block(&keys, w.tag, w.content, w.block, buf);
            file.write_all_at(buf, w.block * BLOCK)
                .map_err(|e| DatasetError::io("writing", &path, e))?;
            worker.add(BLOCK);
        }
        hash_file(&mut file, &path, size, worker)
    })?;
    Ok(Applied {
        written: digests
            .into_iter()
            .map(|d| file_entry(PATH.into(), size, d))
            .collect(),
        removed: Vec::new(),
    })
}

fn hash_file(
    file: &mut std::fs::File,
    path: &Path,
    size: u64,
    worker: &mut Worker,
) -> Result<String, DatasetError> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(0))
        .map_err(|e| DatasetError::io("reading", path, e))?;
    let mut hasher = Sha256::new();
    let read = hash_into(file, path, u64::MAX, &mut hasher, worker)?;
    if read != size {
        return Err(DatasetError::TreeMismatch {
            path: path.to_path_buf(),
            detail: "the file changed size while it was being changed".into(),
        });
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_one_is_20_gib_about_27_percent_written() {
        let fp = footprint(&DatasetParams {
            seed: 1,
            scale: 1.0,
            profile: DatasetProfile::VmImage,
        });
        assert_eq!(fp.bytes, 20 * (1 << 30));
        let share = fp.allocated_bytes as f64 / fp.bytes as f64;
        assert!((0.265..0.285).contains(&share), "{share}");
    }

    #[test]
    fn the_change_overwrites_5_percent_of_the_written_blocks_and_fills_a_few_holes() {
        let p = DatasetParams {
            seed: 3,
            scale: 0.01,
            profile: DatasetProfile::VmImage,
        };
        let map = block_map(&p);
        let written = map.iter().filter(|b| **b != Block::Hole).count() as f64;
        let w = writes(&p, 4);
        let over = w
            .iter()
            .filter(|w| map[w.block as usize] != Block::Hole)
            .count();
        let filled = w.len() - over;
        assert!(
            (over as f64 / written - 0.05).abs() < 0.002,
            "{over} of {written}"
        );
        assert!(filled >= 1 && (filled as f64) < written * 0.01, "{filled}");
        // Overwritten blocks keep their kind.
        for x in w.iter().filter(|w| map[w.block as usize] != Block::Hole) {
            assert_eq!(map[x.block as usize], Block::Written(x.content));
        }
    }
}
