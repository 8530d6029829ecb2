//! The TLS certificate of the metrics endpoint, as controller-runtime serves it: read from
//! `--metrics-cert-path` (the files `--metrics-cert-name` and `--metrics-cert-key`, e.g. a
//! cert-manager Secret mounted there) and read again when they change, so that a renewed
//! certificate is served without a restart; or, without a path, self-signed at start, which a
//! scraper that skips verification accepts (config/prometheus does by default) and which is
//! not meant for production.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Context as _;
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;

use super::Shutdown;

/// How often the certificate files are checked for changes. Polling, as controller-runtime's
/// certwatcher also does: a Secret volume is updated by swapping a symbolic link, which file
/// notifications follow poorly.
const RELOAD_EVERY: Duration = Duration::from_secs(10);

/// The certificate served, swapped in place when its files change.
#[derive(Debug)]
pub(crate) struct Certificate {
    current: RwLock<Arc<CertifiedKey>>,
    files: Option<Files>,
}

struct Files {
    cert: PathBuf,
    key: PathBuf,
    /// What was loaded last, to tell a change.
    loaded: RwLock<(Vec<u8>, Vec<u8>)>,
}

/// Without what was loaded: the key.
impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Files")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Certificate {
    /// A self-signed certificate for `localhost`, made now.
    pub(crate) fn self_signed() -> anyhow::Result<Self> {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
            .context("making a self-signed certificate")?;
        let key = PrivateKeyDer::try_from(made.signing_key.serialize_der())
            .map_err(|e| anyhow::anyhow!("the self-signed certificate's key: {e}"))?;
        let certified = certified(vec![made.cert.der().clone()], key)?;
        Ok(Self {
            current: RwLock::new(certified),
            files: None,
        })
    }

    /// The certificate chain in `dir/cert` and its key in `dir/key`, both PEM; a file that is
    /// missing or wrong fails now, before anything is served. The files are read off the
    /// runtime's threads (tokio's `fs`): a read that stalls (a network volume) blocks no task.
    pub(crate) async fn from_files(dir: &Path, cert: &str, key: &str) -> anyhow::Result<Self> {
        let files = Files {
            cert: dir.join(cert),
            key: dir.join(key),
            loaded: RwLock::default(),
        };
        let (cert, key) = files.read().await?;
        let certified =
            parse(&cert, &key).with_context(|| format!("loading {}", files.cert.display()))?;
        *files.loaded.write().expect("certificate lock") = (cert, key);
        Ok(Self {
            current: RwLock::new(certified),
            files: Some(files),
        })
    }

    /// A PEM certificate chain and its PEM key, held in memory (e.g. read from a Secret; the
    /// runtime swaps it for a renewed one).
    pub(crate) fn from_pem(cert: &[u8], key: &[u8]) -> anyhow::Result<Self> {
        Ok(Self {
            current: RwLock::new(parse(cert, key)?),
            files: None,
        })
    }

    /// Serves `cert` (a PEM chain) and its PEM `key` from now on; a pair that does not parse,
    /// or whose key does not match, leaves the current certificate in place.
    pub(crate) fn replace(&self, cert: &[u8], key: &[u8]) -> anyhow::Result<()> {
        *self.current.write().expect("certificate lock") = parse(cert, key)?;
        Ok(())
    }

    /// Reads the files again; serves their certificate from now on if they changed. Returns
    /// whether they did. A file being rewritten may not parse: then the last good certificate
    /// stays, and the next check tries again. The files are read off the runtime's threads.
    pub(crate) async fn reload(&self) -> anyhow::Result<bool> {
        let Some(files) = &self.files else {
            return Ok(false);
        };
        let (cert, key) = files.read().await?;
        let unchanged = {
            let (loaded_cert, loaded_key) = &*files.loaded.read().expect("certificate lock");
            *loaded_cert == cert && *loaded_key == key
        };
        if unchanged {
            return Ok(false);
        }
        let certified =
            parse(&cert, &key).with_context(|| format!("loading {}", files.cert.display()))?;
        *self.current.write().expect("certificate lock") = certified;
        *files.loaded.write().expect("certificate lock") = (cert, key);
        Ok(true)
    }

    /// Checks the files for changes every 10 seconds until the servers stop.
    pub(crate) fn watch(self: &Arc<Self>, shutdown: Shutdown) {
        if self.files.is_none() {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(RELOAD_EVERY) => {}
                    () = shutdown.servers_stop() => return,
                }
                match this.reload().await {
                    Ok(true) => tracing::info!("loaded the renewed metrics certificate"),
                    Ok(false) => {}
                    Err(error) => tracing::warn!(
                        error = format!("{error:#}"),
                        "keeping the metrics certificate"
                    ),
                }
            }
        });
    }

    /// A TLS acceptor serving this certificate. It offers HTTP/2 only with `http2`: as
    /// kubebuilder's projects, HTTP/1.1 only by default.
    pub(crate) fn acceptor(self: Arc<Self>, http2: bool) -> anyhow::Result<TlsAcceptor> {
        let mut config = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .context("the TLS configuration")?
            .with_no_client_auth()
            .with_cert_resolver(self);
        config.alpn_protocols = if http2 {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

impl ResolvesServerCert for Certificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().expect("certificate lock").clone())
    }
}

