//! `web_fetch`'s name resolution: resolve once, drop the addresses [`refusal`] refuses, and hand
//! exactly the others to the connection, so a name cannot resolve to a public address when
//! checked and to an internal one when connected (DNS rebinding). Literal addresses in a URL
//! never reach a resolver; [`check_url_host`] checks them.

use std::net::{IpAddr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::web_address::refusal;

/// A host `web_fetch` will not connect to, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The host as the URL names it.
    pub host: String,
    /// What kind of address it is (see [`refusal`]).
    pub why: &'static str,
    /// Whether the URL named the address itself (else a name resolved to it).
    pub literal: bool,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.literal {
            write!(f, "{} is {}", self.host, self.why)
        } else {
            // The resolved address itself is not shown: it says nothing the model needs about
            // the network the host is in.
            write!(
                f,
                "{} resolves only to internal addresses ({})",
                self.host, self.why
            )
        }
    }
}

impl std::error::Error for Refused {}

/// Refuse a URL whose host is an internal address literal (the url crate has already turned
/// `2130706433`, `0x7f.1`, `127.1` and `[::ffff:127.0.0.1]` into addresses).
pub(crate) fn check_url_host(url: &reqwest::Url) -> Result<(), Refused> {
    let Some(host) = url.host_str() else {
        return Ok(());
    };
    // IPv6 literals come in brackets; a name is not an address and goes to the resolver.
    let Ok(ip) = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    else {
        return Ok(());
    };
    match refusal(ip) {
        Some(why) => Err(Refused {
            host: host.to_string(),
            why,
            literal: true,
        }),
        None => Ok(()),
    }
}

/// Refuse the address a response came from, when it is internal: a second look after the
/// resolver's, in case a connection was ever made some other way.
pub(crate) fn check_peer(url: &reqwest::Url, peer: Option<SocketAddr>) -> Result<(), Refused> {
    match peer.and_then(|addr| refusal(addr.ip())) {
        Some(why) => Err(Refused {
            host: url.host_str().unwrap_or_default().to_string(),
            why,
            literal: false,
        }),
        None => Ok(()),
    }
}

/// The system resolver (getaddrinfo, on tokio's blocking pool), filtered.
#[derive(Debug, Default)]
pub(crate) struct GuardedResolver;

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let (allowed, refused): (Vec<SocketAddr>, Vec<SocketAddr>) = resolved
                .into_iter()
                .partition(|addr| refusal(addr.ip()).is_none());
            if allowed.is_empty() {
                return Err(match refused.first().and_then(|a| refusal(a.ip())) {
                    Some(why) => Box::new(Refused {
                        host,
                        why,
                        literal: false,
                    }) as Box<dyn std::error::Error + Send + Sync>,
                    None => format!("{host} has no address").into(),
                });
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_hosts_in_every_spelling_are_checked() {
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0x7f000001/",
            "http://017700000001/",
            "http://127.1/",
            "http://0/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00::1]:8080/",
            "https://10.0.0.1./",
        ] {
            let parsed = reqwest::Url::parse(url).unwrap();
            let err = check_url_host(&parsed).expect_err(url);
            assert!(err.literal, "{url}");
        }
        for url in [
            "http://example.com/",
            "http://8.8.8.8/",
            "https://[2606:4700::1]/",
        ] {
            check_url_host(&reqwest::Url::parse(url).unwrap()).expect(url);
        }
        let err = check_url_host(&reqwest::Url::parse("http://0x7f.1/").unwrap()).unwrap_err();
        assert_eq!(err.to_string(), "127.0.0.1 is a loopback address");
    }

    #[tokio::test]
    async fn names_of_internal_addresses_are_refused_by_the_resolver() {
        let err = GuardedResolver
            .resolve("localhost".parse().unwrap())
            .await
            .err()
            .expect("localhost must be refused");
        let refused = err.downcast_ref::<Refused>().expect("a Refused");
        assert_eq!(refused.host, "localhost");
        assert!(!refused.literal);
        assert_eq!(
            refused.to_string(),
            "localhost resolves only to internal addresses (a loopback address)"
        );
        // An address given as a name (getaddrinfo parses it) is filtered the same way.
        assert!(GuardedResolver
            .resolve("127.0.0.1".parse().unwrap())
            .await
            .is_err());
        let public: Vec<SocketAddr> = GuardedResolver
            .resolve("8.8.8.8".parse().unwrap())
            .await
            .expect("a public address passes")
            .collect();
        assert_eq!(public, vec!["8.8.8.8:0".parse().unwrap()]);
    }

    #[test]
    fn the_peer_check_refuses_internal_peers() {
        let url = reqwest::Url::parse("http://example.com/").unwrap();
        assert!(check_peer(&url, Some("127.0.0.1:80".parse().unwrap())).is_err());
        assert!(check_peer(&url, Some("93.184.216.34:80".parse().unwrap())).is_ok());
        assert!(check_peer(&url, None).is_ok());
    }
}
