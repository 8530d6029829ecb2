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

//! The manager binary end to end on the real control plane (skipped without
//! `KUBEBUILDER_ASSETS`): started as `make run` would start it, but with the kubeconfig of the
//! operator's own ServiceAccount and leader election on. It must answer its probes, serve
//! metrics over HTTPS to metrics readers only, reconcile the samples of `config/samples`, hold the Lease, and on SIGTERM exit
//! within the pod's grace period, releasing the Lease for the next leader. It must also stop at
//! once when another replica takes the Lease, fail visibly when its caches cannot sync, stop on
//! SIGTERM even then, and not let idle connections tie up its probes.

mod support;

use std::io::Read;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use support::envtest::{apply, free_port, http_get};
use support::https::{Trust, https_get, write_serving_certificate};
use support::{Backend, TestEnv};

/// The manager's lease holder identity (in a pod, the pod's name).
const IDENTITY: &str = "manager-under-test";
/// The manager pod's termination grace period (config/manager/manager.yaml).
const GRACE_PERIOD: Duration = Duration::from_secs(10);
/// One manager at a time: a manager watching all namespaces would reconcile the objects of
/// another test's namespace too.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn the_manager_leads_reconciles_and_stops_on_sigterm() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let manager = Manager::start(&env, &kubeconfig(&env), &["--leader-elect"]);
    let reader = env
        .service_account_token("scraper", Some("metrics-reader"))
        .await;
    eventually("/healthz", || async {
        manager.status("/healthz") == Some(200)
    })
    .await;
    eventually("/readyz", || async {
        manager.status("/readyz") == Some(200)
    })
    .await;
    // (A standby is ready too: /readyz does not wait for the Lease.)
    eventually("the Lease held", || async {
        holder(&env).await.as_deref() == Some(IDENTITY)
    })
    .await;
    // Written as a field manager of this replica's own, so that two standbys racing for a free
    // Lease cannot both win.
    let lease = Api::<Lease>::namespaced(env.admin.clone(), &env.namespace);
    let lease = lease.get(LEASE).await.unwrap();
    let managers: Vec<_> = lease
        .managed_fields()
        .iter()
        .filter_map(|f| f.manager.clone())
        .collect();
    assert!(
        managers.iter().all(|m| m.ends_with(IDENTITY)),
        "{managers:?}"
    );

    // Every sample reconciles: the manager counts each successful reconcile.
    let samples = samples(&env.namespace);
    for sample in &samples {
        apply(&env.admin, sample).await;
    }
    let kinds: std::collections::BTreeSet<_> =
        samples.iter().filter_map(|s| s["kind"].as_str()).collect();
    eventually("a successful reconcile of every sample's kind", || async {
        manager.reconciled_controllers(&reader).await >= kinds.len()
    })
    .await;

    let (exited, took) = manager.terminate().await;
    println!("stopped {took:?} after SIGTERM");
    assert!(exited.success(), "{exited}");
    assert_ne!(
        holder(&env).await.as_deref(),
        Some(IDENTITY),
        "the Lease was released"
    );
}

#[tokio::test]
async fn the_manager_stops_at_once_when_another_replica_takes_the_lease() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let mut manager = Manager::start(&env, &kubeconfig(&env), &["--leader-elect"]);
    eventually("the Lease held", || async {
        holder(&env).await.as_deref() == Some(IDENTITY)
    })
    .await;
    // Another replica holds it now (as after a network partition that outlasted the lease).
    let now = serde_json::to_value(MicroTime(Timestamp::now())).unwrap();
    let usurper = json!({ "spec": { "holderIdentity": "another-replica", "renewTime": now, "acquireTime": now } });
    Api::<Lease>::namespaced(env.admin.clone(), &env.namespace)
        .patch(LEASE, &PatchParams::default(), &Patch::Merge(usurper))
        .await
        .unwrap();
    let started = Instant::now();
    let exited = manager.wait(Duration::from_secs(15)).await;
    println!("exited {:?} after losing the lease", started.elapsed());
    assert!(
        !exited.success(),
        "losing leadership is a failure: {exited}"
    );
    assert_eq!(
        holder(&env).await.as_deref(),
        Some("another-replica"),
        "the Lease was left alone"
    );
}

