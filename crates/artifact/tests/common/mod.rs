//! A tiny HTTP/1.1 server on 127.0.0.1 that the tests script: each path gets
//! a list of replies, served in order (the last one repeats), and every
//! request is counted so a test can prove the network was (not) used.

#![allow(dead_code)]

use labrun_artifact::{ArtifactSource, ArtifactSpec, NetPolicy};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone)]
pub enum Reply {
    /// 200 with this body and a correct Content-Length.
    Body(Vec<u8>),
    /// 200 announcing `claimed` bytes, sending only `body`, then closing.
    Truncated { body: Vec<u8>, claimed: usize },
    /// This status with a short text body.
    Status(u16),
    /// 302 to this `Location` (a path on this server, or a whole URL).
    Redirect(String),
    /// 200 announcing `body`'s length, then sending `extra` bytes more.
    Overlong { body: Vec<u8>, extra: usize },
    /// 200 without Content-Length, bytes as fast as they are taken, forever.
    Endless,
    /// 200 without Content-Length, one byte every `every`, forever.
    Trickle { every: Duration },
    /// 200 with a correct Content-Length, `chunk` bytes every `pause`.
    Slow {
        body: Vec<u8>,
        chunk: usize,
        pause: Duration,
    },
}

#[derive(Default)]
struct State {
    routes: HashMap<String, Vec<Reply>>,
    hits: HashMap<String, usize>,
}

pub struct Server {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let shared = shared.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        Server { addr, state }
    }

    pub fn route(&self, path: &str, replies: Vec<Reply>) {
        self.state
            .lock()
            .unwrap()
            .routes
            .insert(path.to_string(), replies);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn hits(&self, path: &str) -> usize {
        *self.state.lock().unwrap().hits.get(path).unwrap_or(&0)
    }
}

fn serve(mut stream: TcpStream, state: &Mutex<State>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if line == "\r\n" || line == "\n" => break,
            Ok(_) => {}
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_string();
    let reply = {
        let mut s = state.lock().unwrap();
        let n = {
            let h = s.hits.entry(path.clone()).or_insert(0);
            *h += 1;
            *h
        };
        match s.routes.get(&path) {
            Some(replies) if !replies.is_empty() => replies[(n - 1).min(replies.len() - 1)].clone(),
            _ => Reply::Status(404),
        }
    };
    let (status, body, claimed) = match reply {
        Reply::Body(b) => (200, b.clone(), b.len()),
        Reply::Truncated { body, claimed } => (200, body, claimed),
        Reply::Status(code) => (code, format!("status {code}\n").into_bytes(), 0),
        Reply::Redirect(location) => {
            let head = format!(
                "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes());
            return;
        }
        Reply::Overlong { mut body, extra } => {
            let claimed = body.len();
            body.extend(std::iter::repeat_n(0x5a, extra));
            (200, body, claimed)
        }
        Reply::Endless => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
            let block = vec![0x42u8; 64 * 1024];
            while stream.write_all(&block).is_ok() {}
            return;
        }
        Reply::Trickle { every } => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
            while stream.write_all(b"x").is_ok() {
                std::thread::sleep(every);
            }
            return;
        }
        Reply::Slow { body, chunk, pause } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            for part in body.chunks(chunk) {
                if stream.write_all(part).is_err() {
                    return;
                }
                std::thread::sleep(pause);
            }
            return;
        }
    };
    let claimed = if status == 200 { claimed } else { body.len() };
    let head =
        format!("HTTP/1.1 {status} X\r\nContent-Length: {claimed}\r\nConnection: close\r\n\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// A policy that fails fast, so retry tests take milliseconds.
pub fn quick_net() -> NetPolicy {
    NetPolicy {
        connect_timeout: Duration::from_secs(2),
        read_timeout: Duration::from_secs(5),
        retries: 2,
        backoff: Duration::from_millis(10),
        ..NetPolicy::default()
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    labrun_artifact::digest::sha256_reader(bytes).unwrap().0
}

pub fn url_spec(url: &str, sha256: &str) -> ArtifactSpec {
    ArtifactSpec::new(ArtifactSource::Url(url.to_string()), sha256)
}

/// Every regular file under `dir`, for "nothing was kept" checks.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Some bytes that look like nothing in particular.
pub fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}
