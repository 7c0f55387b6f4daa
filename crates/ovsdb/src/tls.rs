//! TLS for `ssl:` remotes with rustls, configured like OVS: a private key,
//! a certificate and a CA certificate (the `[ovn]` `ovn_*_private_key`,
//! `ovn_*_certificate`, `ovn_*_ca_cert` options).
//!
//! Verification: the server's certificate chain must lead to the configured
//! CA and be valid (dates, signatures, key usage). Its host name or IP
//! address is *not* checked against the certificate. That is what OVS's own
//! SSL stream does (it verifies the peer against the CA only, with
//! `SSL_VERIFY_PEER` and no host check), and it is what a deployment relies
//! on: `ovs-pki` certificates carry only a CN such as the switch id, no
//! subjectAltName, so checking the name would reject every standard OVN
//! installation. Trust is therefore "anything the OVN CA signed", exactly
//! as for ovn-controller and ovn-northd.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::error::{Error, Result};

/// Paths of the client's key, its certificate and the CA certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// PEM private key of this client.
    pub private_key: PathBuf,
    /// PEM certificate (chain) of this client.
    pub certificate: PathBuf,
    /// PEM certificate of the CA that signed the server's certificate.
    pub ca_cert: PathBuf,
}

/// A loaded TLS client configuration, ready to connect.
#[derive(Clone)]
pub struct TlsSettings {
    config: Arc<ClientConfig>,
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsSettings")
    }
}

fn read_err(path: &Path, what: &str, e: impl std::fmt::Display) -> Error {
    Error::Tls(format!("{what} {}: {e}", path.display()))
}

impl TlsSettings {
    /// Loads the key, certificate chain and CA from PEM files. Every file
    /// must exist and hold at least one object of the right kind.
    pub fn load(files: &TlsFiles) -> Result<TlsSettings> {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.certificate)
            .map_err(|e| read_err(&files.certificate, "certificate", e))?
            .collect::<Result<_, _>>()
            .map_err(|e| read_err(&files.certificate, "certificate", e))?;
        if certs.is_empty() {
            return Err(read_err(
                &files.certificate,
                "certificate",
                "no certificate in file",
            ));
        }
        let key = PrivateKeyDer::from_pem_file(&files.private_key)
            .map_err(|e| read_err(&files.private_key, "private key", e))?;
        let mut roots = RootCertStore::empty();
        let cas: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.ca_cert)
            .map_err(|e| read_err(&files.ca_cert, "CA certificate", e))?
            .collect::<Result<_, _>>()
            .map_err(|e| read_err(&files.ca_cert, "CA certificate", e))?;
        for ca in cas {
            roots
                .add(ca)
                .map_err(|e| read_err(&files.ca_cert, "CA certificate", e))?;
        }
        if roots.is_empty() {
            return Err(read_err(
                &files.ca_cert,
                "CA certificate",
                "no certificate in file",
            ));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| Error::Tls(format!("CA {}: {e}", files.ca_cert.display())))?;
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Tls(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(CaOnlyVerifier { inner }))
            .with_client_auth_cert(certs, key)
            .map_err(|e| Error::Tls(format!("client key/certificate: {e}")))?;
        Ok(TlsSettings {
            config: Arc::new(config),
        })
    }

    /// Runs the TLS handshake over `tcp`. `host` is sent as SNI when it is a
    /// DNS name.
    pub async fn connect(
        &self,
        host: &str,
        tcp: TcpStream,
    ) -> std::io::Result<TlsStream<TcpStream>> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        TlsConnector::from(self.config.clone())
            .connect(name, tcp)
            .await
    }
}

/// Verifies the chain against the CA like webpki, but accepts a
/// certificate whose names do not include the host (see the module docs).
#[derive(Debug)]
struct CaOnlyVerifier {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for CaOnlyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // webpki checks the chain first and the name last, so a name
        // mismatch means the chain itself was accepted.
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_are_named_in_the_error() {
        let files = TlsFiles {
            private_key: "/nonexistent/key.pem".into(),
            certificate: "/nonexistent/cert.pem".into(),
            ca_cert: "/nonexistent/ca.pem".into(),
        };
        let err = TlsSettings::load(&files).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/cert.pem"), "{err}");
    }
}