#[tokio::test]
async fn a_manager_whose_caches_cannot_sync_fails_visibly_and_stops_on_sigterm() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    if samples(&env.namespace).is_empty() {
        return; // no controller yet, so no cache to sync
    }
    // A ServiceAccount with no rights: the controllers can list nothing.
    let nobody = env.kubeconfig_without_rights("nobody").await;

    let manager = Manager::start(&env, &nobody, &["--cache-sync-timeout=5m"]);
    eventually("/healthz", || async {
        manager.status("/healthz") == Some(200)
    })
    .await;
    assert_eq!(
        manager.status("/readyz"),
        Some(503),
        "not ready before its caches sync"
    );
    // Without the rights of config/rbac/metrics_auth_role.yaml, the manager cannot review
    // even a metrics reader's token.
    let reader = env
        .service_account_token("scraper", Some("metrics-reader"))
        .await;
    eventually("the metrics endpoint", || async {
        manager.scrape(None).await.is_ok()
    })
    .await;
    assert_eq!(
        manager.scrape(Some(&reader)).await,
        Ok((500, "Authentication failed\n".to_string())),
        "the TokenReview is forbidden"
    );
    let (exited, took) = manager.terminate().await;
    println!("stopped {took:?} after SIGTERM, caches never synced");
    assert!(exited.success(), "{exited}");
    // Well below the 8 s a drain may take: nothing was in flight.
    assert!(took < Duration::from_secs(6), "nothing to drain: {took:?}");

    let mut manager = Manager::start(&env, &nobody, &["--cache-sync-timeout=3s"]);
    let exited = manager.wait(Duration::from_secs(10)).await;
    assert!(
        !exited.success(),
        "a cache that never syncs fails the manager: {exited}"
    );
}

#[tokio::test]
async fn idle_connections_neither_starve_the_probes_nor_stay_open() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let manager = Manager::start(&env, &kubeconfig(&env), &[]);
    eventually("/healthz", || async {
        manager.status("/healthz") == Some(200)
    })
    .await;
    // Connections that never send a request.
    let mut idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(("127.0.0.1", manager.probes)).unwrap())
        .collect();
    assert_eq!(
        manager.status("/healthz"),
        Some(200),
        "the probes still answer"
    );
    // After the header read timeout the server closes them: a read sees the end.
    tokio::time::sleep(Duration::from_secs(7)).await;
    for stream in idle.iter_mut().take(10) {
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut rest = Vec::new();
        let read = stream.read_to_end(&mut rest);
        assert!(read.is_ok(), "closed by the server: {read:?}");
    }
    manager.terminate().await;
}

