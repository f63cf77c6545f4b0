//! HTTP(S) downloads: timeouts, retries with exponential backoff on network
//! errors, a byte count checked against Content-Length, bounds on size and
//! time, redirects judged and recorded ([`crate::redirect`]), hashing while
//! the bytes stream into the cache.

use crate::cache::Cache;
use crate::error::ArtifactError;
use crate::progress::Progress;
use crate::redirect::{self, HopLog};
use crate::source::Source;
use crate::url_credentials::without_credentials;
use std::time::Duration;
use tempfile::NamedTempFile;
use tokio::time::{Instant, timeout_at};

/// How patient the client is.
#[derive(Debug, Clone)]
pub struct NetPolicy {
    /// Time allowed to open a connection.
    pub connect_timeout: Duration,
    /// Time allowed between two reads of the body (a stalled transfer).
    pub read_timeout: Duration,
    /// Further attempts after a network error (not after a 404 or a digest
    /// mismatch, which a retry cannot fix).
    pub retries: u32,
    /// Wait before the first retry; doubled before each next one.
    pub backoff: Duration,
    /// Redirects one request may follow.
    pub max_redirects: usize,
    /// The most bytes one download may bring: no artifact is bigger, and a
    /// server that never stops (no Content-Length) must not fill the disk.
    pub max_bytes: u64,
    /// The longest one attempt may take, request to last byte: the read
    /// timeout alone lets a server trickle a byte a minute forever.
    pub max_duration: Duration,
}

impl Default for NetPolicy {
    fn default() -> Self {
        NetPolicy {
            connect_timeout: Duration::from_secs(15),
            read_timeout: Duration::from_secs(60),
            retries: 3,
            backoff: Duration::from_secs(1),
            max_redirects: 10,
            // Tool binaries are MBs and cloud images a few GBs.
            max_bytes: 16 << 30,
            // A 4 GB image at 1 MB/s takes about 70 minutes.
            max_duration: Duration::from_secs(3 * 3600),
        }
    }
}

/// An attempt's failure, and whether another attempt could help.
enum Failure {
    Retry(ArtifactError),
    Stop(ArtifactError),
}

/// A finished download, not yet compared with the pin.
pub(crate) struct Downloaded {
    /// The partial file (deleted when dropped unless committed).
    pub temp: NamedTempFile,
    pub sha256: String,
    /// The URLs the server redirected to, in order; the last one served the
    /// bytes. Empty when the lab's URL did.
    pub redirects: Vec<String>,
}

pub(crate) struct Http {
    policy: NetPolicy,
}

impl Http {
    pub fn new(policy: NetPolicy) -> Result<Http, ArtifactError> {
        let http = Http { policy };
        // A client is made per request (its redirect record is per request);
        // this one only reports a broken TLS setup before any download.
        http.client(HopLog::default())?;
        Ok(http)
    }

