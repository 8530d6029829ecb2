//! A small HTTP server for the probe, metrics and webhook endpoints, over TLS when given an
//! acceptor, HTTP/1.1 only unless `--enable-http2` (axum's own `serve` can do neither).
//!
//! Idle or slow connections can neither pin memory nor starve the probes:
//! - A client must finish its TLS handshake within `Limits::header_read_timeout`, and send
//!   each request's headers within it too, counted from when it connected or from the end of
//!   its previous request: a keep-alive connection idle for longer is closed, over HTTP/1.1
//!   (hyper's header read timer) and HTTP/2 alike (a watchdog, which sends a GOAWAY). An HTTP/2
//!   peer that has sent nothing for that long is pinged, and closed if it does not answer.
//! - A request's body must arrive within `Limits::body_read_timeout` of its headers: a client
//!   that trickles it gets an error and its connection is closed, so that it holds its place for
//!   seconds, not for ever.
//! - An endpoint holds at most `Limits::connections` open at once, and at most
//!   `Limits::per_peer` from one IP address, well below. A connection over either limit is
//!   not closed at once but waits, unread, for a place (up to `Limits::header_read_timeout`):
//!   over HTTP/1.1 the API server opens a connection per webhook call in flight, and several
//!   API servers behind one address (a node's SNAT, konnectivity) can exceed the per-address
//!   limit in a burst; closing the connection would deny the call under `failurePolicy: Fail`,
//!   while waiting costs it milliseconds, as earlier calls end. A freed place goes to the
//!   waiting client with the fewest connections open (the oldest first among equals), so that
//!   addresses holding many connections (trickling bodies, say) cannot keep another out: they
//!   free places every few seconds (the timeouts above), and the API server's waiting call takes
//!   the first. Whoever opens more from one address thus only delays their own new
//!   connections, and the kubelet's probes (from the node's address) are still answered. Pods
//!   sharing the node's address (`hostNetwork`) count as the kubelet; many addresses together
//!   can still fill an endpoint, but where the network plugin enforces
//!   `config/network-policy`, only the metrics and webhook callers it names reach the pod at
//!   all.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt as _;

use super::Shutdown;

/// How long a client has to finish its TLS handshake, and to send a request's headers
/// (controller-runtime's ReadHeaderTimeout is 32 s; probes and scrapes need far less).
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a client has to send a request's body, from the end of its headers. The API
/// server sends a webhook call's body (at most a few MiB) at once; 5 s is ample on any network
/// that can carry the call within its own timeout (10 s by default).
pub(crate) const BODY_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How many connections an endpoint holds open, and for how long they may sit idle.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// Connections open at once, from every client together: each costs memory (and a file
    /// descriptor). More wait for a place (as many as this, at most), up to
    /// `header_read_timeout`, and are closed then.
    pub(crate) connections: usize,
    /// Connections open at once from one IP address, so that one client cannot take all
    /// `connections`. More from that address wait for a place as above.
    pub(crate) per_peer: usize,
    /// How long a client has to finish its TLS handshake, and to send a request's headers
    /// from when it connected or its previous request ended (an idle connection is closed
    /// then); also how long an HTTP/2 peer may stay silent before it is pinged, and take to
    /// answer; and how long a connection over the limits waits for a place.
    pub(crate) header_read_timeout: Duration,
    /// How long a client has to send a request's body, from the end of its headers: then the
    /// request fails and its connection is closed.
    pub(crate) body_read_timeout: Duration,
}

impl Limits {
    /// The probe and metrics endpoints'. The kubelet opens one connection per probe (HTTP/1.1,
    /// closed after the answer), so at most one per probe of the pod at once; Prometheus keeps
    /// one per target. 32 from one address leave them ample room, and take 32 addresses to
    /// fill an endpoint.
    pub(crate) const DEFAULT: Self = Self {
        connections: 1024,
        per_peer: 32,
        header_read_timeout: HEADER_READ_TIMEOUT,
        body_read_timeout: BODY_READ_TIMEOUT,
    };

    /// The webhook server's. Over HTTP/1.1 the API server opens one connection per call in
    /// flight (a busy one has hundreds of requests in flight), and several API servers may
    /// reach the webhooks from one address (through konnectivity, or a node's SNAT): a quarter
    /// of the endpoint, so that one client still cannot take all of it.
    pub(crate) const WEBHOOKS: Self = Self {
        per_peer: 256,
        ..Self::DEFAULT
    };
}