#[tokio::test]
async fn metrics_are_served_over_https_to_metrics_readers_only() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let manager = Manager::start(&env, &kubeconfig(&env), &["--leader-elect"]);
    let reader = env
        .service_account_token("scraper", Some("metrics-reader"))
        .await;
    let stranger = env.service_account_token("stranger", None).await;
    eventually("the Lease held", || async {
        holder(&env).await.as_deref() == Some(IDENTITY)
    })
    .await;

    assert_eq!(
        manager.scrape(None).await,
        Ok((401, "Unauthorized\n".to_string()))
    );
    assert_eq!(
        manager.scrape(Some("not-a-token")).await,
        Ok((401, "Unauthorized\n".to_string()))
    );
    let denied = format!(
        "Authorization denied for user system:serviceaccount:{}:stranger\n",
        env.namespace
    );
    assert_eq!(manager.scrape(Some(&stranger)).await, Ok((403, denied)));
    assert!(
        http_get(manager.metrics, "/metrics").is_none_or(|(status, _)| status == 400),
        "no metrics over plain HTTP"
    );

    // (The reconcile counts show once something is reconciled: the first test reads them.)
    let families = [
        "controller_runtime_max_concurrent_reconciles",
        "controller_runtime_active_workers",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_retries_total",
        "rest_client_requests_total",
        "leader_election_master_status",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    ];
    let controllers = !samples(&env.namespace).is_empty();
    let missing = |metrics: &str| -> Vec<&str> {
        families
            .into_iter()
            .filter(|f| !metrics.lines().any(|line| line.starts_with(f)))
            // Without an API, only the manager's own families are there.
            .filter(|f| {
                controllers || !f.starts_with("controller_runtime_") && !f.starts_with("workqueue_")
            })
            .collect()
    };
    // The controllers declare their families as they start, just after the Lease is won.
    let deadline = Instant::now() + Duration::from_secs(30);
    let metrics = loop {
        let (status, metrics) = manager.scrape(Some(&reader)).await.unwrap();
        assert_eq!(status, 200, "{metrics}");
        let missing = missing(&metrics);
        if missing.is_empty() {
            break metrics;
        }
        assert!(
            Instant::now() < deadline,
            "missing {missing:?} in\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let leader = format!(
        r#"leader_election_master_status{}name="{LEASE}"{} 1"#,
        '{', '}'
    );
    assert!(metrics.lines().any(|line| line == leader), "{metrics}");
    // The manager's own requests to the API server, the reviews included.
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with(r#"rest_client_requests_total{code="201",method="POST""#)),
        "{metrics}"
    );
    manager.terminate().await;
}

#[tokio::test]
async fn metrics_are_served_over_plain_http_to_anyone_when_not_secure() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    // As for `make run RUN_ARGS="--metrics-bind-address=:8080 --metrics-secure=false"`.
    let manager = Manager::start(&env, &kubeconfig(&env), &["--metrics-secure=false"]);
    eventually("/healthz", || async {
        manager.status("/healthz") == Some(200)
    })
    .await;
    let metrics = http_get(manager.metrics, "/metrics");
    assert!(
        metrics.as_ref().is_some_and(
            |(status, body)| *status == 200 && body.contains("process_cpu_seconds_total")
        ),
        "{metrics:?}"
    );
    manager.terminate().await;
}

#[tokio::test]
async fn metrics_are_served_with_the_certificate_of_metrics_cert_path() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    // A CA, and a certificate for localhost it signed, as cert-manager would mount them.
    let dir = std::env::temp_dir().join(format!("metrics-certs-{}", env.namespace));
    std::fs::create_dir_all(&dir).unwrap();
    write_serving_certificate(&dir);

    let cert_path = format!("--metrics-cert-path={}", dir.display());
    let manager = Manager::start(&env, &kubeconfig(&env), &[&cert_path]);
    let reader = env
        .service_account_token("scraper", Some("metrics-reader"))
        .await;
    let ca = dir.join("ca.crt");
    let scrape = || https_get(manager.metrics, "/metrics", Some(&reader), Trust::Ca(&ca));
    eventually("a verified scrape", || async {
        matches!(scrape().await, Ok((200, _)))
    })
    .await;
    manager.terminate().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The manager's Lease (`--leader-election-id`).
const LEASE: &str = "memcached-operator.example.com";

/// The operator's own ServiceAccount.
fn kubeconfig(env: &TestEnv) -> std::path::PathBuf {
    match &env.backend {
        Backend::Real { kubeconfig, .. } => kubeconfig.clone(),
        Backend::InMemory(_) => unreachable!("TestEnv::real is the real control plane"),
    }
}

async fn holder(env: &TestEnv) -> Option<String> {
    let leases: Api<Lease> = Api::namespaced(env.admin.clone(), &env.namespace);
    let lease = leases.get_opt(LEASE).await.unwrap();
    lease.and_then(|l| l.spec?.holder_identity)
}

