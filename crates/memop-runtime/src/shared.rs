//! What every controller, webhook and task of an operator shares ([`Shared`]): the client, the
//! watched namespace, the metrics, readiness, the shutdown signal, leadership and the shard, and
//! the settings of the manager's flags. The manager makes one; a test makes its own.

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::events::Reporter;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use crate::Operator;
use crate::manager::health::Readiness;
use crate::manager::metrics::Metrics;
use crate::manager::sharding;
use crate::manager::shutdown::Shutdown;

/// What every controller gets from the manager: the client, the watched namespace, the metrics,
/// readiness and shutdown signal, and the settings of its flags. Read them with the accessors;
/// tests change a setting with the `with_*` methods (`Shared::new(..).with_max_concurrent_rollouts(..)`).
#[derive(Clone)]
pub struct Shared {
    /// The client every controller and the webhook server use.
    pub(crate) client: Client,
    /// The only namespace the controllers watch, or `None` for all of them (`WATCH_NAMESPACE`).
    pub(crate) watch_namespace: Option<String>,
    /// The manager's metrics.
    pub(crate) metrics: Arc<Metrics>,
    /// What `/readyz` reports.
    pub(crate) readiness: Readiness,
    /// The signal every task of the manager stops on.
    pub(crate) shutdown: Shutdown,
    /// Who the events this operator records come from.
    pub(crate) reporter: Reporter,
    /// How many objects each controller reconciles at once (`--max-concurrent-reconciles`).
    pub(crate) max_concurrent_reconciles: u16,
    /// How many rollouts each operand controller lets run at once, across the operator's
    /// replicas (`--max-concurrent-rollouts`; 0: no limit).
    pub(crate) max_concurrent_rollouts: usize,
    /// How long one reconcile may take, its API calls included: a call that hangs (on a
    /// half-open connection, say) fails the reconcile instead of blocking its object for ever.
    pub(crate) reconcile_timeout: Duration,
    /// Whether this replica leads (always, without leader election): a controller built
    /// before it does fills its caches while it waits, and reconciles once it leads.
    pub(crate) leading: Arc<tokio::sync::watch::Sender<bool>>,
    /// This replica's share of the objects, with `--sharding`: controllers reconcile only the
    /// objects of its active buckets.
    pub(crate) shard: Option<sharding::Shard>,
}

impl Shared {
    /// Everything a controller of `operator` needs, around `client`, for tests and tools.
    pub fn new(operator: &Operator, client: Client, watch_namespace: Option<String>) -> Self {
        Self {
            client,
            watch_namespace,
            metrics: Arc::new(Metrics::default()),
            readiness: Readiness::default(),
            shutdown: Shutdown::default(),
            reporter: Reporter {
                controller: operator.name.into(),
                instance: std::env::var("POD_NAME").ok(),
            },
            max_concurrent_reconciles: 10,
            max_concurrent_rollouts: 10,
            reconcile_timeout: Duration::from_secs(60),
            leading: Arc::new(tokio::sync::watch::Sender::new(true)),
            shard: None,
        }
    }

    /// These settings with `shard` as this replica's share: the controllers built on them
    /// reconcile only the objects of its active buckets (see [`sharding`]).
    #[cfg(test)]
    pub(crate) fn with_shard(mut self, shard: sharding::Shard) -> Self {
        self.shard = Some(shard);
        self
    }

    /// Whether this replica leads now (always, without leader election).
    pub(crate) fn is_leading(&self) -> bool {
        *self.leading.borrow()
    }

    /// The client every controller and the webhook server use.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The manager's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// What `/readyz` reports.
    #[cfg(test)]
    pub(crate) fn readiness(&self) -> &Readiness {
        &self.readiness
    }

    /// The signal every task of the manager stops on.
    pub fn shutdown(&self) -> &Shutdown {
        &self.shutdown
    }

    /// Who the events this operator records come from.
    pub(crate) fn reporter(&self) -> &Reporter {
        &self.reporter
    }

    /// These settings with at most `max` rollouts at once (`--max-concurrent-rollouts`).
    pub fn with_max_concurrent_rollouts(mut self, max: usize) -> Self {
        self.max_concurrent_rollouts = max;
        self
    }

    /// These settings with `readiness` as what `/readyz` reports (a test's own silence limit,
    /// say: [`Readiness::with_silence_limit`]).
    #[cfg(test)]
    pub(crate) fn with_readiness(mut self, readiness: Readiness) -> Self {
        self.readiness = readiness;
        self
    }

    /// The API of a namespaced kind, limited to the watched namespace when there is one.
    pub(crate) fn namespaced_api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
        K: Clone + DeserializeOwned + std::fmt::Debug,
    {
        match &self.watch_namespace {
            Some(ns) => Api::namespaced(self.client.clone(), ns),
            None => Api::all(self.client.clone()),
        }
    }
}
