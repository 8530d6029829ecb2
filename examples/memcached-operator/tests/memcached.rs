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

//! Scenario tests of the Memcached controller, each run twice: against the in-memory API server
//! of `memop-test` (`in_memory::*`, always) and against a real kube-apiserver and etcd
//! (`real_control_plane::*`, when `KUBEBUILDER_ASSETS` is set: `make setup-envtest`). On the real
//! control plane the controller runs as the project's own ServiceAccount and `config/rbac`, so a
//! verb missing from `RULES` fails here as it would in a cluster.
//!
//! Most tests call the controller's `reconcile` directly, as kube's Controller would, and look
//! at what the cluster converged to; `the_real_controller_loop_converges_and_shuts_down` runs
//! the very controller `main.rs` registers. Deployments roll out for real on the real control plane that
//! `scripts/envtest/build.sh` of memop builds (kube-controller-manager's deployment controller,
//! kube-scheduler and kwok's simulated node): [`roll_out`] waits for it there. The in-memory API
//! server, and a real one from `make setup-envtest`'s assets, run no deployment controller or
//! kubelets: [`roll_out`] reports a Deployment's pods up there, as envtest users do.
//!
//! These tests are about the Memcached: its Deployment, its conditions, its finalizer. What
//! the runtime does around every such controller (the time limit of a reconcile, failed and
//! throttled writes, rollouts paced by `--max-concurrent-rollouts`, what a steady state writes)
//! is tested with the runtime, in memop's `crates/memop-runtime/tests/workloads.rs`.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use memop_test::workloads::{Workloads, roll_out};
use memop_test::{TestEnv, Verb, eventually};
use serde_json::json;

use memcached_operator::api::cache::v1alpha1::{Memcached, MemcachedSpec};
use memcached_operator::controller::memcached::{
    Context, FINALIZER, IMAGE_ENV, RESYNC, RULES, controller,
};
use memop_runtime::controller::{self, Controller, Error, Reconciler};
use memop_runtime::manager::Shared;
use memop_runtime::rbac::Rules;

const NAME: &str = "memcached-sample";
/// The operand image, as `config/manager/manager.yaml` sets it in the manager's environment.
const IMAGE: &str = "memcached:1.6.26-alpine3.19";
/// How long a test waits for what happens in the background (a real control plane on a busy
/// machine can take seconds to collect garbage).
const WAIT: Duration = Duration::from_secs(30);

memop_test::scenarios!(
    create_makes_the_deployment_exactly_right,
    available_waits_for_the_deployment_to_roll_out,
    a_size_change_converges,
    an_empty_image_is_reported_as_misconfigured,
    a_deployment_controlled_by_something_else_is_left_alone,
    any_valid_name_and_image_tag_work,
    a_deployment_scaled_by_hand_is_restored,
    a_deployment_deleted_by_hand_is_recreated,
    deletion_runs_the_finalizer_then_the_deployment_is_collected,
    the_real_controller_loop_converges_and_shuts_down,
    the_role_grants_what_the_controller_does,
);

/// A spec of `size` replicas, its other fields (those you add to the type) from `Default`, so
/// that the tests keep compiling as the type grows.
#[allow(clippy::needless_update)]
fn spec(size: i32) -> MemcachedSpec {
    MemcachedSpec {
        size,
        ..Default::default()
    }
}

/// A test's cluster, with the controller on top of it.
struct Cluster {
    env: TestEnv,
    shared: Shared,
    controller: Arc<Controller<Context>>,
    /// The test's own view, as an administrator.
    objects: Api<Memcached>,
    deployments: Api<Deployment>,
}

impl Cluster {
    fn new(env: TestEnv) -> Self {
        // The controller watches the test's namespace only: tests run side by side.
        let shared = Shared::new(
            &memcached_operator::OPERATOR,
            env.operator.clone(),
            Some(env.namespace.clone()),
        );
        let controller = with_image(&shared, Some(IMAGE));
        let objects = Api::namespaced(env.admin.clone(), &env.namespace);
        let deployments = Api::namespaced(env.admin.clone(), &env.namespace);
        Self {
            env,
            shared,
            controller,
            objects,
            deployments,
        }
    }

    async fn create(&self, size: i32) -> Memcached {
        let object = Memcached::new(NAME, spec(size));
        self.objects
            .create(&PostParams::default(), &object)
            .await
            .unwrap()
    }

    async fn object(&self) -> Memcached {
        self.objects.get(NAME).await.unwrap()
    }

