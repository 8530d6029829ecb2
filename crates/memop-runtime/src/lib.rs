//! The runtime of operators scaffolded by memop: what controller-runtime is to a kubebuilder
//! project, for kube-rs.
//!
//! A memop project holds its kinds (types, controllers, webhooks) and depends on this crate for
//! everything around them:
//!
//! - [`manager`]: the manager that runs the controllers, with kubebuilder's flags, the
//!   `/healthz` and `/readyz` probes, HTTPS metrics with controller-runtime's families behind
//!   TokenReview and SubjectAccessReview, leader election, and a graceful shutdown;
//! - [`controller`]: the controller [`controller::Builder`] and what it runs around each
//!   reconcile (time limit, span, metrics, per-object backoff, panic recovery, the finalizer,
//!   status writes), status conditions and server-side-apply helpers;
//! - [`operand`]: what a controller keeps for each object, of any namespaced kind
//!   ([`operand::Operand`]): a Deployment, rolled out at a pace, a Service, the Jobs of a CronJob;
//! - [`rbac`] and [`manifests`]: the manager's role and the CRDs that `make manifests` writes;
//! - [`webhook`]: the admission and conversion webhook server and its certificates;
//! - [`migration`]: the migration of stored objects to a kind's storage version, and the pruning
//!   of its CRD's `storedVersions`, that lets an old version be removed.
//!
//! A project's manager binary is a few lines:
//!
//! ```no_run
//! use clap::Parser;
//! use memop_runtime::Operator;
//! use memop_runtime::manager::{self, Manager};
//!
//! const OPERATOR: Operator = Operator { name: "memcached-operator", domain: "example.com" };
//!
//! #[derive(Parser)]
//! #[command(version, about = "The memcached-operator operator manager")]
//! struct Cli {
//!     #[command(flatten)]
//!     manager: manager::Flags,
//! }
//!
//! #[tokio::main]
//! async fn main() -> anyhow::Result<()> {
//!     let cli = Cli::parse();
//!     manager::telemetry::init(&cli.manager)?;
//!     let version = env!("CARGO_PKG_VERSION");
//!     let mut manager = Manager::start_with_version(&OPERATOR, version, &cli.manager).await?;
//!     // manager.register(|shared| controller(&shared, ...)) for each controller
//!     manager.run().await
//! }
//! ```
//!
//! ## What is public
//!
//! These names, with their `pub` methods and fields; the rest of the crate is its own
//! (`tests/public_api.rs` holds this list and the sources to each other):
//!
//! - the root: [`Operator`];
//! - [`controller`]: [`controller::Builder`], [`controller::Controller`], [`controller::Kind`],
//!   [`controller::Reconciler`], [`controller::Report`], [`controller::Error`],
//!   [`controller::Result`], [`controller::Clock`], [`controller::Owned`],
//!   [`controller::Store`], [`controller::Truth`], [`controller::WatchScope`],
//!   [`controller::RESYNC`], [`controller::label_value`], [`controller::resync`],
//!   [`controller::stamp`], and the condition types [`controller::condition::AVAILABLE`],
//!   [`controller::condition::DEGRADED`], [`controller::condition::PROGRESSING`],
//!   [`controller::condition::FINALIZING`], [`controller::condition::MISCONFIGURED`];
//! - [`manager`]: [`manager::Manager`], [`manager::Flags`], [`manager::Shared`],
//!   [`manager::Metrics`], [`manager::Shutdown`], [`manager::Runnable`],
//!   [`manager::serve_https`],
//!   [`manager::telemetry::init`], [`manager::sharding::RULES`];
//! - [`manifests`]: [`manifests::main`], [`manifests::crd_files`], [`manifests::File`],
//!   [`manifests::merge_versions`], [`manifests::conditions_schema`];
//! - [`migration`]: [`migration::StorageMigration`], [`migration::Outcome`],
//!   [`migration::Method`], [`migration::NAME`], [`migration::role_yaml`];
//! - [`operand`]: [`operand::Operand`], [`operand::Outcome`], [`operand::State`],
//!   [`operand::Workload`], [`operand::Rollout`], [`operand::PropagationPolicy`],
//!   [`operand::controller_reference`], [`operand::image_tag`];
//! - [`rbac`]: [`rbac::Rule`], [`rbac::Rules`], [`rbac::Scope`], [`rbac::role_yaml`];
//! - [`webhook`]: [`webhook::serve`], [`webhook::Flags`], [`webhook::Webhook`],
//!   [`webhook::Context`], [`webhook::Defaulter`], [`webhook::defaulting`],
//!   [`webhook::Validator`], [`webhook::validating`], [`webhook::Verdict`],
//!   [`webhook::Refusal`], [`webhook::Invalid`], [`webhook::FieldError`],
//!   [`webhook::Conversion`], [`webhook::converting`], [`webhook::conversion_crds`],
//!   [`webhook::CONVERT_PATH`], [`webhook::configurations`], [`webhook::manifests_yaml`].
//!
//! The crate's version is memop's: a project made by memop 0.x.y depends on `=0.x.y`, and
//! `memop update` moves it to the next one.

#![warn(missing_docs)]

pub mod controller;
pub mod manager;
pub mod manifests;
pub mod migration;
pub mod operand;
pub mod rbac;
pub mod webhook;

mod shared;
#[cfg(test)]
mod tests;

/// Who an operator is: what the manager names itself by, at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operator {
    /// The project's name: the events' reporting controller, the fallback identity of a leader
    /// election candidate, the prefix of `config/default`'s object names.
    pub name: &'static str,
    /// The project's domain (`memop init --domain`): the default leader election Lease is
    /// `<name>.<domain>`, as kubebuilder names it.
    pub domain: &'static str,
}

impl Operator {
    /// The default name of the leader election Lease (`--leader-election-id`).
    pub(crate) fn leader_election_id(&self) -> String {
        format!("{}.{}", self.name, self.domain)
    }
}
