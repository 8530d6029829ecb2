//! A small HTTP server for the probe and metrics endpoints, over TLS when given an acceptor,
//! HTTP/1.1 only unless `--enable-http2` (axum's own `serve` can do neither). A client must
//! finish its TLS handshake and send its request headers within [`HEADER_READ_TIMEOUT`] each,
//! and at most [`MAX_CONNECTIONS`] are open at once, so that idle or slow connections can
//! neither pin memory nor starve the probes.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use super::Shutdown;

/// How long a client has to send a request's headers (controller-runtime's ReadHeaderTimeout
/// is 32 s; probes and scrapes need far less).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections open at once per endpoint; more are closed as they arrive.
pub const MAX_CONNECTIONS: usize = 1024;

/// Binds `addr` now (so a port clash fails the start) and serves `router` until shutdown,
/// over TLS when `tls` is given.
pub async fn spawn(
    what: &'static str,
    addr: SocketAddr,
    router: Router,
    tls: Option<TlsAcceptor>,
    http2: bool,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let listener = match TcpListener::bind(addr).await {
        // "Every interface" on a host without IPv6: IPv4 only.
        Err(_) if addr.ip().is_unspecified() && addr.is_ipv6() => {
            TcpListener::bind((Ipv4Addr::UNSPECIFIED, addr.port())).await
        }
        bound => bound,
    };
    let listener = listener.with_context(|| format!("binding the {what} endpoint to {addr}"))?;
    tracing::info!(%addr, secure = tls.is_some(), "serving {what}");
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = shutdown.wait() => return,
            };
            let stream = match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    // Out of file descriptors, say: wait instead of spinning on the error.
                    tracing::warn!(error = %err, "{what} endpoint cannot accept connections");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let Ok(permit) = permits.clone().try_acquire_owned() else {
                tracing::debug!(
                    "{what} endpoint has {MAX_CONNECTIONS} connections; closing a new one"
                );
                continue;
            };
            let service = TowerToHyperService::new(router.clone());
            let tls = tls.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let Some(tls) = tls else {
                    return serve(what, stream, service, http2).await;
                };
                match tokio::time::timeout(HEADER_READ_TIMEOUT, tls.accept(stream)).await {
                    Ok(Ok(stream)) => serve(what, stream, service, http2).await,
                    Ok(Err(err)) => tracing::debug!(error = %err, "{what} TLS handshake failed"),
                    Err(_) => tracing::debug!("{what} TLS handshake timed out"),
                }
            });
        }
    });
    Ok(())
}

/// Serves one connection until the client closes it.
async fn serve<I>(what: &str, io: I, service: TowerToHyperService<Router>, http2: bool)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    if !http2 {
        builder = builder.http1_only();
    }
    if let Err(err) = builder.serve_connection(TokioIo::new(io), service).await {
        tracing::debug!(error = %err, "{what} connection closed with an error");
    }
}
