//! The example's one controller, written as a memop project writes its controllers: it counts
//! the keys of every ConfigMap labelled [`SELECTOR`], writes the count to its [`KEYS`]
//! annotation, and records an Event ([`REASON`]) when the count changes.
//!
//! The runtime's [`Builder`] drives it with the manager's settings and readiness, and runs
//! around each reconcile (time limit, span, the `controller_runtime_reconcile_*` metrics,
//! per-object backoff, panic recovery, events); the module holds only what is particular to its
//! kind.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use memop_runtime::controller::{Builder, Error, Reconciler, Report, Result};
use memop_runtime::manager::Manager;
use memop_runtime::rbac::Rule;

/// The controller's name in logs, metrics and readiness.
pub const NAME: &str = "configmaps";
/// The ConfigMaps this controller reconciles; the watch is limited to them, so the manager
/// does not cache every ConfigMap of the cluster.
pub const SELECTOR: &str = "example.com/count-keys=true";
/// The annotation with the number of keys (`data` and `binaryData`).
pub const KEYS: &str = "example.com/keys";
/// The reason of the Event recorded when the count changes.
pub const REASON: &str = "KeysCounted";
/// The field manager of the annotation.
const FIELD_MANAGER: &str = "example-operator";

/// Exactly the API access this controller uses: `tests/fixture/config/rbac/role.yaml` is
/// generated from it ([`memop_runtime::rbac::role_yaml`]), as a project's `make manifests`
/// generates its `config/rbac/role.yaml`.
#[allow(dead_code)] // read by tests/manager.rs, as a project's manifests binary reads it
pub const RULES: &[Rule] = &[
    // Watch the ConfigMaps, and patch the annotation on.
    Rule {
        api_group: "",
        resources: &["configmaps"],
        verbs: &["list", "watch", "patch"],
    },
    // The Recorder writes events.k8s.io/v1 Events, patching them for repeats.
    Rule {
        api_group: "events.k8s.io",
        resources: &["events"],
        verbs: &["create", "patch"],
    },
];

/// What a reconcile works with.
pub struct Context {
    client: Client,
}

/// Registers the controller with the manager; `main` calls this.
pub fn register(manager: &mut Manager) {
    manager.register(|shared| {
        let ctx = Context {
            client: shared.client().clone(),
        };
        let config = watcher::Config::default().labels(SELECTOR);
        Builder::new(NAME, &shared).watching(config).build(ctx)
    });
}

impl Reconciler for Context {
    type Object = ConfigMap;

    /// ConfigMaps have no status.
    fn conditions(_: &ConfigMap) -> &[Condition] {
        &[]
    }

    /// Brings the [`KEYS`] annotation of `object` in line with its keys; writes nothing when
    /// it is.
    async fn apply(&self, object: &ConfigMap, report: &mut Report) -> Result<Action> {
        let keys = object.data.as_ref().map_or(0, BTreeMap::len)
            + object.binary_data.as_ref().map_or(0, BTreeMap::len);
        let count = keys.to_string();
        if object.annotations().get(KEYS) == Some(&count) {
            return Ok(Action::await_change());
        }
        let namespace = object.namespace().ok_or_else(|| {
            Error::Invalid(format!("ConfigMap {} has no namespace", object.name_any()))
        })?;
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &namespace);
        let patch = serde_json::json!({ "metadata": { "annotations": { KEYS: count } } });
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..PatchParams::default()
        };
        match api
            .patch(&object.name_any(), &params, &Patch::Merge(&patch))
            .await
        {
            // Deleted meanwhile: nothing left to count.
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                return Ok(Action::await_change());
            }
            result => result?,
        };
        report.event(EventType::Normal, REASON, format!("{keys} keys"));
        Ok(Action::await_change())
    }
}