/// Serves `router` over HTTPS on `addr` until `shutdown` is triggered, with the PEM
/// certificate chain `cert` and its PEM `key`, as a manager serves its webhooks (HTTP/1.1,
/// their connection limits and timeouts): for a webhook server that a test starts for the API
/// server to call (memop-test's `https::serve_with_test_ca`). Returns the address it bound,
/// whose port is a free one when `addr`'s is 0.
pub async fn serve_https(
    addr: SocketAddr,
    router: Router,
    cert: &[u8],
    key: &[u8],
    shutdown: Shutdown,
) -> anyhow::Result<SocketAddr> {
    let tls = Arc::new(super::tls::Certificate::from_pem(cert, key)?).acceptor(false)?;
    let limits = Limits::WEBHOOKS;
    spawn_with("HTTPS", addr, router, Some(tls), false, limits, shutdown).await
}

/// `spawn_with` the `Limits::DEFAULT` limits.
pub(crate) async fn spawn(
    what: &'static str,
    addr: SocketAddr,
    router: Router,
    tls: Option<TlsAcceptor>,
    http2: bool,
    shutdown: Shutdown,
) -> anyhow::Result<SocketAddr> {
    spawn_with(what, addr, router, tls, http2, Limits::DEFAULT, shutdown).await
}

/// Binds `addr` now (so a port clash fails the start) and serves `router` until shutdown
/// stops the servers ([`Shutdown::servers_stop`]: under a manager, once its controllers
/// have drained), over TLS when `tls` is given, within `limits`. Returns the address bound.
pub(crate) async fn spawn_with(
    what: &'static str,
    addr: SocketAddr,
    router: Router,
    tls: Option<TlsAcceptor>,
    http2: bool,
    limits: Limits,
    shutdown: Shutdown,
) -> anyhow::Result<SocketAddr> {
    let listener = match TcpListener::bind(addr).await {
        // "Every interface" on a host without IPv6: IPv4 only.
        Err(_) if addr.ip().is_unspecified() && addr.is_ipv6() => {
            TcpListener::bind((Ipv4Addr::UNSPECIFIED, addr.port())).await
        }
        bound => bound,
    };
    let listener = listener.with_context(|| format!("binding the {what} endpoint to {addr}"))?;
    let bound = listener.local_addr().unwrap_or(addr);
    tracing::info!(addr = %bound, secure = tls.is_some(), "serving {what}");
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
            let router = router.clone();
            let tls = tls.clone();
            let open = open.clone();
            tokio::spawn(async move {
                let Some(_slot) = open.admit_within(peer, limits.header_read_timeout).await else {
                    tracing::debug!(%peer, "{what} endpoint is full, for that client or for all; closing a new connection");
                    return;
                };
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
    Ok(bound)
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
    let service = timed(router, activity.clone(), peer, limits);
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

/// The service of one connection from `peer`: `router`, with each request's body timed
/// ([`TimedBody`]), the connection closed after a request whose body came too late, each
/// request carrying the peer's address (axum's `ConnectInfo<SocketAddr>`), and `activity`
/// counting the requests in flight.
fn timed<B>(
    router: Router,
    activity: Arc<Activity>,
    peer: SocketAddr,
    limits: Limits,
) -> impl tower::Service<
    axum::http::Request<B>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = futures::future::BoxFuture<
        'static,
        Result<axum::response::Response, std::convert::Infallible>,
    >,
> + Clone
+ Send
where
    B: http_body::Body<Data = bytes::Bytes> + Unpin + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    tower::service_fn(move |request: axum::http::Request<B>| {
        let expired = Arc::new(AtomicBool::new(false));
        let mut request =
            request.map(|body| TimedBody::new(body, limits.body_read_timeout, expired.clone()));
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        let serving = activity.serving();
        let response = router.clone().oneshot(request);
        let answered: futures::future::BoxFuture<'static, _> = Box::pin(async move {
            let mut response = response.await;
            if expired.load(Ordering::SeqCst) {
                // Not left open to drain the rest of a trickled body.
                if let Ok(response) = &mut response {
                    (response.headers_mut()).insert(
                        http::header::CONNECTION,
                        http::HeaderValue::from_static("close"),
                    );
                }
            }
            drop(serving);
            response
        });
        answered
    })
}

/// The connections an endpoint has open, in all and per client address, and those waiting for
/// a place.
struct Open {
    limits: Limits,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    total: usize,
    /// Only addresses with a connection open: at most `limits.connections` of them.
    per_peer: HashMap<IpAddr, usize>,
    /// Connections waiting for a place, oldest first (some may have given up).
    waiting: VecDeque<Waiter>,
}

