//! The test support of operators scaffolded by memop, a dev-dependency of every memop project:
//!
//! - [`apiserver`]: a stateful in-memory Kubernetes API server behind a real `kube::Client`
//!   (create, get, list, watch, patch including server-side apply, delete, finalizers,
//!   owner references, status subresources), so controller tests run with no cluster;
//! - [`envtest`]: a real kube-apiserver and etcd (and the garbage collector, and real rollouts:
//!   the deployment controller, kube-scheduler and kwok's simulated node) from
//!   `KUBEBUILDER_ASSETS`, as controller-runtime's envtest starts them, with the project's own
//!   CRDs and `config/rbac` installed and clients that authenticate as its ServiceAccount;
//!   [`scenarios!`] runs each scenario on both;
//! - [`requests`]: a log of every request a client sends, with fault injection;
//! - [`workloads`]: Deployments rolled out: waited for where the back end rolls them out, else
//!   reported by a stand-in for the deployment controller and kubelets;
//! - [`https`]: HTTPS clients and a test CA for the manager's endpoints and webhooks;
//! - [`eventually`]: waits for what a controller does in the background.
//!
//! ```no_run
//! use memop_test::TestEnv;
//!
//! async fn a_scenario(env: TestEnv) {
//!     let client = env.operator.clone();
//!     // create objects, reconcile, assert on what the cluster converged to
//!     # drop(client);
//! }
//!
//! memop_test::scenarios!(a_scenario);
//! # fn main() {}
//! ```

#![warn(missing_docs)]

pub mod apiserver;
pub mod envtest;
pub mod heap;
pub mod https;
pub mod requests;
pub mod workloads;

pub use apiserver::*;
pub use envtest::{Backend, ControlPlane, TestEnv};
pub use requests::{Request, RequestLog, Verb};

/// Polls `check` every 20 ms until it holds; panics, naming `what`, after `within` (a real
/// control plane on a busy machine can take seconds, say, to collect garbage).
pub async fn eventually<F, Fut>(what: &str, within: std::time::Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let waited = tokio::time::timeout(within, async {
        while !check().await {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    });
    waited
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}
