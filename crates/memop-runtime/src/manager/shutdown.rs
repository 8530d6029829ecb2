//! One shutdown signal shared by everything the manager runs.
//!
//! The HTTP servers (webhooks, probes, metrics) stop last, as controller-runtime's manager
//! stops its webhooks and HTTP servers last: under a [`Manager`](super::Manager), they keep
//! accepting connections while the controllers drain and the deferred cleanups run, so that
//! the API server's webhook calls, which kube-proxy still routes to a terminating pod for a
//! while, are answered rather than refused.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::watch;

/// Cloneable; [`Shutdown::trigger`] on any clone wakes [`Shutdown::wait`] on all of them.
#[derive(Clone)]
pub struct Shutdown {
    sender: watch::Sender<bool>,
    /// What [`Shutdown::run_deferred`] runs, in the order it was deferred.
    deferred: Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
    /// Whether the HTTP servers are to stop now.
    servers: watch::Sender<bool>,
    /// Whether the servers wait for [`Shutdown::release_servers`] rather than for the trigger.
    held: Arc<AtomicBool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self {
            sender: watch::channel(false).0,
            deferred: Arc::default(),
            servers: watch::channel(false).0,
            held: Arc::default(),
        }
    }
}

impl Shutdown {
    /// Signals shutdown to everything waiting on it; the HTTP servers too, unless a
    /// [`Manager`](super::Manager) holds them until it has stopped everything else.
    pub fn trigger(&self) {
        self.sender.send_replace(true);
        if !self.held.load(Ordering::SeqCst) {
            self.servers.send_replace(true);
        }
    }

    /// Resolves once the HTTP servers are to stop accepting connections: when shutdown is
    /// triggered, or, for a [`Manager`](super::Manager)'s, once its `run` has stopped the
    /// controllers and run what was deferred.
    pub(crate) async fn servers_stop(&self) {
        let mut receiver = self.servers.subscribe();
        let _ = receiver.wait_for(|&stop| stop).await;
    }

    /// Keeps the HTTP servers serving after the trigger, until [`Shutdown::release_servers`]:
    /// what the manager does, which releases them once everything else has stopped.
    pub(crate) fn hold_servers(&self) {
        self.held.store(true, Ordering::SeqCst);
    }

    /// Lets the HTTP servers stop (see [`Shutdown::hold_servers`]).
    pub(crate) fn release_servers(&self) {
        self.servers.send_replace(true);
    }

    /// Resolves once shutdown was triggered (at once if it already was).
    pub async fn wait(&self) {
        let mut receiver = self.sender.subscribe();
        // An error means every sender is gone, which cannot happen while `self` lives.
        let _ = receiver.wait_for(|&down| down).await;
    }

    /// Has [`Shutdown::run_deferred`] run `cleanup` once everything has stopped: to undo
    /// what a task changed in the cluster for as long as it runs (`make run`'s webhooks).
    pub(crate) fn defer(&self, cleanup: impl Future<Output = ()> + Send + 'static) {
        self.deferred
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(Box::pin(cleanup));
    }