    async fn deployment(&self) -> Option<Deployment> {
        self.deployments.get_opt(NAME).await.unwrap()
    }

    /// The replicas of the Deployment, if there is one.
    async fn replicas(&self) -> Option<i32> {
        self.deployment().await?.spec.replicas
    }

    /// One reconcile of the object as it is now, as the Controller would run it: once the
    /// controller's cache holds the Deployment as it is now (the Controller reconciles on the
    /// events of that cache, which holds the Deployments with the operator's label only). The
    /// Deployment is read again at each try: the deployment controller may be writing its status.
    async fn reconcile(&self) -> Result<Action, Error> {
        let ours = |d: &Deployment| {
            d.labels()
                .get("app.kubernetes.io/managed-by")
                .map(String::as_str)
                == Some("memcached-operator")
        };
        let cache = self.controller.reconciler().deployments().cache();
        eventually(
            "the cache to hold the Deployment as it is",
            WAIT,
            || async {
                let live = self
                    .deployment()
                    .await
                    .filter(ours)
                    .and_then(|d| d.metadata.resource_version);
                let cached = cache.get(&self.env.namespace, NAME).await;
                cached.and_then(|d| d.metadata.resource_version.clone()) == live
            },
        )
        .await;
        let object = Arc::new(self.object().await);
        self.controller.reconcile(object).await
    }

    /// What a reconcile of the object in sync returns: come back after [`RESYNC`], give or
    /// take a tenth.
    async fn resync(&self) -> Action {
        controller::resync(&self.object().await, RESYNC)
    }

    /// Creates the object and reconciles until it is in sync: the first reconcile only adds
    /// the finalizer (kube's finalizer helper then waits for the change), the second creates
    /// the Deployment; once its pods are up, the third reports the object available.
    async fn converged(&self, size: i32) -> Memcached {
        self.create(size).await;
        assert_eq!(self.reconcile().await.unwrap(), Action::await_change());
        assert_eq!(self.reconcile().await.unwrap(), self.resync().await);
        roll_out(&self.env, NAME).await;
        assert_eq!(self.reconcile().await.unwrap(), self.resync().await);
        self.object().await
    }

    /// Changes the object as a user would, with a JSON merge patch.
    async fn edit_object(&self, patch: serde_json::Value) {
        let (patch, params) = (Patch::Merge(patch), PatchParams::default());
        self.objects.patch(NAME, &params, &patch).await.unwrap();
    }

    /// Changes the Deployment behind the controller's back, with a JSON merge patch.
    async fn edit_deployment(&self, patch: serde_json::Value) {
        let (patch, params) = (Patch::Merge(patch), PatchParams::default());
        self.deployments.patch(NAME, &params, &patch).await.unwrap();
    }

    /// What the operator sent since the log was last cleared, but for the watch of its cache
    /// (which reconnects now and then).
    fn requests(&self) -> Vec<memop_test::Request> {
        let requests = self.env.requests.requests();
        requests
            .into_iter()
            .filter(|r| r.verb != Verb::Watch)
            .collect()
    }

    /// How many events with `reason` were recorded (an event series counts once).
    async fn recorded(&self, reason: &str) -> usize {
        let events: Api<Event> = Api::namespaced(self.env.admin.clone(), &self.env.namespace);
        let list = events.list(&ListParams::default()).await.unwrap();
        let reasons = list.items.iter().map(|e| e.reason.as_deref());
        reasons.filter(|r| *r == Some(reason)).count()
    }
}

/// The controller, with the operand image given (`None` or empty: not configured).
fn with_image(shared: &Shared, image: Option<&str>) -> Arc<Controller<Context>> {
    let ctx = Context::with_image(shared, image.map(String::from));
    Arc::new(controller(shared, ctx))
}

/// The status and reason of condition `type_`, which must be set.
fn state<'a>(object: &'a Memcached, type_: &str) -> (&'a str, &'a str) {
    let condition = condition(object, type_).unwrap_or_else(|| panic!("no {type_} condition"));
    (condition.status.as_str(), condition.reason.as_str())
}

fn condition<'a>(object: &'a Memcached, type_: &str) -> Option<&'a Condition> {
    let conditions = &object.status.as_ref()?.conditions;
    conditions.iter().find(|c| c.type_ == type_)
}

