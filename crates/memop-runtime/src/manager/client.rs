//! The manager's Kubernetes client: kube's, with what a long-running operator needs on top.
//!
//! - A User-Agent naming the operator and its version (`<name>/<version> memop-runtime/<its
//!   version>`), so that its load can be told apart in the API server's audit log and its
//!   priority and fairness metrics (kube sends none).
//! - TCP keepalive ([`KEEPALIVE`]): a connection whose peer is gone (a node or load balancer
//!   that forgot it) fails within about a minute instead of waiting for an answer for ever.
//! - A read timeout ([`READ_TIMEOUT`]) on every connection: a request whose answer stops
//!   arriving (a LIST, the opening of a WATCH) fails instead of hanging for ever. It is longer
//!   than the watches' own (kube-runtime's watcher asks the API server to end a watch after
//!   290 s and gives up on a silent stream after 295 s), so that a quiet watch is ended by
//!   them, not cut. It counts from the last read or, once a request is written, from then, so
//!   that the time a pooled connection sat idle does not count (kube's
//!   `reset_reader_on_write`).
//!
//! The rest is kube's default stack (`ClientBuilder::try_from`): the cluster URL, TLS (the CA
//! file re-read when rotated), authentication (tokens re-read when rotated), the configured
//! headers, and retries of 429, 503 and 504 answers; but for its per-request `debug` span. kube's
//! default connector has no keepalive and cannot be given one, hence this stack.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use anyhow::Context as _;
use http::header::{HeaderValue, USER_AGENT};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kube::client::ConfigExt as _;
use kube::client::retry::RetryPolicy;
use kube::{Client, Config};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tower::{BoxError, ServiceBuilder};

use super::Metrics;
use crate::Operator;

/// How long an established connection may stay silent while an answer is awaited.
pub const READ_TIMEOUT: Duration = Duration::from_secs(300);
/// TCP keepalive: the first probe after this long without traffic, then one every
/// [`KEEPALIVE_INTERVAL`], [`KEEPALIVE_RETRIES`] in all before the connection fails (as Go's
/// dialer, which client-go uses, probes after 15 to 30 s).
pub const KEEPALIVE: Duration = Duration::from_secs(30);
/// See [`KEEPALIVE`].
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// See [`KEEPALIVE`].
pub const KEEPALIVE_RETRIES: u32 = 3;

/// The User-Agent of `operator`'s requests: `<name>/<version> memop-runtime/<version>`.
pub fn user_agent(operator: &Operator, version: &str) -> String {
    let runtime = concat!("memop-runtime/", env!("CARGO_PKG_VERSION"));
    format!("{}/{version} {runtime}", operator.name)
}

/// A client for `config`, sending `user_agent`, with keepalive and `read_timeout` on its
/// connections, whose requests `metrics` counts.
pub fn build(
    mut config: Config,
    user_agent: &str,
    read_timeout: Duration,
    metrics: &Metrics,
) -> anyhow::Result<Client> {
    let value =
        HeaderValue::from_str(user_agent).with_context(|| format!("User-Agent {user_agent:?}"))?;
    config.headers.retain(|(name, _)| name != USER_AGENT);
    config.headers.push((USER_AGENT, value));
    let host = (config.cluster_url.authority())
        .map(ToString::to_string)
        .unwrap_or_default();

    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);
    http.set_keepalive(Some(KEEPALIVE));
    http.set_keepalive_interval(Some(KEEPALIVE_INTERVAL));
    http.set_keepalive_retries(Some(KEEPALIVE_RETRIES));
    http.set_nodelay(true);
    let connector = Timed {
        http,
        read_timeout,
        write_timeout: config.write_timeout,
    };
    let https = config
        .rustls_https_connector_with_connector(connector)
        .context("the Kubernetes client's TLS")?;
    let transport = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(https);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| tower::retry::RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(
            config
                .auth_layer()
                .context("the Kubernetes client's credentials")?,
        )
        .layer(
            config
                .extra_headers_layer()
                .context("the Kubernetes client's headers")?,
        )
        // Below the retries: each attempt counts, as client-go counts them.
        .layer(metrics.count_requests(host))
        .map_err(BoxError::from)
        .service(transport);
    Ok(Client::new(service, config.default_namespace))
}

/// Connects as kube's connector does, and gives each connection a read and write timeout.
#[derive(Clone)]
struct Timed {
    http: HttpConnector,
    read_timeout: Duration,
    write_timeout: Option<Duration>,
}

impl tower::Service<http::Uri> for Timed {
    type Response = TokioIo<TimedStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let connecting = self.http.call(uri);
        let (read_timeout, write_timeout) = (self.read_timeout, self.write_timeout);
        Box::pin(async move {
            let stream = connecting.await?.into_inner();
            Ok(TokioIo::new(TimedStream {
                stream,
                read_timeout,
                write_timeout,
                reading: None,
                writing: None,
            }))
        })
    }
}

