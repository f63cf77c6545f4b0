//! Keeps secrets out of tool logs. Passwords only ever travel in a tool's
//! environment, but a tool may still print one (a debug flag, an error that
//! echoes its config). A log that contains a secret value is rewritten with
//! `<redacted>` in its place before anything else reads it.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

pub const REDACTED: &[u8] = b"<redacted>";
const CHUNK: usize = 1 << 20;

/// Rewrites `path` if it contains any of `secrets`; true when it did. Reads
/// in chunks, so a large log does not become a large agent.
pub fn scrub_file(path: &Path, secrets: &[&str]) -> io::Result<bool> {
    let secrets: Vec<&[u8]> = secrets
        .iter()
        .map(|s| s.as_bytes())
        .filter(|s| !s.is_empty())
        .collect();
    if secrets.is_empty() || !contains_any(path, &secrets)? {
        return Ok(false);
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".scrubbing");
    let tmp = std::path::PathBuf::from(tmp);
    {
        let mut input = File::open(path)?;
        let mut output = BufWriter::new(File::create(&tmp)?);
        redact_stream(&mut input, &mut output, &secrets)?;
        output.flush()?;
    }
    std::fs::rename(&tmp, path)?;
    Ok(true)
}

fn contains_any(path: &Path, secrets: &[&[u8]]) -> io::Result<bool> {
    let mut sink = io::sink();
    let mut input = File::open(path)?;
    Ok(redact_stream(&mut input, &mut sink, secrets)? > 0)
}

/// Copies `input` to `output` with every secret replaced; returns how many.
/// A window of (longest secret - 1) bytes is carried between chunks so a
/// secret split across two reads is still found.
fn redact_stream(
    input: &mut impl Read,
    output: &mut impl Write,
    secrets: &[&[u8]],
) -> io::Result<u64> {
    let keep = secrets.iter().map(|s| s.len()).max().unwrap_or(1) - 1;
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + keep);
    let mut chunk = vec![0u8; CHUNK];
    let mut found = 0u64;
    loop {
        let n = input.read(&mut chunk)?;
        let eof = n == 0;
        buf.extend_from_slice(&chunk[..n]);
        let mut i = 0;
        let mut copied_from = 0;
        while i < buf.len() {
            if !eof && buf.len() - i <= keep {
                break;
            }
            if let Some(secret) = secrets.iter().find(|s| buf[i..].starts_with(s)) {
                output.write_all(&buf[copied_from..i])?;
                output.write_all(REDACTED)?;
                found += 1;
                i += secret.len();
                copied_from = i;
            } else {
                i += 1;
            }
        }
        output.write_all(&buf[copied_from..i])?;
        buf.drain(..i);
        if eof {
            return Ok(found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(input: &[u8], secrets: &[&str]) -> (Vec<u8>, u64) {
        let secrets: Vec<&[u8]> = secrets.iter().map(|s| s.as_bytes()).collect();
        let mut out = Vec::new();
        let n = redact_stream(&mut &input[..], &mut out, &secrets).unwrap();
        (out, n)
    }

    #[test]
    fn replaces_every_occurrence() {
        let (out, n) = redact(b"pw=hunter2, again hunter2hunter2.", &["hunter2"]);
        assert_eq!(out, b"pw=<redacted>, again <redacted><redacted>.");
        assert_eq!(n, 3);
        let (out, n) = redact(b"nothing here", &["hunter2"]);
        assert_eq!((out.as_slice(), n), (&b"nothing here"[..], 0));
    }

    #[test]
    fn finds_a_secret_split_across_chunks() {
        let mut input = vec![b'x'; CHUNK - 3];
        input.extend_from_slice(b"hunter2");
        input.extend_from_slice(&vec![b'y'; CHUNK]);
        let (out, n) = redact(&input, &["hunter2", "pw"]);
        assert_eq!(n, 1);
        assert_eq!(out.len(), input.len() - 7 + REDACTED.len());
        assert!(out.windows(10).any(|w| w == REDACTED));
    }

    #[test]
    fn rewrites_only_files_that_need_it() {
        let dir = tempfile::tempdir().unwrap();
        let clean = dir.path().join("clean.out");
        let dirty = dir.path().join("dirty.err");
        std::fs::write(&clean, "fine").unwrap();
        std::fs::write(&dirty, "Fatal: wrong password hunter2\n").unwrap();
        assert!(!scrub_file(&clean, &["hunter2"]).unwrap());
        assert!(scrub_file(&dirty, &["hunter2", ""]).unwrap());
        assert_eq!(
            std::fs::read_to_string(&dirty).unwrap(),
            "Fatal: wrong password <redacted>\n"
        );
        assert!(!scrub_file(&dirty, &[""]).unwrap());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temp file left"
        );
    }
}
