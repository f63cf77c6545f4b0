//! File transfer as byte streams over exec channels: `cat` for files, `tar`
//! for directories. Nothing is held in memory beyond a few channel packets;
//! the SSH transport's MAC makes the bytes exact, and each transfer checks the
//! remote command's exit status (and, for uploads, the byte count).

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, BufWriter, ReadBuf};
use tokio::sync::mpsc;

use crate::SshError;
use crate::client::Session;
use crate::exec::{Finished, Sink};
use crate::shell::quote;
use labrun_dataset::unpack::TarRecords;

/// How many chunks may wait between the network and the tar code.
const PIPE_CHUNKS: usize = 32;
/// Chunk size on the local tar side.
const PIPE_CHUNK_BYTES: usize = 256 * 1024;
/// How much of a failing remote command's stderr ends up in the error.
const STDERR_TAIL_BYTES: usize = 2048;

impl Session {
    /// Copies a local file to `remote` (absolute path), with `mode`. The data
    /// goes to a temporary file beside `remote`, whose size is checked before
    /// it is renamed into place: an interrupted upload never leaves a partial
    /// file under the final name.
    pub async fn upload(&self, local: &Path, remote: &str, mode: u32) -> Result<(), SshError> {
        require_absolute(remote)?;
        let file = tokio::fs::File::open(local)
            .await
            .map_err(|e| local_error(local, "cannot read", e))?;
        let size = file
            .metadata()
            .await
            .map_err(|e| local_error(local, "cannot read", e))?
            .len();
        let tmp = format!("{remote}.labrun-part-{:016x}", rand::random::<u64>());
        let script = format!(
            "t={t}; d={d}\n\
             cat > \"$t\" || {{ rm -f \"$t\"; exit 1; }}\n\
             n=$(wc -c < \"$t\") && [ $n -eq {size} ] || \
               {{ echo \"labrun: received $n of {size} bytes\" >&2; rm -f \"$t\"; exit 1; }}\n\
             chmod {mode:o} \"$t\" && mv -f \"$t\" \"$d\" || {{ rm -f \"$t\"; exit 1; }}",
            t = quote(&tmp),
            d = quote(remote),
            mode = mode & 0o7777,
        );
        let mut sink = StderrTail::default();
        // `take`: a file that grows while we send is cut at the size we
        // announced; one that shrinks fails the remote size check.
        let finished = self.run(&script, Some(file.take(size)), &mut sink).await?;
        self.check(&format!("upload to {remote}"), &finished, &sink)?;
        if !finished.input_complete {
            return Err(SshError::Protocol(format!(
                "upload to {remote} on {}: the remote side stopped reading early",
                self.place()
            )));
        }
        Ok(())
    }

