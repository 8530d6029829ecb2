//! A small HTTP server for the probe, metrics and webhook endpoints, over TLS when given an
//! acceptor, HTTP/1.1 only unless `--enable-http2` (axum's own `serve` can do neither).
//!
//! Idle or slow connections can neither pin memory nor starve the probes:
//! - A client must finish its TLS handshake within [`Limits::header_read_timeout`], and send
//!   each request's headers within it too, counted from when it connected or from the end of
//!   its previous request: a keep-alive connection idle for longer is closed, over HTTP/1.1
//!   (hyper's header read timer) and HTTP/2 alike (a watchdog, which sends a GOAWAY). An HTTP/2
//!   peer that has sent nothing for that long is pinged, and closed if it does not answer.
//! - An endpoint holds at most [`Limits::connections`] open at once, and at most
//!   [`Limits::per_peer`] from one IP address, well below: whoever opens more from one address
//!   only has their own new connections closed, and the kubelet's probes (from the node's
//!   address) are still answered. Pods sharing the node's address (`hostNetwork`) count as
//!   the kubelet; many addresses together can still fill an endpoint, but where the network
//!   plugin enforces `config/network-policy`, only the metrics and webhook callers it names
//!   reach the pod at all.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt as _;

use super::Shutdown;

/// How long a client has to finish its TLS handshake, and to send a request's headers
/// (controller-runtime's ReadHeaderTimeout is 32 s; probes and scrapes need far less).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How many connections an endpoint holds open, and for how long they may sit idle.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections open at once, from every client together: each costs memory (and a file
    /// descriptor). More are closed as they arrive.
    pub connections: usize,
    /// Connections open at once from one IP address, so that one client cannot take all
    /// `connections`. More from that address are closed as they arrive.
    pub per_peer: usize,
    /// How long a client has to finish its TLS handshake, and to send a request's headers
    /// from when it connected or its previous request ended (an idle connection is closed
    /// then); also how long an HTTP/2 peer may stay silent before it is pinged, and take to
    /// answer.
    pub header_read_timeout: Duration,
}

impl Limits {
    /// The probe and metrics endpoints'. The kubelet opens one connection per probe (HTTP/1.1,
    /// closed after the answer), so at most one per probe of the pod at once; Prometheus keeps
    /// one per target. 32 from one address leave them ample room, and take 32 addresses to
    /// fill an endpoint.
    pub const DEFAULT: Self = Self {
        connections: 1024,
        per_peer: 32,
        header_read_timeout: HEADER_READ_TIMEOUT,
    };

    /// The webhook server's. Over HTTP/1.1 the API server opens one connection per call in
    /// flight (a busy one has hundreds of requests in flight), and several API servers may
    /// reach the webhooks from one address (through konnectivity, or a node's SNAT): a quarter
    /// of the endpoint, so that one client still cannot take all of it.
    pub const WEBHOOKS: Self = Self {
        per_peer: 256,
        ..Self::DEFAULT
    };
}

/// [`spawn_with`] the [`Limits::DEFAULT`] limits.
pub async fn spawn(
    what: &'static str,
    addr: SocketAddr,
    router: Router,
    tls: Option<TlsAcceptor>,
    http2: bool,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    spawn_with(what, addr, router, tls, http2, Limits::DEFAULT, shutdown).await
}