async fn create_makes_the_deployment_exactly_right(env: TestEnv) {
    let cluster = Cluster::new(env);
    let object = cluster.converged(2).await;
    assert_eq!(object.finalizers(), [FINALIZER.to_string()]);
    // The controller reads its cache, not the API server.
    let requests = cluster.requests();
    assert!(requests.iter().all(|r| r.verb != Verb::Get), "{requests:?}");

    let deployment = cluster.deployment().await.expect("the Deployment exists");
    let spec = &deployment.spec;
    assert_eq!(spec.replicas, Some(2));
    let owner = &deployment.owner_references()[0];
    assert_eq!(owner.uid, object.uid().unwrap());
    assert_eq!(owner.kind, "Memcached");
    assert_eq!(owner.controller, Some(true));
    assert_eq!(owner.block_owner_deletion, Some(true));
    let labels = deployment.labels();
    assert_eq!(labels["app.kubernetes.io/instance"], NAME);
    assert_eq!(labels["app.kubernetes.io/managed-by"], "memcached-operator");
    let selector = spec.selector.match_labels.as_ref().unwrap();
    assert_eq!(selector["app.kubernetes.io/instance"], NAME);

    let pod = spec.template.spec.as_ref().unwrap();
    let pod_security = pod.security_context.as_ref().unwrap();
    assert_eq!(pod_security.run_as_non_root, Some(true));
    let seccomp = pod_security.seccomp_profile.as_ref().unwrap();
    assert_eq!(seccomp.type_, "RuntimeDefault");
    let container = &pod.containers[0];
    assert_eq!(container.image.as_deref(), Some(IMAGE));
    let port = &container.ports.as_ref().unwrap()[0];
    assert_eq!(port.container_port, 11211);
    assert_eq!(port.name.as_deref(), Some("memcached"));
    let command = container.command.as_ref().unwrap().join(" ");
    assert_eq!(command, "memcached --memory-limit=64 -o modern -v");
    let security = container.security_context.as_ref().unwrap();
    assert_eq!(security.run_as_non_root, Some(true));
    assert_eq!(security.run_as_user, Some(1001));
    assert_eq!(security.allow_privilege_escalation, Some(false));
    let capabilities = security.capabilities.as_ref().unwrap();
    assert_eq!(capabilities.drop, Some(vec!["ALL".into()]));

    assert_eq!(state(&object, "Available"), ("True", "Reconciling"));
    let available = condition(&object, "Available").unwrap();
    assert_eq!(available.observed_generation, object.metadata.generation);
    assert_eq!(condition(&object, "Degraded").unwrap().status, "False");
    assert_eq!(cluster.recorded("Created").await, 1);
}

async fn available_waits_for_the_deployment_to_roll_out(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.create(2).await;
    cluster.reconcile().await.unwrap();
    cluster.reconcile().await.unwrap();
    // The Deployment exists, but no pod is up yet.
    let object = cluster.object().await;
    assert_eq!(state(&object, "Available"), ("False", "Progressing"));
    let message = &condition(&object, "Available").unwrap().message;
    assert!(message.contains("rolling out 2 replicas"), "{message}");

    // The pods come up: the deployment controller reports them, and the Deployment change
    // brings the next reconcile.
    roll_out(&cluster.env, NAME).await;
    cluster.reconcile().await.unwrap();
    let object = cluster.object().await;
    assert_eq!(state(&object, "Available"), ("True", "Reconciling"));
}

async fn a_size_change_converges(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.converged(1).await;
    cluster.edit_object(json!({ "spec": { "size": 3 } })).await;
    cluster.reconcile().await.unwrap();
    assert_eq!(cluster.replicas().await, Some(3));
    // The user asked for it: the status says so, no event (a write per object) repeats it.
    assert_eq!(cluster.recorded("Resized").await, 0);
    // Until the new pods are up, the object says it is resizing.
    let object = cluster.object().await;
    assert_eq!(state(&object, "Available"), ("False", "Resizing"));
    roll_out(&cluster.env, NAME).await;
    cluster.reconcile().await.unwrap();
    let object = cluster.object().await;
    let available = condition(&object, "Available").unwrap();
    let message = &available.message;
    assert!(message.contains("all 3 replicas"), "{message}");
    assert_eq!(available.observed_generation, Some(2));
}

async fn an_empty_image_is_reported_as_misconfigured(env: TestEnv) {
    let cluster = Cluster::new(env);
    // As `MEMCACHED_IMAGE=` in the manager's environment would give it.
    let controller = with_image(&cluster.shared, Some(""));
    cluster.create(1).await;
    let object = Arc::new(cluster.object().await);
    controller.reconcile(object).await.unwrap(); // adds the finalizer
    let object = Arc::new(cluster.object().await);
    let err = controller.reconcile(object).await.expect_err("no image");
    assert!(err.to_string().contains(IMAGE_ENV), "{err}");
    let object = cluster.object().await;
    assert_eq!(state(&object, "Degraded"), ("True", "Misconfigured"));
    assert_eq!(cluster.recorded("Misconfigured").await, 1);
    assert!(cluster.deployment().await.is_none());
}