/// A TCP connection whose reads fail after `read_timeout` without data, counted from the last
/// read or write (whichever is later), and whose writes fail after `write_timeout` without
/// progress.
struct TimedStream {
    stream: TcpStream,
    read_timeout: Duration,
    write_timeout: Option<Duration>,
    reading: Option<Pin<Box<Sleep>>>,
    writing: Option<Pin<Box<Sleep>>>,
}

fn timed_out(what: &str, after: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("no {what} in {after:?} on the connection to the API server"),
    )
}

impl AsyncRead for TimedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(result) => {
                this.reading = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let timeout = this.read_timeout;
                let deadline = this
                    .reading
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                ready!(deadline.as_mut().poll(cx));
                this.reading = None;
                Poll::Ready(Err(timed_out("answer", timeout)))
            }
        }
    }
}

impl AsyncWrite for TimedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.stream).poll_write(cx, buf) {
            Poll::Ready(result) => {
                this.writing = None;
                // A request went out: its answer has the whole read timeout.
                if let Some(reading) = &mut this.reading {
                    reading.as_mut().reset(Instant::now() + this.read_timeout);
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                let Some(timeout) = this.write_timeout else {
                    return Poll::Pending;
                };
                let deadline = this
                    .writing
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                ready!(deadline.as_mut().poll(cx));
                this.writing = None;
                Poll::Ready(Err(timed_out("progress writing", timeout)))
            }
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let result = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        if result.is_ready() {
            this.writing = None;
            if let Some(reading) = &mut this.reading {
                reading.as_mut().reset(Instant::now() + this.read_timeout);
            }
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

impl Connection for TimedStream {
    fn connected(&self) -> Connected {
        self.stream.connected()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    const OPERATOR: Operator = Operator {
        name: "memcached-operator",
        domain: "example.com",
    };

    #[test]
    fn the_user_agent_names_the_operator_its_version_and_the_runtime() {
        let runtime = env!("CARGO_PKG_VERSION");
        assert_eq!(
            user_agent(&OPERATOR, "0.1.0"),
            format!("memcached-operator/0.1.0 memop-runtime/{runtime}")
        );
    }

    /// A server that reads each request's head, keeps it, and answers a ConfigMap (`answer`) or
    /// nothing at all (a half-open connection, as far as the client can tell).
    async fn server(answer: bool) -> (http::Uri, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap())
            .parse()
            .unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0; 4096];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    seen.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&head).into_owned());
                    if !answer {
                        // Never answers, never closes.
                        std::future::pending::<()>().await;
                    }
                    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}"#;
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(response.as_bytes()).await;
                    std::future::pending::<()>().await;
                });
            }
        });
        (url, heads)
    }

    #[tokio::test]
    async fn every_request_names_the_operator_in_its_user_agent() {
        let (url, heads) = server(true).await;
        let agent = user_agent(&OPERATOR, "0.1.0");
        let client = build(Config::new(url), &agent, READ_TIMEOUT, &Metrics::default()).unwrap();
        let configmaps = Api::<ConfigMap>::namespaced(client, "default");
        configmaps.get("c").await.unwrap();
        let heads = heads.lock().unwrap().clone();
        assert_eq!(heads.len(), 1);
        let header = format!("user-agent: {agent}\r\n");
        assert!(
            heads[0]
                .to_ascii_lowercase()
                .contains(&header.to_ascii_lowercase()),
            "{}",
            heads[0]
        );
    }

    /// The kernel's view of the client's connections to `port`: the timer each has running
    /// (`/proc/net/tcp`'s `tr`: 0 none, 1 retransmission, 2 keepalive).
    #[cfg(target_os = "linux")]
    fn timers_of_connections_to(port: u16) -> Vec<String> {
        let table = std::fs::read_to_string("/proc/self/net/tcp").unwrap();
        let remote = format!(":{port:04X}");
        (table.lines().skip(1))
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .filter(|fields| fields[2].ends_with(&remote) && fields[3] == "01")
            .map(|fields| fields[5].split(':').next().unwrap().to_string())
            .collect()
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn connections_have_tcp_keepalive() {
        let (url, _) = server(true).await;
        let port = url.port_u16().unwrap();
        let client = build(Config::new(url), "test", READ_TIMEOUT, &Metrics::default()).unwrap();
        let configmaps = Api::<ConfigMap>::namespaced(client, "default");
        configmaps.get("c").await.unwrap();
        // The connection is idle in the pool: its keepalive timer runs.
        assert_eq!(timers_of_connections_to(port), ["02"]);
    }

    #[tokio::test]
    async fn a_request_without_an_answer_fails_after_the_read_timeout() {
        let (url, heads) = server(false).await;
        let timeout = Duration::from_millis(500);
        let client = build(Config::new(url), "test", timeout, &Metrics::default()).unwrap();
        let configmaps = Api::<ConfigMap>::namespaced(client, "default");
        let started = std::time::Instant::now();
        let outcome = tokio::time::timeout(Duration::from_secs(20), configmaps.get("c")).await;
        let error = outcome.expect("the request hung").unwrap_err();
        assert!(started.elapsed() >= timeout, "{error}");
        assert!(!heads.lock().unwrap().is_empty(), "the request was sent");
    }
}