/// A connection waiting for a place: its client's address, and where to send the place.
struct Waiter {
    peer: IpAddr,
    place: oneshot::Sender<Slot>,
}

impl Counts {
    fn has_room(&self, limits: &Limits, peer: IpAddr) -> bool {
        let from_peer = self.per_peer.get(&peer).copied().unwrap_or(0);
        self.total < limits.connections && from_peer < limits.per_peer
    }

    fn take(&mut self, peer: IpAddr) {
        *self.per_peer.entry(peer).or_default() += 1;
        self.total += 1;
    }
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
    #[cfg(test)]
    fn admit(self: &Arc<Self>, peer: IpAddr) -> Option<Slot> {
        let mut counts = self.counts.lock().expect("connection counts lock");
        if !counts.has_room(&self.limits, peer) {
            return None;
        }
        counts.take(peer);
        Some(self.slot(peer))
    }

    /// A place for one more connection from `peer`, now or once one is freed for it within
    /// `wait` (see the module's documentation for which waiting connection gets it); `None`
    /// then, or at once when as many connections as the endpoint holds already wait.
    async fn admit_within(self: &Arc<Self>, peer: IpAddr, wait: Duration) -> Option<Slot> {
        let placed = {
            let mut counts = self.counts.lock().expect("connection counts lock");
            if counts.has_room(&self.limits, peer) {
                counts.take(peer);
                return Some(self.slot(peer));
            }
            counts.waiting.retain(|waiter| !waiter.place.is_closed());
            if counts.waiting.len() >= self.limits.connections {
                return None;
            }
            let (place, placed) = oneshot::channel();
            counts.waiting.push_back(Waiter { peer, place });
            placed
        };
        tokio::time::timeout(wait, placed).await.ok()?.ok()
    }

    fn slot(self: &Arc<Self>, peer: IpAddr) -> Slot {
        Slot {
            open: self.clone(),
            peer,
        }
    }
}

/// One open connection's place in [`Open`]: given back when dropped, to the waiting connection
/// whose client has the fewest open (the oldest among equals), if any waits.
struct Slot {
    open: Arc<Open>,
    peer: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let next = {
            let mut counts = self.open.counts.lock().expect("connection counts lock");
            counts.total -= 1;
            if let Some(from_peer) = counts.per_peer.get_mut(&self.peer) {
                *from_peer -= 1;
                if *from_peer == 0 {
                    counts.per_peer.remove(&self.peer);
                }
            }
            counts.waiting.retain(|waiter| !waiter.place.is_closed());
            let limits = self.open.limits;
            let fewest = (counts.waiting.iter().enumerate())
                .filter(|(_, waiter)| counts.has_room(&limits, waiter.peer))
                .min_by_key(|(at, waiter)| {
                    (counts.per_peer.get(&waiter.peer).copied().unwrap_or(0), *at)
                })
                .map(|(at, _)| at);
            fewest
                .and_then(|at| counts.waiting.remove(at))
                .inspect(|waiter| counts.take(waiter.peer))
        };
        // Sent with the lock released: a waiter that gave up meanwhile drops the place, which
        // passes it on in turn.
        if let Some(waiter) = next {
            let slot = self.open.slot(waiter.peer);
            let _ = waiter.place.send(slot);
        }
    }
}

/// A request's body that fails once `timeout` has passed since the request's headers, unless
/// it has all arrived; `expired` says so to the server, which then closes the connection.
struct TimedBody<B> {
    inner: B,
    deadline: Pin<Box<Sleep>>,
    timeout: Duration,
    expired: Arc<AtomicBool>,
}

impl<B> TimedBody<B> {
    fn new(inner: B, timeout: Duration, expired: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            deadline: Box::pin(tokio::time::sleep(timeout)),
            timeout,
            expired,
        }
    }
}

