// Copyright 2026 The cronjob-operator Authors.
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

//! End-to-end test on a real cluster (kind), like kubebuilder's `test/e2e`. Ignored by
//! default: `make test-e2e` creates a kind cluster, builds and loads the image, and runs it with
//! `cargo test --test e2e -- --ignored`. It uses the current kubeconfig context.
//!
//! Steps: install cert-manager if the project has webhooks, deploy the manager
//! (`make deploy IMG=…`), wait for it to be ready, apply the samples and wait for what they ask
//! for, scrape the metrics endpoint over HTTPS with a metrics reader's token, then clean up.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use memop_test::https::{Trust, https_get};

const NAMESPACE: &str = "cronjob-operator-system";
/// Lets the manager's ServiceAccount read the metrics, for the scrape.
const METRICS_BINDING: &str = "cronjob-operator-metrics-binding";

fn image() -> String {
    std::env::var("IMG").unwrap_or_else(|_| "example.com/cronjob-operator:v0.0.1".to_string())
}

/// Runs a command from the project root; panics with its output when it fails.
fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{program} {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Retries `check` until it succeeds or `timeout` passes.
fn eventually(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn kubectl_ok(args: &[&str]) -> bool {
    Command::new("kubectl")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The cert-manager release that kubebuilder's e2e suite installs, for projects with webhooks
/// (`memop create webhook`), whose certificate it issues. CERT_MANAGER_INSTALL_SKIP=true skips
/// it (already installed).
const CERT_MANAGER: &str =
    "https://github.com/cert-manager/cert-manager/releases/download/v1.21.0/cert-manager.yaml";

/// Installs cert-manager and waits for its webhook, as kubebuilder's e2e suite does.
fn install_cert_manager() {
    run("kubectl", &["apply", "-f", CERT_MANAGER]);
    run(
        "kubectl",
        &[
            "wait",
            "deployment.apps/cert-manager-webhook",
            "--for",
            "condition=Available",
            "--namespace",
            "cert-manager",
            "--timeout",
            "5m",
        ],
    );
}

#[test]
#[ignore = "needs a Kubernetes cluster: run `make test-e2e`"]
fn manager_deploys_and_reconciles_the_samples() {
    let webhooks = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/webhook");
    if webhooks.exists() && std::env::var("CERT_MANAGER_INSTALL_SKIP").as_deref() != Ok("true") {
        install_cert_manager();
    }
    let img = format!("IMG={}", image());
    run("make", &["deploy", &img]);
    let cleanup = Cleanup;
    eventually(
        "the manager to be available",
        Duration::from_secs(180),
        || {
            kubectl_ok(&[
                "-n",
                NAMESPACE,
                "wait",
                "--for=condition=Available",
                "deployment/cronjob-operator-controller-manager",
                "--timeout=5s",
            ])
        },
    );
    let samples =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/samples/kustomization.yaml");
    if samples.exists() {
        run(
            "kubectl",
            &["apply", "-n", "default", "-k", "config/samples"],
        );
        // Every sample kind reports an Available condition once reconciled.
        eventually(
            "the samples to become Available",
            Duration::from_secs(180),
            || {
                let out = Command::new("kubectl")
                    .args([
                        "get",
                        "-n",
                        "default",
                        "-k",
                        "config/samples",
                        "-o",
                        "jsonpath={.items[*].status.conditions[?(@.type==\"Available\")].status}",
                    ])
                    .current_dir(env!("CARGO_MANIFEST_DIR"))
                    .output();
                out.is_ok_and(|o| {
                    let text = String::from_utf8_lossy(&o.stdout).into_owned();
                    !text.trim().is_empty() && text.split_whitespace().all(|s| s == "True")
                })
            },
        );
    }
    // Scrape the metrics endpoint as Prometheus would: over HTTPS, with the token of a
    // ServiceAccount bound to the metrics-reader ClusterRole (the manager's own, as in
    // kubebuilder's e2e test), here through a port-forward to the metrics Service.
    run(
        "kubectl",
        &[
            "create",
            "clusterrolebinding",
            METRICS_BINDING,
            "--clusterrole=cronjob-operator-metrics-reader",
            &format!("--serviceaccount={NAMESPACE}:cronjob-operator-controller-manager"),
        ],
    );
    let token = run(
        "kubectl",
        &[
            "create",
            "token",
            "cronjob-operator-controller-manager",
            "-n",
            NAMESPACE,
        ],
    );
    let port = memop_test::envtest::free_port().expect("a free port");
    let _forward = PortForward::start(port);
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    let mut metrics = String::new();
    eventually("the metrics endpoint", Duration::from_secs(60), || {
        let scrape = https_get(port, "/metrics", Some(token.trim()), Trust::Anything);
        match runtime.block_on(scrape) {
            Ok((200, body)) => {
                metrics = body;
                true
            }
            _ => false,
        }
    });
    // With samples applied, each of their controllers has reconciled successfully at least once.
    let successes: Vec<&str> = metrics
        .lines()
        .filter(|l| {
            l.starts_with("controller_runtime_reconcile_total{")
                && l.contains(r#"result="success""#)
        })
        .collect();
    assert!(
        !samples.exists()
            || (!successes.is_empty() && successes.iter().all(|l| !l.ends_with(" 0"))),
        "no successful reconcile in the metrics:\n{metrics}"
    );
    assert!(
        metrics.contains("# TYPE controller_runtime_reconcile_time_seconds histogram"),
        "{metrics}"
    );
    drop(cleanup);
}

/// `kubectl port-forward` from `127.0.0.1:<port>` to the metrics Service, until dropped.
struct PortForward(Child);

impl PortForward {
    fn start(port: u16) -> Self {
        let child = Command::new("kubectl")
            .args([
                "port-forward",
                "-n",
                NAMESPACE,
                "service/cronjob-operator-controller-manager-metrics-service",
                &format!("{port}:8443"),
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("running kubectl port-forward");
        Self(child)
    }
}

impl Drop for PortForward {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Undeploys even when an assertion failed.
struct Cleanup;

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new("kubectl")
            .args([
                "delete",
                "clusterrolebinding",
                METRICS_BINDING,
                "--ignore-not-found",
            ])
            .status();
        let _ = Command::new("kubectl")
            .args([
                "delete",
                "-n",
                "default",
                "-k",
                "config/samples",
                "--ignore-not-found",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status();
        let _ = Command::new("make")
            .args(["undeploy", "ignore-not-found=true"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status();
    }
}