async fn a_deployment_controlled_by_something_else_is_left_alone(env: TestEnv) {
    let cluster = Cluster::new(env);
    let theirs: Deployment = serde_json::from_value(json!({
        "metadata": { "name": NAME },
        "spec": {
            "replicas": 7,
            "selector": { "matchLabels": { "app": "theirs" } },
            "template": {
                "metadata": { "labels": { "app": "theirs" } },
                "spec": { "containers": [{ "name": "app", "image": "example.com/theirs:1" }] },
            },
        },
    }))
    .unwrap();
    let params = PostParams::default();
    cluster.deployments.create(&params, &theirs).await.unwrap();
    cluster.create(2).await;
    cluster.reconcile().await.unwrap();
    let err = cluster.reconcile().await.expect_err("not ours");
    assert!(err.to_string().contains("delete or rename"), "{err}");
    let object = cluster.object().await;
    assert_eq!(state(&object, "Degraded"), ("True", "DeploymentNotOwned"));
    assert_eq!(cluster.recorded("DeploymentNotOwned").await, 1);
    // Each retry is logged, but the status and the event already say it: no write repeats them.
    cluster.env.requests.clear();
    cluster.reconcile().await.expect_err("still not ours");
    let requests = &cluster.env.requests;
    assert_eq!(requests.writes("events"), 0, "{:?}", cluster.requests());
    let status_writes = requests.writes("memcacheds/status");
    assert_eq!(status_writes, 0, "{:?}", cluster.requests());
    let deployment = cluster.deployment().await.unwrap();
    assert_eq!(deployment.spec.replicas, Some(7), "left as it was");
    assert!(deployment.owner_references().is_empty());
}

async fn any_valid_name_and_image_tag_work(env: TestEnv) {
    let cluster = Cluster::new(env);
    // The longest valid name (a DNS subdomain of 253 characters), and a tag that is no valid
    // label value as it is.
    let name = format!("{}.{}", "a".repeat(126), "b".repeat(126));
    let controller = with_image(&cluster.shared, Some("example.com/operand:_1.6"));
    let object = Memcached::new(&name, spec(1));
    let params = PostParams::default();
    cluster.objects.create(&params, &object).await.unwrap();
    for _ in 0..2 {
        let object = cluster.objects.get(&name).await.unwrap();
        controller.reconcile(Arc::new(object)).await.unwrap();
    }
    let deployments = cluster.deployments.list(&ListParams::default()).await;
    let deployments = deployments.unwrap().items;
    let [deployment] = deployments.as_slice() else {
        panic!("one Deployment: {deployments:?}")
    };
    for (key, value) in deployment.labels() {
        assert!(value.len() <= 63, "{key}={value}");
        let first = value.chars().next();
        assert!(
            first.is_some_and(|c| c.is_ascii_alphanumeric()),
            "{key}={value}"
        );
    }
    assert!(deployment.name_any().len() <= 63);
    let object = cluster.objects.get(&name).await.unwrap();
    assert_eq!(condition(&object, "Degraded").unwrap().status, "False");
}

async fn a_deployment_scaled_by_hand_is_restored(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.converged(2).await;
    // Twice: the second event, the same, continues the first one's series.
    for scaled in [5, 5] {
        let scale = json!({ "spec": { "replicas": scaled } });
        cluster.edit_deployment(scale).await;
        cluster.reconcile().await.unwrap();
        assert_eq!(cluster.replicas().await, Some(2));
    }
    assert_eq!(cluster.recorded("Resized").await, 1);
}

async fn a_deployment_deleted_by_hand_is_recreated(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.converged(2).await;
    let params = DeleteParams::default();
    cluster.deployments.delete(NAME, &params).await.unwrap();
    assert!(cluster.deployment().await.is_none());
    cluster.reconcile().await.unwrap();
    assert_eq!(cluster.replicas().await, Some(2));
}