/// Binds `addr` now (so a port clash fails the start) and serves `router` until shutdown
/// stops the servers ([`Shutdown::servers_stop`]: under a manager, once its controllers
/// have drained), over TLS when `tls` is given, within `limits`.
pub async fn spawn_with(
    what: &'static str,
    addr: SocketAddr,
    router: Router,
    tls: Option<TlsAcceptor>,
    http2: bool,
    limits: Limits,
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
    let open = Arc::new(Open::new(limits));
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = shutdown.servers_stop() => return,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors, say: wait instead of spinning on the error.
                    tracing::warn!(error = %err, "{what} endpoint cannot accept connections");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            // An IPv4 client of a dual-stack socket is ::ffff:a.b.c.d: the same client.
            let peer_addr = SocketAddr::new(peer.ip().to_canonical(), peer.port());
            let peer = peer_addr.ip();
            let Some(slot) = open.admit(peer) else {
                tracing::debug!(%peer, "{what} endpoint is full, for that client or for all; closing a new connection");
                continue;
            };
            let router = router.clone();
            let tls = tls.clone();
            tokio::spawn(async move {
                let _slot = slot;
                let Some(tls) = tls else {
                    return serve(what, stream, peer_addr, router, http2, limits).await;
                };
                match tokio::time::timeout(limits.header_read_timeout, tls.accept(stream)).await {
                    Ok(Ok(stream)) => serve(what, stream, peer_addr, router, http2, limits).await,
                    Ok(Err(err)) => tracing::debug!(error = %err, "{what} TLS handshake failed"),
                    Err(_) => tracing::debug!("{what} TLS handshake timed out"),
                }
            });
        }
    });
    Ok(())
}

/// Serves one connection from `peer` until the client closes it or leaves it idle too long;
/// each request carries the peer's address (axum's `ConnectInfo<SocketAddr>`).
async fn serve<I>(what: &str, io: I, peer: SocketAddr, router: Router, http2: bool, limits: Limits)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    // Finds peers that vanished (a node gone without closing its connections) while a request
    // is in flight, which the idle watchdog below leaves alone.
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.header_read_timeout)
        .keep_alive_timeout(limits.header_read_timeout);
    if !http2 {
        builder = builder.http1_only();
    }
    let activity = Arc::new(Activity::new());
    let service = {
        let activity = activity.clone();
        tower::service_fn(move |mut request: axum::http::Request<_>| {
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            let serving = activity.serving();
            let response = router.clone().oneshot(request);
            async move {
                let response = response.await;
                drop(serving);
                response
            }
        })
    };
    let connection = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(service));
    tokio::pin!(connection);
    // hyper closes an idle HTTP/1.1 connection itself (its header read timer starts when the
    // previous response is sent), but neither one that has not yet said which version it
    // speaks (with HTTP/2 enabled) nor an idle HTTP/2 one.
    let served = tokio::select! {
        served = connection.as_mut() => served,
        () = activity.idle_for(limits.header_read_timeout) => {
            tracing::debug!("closing an idle {what} connection");
            connection.as_mut().graceful_shutdown();
            // HTTP/2's GOAWAY waits for the client's answer to a ping: not for ever.
            match tokio::time::timeout(limits.header_read_timeout, connection).await {
                Ok(served) => served,
                Err(_) => return,
            }
        }
    };
    if let Err(err) = served {
        tracing::debug!(error = %err, "{what} connection closed with an error");
    }
}

/// The connections an endpoint has open, in all and per client address.
struct Open {
    limits: Limits,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    total: usize,
    /// Only addresses with a connection open: at most `limits.connections` of them.
    per_peer: HashMap<IpAddr, usize>,
}

impl Open {
    fn new(limits: Limits) -> Self {
        Self {
            limits,
            counts: Mutex::default(),
        }
    }

    /// A place for one more connection from `peer`, unless the endpoint or `peer` already has
    /// as many open as the limits allow.
    fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Slot> {
        let mut counts = self.counts.lock().expect("connection counts lock");
        let from_peer = counts.per_peer.get(&peer).copied().unwrap_or(0);
        if counts.total >= self.limits.connections || from_peer >= self.limits.per_peer {
            return None;
        }
        *counts.per_peer.entry(peer).or_default() += 1;
        counts.total += 1;
        Some(Slot {
            open: self.clone(),
            peer,
        })
    }
}