impl Files {
    /// Reads both files with tokio's `fs` (on its blocking threads, not the runtime's).
    async fn read(&self) -> anyhow::Result<(Vec<u8>, Vec<u8>)> {
        async fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
            (tokio::fs::read(path).await).with_context(|| format!("reading {}", path.display()))
        }
        Ok((read(&self.cert).await?, read(&self.key).await?))
    }
}

/// The cryptography of kube's own TLS (ring).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A PEM certificate chain and its PEM key, checked to belong together.
fn parse(cert: &[u8], key: &[u8]) -> anyhow::Result<Arc<CertifiedKey>> {
    let chain = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .context("the certificate is not PEM")?;
    anyhow::ensure!(!chain.is_empty(), "no certificate in the file");
    let key = PrivateKeyDer::from_pem_slice(key).context("the key is not a PEM private key")?;
    certified(chain, key)
}

fn certified(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> anyhow::Result<Arc<CertifiedKey>> {
    let certified = CertifiedKey::from_der(chain, key, &provider())
        .context("the key does not match the certificate")?;
    Ok(Arc::new(certified))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The certificate chain served now.
    fn served(certificate: &Certificate) -> Vec<CertificateDer<'static>> {
        certificate.current.read().unwrap().cert.clone()
    }

    /// A fresh directory for certificate files, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        /// Writes a new certificate and key; returns the certificate.
        fn write_certificate(&self) -> CertificateDer<'static> {
            let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
            std::fs::write(self.0.join("tls.crt"), made.cert.pem()).unwrap();
            std::fs::write(self.0.join("tls.key"), made.signing_key.serialize_pem()).unwrap();
            made.cert.der().clone()
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// The certificate of `dir`'s files.
    async fn load(dir: &Dir) -> Certificate {
        (Certificate::from_files(&dir.0, "tls.crt", "tls.key").await).unwrap()
    }

    #[tokio::test]
    async fn serves_the_renewed_certificate_once_its_files_change() {
        let dir = Dir::new("metrics-certs-reload");
        let first = dir.write_certificate();
        let certificate = load(&dir).await;
        assert_eq!(served(&certificate), vec![first.clone()]);
        assert!(!certificate.reload().await.unwrap(), "unchanged files");

        let second = dir.write_certificate();
        assert_ne!(first, second);
        assert!(certificate.reload().await.unwrap());
        assert_eq!(served(&certificate), vec![second.clone()]);

        // Half-written files (a key that does not match yet) keep the last good certificate.
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        std::fs::write(dir.0.join("tls.crt"), made.cert.pem()).unwrap();
        let error = certificate.reload().await.unwrap_err();
        assert!(format!("{error:#}").contains("does not match"), "{error:#}");
        assert_eq!(served(&certificate), vec![second]);
        std::fs::write(dir.0.join("tls.key"), made.signing_key.serialize_pem()).unwrap();
        assert!(certificate.reload().await.unwrap());
        assert_eq!(served(&certificate), vec![made.cert.der().clone()]);
    }

    #[tokio::test]
    async fn the_debug_of_a_certificate_leaves_its_key_out() {
        let dir = Dir::new("metrics-certs-debug");
        dir.write_certificate();
        let certificate = load(&dir).await;
        let debug = format!("{certificate:?}");
        let key = std::fs::read(dir.0.join("tls.key")).unwrap();
        let key_der = rustls::pki_types::PrivateKeyDer::from_pem_slice(&key).unwrap();
        // A stretch from the middle of the key, as Debug writes bytes ("1, 2, 3").
        let written = |bytes: &[u8]| {
            let middle = &bytes[bytes.len() / 2..bytes.len() / 2 + 16];
            format!("{middle:?}").trim_matches(['[', ']']).to_string()
        };
        assert!(!debug.contains(&written(&key)), "the PEM key: {debug}");
        assert!(
            !debug.contains(&written(key_der.secret_der())),
            "the DER key: {debug}"
        );
    }

    #[tokio::test]
    async fn missing_or_broken_files_fail_at_start() {
        let dir = Dir::new("metrics-certs-broken");
        let missing = (Certificate::from_files(&dir.0, "tls.crt", "tls.key").await).unwrap_err();
        assert!(format!("{missing:#}").contains("tls.crt"), "{missing:#}");
        std::fs::write(dir.0.join("tls.crt"), "not a certificate").unwrap();
        std::fs::write(dir.0.join("tls.key"), "not a key").unwrap();
        let broken = (Certificate::from_files(&dir.0, "tls.crt", "tls.key").await).unwrap_err();
        assert!(
            format!("{broken:#}").contains("no certificate"),
            "{broken:#}"
        );
    }

    #[test]
    fn a_certificate_in_memory_is_replaced_only_by_a_matching_pair() {
        let first = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let key = first.signing_key.serialize_pem();
        let certificate =
            Certificate::from_pem(first.cert.pem().as_bytes(), key.as_bytes()).unwrap();
        assert_eq!(served(&certificate), vec![first.cert.der().clone()]);
        let second = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let mismatched = certificate.replace(second.cert.pem().as_bytes(), key.as_bytes());
        assert!(format!("{:#}", mismatched.unwrap_err()).contains("does not match"));
        assert_eq!(served(&certificate), vec![first.cert.der().clone()]);
        let second_key = second.signing_key.serialize_pem();
        certificate
            .replace(second.cert.pem().as_bytes(), second_key.as_bytes())
            .unwrap();
        assert_eq!(served(&certificate), vec![second.cert.der().clone()]);
    }

    #[test]
    fn offers_http2_only_when_asked() {
        let certificate = Arc::new(Certificate::self_signed().unwrap());
        let alpn = |http2| {
            certificate
                .clone()
                .acceptor(http2)
                .unwrap()
                .config()
                .alpn_protocols
                .clone()
        };
        assert_eq!(alpn(false), vec![b"http/1.1".to_vec()]);
        assert_eq!(alpn(true), vec![b"h2".to_vec(), b"http/1.1".to_vec()]);
    }

    /// Runs `test` on a runtime of one thread, in a thread of its own; fails if it has not
    /// finished within 10 s (a runtime whose thread blocks never does).
    fn on_one_thread(test: impl Future<Output = ()> + Send + 'static) {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(test);
            let _ = done.send(());
        });
        finished
            .recv_timeout(Duration::from_secs(10))
            .expect("the runtime's only thread was blocked");
    }

    #[test]
    fn reading_the_files_does_not_block_the_runtime() {
        let dir = Dir::new("metrics-certs-blocking");
        dir.write_certificate();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let certificate = Arc::new(runtime.block_on(load(&dir)));
        // A file whose read blocks until someone writes it: a named pipe (a stalled network
        // volume, say, would do the same).
        let pipe = dir.0.join("tls.crt");
        std::fs::remove_file(&pipe).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&pipe)
            .status()
            .unwrap();
        assert!(made.success());
        let unblock = pipe.clone();
        let watching = certificate.clone();
        let result = std::panic::catch_unwind(move || {
            on_one_thread(async move {
                let reading = tokio::spawn(async move { watching.reload().await });
                // The runtime's only thread is free while the read waits for the pipe: timers
                // still fire, other tasks still run.
                tokio::time::sleep(Duration::from_millis(200)).await;
                assert!(!reading.is_finished());
                // Let the read finish: it reads an empty file, which is no certificate.
                drop(std::fs::OpenOptions::new().write(true).open(&unblock));
                let error = reading.await.unwrap().unwrap_err();
                assert!(format!("{error:#}").contains("no certificate"), "{error:#}");
            })
        });
        if let Err(panic) = result {
            // The runtime's thread is stuck reading: end the read (opening the pipe's other end
            // when no one reads it would block this thread too).
            drop(std::fs::OpenOptions::new().write(true).open(&pipe));
            std::panic::resume_unwind(panic);
        }
    }
}