    /// Copies a remote file to `local`, writing a temporary file then renaming.
    /// The result has mode 0644.
    pub async fn download(&self, remote: &str, local: &Path) -> Result<(), SshError> {
        require_absolute(remote)?;
        let dir = parent_dir(local);
        let name = local
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Removed on drop, so a failed download leaves nothing behind.
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".labrun-part")
            .tempfile_in(dir)
            .map_err(|e| local_error(dir, "cannot create a file in", e))?;
        let (file, tmp_path) = tmp.into_parts();
        let mut sink = FileSink {
            file: BufWriter::with_capacity(1 << 20, tokio::fs::File::from_std(file)),
            path: local.to_path_buf(),
            stderr: StderrTail::default(),
        };
        let finished = self
            .run(
                &format!("cat -- {}", quote(remote)),
                None::<tokio::io::Empty>,
                &mut sink,
            )
            .await?;
        self.check(&format!("download of {remote}"), &finished, &sink.stderr)?;
        let write_error = |e| local_error(local, "cannot write", e);
        sink.file.flush().await.map_err(write_error)?;
        let file = sink.file.into_inner();
        file.set_permissions(std::fs::Permissions::from_mode(0o644))
            .await
            .map_err(write_error)?;
        file.sync_all().await.map_err(write_error)?;
        drop(file);
        tmp_path
            .persist(local)
            .map_err(|e| local_error(local, "cannot rename into", e.error))?;
        Ok(())
    }

    /// Copies a remote directory tree into `local` (created if needed), with
    /// `tar -C remote -cf - .` on the remote side and the `tar` crate here.
    /// Modes and mtimes are kept, ownership is not. Entries that would land
    /// outside `local` are refused by the tar crate. Not atomic: on error,
    /// `local` may hold part of the tree.
    pub async fn download_dir(&self, remote: &str, local: &Path) -> Result<(), SshError> {
        require_absolute(remote)?;
        tokio::fs::create_dir_all(local)
            .await
            .map_err(|e| local_error(local, "cannot create", e))?;
        let (tx, rx) = mpsc::channel::<Vec<u8>>(PIPE_CHUNKS);
        let dst = local.to_path_buf();
        let unpacker = tokio::task::spawn_blocking(move || unpack(PipeReader::new(rx), &dst));
        let mut sink = PipeSink {
            tx: Some(tx),
            stderr: StderrTail::default(),
        };
        let command = format!("tar -C {} -cf - .", quote(remote));
        let ran = self
            .run(&command, None::<tokio::io::Empty>, &mut sink)
            .await;
        // Closing our end tells the unpacker the archive is complete.
        sink.tx = None;
        let unpacked = unpacker
            .await
            .map_err(|e| SshError::Protocol(format!("the unpacking task failed: {e}")))?;
        match (ran, unpacked) {
            // The unpacker stopped first; its error is the cause.
            (_, Err(e)) => Err(local_error(local, "cannot unpack into", e)),
            (Err(e), Ok(())) => Err(e),
            (Ok(finished), Ok(())) => self.check(
                &format!("download of directory {remote}"),
                &finished,
                &sink.stderr,
            ),
        }
    }

    /// Copies the local directory tree `local` into `remote` (created if
    /// needed), as a tar stream unpacked by `tar -x` on the remote side.
    /// Symbolic links are sent as links; files get the remote user's
    /// ownership. Not atomic: on error, `remote` may hold part of the tree.
    pub async fn upload_dir(&self, local: &Path, remote: &str) -> Result<(), SshError> {
        require_absolute(remote)?;
        let meta = tokio::fs::metadata(local)
            .await
            .map_err(|e| local_error(local, "cannot read", e))?;
        if !meta.is_dir() {
            return Err(local_error(
                local,
                "cannot upload",
                std::io::Error::other("not a directory"),
            ));
        }
        let (tx, rx) = mpsc::channel::<Vec<u8>>(PIPE_CHUNKS);
        let src = local.to_path_buf();
        let packer = tokio::task::spawn_blocking(move || pack(&src, PipeWriter { tx }));
        let command = format!(
            "mkdir -p -- {d} && tar -C {d} --no-same-owner -xf -",
            d = quote(remote)
        );
        let mut sink = StderrTail::default();
        let ran = self
            .run(&command, Some(PipeReader::new(rx)), &mut sink)
            .await;
        let packed = packer
            .await
            .map_err(|e| SshError::Protocol(format!("the packing task failed: {e}")))?;
        match (ran, packed) {
            // A local read error truncates the archive; it is the cause of
            // whatever the remote tar then says. A broken pipe only means the
            // remote side stopped reading: its own error explains why.
            (_, Err(e)) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(local_error(local, "cannot pack", e))
            }
            (Err(e), _) => Err(e),
            (Ok(finished), packed) => {
                self.check(
                    &format!("upload of directory to {remote}"),
                    &finished,
                    &sink,
                )?;
                packed.map_err(|e| local_error(local, "cannot pack", e))
            }
        }
    }

    /// An error unless the remote command exited 0.
    fn check(&self, what: &str, finished: &Finished, stderr: &StderrTail) -> Result<(), SshError> {
        if finished.exit_code == Some(0) {
            return Ok(());
        }
        let how = match (&finished.exit_code, &finished.signal) {
            (Some(code), _) => format!("exit status {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "no exit status".to_string(),
        };
        Err(SshError::Protocol(format!(
            "{what} on {} failed ({how}): {}",
            self.place(),
            stderr.text()
        )))
    }
}

fn require_absolute(remote: &str) -> Result<(), SshError> {
    if remote.starts_with('/') {
        Ok(())
    } else {
        Err(SshError::Protocol(format!(
            "remote path `{remote}` must be absolute (start with /)"
        )))
    }
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn local_error(path: &Path, what: &str, e: std::io::Error) -> SshError {
    SshError::Io(std::io::Error::new(
        e.kind(),
        format!("{what} {}: {e}", path.display()),
    ))
}

/// Keeps the last bytes of stderr, for error messages.
#[derive(Default)]
struct StderrTail(Vec<u8>);

impl StderrTail {
    fn push(&mut self, data: &[u8]) {
        self.0.extend_from_slice(data);
        if self.0.len() > STDERR_TAIL_BYTES {
            let cut = self.0.len() - STDERR_TAIL_BYTES;
            self.0.drain(..cut);
        }
    }

    fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.0).trim().to_string();
        if text.is_empty() {
            "no error output".to_string()
        } else {
            text
        }
    }
}

impl Sink for StderrTail {
    async fn stdout(&mut self, _data: &[u8]) -> Result<(), SshError> {
        Ok(())
    }
    fn stderr(&mut self, data: &[u8]) {
        self.push(data)
    }
}

struct FileSink {
    file: BufWriter<tokio::fs::File>,
    path: PathBuf,
    stderr: StderrTail,
}

impl Sink for FileSink {
    async fn stdout(&mut self, data: &[u8]) -> Result<(), SshError> {
        self.file
            .write_all(data)
            .await
            .map_err(|e| local_error(&self.path, "cannot write", e))
    }
    fn stderr(&mut self, data: &[u8]) {
        self.stderr.push(data)
    }
}

/// Hands stdout to the blocking unpacker.
struct PipeSink {
    tx: Option<mpsc::Sender<Vec<u8>>>,
    stderr: StderrTail,
}