/// One open connection's place in [`Open`]: given back when dropped.
struct Slot {
    open: Arc<Open>,
    peer: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.open.counts.lock().expect("connection counts lock");
        counts.total -= 1;
        if let Some(from_peer) = counts.per_peer.get_mut(&self.peer) {
            *from_peer -= 1;
            if *from_peer == 0 {
                counts.per_peer.remove(&self.peer);
            }
        }
    }
}

/// How many requests a connection is serving, and since when it has served none.
struct Activity {
    /// Requests in flight; when the last one ended (or the connection opened).
    state: Mutex<(usize, Instant)>,
}

impl Activity {
    fn new() -> Self {
        Self {
            state: Mutex::new((0, Instant::now())),
        }
    }

    /// Counts a request as in flight until the returned guard is dropped.
    fn serving(self: &Arc<Self>) -> Serving {
        self.state.lock().expect("activity lock").0 += 1;
        Serving(self.clone())
    }

    /// Resolves once the connection has served no request for `timeout`.
    async fn idle_for(&self, timeout: Duration) {
        loop {
            let (in_flight, since) = *self.state.lock().expect("activity lock");
            let deadline = if in_flight == 0 {
                since + timeout
            } else {
                Instant::now() + timeout
            };
            if deadline <= Instant::now() {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// A request in flight on a connection (see [`Activity::serving`]).
struct Serving(Arc<Activity>);

impl Drop for Serving {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().expect("activity lock");
        *state = (state.0 - 1, Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpSocket, TcpStream};

    use super::*;

    /// Serves `/healthz` on a free loopback port within `limits`, until the test ends.
    async fn probes(limits: Limits, http2: bool) -> SocketAddr {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|free| free.local_addr())
            .unwrap();
        let router = Router::new().route("/healthz", get(|| async { "ok" }));
        spawn_with(
            "probes",
            addr,
            router,
            None,
            http2,
            limits,
            Shutdown::default(),
        )
        .await
        .unwrap();
        addr
    }

    /// A connection to `server` from the loopback address `from`.
    async fn connect(from: [u8; 4], server: SocketAddr) -> TcpStream {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind((from, 0).into()).unwrap();
        socket.connect(server).await.unwrap()
    }

    /// The status of `GET /healthz` as the kubelet sends it (HTTP/1.1, one connection per
    /// probe), from `from`; `None` when the server closes the connection without an answer.
    #[cfg(target_os = "linux")]
    async fn probe(from: [u8; 4], server: SocketAddr) -> Option<u16> {
        let mut stream = connect(from, server).await;
        let request = "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await.ok()?;
        response.split_whitespace().nth(1)?.parse().ok()
    }

    /// Whether the server has closed `stream` (or does within `within`), reading what it sent.
    async fn closed(stream: &mut TcpStream, within: Duration) -> bool {
        let mut sent = Vec::new();
        tokio::time::timeout(within, stream.read_to_end(&mut sent))
            .await
            .is_ok()
    }

    #[tokio::test]
    // Linux routes all of 127.0.0.0/8 to the loopback interface: the flood comes from 127.0.0.2.
    #[cfg(target_os = "linux")]
    async fn one_client_cannot_take_the_connections_of_the_others() {
        let limits = Limits {
            connections: 16,
            per_peer: 4,
            // Long enough that the connections the server keeps stay open during the test.
            header_read_timeout: Duration::from_secs(60),
        };
        let server = probes(limits, false).await;
        // 127.0.0.2 opens more connections than the endpoint holds in all, and sends nothing.
        let mut flood = Vec::new();
        for _ in 0..limits.connections + limits.per_peer {
            flood.push(connect([127, 0, 0, 2], server).await);
        }
        // The kubelet's probe from another address is answered at once. (The server accepts
        // connections in the order they came, so it has also dealt with the whole flood.)
        let answer = tokio::time::timeout(Duration::from_secs(5), probe([127, 0, 0, 1], server));
        assert_eq!(answer.await, Ok(Some(200)));
        // The flooding address keeps only its own share; the rest of its connections are closed.
        let closed = futures::future::join_all(
            flood
                .iter_mut()
                .map(|stream| closed(stream, Duration::from_secs(1))),
        )
        .await;
        let kept = closed.iter().filter(|&&closed| !closed).count();
        assert_eq!(kept, limits.per_peer);
        assert_eq!(
            probe([127, 0, 0, 2], server).await,
            None,
            "a connection over its limit is closed"
        );
        // Once it closes its connections, it is served again.
        drop(flood);
        let mut answer = None;
        for _ in 0..50 {
            answer = probe([127, 0, 0, 2], server).await;
            if answer.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(answer, Some(200));
    }

    #[tokio::test]
    #[cfg(target_os = "linux")]
    async fn requests_carry_the_address_of_their_caller() {
        use axum::extract::ConnectInfo;
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|free| free.local_addr())
            .unwrap();
        let router = Router::new().route(
            "/healthz",
            get(|ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.ip().to_string() }),
        );
        let shutdown = Shutdown::default();
        spawn("probes", addr, router, None, false, shutdown.clone())
            .await
            .unwrap();
        let mut stream = connect([127, 0, 0, 3], addr).await;
        let request = "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.ends_with("127.0.0.3"), "{response}");
        shutdown.trigger();
    }

    #[test]
    fn the_endpoint_holds_at_most_its_connections_in_all() {
        let open = Arc::new(Open::new(Limits {
            connections: 4,
            per_peer: 2,
            header_read_timeout: HEADER_READ_TIMEOUT,
        }));
        let peers: Vec<IpAddr> = (1..=3).map(|n| [10, 0, 0, n].into()).collect();
        let first = [open.admit(peers[0]), open.admit(peers[0])];
        assert!(first.iter().all(Option::is_some));
        assert!(open.admit(peers[0]).is_none(), "over its own limit");
        let second = [open.admit(peers[1]), open.admit(peers[1])];
        assert!(second.iter().all(Option::is_some));
        assert!(open.admit(peers[2]).is_none(), "the endpoint is full");
        drop(first);
        let third = open.admit(peers[2]);
        assert!(third.is_some(), "room again");
        drop((second, third));
        let counts = open.counts.lock().unwrap();
        assert_eq!(counts.total, 0);
        assert!(
            counts.per_peer.is_empty(),
            "addresses without connections are forgotten"
        );
    }

    #[tokio::test]
    async fn idle_connections_are_closed_over_http1_and_http2() {
        let timeout = Duration::from_millis(300);
        let limits = Limits {
            header_read_timeout: timeout,
            ..Limits::DEFAULT
        };
        // An HTTP/1.1 keep-alive connection, after its answer.
        let http1 = probes(limits, false).await;
        let mut stream = connect([127, 0, 0, 1], http1).await;
        let request = "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = [0; 12];
        stream.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"HTTP/1.1 200");
        assert!(closed(&mut stream, 10 * timeout).await, "HTTP/1.1");
        // With HTTP/2 enabled: a connection that sends nothing, and an HTTP/2 client (which
        // answers the server's pings) once it has its answer.
        let http2 = probes(limits, true).await;
        let mut silent = connect([127, 0, 0, 1], http2).await;
        let stream = TokioIo::new(connect([127, 0, 0, 1], http2).await);
        let (mut client, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), stream)
                .await
                .unwrap();
        let connection = tokio::spawn(connection);
        let request = axum::http::Request::get("http://localhost/healthz")
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
        let answer = client.send_request(request).await.unwrap();
        assert_eq!(answer.status(), 200);
        assert!(closed(&mut silent, 10 * timeout).await, "before any byte");
        let closed = tokio::time::timeout(10 * timeout, connection).await;
        assert!(matches!(closed, Ok(Ok(Ok(())))), "HTTP/2: {closed:?}");
    }
}
