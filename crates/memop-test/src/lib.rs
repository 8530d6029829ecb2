//! The test support of operators scaffolded by memop, a dev-dependency of every memop project:
//!
//! - [`apiserver`]: a stateful in-memory Kubernetes API server behind a real `kube::Client`
//!   (create, get, list, watch, patch including server-side apply, delete, finalizers,
//!   owner references, status subresources), so controller tests run with no cluster;
//! - [`envtest`]: a real kube-apiserver and etcd (and the garbage collector) from
//!   `KUBEBUILDER_ASSETS`, as controller-runtime's envtest starts them, with the project's own
//!   CRDs and `config/rbac` installed and clients that authenticate as its ServiceAccount;
//!   [`scenarios!`] runs each scenario on both;
//! - [`requests`]: a log of every request a client sends, with fault injection;
//! - [`workloads`]: a stand-in for the deployment controller and kubelets;
//! - [`https`]: HTTPS clients and a test CA for the manager's endpoints and webhooks.
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
pub mod https;
pub mod requests;
pub mod workloads;

pub use apiserver::*;
pub use envtest::{Backend, ControlPlane, TestEnv};
pub use requests::{Request, RequestLog, Verb};
