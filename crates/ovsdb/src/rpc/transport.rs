//! Remote addresses (`unix:`, `tcp:`, `ssl:`) and opening a byte stream to one.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};

use crate::error::{Error, Result};
use crate::tls::TlsSettings;

/// Where an OVSDB server listens, in OVS's own notation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Remote {
    /// `unix:PATH`
    Unix(PathBuf),
    /// `tcp:HOST:PORT`; an IPv6 host is written in brackets, `tcp:[::1]:6641`.
    Tcp {
        /// Host name or address (IPv6 without brackets).
        host: String,
        /// TCP port.
        port: u16,
    },
    /// `ssl:HOST:PORT`, same host rules as TCP.
    Ssl {
        /// Host name or address (IPv6 without brackets).
        host: String,
        /// TCP port.
        port: u16,
    },
}

fn host_port(s: &str, full: &str) -> Result<(String, u16)> {
    let bad = || Error::BadRemote(full.to_string());
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let host = match host.strip_prefix('[') {
        Some(h) => h.strip_suffix(']').ok_or_else(bad)?,
        None if host.contains(':') => return Err(bad()),
        None => host,
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

impl FromStr for Remote {
    type Err = Error;
    fn from_str(s: &str) -> Result<Remote> {
        let s = s.trim();
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(Error::BadRemote(s.to_string()));
            }
            Ok(Remote::Unix(PathBuf::from(path)))
        } else if let Some(rest) = s.strip_prefix("tcp:") {
            let (host, port) = host_port(rest, s)?;
            Ok(Remote::Tcp { host, port })
        } else if let Some(rest) = s.strip_prefix("ssl:") {
            let (host, port) = host_port(rest, s)?;
            Ok(Remote::Ssl { host, port })
        } else {
            Err(Error::BadRemote(s.to_string()))
        }
    }
}

impl fmt::Display for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hp = |f: &mut fmt::Formatter<'_>, scheme: &str, host: &str, port: u16| {
            if host.contains(':') {
                write!(f, "{scheme}:[{host}]:{port}")
            } else {
                write!(f, "{scheme}:{host}:{port}")
            }
        };
        match self {
            Remote::Unix(p) => write!(f, "unix:{}", p.display()),
            Remote::Tcp { host, port } => hp(f, "tcp", host, *port),
            Remote::Ssl { host, port } => hp(f, "ssl", host, *port),
        }
    }
}

/// Parses a comma-separated remote list (a clustered database's members),
/// as in the `[ovn] ovn_nb_connection` option.
pub fn parse_remotes(s: &str) -> Result<Vec<Remote>> {
    let remotes = s
        .split(',')
        .filter(|r| !r.trim().is_empty())
        .map(Remote::from_str)
        .collect::<Result<Vec<_>>>()?;
    if remotes.is_empty() {
        return Err(Error::BadRemote(s.to_string()));
    }
    Ok(remotes)
}

/// A connected byte stream of any transport.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Stream for T {}

impl Remote {
    /// Opens the stream; `ssl:` needs `tls`.
    pub async fn connect(&self, tls: Option<&TlsSettings>) -> Result<Box<dyn Stream>> {
        let io = |source| Error::Io {
            remote: self.to_string(),
            source,
        };
        Ok(match self {
            Remote::Unix(path) => Box::new(UnixStream::connect(path).await.map_err(io)?),
            Remote::Tcp { host, port } => {
                let s = TcpStream::connect((host.as_str(), *port))
                    .await
                    .map_err(io)?;
                s.set_nodelay(true).map_err(io)?;
                Box::new(s)
            }
            Remote::Ssl { host, port } => {
                let tls = tls.ok_or_else(|| {
                    Error::Tls(format!(
                        "{self}: ssl remote needs a private key, certificate and CA certificate"
                    ))
                })?;
                let s = TcpStream::connect((host.as_str(), *port))
                    .await
                    .map_err(io)?;
                s.set_nodelay(true).map_err(io)?;
                Box::new(tls.connect(host, s).await.map_err(io)?)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_parse_and_print_in_ovs_notation() {
        for s in [
            "unix:/run/ovn/ovnnb_db.sock",
            "tcp:127.0.0.1:6641",
            "tcp:[::1]:6641",
            "ssl:ovn.example.org:6642",
        ] {
            assert_eq!(s.parse::<Remote>().unwrap().to_string(), s);
        }
        assert_eq!(
            "tcp:[::1]:6641".parse::<Remote>().unwrap(),
            Remote::Tcp {
                host: "::1".into(),
                port: 6641
            }
        );
    }

    #[test]
    fn bad_remotes_are_rejected_by_name() {
        for s in [
            "",
            "tcp:1.2.3.4",
            "tcp::1:6641",
            "udp:1.2.3.4:5",
            "tcp:h:99999",
            "unix:",
            "ssl:[::1:6641",
        ] {
            let err = s.parse::<Remote>().unwrap_err();
            assert!(matches!(err, Error::BadRemote(_)), "{s}: {err}");
        }
    }

    #[test]
    fn remote_lists_split_on_commas() {
        let r = parse_remotes("tcp:127.0.0.1:1, tcp:127.0.0.1:2,unix:/x").unwrap();
        assert_eq!(r.len(), 3);
        assert!(parse_remotes(",").is_err());
    }
}