impl<B> http_body::Body for TimedBody<B>
where
    B: http_body::Body + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = B::Data;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            this.expired.store(true, Ordering::SeqCst);
            let message = format!("the request body did not arrive within {:?}", this.timeout);
            return Poll::Ready(Some(Err(message.into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
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
            body_read_timeout: BODY_READ_TIMEOUT,
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
        // The flooding address keeps only its own share open; the rest of its connections wait
        // for a place (as many as the endpoint holds), unread, and the next is closed at once.
        let closed = futures::future::join_all(
            flood
                .iter_mut()
                .map(|stream| closed(stream, Duration::from_secs(1))),
        )
        .await;
        assert!(closed.iter().all(|&closed| !closed), "{closed:?}");
        assert_eq!(
            probe([127, 0, 0, 2], server).await,
            None,
            "a connection over its limit, with the waiting line full, is closed"
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
            body_read_timeout: BODY_READ_TIMEOUT,
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

    /// Serves `/healthz` and `POST /echo` (which reads the body) on a free loopback port
    /// within `limits`, until the test ends.
    async fn echo(limits: Limits) -> SocketAddr {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|free| free.local_addr())
            .unwrap();
        let router = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route(
                "/echo",
                axum::routing::post(|body: String| async move { body }),
            );
        spawn_with(
            "webhooks",
            addr,
            router,
            None,
            false,
            limits,
            Shutdown::default(),
        )
        .await
        .unwrap();
        addr
    }

    #[tokio::test]
    #[cfg(target_os = "linux")]
    async fn a_burst_over_the_per_address_limit_waits_for_a_place_rather_than_being_closed() {
        let limits = Limits {
            connections: 16,
            per_peer: 2,
            header_read_timeout: Duration::from_secs(60),
            body_read_timeout: BODY_READ_TIMEOUT,
        };
        let server = echo(limits).await;
        // Two calls in flight from the API servers' one address (their connections open)...
        let mut held = vec![
            connect([127, 0, 0, 2], server).await,
            connect([127, 0, 0, 2], server).await,
        ];
        // ...and a third, which waits until one of them ends, then is served.
        let third = tokio::spawn(probe([127, 0, 0, 2], server));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!third.is_finished(), "waiting, neither served nor closed");
        held.pop();
        let answer = tokio::time::timeout(Duration::from_secs(5), third).await;
        assert_eq!(answer.unwrap().unwrap(), Some(200));
        drop(held);
    }

    #[tokio::test]
    #[cfg(target_os = "linux")]
    async fn a_trickled_body_is_cut_off_and_its_place_given_to_the_next_caller() {
        let limits = Limits {
            connections: 16,
            per_peer: 1,
            header_read_timeout: Duration::from_secs(60),
            body_read_timeout: Duration::from_millis(300),
        };
        let server = echo(limits).await;
        // A client that sends 1 byte of a 100-byte body, and then nothing.
        let mut trickling = connect([127, 0, 0, 2], server).await;
        let request = "POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\nx";
        trickling.write_all(request.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The next caller from that address waits for its place, and gets it once the body
        // is late: the trickling request is answered with an error and its connection closed.
        let answer = tokio::time::timeout(Duration::from_secs(5), probe([127, 0, 0, 2], server));
        assert_eq!(answer.await, Ok(Some(200)));
        let mut response = String::new();
        let read = tokio::time::timeout(
            Duration::from_secs(5),
            trickling.read_to_string(&mut response),
        );
        assert!(read.await.is_ok(), "the trickling connection is closed");
        assert!(response.starts_with("HTTP/1.1 400"), "{response}");
        assert!(response.contains("connection: close"), "{response}");
    }

    #[tokio::test]
    async fn a_freed_place_goes_to_the_waiting_client_with_the_fewest_connections() {
        let open = Arc::new(Open::new(Limits {
            connections: 4,
            per_peer: 4,
            header_read_timeout: HEADER_READ_TIMEOUT,
            body_read_timeout: BODY_READ_TIMEOUT,
        }));
        let (many, api_server): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let mut held: Vec<Slot> = (0..4).map(|_| open.admit(many).unwrap()).collect();
        // The address holding every place asks again first, then the API server's.
        let again = tokio::spawn({
            let open = open.clone();
            async move { open.admit_within(many, Duration::from_secs(5)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let api = tokio::spawn({
            let open = open.clone();
            async move { open.admit_within(api_server, Duration::from_secs(5)).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        held.pop();
        let placed = tokio::time::timeout(Duration::from_secs(1), api).await;
        let placed = placed
            .expect("the API server's connection is placed")
            .unwrap();
        assert_eq!(placed.map(|slot| slot.peer), Some(api_server));
        assert!(!again.is_finished(), "the other still waits");
        held.pop();
        let again = tokio::time::timeout(Duration::from_secs(1), again).await;
        assert_eq!(again.unwrap().unwrap().map(|slot| slot.peer), Some(many));
        // Nobody waits, nothing leaks.
        drop(held);
        let counts = open.counts.lock().unwrap();
        assert_eq!((counts.total, counts.per_peer.len()), (0, 0));
    }
}