    fn client(&self, hops: HopLog) -> Result<reqwest::Client, ArtifactError> {
        reqwest::Client::builder()
            .connect_timeout(self.policy.connect_timeout)
            .read_timeout(self.policy.read_timeout)
            .redirect(redirect::policy(self.policy.max_redirects, hops))
            .user_agent(concat!("labrun/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ArtifactError::Client(error_chain(&e)))
    }

    /// Downloads `url` into a partial file in the cache folder of
    /// `expected_sha256`; returns it with its actual digest (the caller
    /// compares and commits) and the redirects that led to it.
    pub async fn download(
        &self,
        name: &str,
        url: &str,
        file_name: &str,
        cache: &Cache,
        expected_sha256: &str,
        progress: &mut dyn Progress,
    ) -> Result<Downloaded, ArtifactError> {
        let mut attempt = 0;
        loop {
            let result = self
                .download_once(name, url, file_name, cache, expected_sha256, progress)
                .await;
            match result {
                Ok(done) => return Ok(done),
                Err(Failure::Stop(e)) => return Err(e),
                Err(Failure::Retry(e)) if attempt >= self.policy.retries => return Err(e),
                Err(Failure::Retry(e)) => {
                    let wait = self.policy.backoff * 2u32.saturating_pow(attempt);
                    attempt += 1;
                    progress.notice(&format!(
                        "{e}\nretry {attempt} of {} in {:.1}s",
                        self.policy.retries,
                        wait.as_secs_f64()
                    ));
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn download_once(
        &self,
        name: &str,
        url: &str,
        file_name: &str,
        cache: &Cache,
        expected_sha256: &str,
        progress: &mut dyn Progress,
    ) -> Result<Downloaded, Failure> {
        let deadline = Instant::now() + self.policy.max_duration;
        let too_slow = |received| {
            Failure::Stop(ArtifactError::TooSlow {
                name: name.to_string(),
                url: without_credentials(url).into_owned(),
                received,
                limit: self.policy.max_duration,
            })
        };
        let too_large = || {
            Failure::Stop(ArtifactError::TooLarge {
                name: name.to_string(),
                url: without_credentials(url).into_owned(),
                limit: self.policy.max_bytes,
            })
        };
        let unreachable = |e: &reqwest::Error| ArtifactError::Unreachable {
            name: name.to_string(),
            url: without_credentials(url).into_owned(),
            file_name: file_name.to_string(),
            detail: error_chain(e),
        };
        let hops = HopLog::default();
        let client = self.client(hops.clone()).map_err(Failure::Stop)?;
        let mut resp = match timeout_at(deadline, client.get(url).send()).await {
            Err(_) => return Err(too_slow(0)),
            Ok(Err(e)) => {
                return Err(match redirect::refusal(&hops) {
                    Some(refused) => Failure::Stop(ArtifactError::Redirect {
                        name: name.to_string(),
                        url: without_credentials(url).into_owned(),
                        refused,
                    }),
                    None => Failure::Retry(unreachable(&e)),
                });
            }
            Ok(Ok(resp)) => resp,
        };
        let redirects = redirect::followed(&hops);
        let status = resp.status();
        if !status.is_success() {
            let err = ArtifactError::HttpStatus {
                name: name.to_string(),
                url: match redirects.last() {
                    Some(last) => {
                        without_credentials(&format!("{url} (redirected to {last})")).into_owned()
                    }
                    None => without_credentials(url).into_owned(),
                },
                status: status.as_u16(),
            };
            return Err(if retryable(status) {
                Failure::Retry(err)
            } else {
                Failure::Stop(err)
            });
        }
        let total = resp.content_length();
        if total.is_some_and(|n| n > self.policy.max_bytes) {
            return Err(too_large());
        }
        let cache_io = |e: std::io::Error| {
            Failure::Stop(ArtifactError::Io {
                name: name.to_string(),
                what: "cannot write into the cache folder",
                path: cache.dir_for(expected_sha256),
                source: e,
            })
        };
        let (mut partial, swept) = cache.partial(expected_sha256).await.map_err(cache_io)?;
        if !swept.is_empty() {
            progress.notice(&format!("{swept} ({})", cache.root().display()));
        }
        let from = Source::Url {
            url: without_credentials(url).into_owned(),
            redirects: redirects.clone(),
        };
        progress.start(name, &from, total);
        let truncated = |received| ArtifactError::Truncated {
            name: name.to_string(),
            url: without_credentials(url).into_owned(),
            received,
            expected: total.unwrap_or(0),
        };
        loop {
            let next = match timeout_at(deadline, resp.chunk()).await {
                Ok(next) => next,
                Err(_) => {
                    progress.finish();
                    return Err(too_slow(partial.bytes()));
                }
            };
            match next {
                Ok(Some(chunk)) => {
                    // Only a body without Content-Length gets here (hyper
                    // ends a body at its Content-Length).
                    if partial.bytes() + chunk.len() as u64 > self.policy.max_bytes {
                        progress.finish();
                        return Err(too_large());
                    }
                    if let Err(e) = partial.write(&chunk).await {
                        progress.finish();
                        return Err(cache_io(e));
                    }
                    progress.advance(chunk.len() as u64);
                }
                Ok(None) => break,
                Err(e) => {
                    progress.finish();
                    return Err(Failure::Retry(match total {
                        Some(_) => truncated(partial.bytes()),
                        None => unreachable(&e),
                    }));
                }
            }
        }
        progress.finish();
        if let Some(expected) = total
            && partial.bytes() != expected
        {
            return Err(Failure::Retry(truncated(partial.bytes())));
        }
        let (temp, sha256, _) = partial.finish().await.map_err(cache_io)?;
        Ok(Downloaded {
            temp,
            sha256,
            redirects,
        })
    }

    /// A small text file (a checksum list), `None` if the server says 404.
    pub async fn get_text(
        &self,
        url: &str,
        max_bytes: usize,
    ) -> Result<Option<String>, ArtifactError> {
        let mut attempt = 0;
        loop {
            match self.get_text_once(url, max_bytes).await {
                Ok(text) => return Ok(text),
                Err(Failure::Stop(e)) => return Err(e),
                Err(Failure::Retry(e)) if attempt >= self.policy.retries => return Err(e),
                Err(Failure::Retry(_)) => {
                    tokio::time::sleep(self.policy.backoff * 2u32.saturating_pow(attempt)).await;
                    attempt += 1;
                }
            }
        }
    }

    async fn get_text_once(&self, url: &str, max_bytes: usize) -> Result<Option<String>, Failure> {
        let deadline = Instant::now() + self.policy.max_duration;
        let too_slow = || {
            Failure::Stop(ArtifactError::Checksums {
                url: without_credentials(url).into_owned(),
                problem: format!(
                    "did not arrive within {}s",
                    self.policy.max_duration.as_secs()
                ),
            })
        };
        let unreachable = |e: &reqwest::Error| ArtifactError::Checksums {
            url: without_credentials(url).into_owned(),
            problem: format!(
                "cannot download it: {}; if this host is offline, download the list elsewhere \
                 and pin with --sha256",
                error_chain(e)
            ),
        };
        let hops = HopLog::default();
        let client = self.client(hops.clone()).map_err(Failure::Stop)?;
        let mut resp = match timeout_at(deadline, client.get(url).send()).await {
            Err(_) => return Err(too_slow()),
            Ok(Err(e)) => {
                return Err(match redirect::refusal(&hops) {
                    Some(refused) => Failure::Stop(ArtifactError::Checksums {
                        url: without_credentials(url).into_owned(),
                        problem: refused.to_string(),
                    }),
                    None => Failure::Retry(unreachable(&e)),
                });
            }
            Ok(Ok(resp)) => resp,
        };
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            let err = ArtifactError::Checksums {
                url: without_credentials(url).into_owned(),
                problem: format!("the server answered HTTP {}", status.as_u16()),
            };
            return Err(if retryable(status) {
                Failure::Retry(err)
            } else {
                Failure::Stop(err)
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = timeout_at(deadline, resp.chunk())
            .await
            .map_err(|_| too_slow())?
            .map_err(|e| Failure::Retry(unreachable(&e)))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > max_bytes {
                return Err(Failure::Stop(ArtifactError::Checksums {
                    url: without_credentials(url).into_owned(),
                    problem: format!("is larger than {max_bytes} bytes: not a checksum list"),
                }));
            }
        }
        String::from_utf8(body).map(Some).map_err(|_| {
            Failure::Stop(ArtifactError::Checksums {
                url: without_credentials(url).into_owned(),
                problem: "is not UTF-8 text: not a checksum list".into(),
            })
        })
    }
}

/// Server-side trouble that may pass: 5xx, 408 timeout, 429 rate limit.
fn retryable(status: reqwest::StatusCode) -> bool {
    status.is_server_error() || status.as_u16() == 408 || status.as_u16() == 429
}

/// "error sending request: client error (Connect): tcp connect error:
/// Connection refused", the whole chain, since the top level alone rarely
/// says what happened.
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}
