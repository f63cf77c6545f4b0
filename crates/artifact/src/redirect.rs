//! Which redirects a download follows, and the record of those it did.
//!
//! Release pages redirect to a CDN on another host, so redirects are
//! followed; but every hop is recorded (the evidence names where the bytes
//! really came from), a hop from https to plain http is refused (anyone on
//! the path could then serve other bytes, and a wrong pin would be the only
//! guard), and chains are bounded and loops refused.

use reqwest::Url;
use reqwest::redirect::{Attempt, Policy};
use std::sync::{Arc, Mutex, PoisonError};

/// Why a redirect was not followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedirectRefused {
    #[error(
        "{from} redirected to {to}: from https to plain http, where anyone on the way can \
         change the bytes; refused. Use an https link, or put the file in a --mirror folder"
    )]
    Downgrade { from: String, to: String },
    #[error("more than {max} redirects, refused: {}", chain.join(" -> "))]
    TooMany { max: usize, chain: Vec<String> },
    #[error("a redirect loop, refused: {} -> {again} again", chain.join(" -> "))]
    Loop { chain: Vec<String>, again: String },
}

/// Whether to follow the redirect to `next`, given the URLs already asked
/// for in this chain (the first is the one the lab names).
pub fn judge(previous: &[Url], next: &Url, max_redirects: usize) -> Result<(), RedirectRefused> {
    let chain = || previous.iter().map(Url::to_string).collect::<Vec<_>>();
    if let Some(from) = previous.last()
        && from.scheme() == "https"
        && next.scheme() == "http"
    {
        return Err(RedirectRefused::Downgrade {
            from: from.to_string(),
            to: next.to_string(),
        });
    }
    if previous.contains(next) {
        return Err(RedirectRefused::Loop {
            chain: chain(),
            again: next.to_string(),
        });
    }
    // `previous` holds the first URL and one per redirect so far: following
    // this one makes `previous.len()` redirects.
    if previous.len() > max_redirects {
        let mut chain = chain();
        chain.push(next.to_string());
        return Err(RedirectRefused::TooMany {
            max: max_redirects,
            chain,
        });
    }
    Ok(())
}

/// What the policy saw during one request.
#[derive(Debug, Default)]
pub(crate) struct Hops {
    /// Every URL asked for, the first included; empty if nothing redirected.
    pub chain: Vec<Url>,
    /// Set when a redirect was refused (the request then fails).
    pub refused: Option<RedirectRefused>,
}

pub(crate) type HopLog = Arc<Mutex<Hops>>;

/// A reqwest policy that applies [`judge`] and writes each decision to `log`.
pub(crate) fn policy(max_redirects: usize, log: HopLog) -> Policy {
    Policy::custom(move |attempt: Attempt| {
        let verdict = judge(attempt.previous(), attempt.url(), max_redirects);
        let mut hops = log.lock().unwrap_or_else(PoisonError::into_inner);
        match verdict {
            Ok(()) => {
                hops.chain = attempt.previous().to_vec();
                hops.chain.push(attempt.url().clone());
                attempt.follow()
            }
            Err(refused) => {
                hops.refused = Some(refused.clone());
                attempt.error(refused)
            }
        }
    })
}

/// The redirects a request followed, after the URL it asked for.
pub(crate) fn followed(log: &HopLog) -> Vec<String> {
    let hops = log.lock().unwrap_or_else(PoisonError::into_inner);
    hops.chain.iter().skip(1).map(Url::to_string).collect()
}

/// The refusal that made a request fail, if that is what did.
pub(crate) fn refusal(log: &HopLog) -> Option<RedirectRefused> {
    log.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .refused
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(list: &[&str]) -> Vec<Url> {
        list.iter().map(|u| Url::parse(u).unwrap()).collect()
    }

    // https cannot be served on loopback without a certificate the client
    // trusts, so the downgrade rule is checked here, on the decision itself.
    #[test]
    fn https_to_http_is_refused_naming_both_urls() {
        let prev = urls(&["https://github.com/o/r/releases/download/v1/tool"]);
        let next = Url::parse("http://cdn.example/tool").unwrap();
        let err = judge(&prev, &next, 10).unwrap_err();
        assert!(matches!(err, RedirectRefused::Downgrade { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("https://github.com/o/r/releases/download/v1/tool"));
        assert!(msg.contains("http://cdn.example/tool"));
        assert!(msg.contains("plain http"), "{msg}");
    }

    #[test]
    fn the_downgrade_is_judged_on_the_hop_itself() {
        // http -> https -> http: the last hop leaves https.
        let prev = urls(&["http://a.example/x", "https://b.example/x"]);
        let next = Url::parse("http://c.example/x").unwrap();
        assert!(matches!(
            judge(&prev, &next, 10),
            Err(RedirectRefused::Downgrade { .. })
        ));
        // Upgrades and https to https are fine.
        let prev = urls(&["http://a.example/x"]);
        assert!(judge(&prev, &Url::parse("https://b.example/x").unwrap(), 10).is_ok());
        let prev = urls(&["https://a.example/x"]);
        assert!(judge(&prev, &Url::parse("https://b.example/y").unwrap(), 10).is_ok());
    }

    #[test]
    fn the_chain_is_bounded() {
        let mut prev = urls(&["http://h/0"]);
        for i in 1..=10 {
            let next = Url::parse(&format!("http://h/{i}")).unwrap();
            assert!(judge(&prev, &next, 10).is_ok(), "redirect {i}");
            prev.push(next);
        }
        let eleventh = Url::parse("http://h/11").unwrap();
        assert!(matches!(
            judge(&prev, &eleventh, 10),
            Err(RedirectRefused::TooMany { max: 10, .. })
        ));
    }

    #[test]
    fn a_loop_is_refused() {
        let prev = urls(&["http://h/a", "http://h/b"]);
        let err = judge(&prev, &Url::parse("http://h/a").unwrap(), 10).unwrap_err();
        assert!(matches!(err, RedirectRefused::Loop { .. }), "{err:?}");
        assert!(err.to_string().contains("http://h/a"), "{err}");
    }
}
