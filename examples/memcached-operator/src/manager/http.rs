// Copyright 2026 The memcached-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! A small HTTP server for the probe and metrics endpoints, HTTP/1.1 only unless
//! `--enable-http2` (axum's own `serve` cannot turn HTTP/2 off).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use super::Shutdown;

/// Binds `addr` now (so a port clash fails the start) and serves `router` until shutdown.
pub async fn spawn(
    what: &'static str,
    addr: SocketAddr,
    router: Router,
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
    tracing::info!(%addr, "serving {what}");
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
            let service = TowerToHyperService::new(router.clone());
            tokio::spawn(async move {
                let mut builder = Builder::new(TokioExecutor::new());
                if !http2 {
                    builder = builder.http1_only();
                }
                if let Err(err) = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                {
                    tracing::debug!(error = %err, "{what} connection closed with an error");
                }
            });
        }
    });
    Ok(())
}
