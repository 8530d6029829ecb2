//! The watchdog of the manager's watches: a controller's own watch (`controller::Builder`) and a
//! cache of owned objects (`controller::Owned`) count their errors in the metrics, and a watch
//! the API server stops answering (a half-open connection: here a proxy that stops forwarding
//! without closing) makes the manager unready, naming it, until it answers again (that one on
//! the real control plane, skipped without `KUBEBUILDER_ASSETS`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::Operator;
use crate::controller::{self, Builder, Owned, Reconciler, Report};
use crate::manager::{Readiness, Shared};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Config;
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use memop_test::{Backend, TestEnv, Verb, eventually};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

const OPERATOR: Operator = Operator {
    name: "test-operator",
    domain: "example.com",
};

/// The label of the objects the tests' caches of owned objects hold.
const OWNED: &str = "app.kubernetes.io/managed-by=watchdog-test";
/// How long a test waits for what the manager does in the background.
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn refused_lists_are_counted_per_watch() {
    let env = TestEnv::in_memory();
    // The role does not allow listing either kind, for now.
    env.requests.fail_next(Verb::List, "configmaps", 403, 2);
    env.requests.fail_next(Verb::List, "secrets", 403, 3);
    let shared = Shared::new(&OPERATOR, env.operator.clone(), None);
    let _owned = Owned::<Secret>::watch(
        shared.namespaced_api(),
        watcher::Config::default(),
        &shared,
        "secrets",
    );
    let running = tokio::spawn(run_controller(shared.clone()));

    // Both watchers back off and list again, and then get through.
    eventually("both caches synced", WAIT, || async {
        shared.readiness().check().is_none()
    })
    .await;
    let metrics = shared.metrics().encode();
    for counted in [
        r#"memop_watch_errors_total{watch="configmaps"} 2"#,
        r#"memop_watch_errors_total{watch="secrets"} 3"#,
    ] {
        assert!(metrics.contains(counted), "{counted} in\n{metrics}");
    }
    running.abort();
}

#[tokio::test]
async fn a_watch_that_stops_answering_makes_the_manager_unready_until_it_answers() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let Backend::Real { plane, kubeconfig } = &env.backend else {
        unreachable!("TestEnv::real_for is the real control plane")
    };
    let upstream: SocketAddr = plane
        .url
        .trim_start_matches("https://")
        .parse()
        .expect("the API server's address");
    let proxy = Proxy::start(upstream).await;
    // The operator's client, through the proxy.
    let mut config = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(kubeconfig).expect("a kubeconfig"),
        &KubeConfigOptions::default(),
    )
    .await
    .expect("a client configuration");
    config.cluster_url = proxy.url.parse().expect("the proxy's URL");
    let client = kube::Client::try_from(config).expect("a client");
    let shared = Shared::new(&OPERATOR, client, Some(env.namespace.clone()))
        .with_readiness(Readiness::with_silence_limit(Duration::from_secs(3)));
    let _owned = Owned::<ConfigMap>::watch(
        shared.namespaced_api(),
        watcher::Config::default().labels(OWNED),
        &shared,
        "owned configmaps",
    );
    let running = tokio::spawn(run_controller(shared.clone()));
    // Something to watch: a ConfigMap of both watches, changed every 200 ms, not through the
    // proxy. The API server's bookmarks come only every minute.
    let changing = tokio::spawn({
        let configmaps = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
        async move {
            for change in 0_u64.. {
                let object = json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": "changing",
                        "labels": { "app.kubernetes.io/managed-by": "watchdog-test" },
                    },
                    "data": { "change": change.to_string() },
                });
                let params = PatchParams::apply("watchdog-test");
                configmaps
                    .patch("changing", &params, &Patch::Apply(&object))
                    .await
                    .expect("changing the ConfigMap");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    });
    let readiness = shared.readiness();
    eventually("ready once synced", WAIT, || async {
        readiness.check().is_none()
    })
    .await;

    proxy.forward(false);
    eventually("unready, naming both silent watches", WAIT, || async {
        readiness.check().is_some_and(|why| {
            why.contains("no answer") && why.contains("configmaps, owned configmaps")
        })
    })
    .await;

    proxy.forward(true);
    eventually("ready again once the watches answer", WAIT, || async {
        readiness.check().is_none()
    })
    .await;
    changing.abort();
    running.abort();
}

/// A controller of the ConfigMaps of `shared`'s namespace (`configmaps`) that does nothing.
async fn run_controller(shared: Shared) -> anyhow::Result<()> {
    Builder::new("configmaps", &shared)
        .watching(watcher::Config::default())
        .build(Idle)
        .run()
        .await
}

/// A reconciler that does nothing.
struct Idle;

impl Reconciler for Idle {
    type Object = ConfigMap;

    fn conditions(_: &ConfigMap) -> &[Condition] {
        &[]
    }

    async fn apply(&self, _: &ConfigMap, _: &mut Report) -> controller::Result<Action> {
        Ok(Action::await_change())
    }
}

/// A TCP proxy on 127.0.0.1 to `upstream` that can stop forwarding, in both directions and on
/// every connection, without closing anything: what a half-open connection looks like from
/// the client.
struct Proxy {
    /// `https://127.0.0.1:<port>`.
    url: String,
    forwarding: watch::Sender<bool>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let port = listener.local_addr().expect("its address").port();
        let forwarding = watch::Sender::new(true);
        let open = forwarding.subscribe();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let open = open.clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (from_client, to_client) = client.into_split();
                    let (from_server, to_server) = server.into_split();
                    tokio::join!(
                        pump(from_client, to_server, open.clone()),
                        pump(from_server, to_client, open),
                    );
                });
            }
        });
        Self {
            url: format!("https://127.0.0.1:{port}"),
            forwarding,
        }
    }

    /// Forwards bytes again, those held meanwhile first; or stops.
    fn forward(&self, forward: bool) {
        self.forwarding.send_replace(forward);
    }
}

/// Copies `from` to `to`, holding what it read while `open` says not to forward.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, mut open: watch::Receiver<bool>) {
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        if open.wait_for(|open| *open).await.is_err()
            || to.write_all(&buffer[..read]).await.is_err()
        {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// The fixture project of this crate's real-control-plane tests, whose role lets the operator
/// list and watch ConfigMaps.
fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixture")
}