/// The manager binary, running; killed if the test ends first.
struct Manager {
    child: Child,
    probes: u16,
    metrics: u16,
}

impl Manager {
    fn start(env: &TestEnv, kubeconfig: &Path, args: &[&str]) -> Self {
        let (probes, metrics) = (free_port().unwrap(), free_port().unwrap());
        let child = Command::new(env!("CARGO_BIN_EXE_memcached-operator"))
            .args(args)
            .arg(format!("--health-probe-bind-address=127.0.0.1:{probes}"))
            .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
            .envs(manager_env())
            .env("KUBECONFIG", kubeconfig)
            // As the downward API sets them in a pod (config/manager/manager.yaml).
            .env("POD_NAME", IDENTITY)
            .env("POD_NAMESPACE", &env.namespace)
            .env("RUST_LOG", "info")
            // No webhook certificate here: tests/*_webhook.rs test the webhooks (if any).
            .env("ENABLE_WEBHOOKS", "false")
            .stdin(Stdio::null())
            .spawn()
            .expect("starting the manager");
        Self {
            child,
            probes,
            metrics,
        }
    }

    fn status(&self, path: &str) -> Option<u16> {
        http_get(self.probes, path).map(|(status, _)| status)
    }

    /// `GET /metrics` with `token`, accepting the manager's self-signed certificate.
    async fn scrape(&self, token: Option<&str>) -> Result<(u16, String), String> {
        https_get(self.metrics, "/metrics", token, Trust::Anything).await
    }

    /// How many controllers have reconciled an object successfully, from `/metrics`.
    async fn reconciled_controllers(&self, token: &str) -> usize {
        let Ok((200, metrics)) = self.scrape(Some(token)).await else {
            return 0;
        };
        metrics
            .lines()
            .filter(|line| line.starts_with("controller_runtime_reconcile_total{"))
            .filter(|line| line.contains("result=\"success\"") && !line.ends_with(" 0"))
            .count()
    }

    /// Waits for the manager to exit by itself, at most `limit`.
    async fn wait(&mut self, limit: Duration) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                started.elapsed() < limit,
                "the manager still runs after {limit:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends SIGTERM; returns how the manager exited, and how long that took (at most the
    /// pod's grace period).
    async fn terminate(mut self) -> (ExitStatus, Duration) {
        let sent = Instant::now();
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("sending SIGTERM");
        let exited = self.wait(GRACE_PERIOD).await;
        (exited, sent.elapsed())
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment `config/manager/manager.yaml` gives the manager (the operand images), as
/// far as it is plain values.
fn manager_env() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/manager/manager.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let mut env = Vec::new();
    for document in serde_saphyr::from_multiple::<Value>(&text).unwrap() {
        let containers = &document["spec"]["template"]["spec"]["containers"];
        for container in containers.as_array().into_iter().flatten() {
            for var in container["env"].as_array().into_iter().flatten() {
                if let (Some(name), Some(value)) = (var["name"].as_str(), var["value"].as_str()) {
                    env.push((name.to_string(), value.to_string()));
                }
            }
        }
    }
    env
}

/// The objects of `config/samples` (none before the first `create api`), in the test's namespace.
fn samples(namespace: &str) -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/samples");
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap();
    if !dir.join("kustomization.yaml").exists() {
        return Vec::new();
    }
    let kustomization: Value = serde_saphyr::from_str(&read("kustomization.yaml")).unwrap();
    let files = kustomization["resources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    files
        .iter()
        .filter_map(Value::as_str)
        .map(|file| {
            let mut sample: Value = serde_saphyr::from_str(&read(file)).unwrap();
            sample["metadata"]["namespace"] = namespace.into();
            sample
        })
        .collect()
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let waited = tokio::time::timeout(Duration::from_secs(60), async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    waited
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}
