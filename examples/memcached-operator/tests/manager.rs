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
//! metrics, reconcile the samples of `config/samples`, hold the Lease, and on SIGTERM exit
//! within the pod's grace period, releasing the Lease for the next leader.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use serde_json::Value;
use support::envtest::{apply, free_port, http_get};
use support::{Backend, TestEnv};

/// The manager's lease holder identity (in a pod, the pod's name).
const IDENTITY: &str = "manager-under-test";
/// Kubernetes' default termination grace period.
const GRACE_PERIOD: Duration = Duration::from_secs(30);

#[tokio::test]
async fn the_manager_leads_reconciles_and_stops_on_sigterm() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let Backend::Real { kubeconfig, .. } = &env.backend else {
        unreachable!("TestEnv::real is the real control plane")
    };
    let (probes, metrics) = (free_port().unwrap(), free_port().unwrap());
    let mut manager = Command::new(env!("CARGO_BIN_EXE_memcached-operator"))
        .args([
            "--leader-elect".to_string(),
            format!("--health-probe-bind-address=127.0.0.1:{probes}"),
            format!("--metrics-bind-address=127.0.0.1:{metrics}"),
        ])
        .envs(manager_env())
        .env("KUBECONFIG", kubeconfig)
        .env("POD_NAME", IDENTITY)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .spawn()
        .expect("starting the manager");
    // However the test ends, the manager does not outlive it.
    let guard = KillOnDrop(manager.id());

    eventually("/healthz", || async {
        status(probes, "/healthz") == Some(200)
    })
    .await;
    eventually("/readyz", || async {
        status(probes, "/readyz") == Some(200)
    })
    .await;

    let leases: Api<Lease> = Api::namespaced(env.admin.clone(), &env.namespace);
    let holder = || async {
        let lease = leases
            .get_opt("memcached-operator.example.com")
            .await
            .unwrap();
        lease.and_then(|l| l.spec?.holder_identity)
    };
    assert_eq!(holder().await.as_deref(), Some(IDENTITY));

    // Every sample reconciles: the manager counts each successful reconcile.
    let samples = samples(&env.namespace);
    for sample in &samples {
        apply(&env.admin, sample).await;
    }
    let kinds: std::collections::BTreeSet<_> =
        samples.iter().filter_map(|s| s["kind"].as_str()).collect();
    eventually("a successful reconcile of every sample's kind", || async {
        reconciled_controllers(metrics) >= kinds.len()
    })
    .await;

    let sent = Instant::now();
    Command::new("kill")
        .args(["-TERM", &manager.id().to_string()])
        .status()
        .expect("sending SIGTERM");
    let exited = loop {
        if let Some(status) = manager.try_wait().unwrap() {
            break status;
        }
        assert!(
            sent.elapsed() < GRACE_PERIOD,
            "the manager ignored SIGTERM for {GRACE_PERIOD:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    std::mem::forget(guard);
    println!("stopped {:?} after SIGTERM", sent.elapsed());
    assert!(exited.success(), "{exited}");
    assert_ne!(
        holder().await.as_deref(),
        Some(IDENTITY),
        "the Lease was released"
    );
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

/// How many controllers have reconciled an object successfully, from the metrics endpoint.
fn reconciled_controllers(port: u16) -> usize {
    let Some((_, metrics)) = http_get(port, "/metrics") else {
        return 0;
    };
    metrics
        .lines()
        .filter(|line| line.starts_with("controller_runtime_reconcile_total{"))
        .filter(|line| line.contains("result=\"success\"") && !line.ends_with(" 0"))
        .count()
}

fn status(port: u16, path: &str) -> Option<u16> {
    http_get(port, path).map(|(status, _)| status)
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

struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .status();
    }
}
