//! A complete manager built on memop-runtime, with one small controller: what a memop project's
//! `src/main.rs` is, minus the project's own kinds. It shows the runtime's public API end to
//! end, and `tests/manager.rs` runs it on a real control plane to prove the manager (probes,
//! metrics over HTTPS behind TokenReview and SubjectAccessReview, leader election, readiness,
//! graceful shutdown).
//!
//! The controller ([`configmaps`]) watches ConfigMaps labelled `example.com/count-keys=true`,
//! annotates each with how many keys it holds (`example.com/keys`), and records an Event when
//! that count changes. Built-in kinds only, so no CRD is needed.
//!
//! Run it against the cluster of your kubeconfig (with your rights; in a cluster, give its
//! ServiceAccount the RBAC of `tests/fixture/config/rbac`):
//!
//! ```text
//! cargo run -p memop-runtime --example manager -- --health-probe-bind-address=127.0.0.1:8081 \
//!     --metrics-bind-address=127.0.0.1:8080 --metrics-secure=false
//! kubectl create configmap demo --from-literal=a=1 --from-literal=b=2
//! kubectl label configmap demo example.com/count-keys=true
//! kubectl get configmap demo -o jsonpath='{.metadata.annotations.example\.com/keys}'   # 2
//! curl -s http://127.0.0.1:8080/metrics | grep controller_runtime_reconcile_total
//! ```
//!
//! Without `--metrics-secure=false`, metrics are served over HTTPS, only to callers whose
//! token the API server accepts and who may `get` the `/metrics` URL (the `metrics-reader`
//! ClusterRole).
//!
//! `--help` lists the manager's flags (kubebuilder's: `--leader-elect`, `--metrics-secure`,
//! `--metrics-cert-path`, `--cache-sync-timeout`, …).

mod configmaps;

use clap::Parser;
use memop_runtime::Operator;
use memop_runtime::manager::{self, Manager};

/// Who this operator is: it names the events' reporting controller and the default leader
/// election Lease (`example-operator.example.com`).
const OPERATOR: Operator = Operator {
    name: "example-operator",
    domain: "example.com",
};

/// The manager's command line: kubebuilder's flags, from the runtime.
#[derive(Parser)]
#[command(version, about = "An example operator manager built on memop-runtime")]
struct Cli {
    #[command(flatten)]
    manager: manager::Flags,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    manager::telemetry::init(&cli.manager)?;
    // Its requests carry the User-Agent `example-operator/<version> memop-runtime/<version>`.
    let mut manager =
        Manager::start_with_version(&OPERATOR, env!("CARGO_PKG_VERSION"), &cli.manager).await?;
    configmaps::register(&mut manager);
    manager.run().await
}