    /// Runs what was deferred, one after the other, each within `timeout` (a cluster that
    /// does not answer must not keep the process from exiting); what times out is logged.
    pub(crate) async fn run_deferred(&self, timeout: Duration) {
        let deferred = std::mem::take(
            &mut *self
                .deferred
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        for cleanup in deferred {
            if tokio::time::timeout(timeout, cleanup).await.is_err() {
                tracing::warn!(?timeout, "a cleanup at shutdown did not finish in time");
            }
        }
    }
}

/// Triggers `shutdown` on SIGTERM (what Kubernetes sends) or SIGINT (Ctrl-C); a second one
/// exits at once (with status 1), as controller-runtime's signal handler does.
pub fn listen_for_signals(shutdown: Shutdown) {
    tokio::spawn(async move {
        #[cfg(unix)]
        let sigterm =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        #[cfg(not(unix))]
        let sigterm: Option<()> = None;
        let signals = futures::stream::unfold(sigterm, |mut sigterm| async move {
            let terminate = async {
                #[cfg(unix)]
                if let Some(sigterm) = &mut sigterm {
                    sigterm.recv().await;
                    return;
                }
                std::future::pending::<()>().await;
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = terminate => {}
            }
            Some(((), sigterm))
        });
        on_signals(Box::pin(signals), shutdown, || std::process::exit(1)).await;
    });
}

/// Triggers `shutdown` at the first of `signals`, and calls `exit` at the second.
async fn on_signals(
    mut signals: impl futures::Stream<Item = ()> + Unpin,
    shutdown: Shutdown,
    exit: impl FnOnce(),
) {
    use futures::StreamExt as _;
    if signals.next().await.is_none() {
        return;
    }
    tracing::info!(
        "shutdown signal received; stopping controllers (a second signal exits at once)"
    );
    shutdown.trigger();
    if signals.next().await.is_none() {
        return;
    }
    tracing::warn!("second shutdown signal received; exiting at once");
    exit();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wait_resolves_after_trigger_on_any_clone() {
        let shutdown = Shutdown::default();
        let waiter = tokio::spawn({
            let s = shutdown.clone();
            async move { s.wait().await }
        });
        shutdown.clone().trigger();
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        // Already triggered: resolves at once.
        tokio::time::timeout(std::time::Duration::from_secs(5), shutdown.wait())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_second_signal_exits_at_once() {
        let shutdown = Shutdown::default();
        let (signal, signals) = futures::channel::mpsc::unbounded::<()>();
        let (exited, exit) = tokio::sync::oneshot::channel::<()>();
        let listening = tokio::spawn(on_signals(signals, shutdown.clone(), move || {
            let _ = exited.send(());
        }));
        signal.unbounded_send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), shutdown.wait())
            .await
            .expect("the first signal triggers shutdown");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!listening.is_finished(), "no exit at the first signal");
        signal.unbounded_send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), exit)
            .await
            .expect("the second signal exits")
            .unwrap();
    }

    #[tokio::test]
    async fn deferred_cleanups_run_once_in_order_and_a_stuck_one_is_cut_short() {
        let shutdown = Shutdown::default();
        let ran = Arc::new(Mutex::new(Vec::new()));
        for step in ["first", "second"] {
            let ran = ran.clone();
            shutdown
                .clone()
                .defer(async move { ran.lock().unwrap().push(step) });
        }
        shutdown.defer(std::future::pending());
        let timeout = Duration::from_millis(50);
        tokio::time::timeout(Duration::from_secs(5), shutdown.run_deferred(timeout))
            .await
            .unwrap();
        shutdown.run_deferred(timeout).await;
        assert_eq!(*ran.lock().unwrap(), ["first", "second"]);
    }

    /// Serves `/healthz` on a free loopback port until `shutdown` stops the servers.
    async fn probes(shutdown: &Shutdown) -> std::net::SocketAddr {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|free| free.local_addr())
            .unwrap();
        let router = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok" }));
        super::super::http::spawn("probes", addr, router, None, false, shutdown.clone())
            .await
            .unwrap();
        addr
    }

    /// The status of `GET /healthz` on a new connection; `None` when refused.
    async fn probe(server: std::net::SocketAddr) -> Option<u16> {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut stream = tokio::net::TcpStream::connect(server).await.ok()?;
        let request = "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await.ok()?;
        response.split_whitespace().nth(1)?.parse().ok()
    }

    /// Whether `server` refuses new connections within 5 seconds.
    async fn refuses(server: std::net::SocketAddr) -> bool {
        for _ in 0..50 {
            if probe(server).await.is_none() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    #[tokio::test]
    async fn servers_stop_on_the_trigger_unless_held_until_released() {
        let shutdown = Shutdown::default();
        let server = probes(&shutdown).await;
        assert_eq!(probe(server).await, Some(200));
        shutdown.trigger();
        assert!(refuses(server).await, "not held: stops at the trigger");

        let shutdown = Shutdown::default();
        shutdown.hold_servers();
        let server = probes(&shutdown).await;
        shutdown.trigger();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(probe(server).await, Some(200), "held: still serving");
        shutdown.release_servers();
        assert!(refuses(server).await, "released");
    }

    #[tokio::test]
    async fn a_managers_servers_answer_until_its_controllers_have_drained() {
        use super::super::{Manager, Shared};
        // An API server that knows nothing: the manager asks it for nothing here.
        let service = tower::service_fn(|_: http::Request<kube::client::Body>| async {
            let body = kube::client::Body::from(b"{}".to_vec());
            Ok::<_, std::convert::Infallible>(
                http::Response::builder().status(404).body(body).unwrap(),
            )
        });
        let client = kube::Client::new(service, "default");
        let operator = crate::Operator {
            name: "test",
            domain: "example.com",
        };
        let shared = Shared::new(&operator, client, None);
        // What Manager::start_with_version does.
        shared.shutdown.hold_servers();
        let server = probes(&shared.shutdown).await;
        let drain = Duration::from_secs(2);
        let (drained_tx, drained) = tokio::sync::oneshot::channel();
        let mut manager = Manager {
            shared: shared.clone(),
            leader_election: None,
            sharding: None,
            controllers: Vec::new(),
            cache_sync_timeout: Duration::from_secs(60),
            graceful_shutdown_timeout: Duration::from_secs(30),
        };
        // A controller that takes `drain` to finish what is in flight once shutdown begins.
        manager.register(move |shared: Shared| {
            let run = async move {
                shared.readiness.synced("slow");
                shared.shutdown.wait().await;
                tokio::time::sleep(drain).await;
                let _ = drained_tx.send(());
                Ok(())
            };
            ("slow", run)
        });
        let run = tokio::spawn(async move { manager.run().await });
        while shared.readiness.check().is_some() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        shared.shutdown.trigger();
        // Throughout the drain, new connections are answered.
        let draining = tokio::time::Instant::now();
        while draining.elapsed() < drain - Duration::from_millis(500) {
            assert_eq!(probe(server).await, Some(200), "during the drain");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        drained.await.unwrap();
        run.await.unwrap().unwrap();
        assert!(refuses(server).await, "stopped once the manager has");
    }
}
