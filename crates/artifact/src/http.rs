//! HTTP(S) downloads: timeouts, retries with exponential backoff on network
//! errors, a byte count checked against Content-Length, hashing while the
//! bytes stream into the cache.

use crate::cache::Cache;
use crate::error::ArtifactError;
use crate::progress::Progress;
use crate::source::Source;
use std::time::Duration;
use tempfile::NamedTempFile;

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
}

impl Default for NetPolicy {
    fn default() -> Self {
        NetPolicy {
            connect_timeout: Duration::from_secs(15),
            read_timeout: Duration::from_secs(60),
            retries: 3,
            backoff: Duration::from_secs(1),
        }
    }
}

/// An attempt's failure, and whether another attempt could help.
enum Failure {
    Retry(ArtifactError),
    Stop(ArtifactError),
}

pub(crate) struct Http {
    client: reqwest::Client,
    policy: NetPolicy,
}

impl Http {
    pub fn new(policy: NetPolicy) -> Result<Http, ArtifactError> {
        let client = reqwest::Client::builder()
            .connect_timeout(policy.connect_timeout)
            .read_timeout(policy.read_timeout)
            .user_agent(concat!("labrun/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ArtifactError::Client(error_chain(&e)))?;
        Ok(Http { client, policy })
    }

    /// Downloads `url` into a partial file in the cache folder of
    /// `expected_sha256`; returns it with its actual digest (the caller
    /// compares and commits).
    pub async fn download(
        &self,
        name: &str,
        url: &str,
        file_name: &str,
        cache: &Cache,
        expected_sha256: &str,
        progress: &mut dyn Progress,
    ) -> Result<(NamedTempFile, String), ArtifactError> {
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
    ) -> Result<(NamedTempFile, String), Failure> {
        let unreachable = |e: &reqwest::Error| ArtifactError::Unreachable {
            name: name.to_string(),
            url: url.to_string(),
            file_name: file_name.to_string(),
            detail: error_chain(e),
        };
        let mut resp = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| Failure::Retry(unreachable(&e)))?;
        let status = resp.status();
        if !status.is_success() {
            let err = ArtifactError::HttpStatus {
                name: name.to_string(),
                url: url.to_string(),
                status: status.as_u16(),
            };
            return Err(if retryable(status) {
                Failure::Retry(err)
            } else {
                Failure::Stop(err)
            });
        }
        let total = resp.content_length();
        let cache_io = |e: std::io::Error| {
            Failure::Stop(ArtifactError::Io {
                name: name.to_string(),
                what: "cannot write into the cache folder",
                path: cache.dir_for(expected_sha256),
                source: e,
            })
        };
        let mut partial = cache.partial(expected_sha256).await.map_err(cache_io)?;
        progress.start(name, &Source::Url(url.to_string()), total);
        let truncated = |received| ArtifactError::Truncated {
            name: name.to_string(),
            url: url.to_string(),
            received,
            expected: total.unwrap_or(0),
        };
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
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
        let (temp, sha, _) = partial.finish().await.map_err(cache_io)?;
        Ok((temp, sha))
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
        let unreachable = |e: &reqwest::Error| ArtifactError::Checksums {
            url: url.to_string(),
            problem: format!(
                "cannot download it: {}; if this host is offline, download the list elsewhere \
                 and pin with --sha256",
                error_chain(e)
            ),
        };
        let mut resp = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| Failure::Retry(unreachable(&e)))?;
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            let err = ArtifactError::Checksums {
                url: url.to_string(),
                problem: format!("the server answered HTTP {}", status.as_u16()),
            };
            return Err(if retryable(status) {
                Failure::Retry(err)
            } else {
                Failure::Stop(err)
            });
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| Failure::Retry(unreachable(&e)))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > max_bytes {
                return Err(Failure::Stop(ArtifactError::Checksums {
                    url: url.to_string(),
                    problem: format!("is larger than {max_bytes} bytes: not a checksum list"),
                }));
            }
        }
        String::from_utf8(body).map(Some).map_err(|_| {
            Failure::Stop(ArtifactError::Checksums {
                url: url.to_string(),
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