async fn deletion_runs_the_finalizer_then_the_deployment_is_collected(env: TestEnv) {
    let cluster = Cluster::new(env);
    let object = cluster.converged(1).await;
    let params = DeleteParams::default();
    cluster.objects.delete(NAME, &params).await.unwrap();
    let deleting = cluster.object().await;
    let timestamp = &deleting.metadata.deletion_timestamp;
    assert!(timestamp.is_some(), "the finalizer holds the object");

    // The cleanup says it is done (Degraded=True), then the finalizer goes: fail the status
    // write, then the finalizer's removal, to see each in turn.
    let requests = &cluster.env.requests;
    requests.fail_next(Verb::Patch, "memcacheds/status", 500, 1);
    assert!(cluster.reconcile().await.is_err());
    assert!(cluster.object().await.metadata.deletion_timestamp.is_some());
    assert_eq!(cluster.recorded("Deleting").await, 1);

    requests.fail_next(Verb::Patch, "memcacheds", 500, 1);
    assert!(cluster.reconcile().await.is_err());
    let finalized = cluster.object().await;
    assert_eq!(state(&finalized, "Degraded"), ("True", "Finalizing"));

    cluster.reconcile().await.unwrap();
    let gone = cluster.objects.get_opt(NAME).await.unwrap();
    assert!(gone.is_none(), "the object is gone");
    if cluster.env.collects_garbage() {
        eventually("the Deployment garbage-collected", WAIT, || async {
            cluster.deployment().await.is_none()
        })
        .await;
    } else {
        // No garbage collector runs: check what it would act on.
        let deployment = cluster.deployment().await.unwrap();
        assert_eq!(deployment.owner_references()[0].uid, object.uid().unwrap());
    }
}

/// `make manifests` writes the role from `Context::rules` and `RULES`: they must grant all that
/// the controller's runtime does for what `controller` declares (a kind it owns or watches).
async fn the_role_grants_what_the_controller_does(env: TestEnv) {
    let cluster = Cluster::new(env);
    let declared = Context::rules().with(RULES);
    assert_eq!(
        declared.missing(&cluster.controller.rules()),
        Rules::default(),
        "declare these in Context::rules (or RULES), then run `make manifests`"
    );
}

async fn the_real_controller_loop_converges_and_shuts_down(env: TestEnv) {
    let cluster = Cluster::new(env);
    let _pods = Workloads::start(&cluster.env);
    let shared = cluster.shared.clone();
    let ctx = Context::with_image(&shared, Some(IMAGE.into()));
    let controller = tokio::spawn(controller(&shared, ctx).run());
    cluster.create(2).await;

    eventually("the Deployment at size 2", WAIT, || async {
        cluster.replicas().await == Some(2)
    })
    .await;
    eventually("Available=True", WAIT, || async {
        let object = cluster.object().await;
        condition(&object, "Available").is_some_and(|c| c.status == "True")
    })
    .await;
    cluster
        .edit_deployment(json!({ "spec": { "replicas": 1 } }))
        .await;
    eventually("the hand-scaled Deployment restored to 2", WAIT, || async {
        cluster.replicas().await == Some(2)
    })
    .await;

    let params = DeleteParams::default();
    cluster.objects.delete(NAME, &params).await.unwrap();
    let objects = &cluster.objects;
    eventually("the object gone", WAIT, || async {
        objects.get_opt(NAME).await.unwrap().is_none()
    })
    .await;
    if cluster.env.collects_garbage() {
        eventually("its Deployment gone", WAIT, || async {
            cluster.deployment().await.is_none()
        })
        .await;
    }

    shared.shutdown().trigger();
    let stopped = tokio::time::timeout(Duration::from_secs(5), controller).await;
    let stopped = stopped.expect("the controller stops on shutdown");
    stopped.unwrap().unwrap();
}

/// The CRD's schema, as the real API server enforces it (the in-memory one does not validate).
#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn the_crd_refuses_invalid_objects() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    // As JSON, since the typed object cannot even hold some of these.
    let resource = ApiResource::erase::<Memcached>(&());
    let objects: Api<DynamicObject> =
        Api::namespaced_with(env.admin.clone(), &env.namespace, &resource);
    let invalid = [
        ("size-0", json!({ "size": 0 }), "spec.size"),
        ("size-4", json!({ "size": 4 }), "spec.size"),
        ("size-two", json!({ "size": "two" }), "spec.size"),
        ("no-spec", json!(null), "spec"),
    ];
    for (name, spec, field) in invalid {
        let object = json!({
            "apiVersion": Memcached::api_version(&()),
            "kind": Memcached::kind(&()),
            "metadata": { "name": name },
            "spec": spec,
        });
        let object: DynamicObject = serde_json::from_value(object).unwrap();
        let params = PostParams::default();
        let err = objects.create(&params, &object).await.expect_err(name);
        assert!(err.to_string().contains(field), "{name}: {err}");
    }
}
