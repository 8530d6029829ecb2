//! HTTPS for the manager's endpoints in tests: a client, as a scraper would be (with or without
//! a bearer token, and either checking the server's certificate against a CA or, like a
//! ServiceMonitor with `insecureSkipVerify` for the manager's self-signed certificate, not at
//! all), serving certificates as cert-manager would mount them, and an HTTPS server with a
//! test CA's certificate, as the API server calls webhooks.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use memop_runtime::manager::{Shutdown, serve_https};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// How the client treats the server's certificate.
pub enum Trust<'a> {
    /// Accept any certificate.
    Anything,
    /// Only a certificate for `localhost` that the PEM CA at this path signed.
    Ca(&'a Path),
}

/// Writes a new CA's certificate (`ca.crt`) and a certificate for `localhost` it signed, with
/// its key (`tls.crt`, `tls.key`), to `dir`: the files of a cert-manager Secret. Returns the
/// CA's PEM.
pub fn write_serving_certificate(dir: &Path) -> String {
    let (ca, cert, key) = test_ca();
    std::fs::write(dir.join("ca.crt"), &ca).unwrap();
    std::fs::write(dir.join("tls.crt"), cert).unwrap();
    std::fs::write(dir.join("tls.key"), key).unwrap();
    ca
}

/// Serves `router` over HTTPS (HTTP/1.1) on a free loopback port until `shutdown`, with a
/// certificate for `localhost` that a new test CA signed, as a webhook server the API server
/// calls (the runtime's [`serve_https`], as a manager serves its webhooks). Returns the port,
/// and the CA's PEM to trust the server with.
pub async fn serve_with_test_ca(router: axum::Router, shutdown: &Shutdown) -> (u16, String) {
    let (ca, cert, key) = test_ca();
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let bound = serve_https(
        addr,
        router,
        cert.as_bytes(),
        key.as_bytes(),
        shutdown.clone(),
    )
    .await
    .expect("serving the test webhooks");
    (bound.port(), ca)
}

/// A new CA, and a certificate for `localhost` it signed: their PEMs, and the certificate's key.
fn test_ca() -> (String, String, String) {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let serving = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let cert = serving.signed_by(&key, &ca).unwrap().pem();
    (ca.pem(), cert, key.serialize_pem())
}

/// `GET https://localhost:<port><path>` over HTTP/1.1 (with `token` as a bearer token): the
/// status code and the body, or why there is none.
pub async fn https_get(
    port: u16,
    path: &str,
    token: Option<&str>,
    trust: Trust<'_>,
) -> Result<(u16, String), String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let config = match trust {
        Trust::Anything => config
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth(),
        Trust::Ca(ca) => {
            let mut roots = RootCertStore::empty();
            let ca =
                CertificateDer::from_pem_file(ca).map_err(|e| format!("{}: {e}", ca.display()))?;
            roots.add(ca).map_err(|e| e.to_string())?;
            config.with_root_certificates(roots).with_no_client_auth()
        }
    };
    let exchange = async {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| e.to_string())?;
        let name = ServerName::try_from("localhost").expect("a server name");
        let mut stream = TlsConnector::from(Arc::new(config))
            .connect(name, stream)
            .await
            .map_err(|e| format!("TLS handshake: {e}"))?;
        let authorization = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\n{authorization}Connection: close\r\n\r\n"
        );
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut response = Vec::new();
        // The server closes the connection after the response (`Connection: close`); a TLS
        // peer that closes without close_notify still delivered everything before.
        let _ = stream.read_to_end(&mut response).await;
        let response = String::from_utf8_lossy(&response).into_owned();
        let (head, body) = response
            .split_once("\r\n\r\n")
            .ok_or_else(|| format!("no HTTP response: {response:?}"))?;
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or("no status")?;
        Ok((status, body.to_string()))
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| "no answer within 10 s".to_string())?
}

/// The certificate chain the TLS server on `localhost:<port>` presents, not checked: to check
/// it afterwards against a CA bundle read since, say.
pub async fn served_certificates(port: u16) -> Result<Vec<CertificateDer<'static>>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let handshake = async {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| e.to_string())?;
        let name = ServerName::try_from("localhost").expect("a server name");
        let stream = TlsConnector::from(Arc::new(config))
            .connect(name, stream)
            .await
            .map_err(|e| format!("TLS handshake: {e}"))?;
        let chain = stream.get_ref().1.peer_certificates().unwrap_or_default();
        Ok(chain.iter().map(|c| c.clone().into_owned()).collect())
    };
    tokio::time::timeout(Duration::from_secs(10), handshake)
        .await
        .map_err(|_| "no handshake within 10 s".to_string())?
}

/// Accepts any server certificate, still checking that the handshake is signed by its key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