impl Sink for PipeSink {
    async fn stdout(&mut self, data: &[u8]) -> Result<(), SshError> {
        let Some(tx) = &self.tx else { return Ok(()) };
        // The unpacker reads to the end unless it failed: a closed pipe
        // means there is no point in receiving the rest.
        tx.send(data.to_vec())
            .await
            .map_err(|_| SshError::Protocol("unpacking stopped".into()))
    }
    fn stderr(&mut self, data: &[u8]) {
        self.stderr.push(data)
    }
}

/// The receiving end of the pipe between async network code and the blocking
/// tar code: `Read` for the unpacker thread, `AsyncRead` for the channel.
struct PipeReader {
    rx: mpsc::Receiver<Vec<u8>>,
    buf: Vec<u8>,
    pos: usize,
}

impl PipeReader {
    fn new(rx: mpsc::Receiver<Vec<u8>>) -> Self {
        PipeReader {
            rx,
            buf: Vec::new(),
            pos: 0,
        }
    }

    fn copy_out(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        n
    }
}

impl Read for PipeReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.buf.len() {
            match self.rx.blocking_recv() {
                Some(chunk) => {
                    self.buf = chunk;
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        Ok(self.copy_out(out))
    }
}

impl AsyncRead for PipeReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        while this.pos == this.buf.len() {
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(chunk)) => {
                    this.buf = chunk;
                    this.pos = 0;
                }
                Poll::Ready(None) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
        let n = out.remaining().min(this.buf.len() - this.pos);
        out.put_slice(&this.buf[this.pos..this.pos + n]);
        this.pos += n;
        Poll::Ready(Ok(()))
    }
}

/// The sending end, for the packer thread.
struct PipeWriter {
    tx: mpsc::Sender<Vec<u8>>,
}

impl Write for PipeWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.tx.blocking_send(data.to_vec()).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the remote side stopped reading",
            )
        })?;
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn unpack(reader: PipeReader, dst: &Path) -> std::io::Result<()> {
    // Header records (long names, PAX headers) are bounded before the tar
    // crate reads them whole: the guest is not trusted with our memory.
    let mut archive = tar::Archive::new(TarRecords::new(reader));
    archive.set_preserve_mtime(true);
    archive.set_preserve_ownerships(false);
    archive.set_unpack_xattrs(false);
    archive.unpack(dst).map_err(with_cause)?;
    // Read the padding after the end-of-archive blocks, so the network side
    // never sees a closed pipe when all went well.
    std::io::copy(&mut archive.into_inner(), &mut std::io::sink())?;
    Ok(())
}

/// The tar crate's unpack error says what it was doing ("failed to iterate
/// over archive") and keeps why as its source: the message gets both.
fn with_cause(e: std::io::Error) -> std::io::Error {
    match e.get_ref().and_then(|inner| inner.source()) {
        Some(cause) => std::io::Error::new(e.kind(), format!("{e}: {cause}")),
        None => e,
    }
}

fn pack(src: &Path, writer: PipeWriter) -> std::io::Result<()> {
    let mut builder =
        tar::Builder::new(std::io::BufWriter::with_capacity(PIPE_CHUNK_BYTES, writer));
    builder.follow_symlinks(false);
    builder.append_dir_all(".", src)?;
    let mut buffered = builder.into_inner()?;
    buffered.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The evidence a guest sends as a tar stream, as `download_dir` reads it.
    fn unpack_stream(tar: Vec<u8>, dst: &Path) -> std::io::Result<()> {
        let (tx, rx) = mpsc::channel(1);
        // Room for one chunk: sent before the reader starts, then closed.
        tx.try_send(tar).expect("the channel has room");
        drop(tx);
        unpack(PipeReader::new(rx), dst)
    }

    #[test]
    fn a_long_name_that_declares_gigabytes_is_refused_before_it_is_read() {
        // A guest's tar whose GNU long name declares 2.5 GiB, with a few KB
        // after it: refused from its header, and the message says why.
        let declared = 2_684_354_560u64;
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
        h.set_entry_type(tar::EntryType::GNULongName);
        h.set_size(declared);
        h.set_cksum();
        let mut stream = h.as_bytes().to_vec();
        stream.extend([b'n'; 4096]);
        let dst = tempfile::tempdir().expect("a temporary folder");
        let err = unpack_stream(stream, dst.path()).expect_err("refused");
        let msg = err.to_string();
        assert!(
            msg.contains("GNU long-name record") && msg.contains(&declared.to_string()),
            "{msg}"
        );
        assert_eq!(
            std::fs::read_dir(dst.path()).map(|d| d.count()).ok(),
            Some(0)
        );
    }

    #[test]
    fn a_tree_unpacks_through_the_guard() {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_size(2);
        h.set_mode(0o644);
        let long = "d/".to_string() + &"n".repeat(150);
        b.append_data(&mut h, &long, &b"hi"[..]).expect("appended");
        let stream = b.into_inner().expect("a tar");
        let dst = tempfile::tempdir().expect("a temporary folder");
        unpack_stream(stream, dst.path()).expect("unpacked");
        assert_eq!(
            std::fs::read(dst.path().join(&long)).ok().as_deref(),
            Some(&b"hi"[..])
        );
    }
}
