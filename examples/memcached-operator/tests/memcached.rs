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

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ResourceQuota;
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
    Context, FINALIZER, IMAGE_ENV, RESYNC, controller, desired_deployment,
};
use memop_runtime::controller::{self, APPLIED_HASH, Controller, Error};
use memop_runtime::manager::Shared;

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
    a_stuck_rollout_is_reported_degraded,
    available_is_not_claimed_while_new_pods_fail,
    an_empty_image_is_reported_as_misconfigured,
    a_deployment_controlled_by_something_else_is_left_alone,
    a_missing_status_subresource_is_an_error,
    any_valid_name_and_image_tag_work,
    a_reconcile_that_hangs_times_out,
    a_deployment_scaled_by_hand_is_restored,
    a_deployment_deleted_by_hand_is_recreated,
    a_reconcile_in_steady_state_writes_nothing,
    an_object_older_than_the_last_status_write_is_not_reconciled,
    a_new_image_rolls_out_a_few_deployments_at_a_time,
    unhealthy_deployments_do_not_hold_back_a_new_image,
    a_resize_writes_the_status_twice_not_once_per_pod,
    deletion_runs_the_finalizer_then_the_deployment_is_collected,
    a_failed_deployment_write_is_reported_and_retried,
    a_throttled_deployment_write_is_reported_and_retried,
    a_failed_status_write_is_retried_without_touching_the_deployment_again,
    a_throttled_status_write_is_retried_without_touching_the_deployment_again,
    an_object_deleted_before_its_reconcile_is_left_alone,
    failures_back_off_exponentially,
    the_real_controller_loop_converges_and_shuts_down,
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
        let patch = Patch::Merge(patch);
        self.objects
            .patch(NAME, &PatchParams::default(), &patch)
            .await
            .unwrap();
    }

    /// Changes the Deployment behind the controller's back, with a JSON merge patch.
    async fn edit_deployment(&self, patch: serde_json::Value) {
        let patch = Patch::Merge(patch);
        self.deployments
            .patch(NAME, &PatchParams::default(), &patch)
            .await
            .unwrap();
    }

    /// Writes the Deployment's status as the deployment controller would, with a merge patch
    /// (only where no deployment controller runs: [`TestEnv::rolls_out`]).
    async fn edit_deployment_status(&self, patch: serde_json::Value) {
        assert!(
            !self.env.rolls_out(),
            "the deployment controller would write it back"
        );
        let patch = Patch::Merge(patch);
        self.deployments
            .patch_status(NAME, &PatchParams::default(), &patch)
            .await
            .unwrap();
    }

    /// Fills the namespace's pod quota with the `pods` that run: from now on the API server
    /// refuses new pods, as in a namespace whose quota is used up (where the deployment
    /// controller runs).
    async fn fill_pod_quota(&self, pods: i32) {
        let quotas: Api<ResourceQuota> =
            Api::namespaced(self.env.admin.clone(), &self.env.namespace);
        let quota = json!({ "metadata": { "name": "pods" }, "spec": { "hard": { "pods": pods.to_string() } } });
        let quota = serde_json::from_value(quota).unwrap();
        quotas.create(&PostParams::default(), &quota).await.unwrap();
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
        list.items
            .iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .count()
    }
}

/// The status and reason of condition `type_`, which must be set.
/// The controller, with the operand image given (`None` or empty: not configured).
fn with_image(shared: &Shared, image: Option<&str>) -> Arc<Controller<Context>> {
    let ctx = Context::with_image(shared, image.map(String::from));
    Arc::new(controller(shared, ctx))
}

fn state<'a>(object: &'a Memcached, type_: &str) -> (&'a str, &'a str) {
    let condition = condition(object, type_).unwrap_or_else(|| panic!("no {type_} condition"));
    (condition.status.as_str(), condition.reason.as_str())
}

fn condition<'a>(object: &'a Memcached, type_: &str) -> Option<&'a Condition> {
    object
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

fn replicas(deployment: &Deployment) -> Option<i32> {
    deployment.spec.replicas
}

async fn create_makes_the_deployment_exactly_right(env: TestEnv) {
    let cluster = Cluster::new(env);
    let object = cluster.converged(2).await;
    assert_eq!(object.finalizers(), [FINALIZER.to_string()]);
    let reads = cluster
        .requests()
        .into_iter()
        .filter(|r| r.verb == Verb::Get)
        .count();
    assert_eq!(
        reads, 0,
        "the controller reads its cache, not the API server"
    );

    let deployment = cluster.deployment().await.expect("the Deployment exists");
    let spec = &deployment.spec;
    assert_eq!(spec.replicas, Some(2));
    let owner = &deployment.owner_references()[0];
    assert_eq!(owner.uid, object.uid().unwrap());
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.controller,
            owner.block_owner_deletion
        ),
        ("Memcached", Some(true), Some(true))
    );
    let labels = deployment.labels();
    assert_eq!(labels["app.kubernetes.io/instance"], NAME);
    assert_eq!(labels["app.kubernetes.io/managed-by"], "memcached-operator");
    assert_eq!(
        spec.selector.match_labels.as_ref().unwrap()["app.kubernetes.io/instance"],
        NAME
    );

    let pod = spec.template.spec.as_ref().unwrap();
    let pod_security = pod.security_context.as_ref().unwrap();
    assert_eq!(pod_security.run_as_non_root, Some(true));
    assert_eq!(
        pod_security.seccomp_profile.as_ref().unwrap().type_,
        "RuntimeDefault"
    );
    let container = &pod.containers[0];
    assert_eq!(container.image.as_deref(), Some(IMAGE));
    let port = &container.ports.as_ref().unwrap()[0];
    assert_eq!(
        (port.container_port, port.name.as_deref()),
        (11211, Some("memcached"))
    );
    let command = container.command.as_ref().unwrap().join(" ");
    assert_eq!(command, "memcached --memory-limit=64 -o modern -v");
    let security = container.security_context.as_ref().unwrap();
    assert_eq!(security.run_as_non_root, Some(true));
    assert_eq!(security.run_as_user, Some(1001));
    assert_eq!(security.allow_privilege_escalation, Some(false));
    assert_eq!(
        security
            .capabilities
            .as_ref()
            .unwrap()
            .drop
            .as_deref()
            .unwrap(),
        ["ALL"]
    );

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
    let available = condition(&object, "Available").unwrap();
    assert!(
        available.message.contains("rolling out 2 replicas"),
        "{}",
        available.message
    );

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
    assert_eq!(replicas(&cluster.deployment().await.unwrap()), Some(3));
    // The user asked for it: the status says so, no event (a write per object) repeats it.
    assert_eq!(cluster.recorded("Resized").await, 0);
    // Until the new pods are up, the object says it is resizing.
    let object = cluster.object().await;
    assert_eq!(state(&object, "Available"), ("False", "Resizing"));
    roll_out(&cluster.env, NAME).await;
    cluster.reconcile().await.unwrap();
    let object = cluster.object().await;
    let available = condition(&object, "Available").unwrap();
    assert!(
        available.message.contains("all 3 replicas"),
        "{}",
        available.message
    );
    assert_eq!(available.observed_generation, Some(2));
    // Resized with a patch of its replicas, the Deployment is in sync: nothing to write.
    cluster.env.requests.clear();
    cluster.reconcile().await.unwrap();
    assert_eq!(cluster.env.requests.writes("*"), 0);
}

async fn a_stuck_rollout_is_reported_degraded(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.converged(2).await;
    let failure = if cluster.env.rolls_out() {
        // A third pod is asked for, and the quota refuses it: the ReplicaSet reports it failed
        // (a progress deadline, 10 minutes by default, is too long to wait for here).
        cluster.fill_pod_quota(2).await;
        cluster.edit_object(json!({ "spec": { "size": 3 } })).await;
        "FailedCreate"
    } else {
        // The deployment controller gives up: the new pods never came up in time.
        let stuck = json!({ "status": { "conditions": [{
            "type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
            "message": "ReplicaSet has timed out progressing.",
        }]}});
        cluster.edit_deployment_status(stuck).await;
        "ProgressDeadlineExceeded"
    };
    // Reconciled as the Deployment's changes come (the deployment controller's take a while).
    eventually("the rollout reported failed", WAIT, || async {
        cluster.reconcile().await.unwrap();
        condition(&cluster.object().await, "Degraded").is_some_and(|c| c.status == "True")
    })
    .await;
    let object = cluster.object().await;
    assert_eq!(state(&object, "Degraded"), ("True", "RolloutFailed"));
    assert_eq!(state(&object, "Available"), ("False", "RolloutFailed"));
    let degraded = condition(&object, "Degraded").unwrap();
    assert!(degraded.message.contains(failure), "{}", degraded.message);
}

async fn available_is_not_claimed_while_new_pods_fail(env: TestEnv) {
    let mut cluster = Cluster::new(env);
    cluster.converged(2).await;
    // A rolling update: the old pods still serve, the new ReplicaSet's do not come up.
    if cluster.env.rolls_out() {
        // To a new image, whose pods the full quota refuses.
        cluster.fill_pod_quota(2).await;
        let image = format!("{IMAGE}-new");
        cluster.controller = with_image(&cluster.shared, Some(&image));
        cluster.reconcile().await.unwrap();
        let deployments = &cluster.deployments;
        eventually(
            "the deployment controller to see the new spec",
            WAIT,
            || async {
                let deployment = deployments.get(NAME).await.unwrap();
                let status = deployment.status.unwrap_or_default();
                status.observed_generation == deployment.metadata.generation
            },
        )
        .await;
        let status = cluster.deployment().await.unwrap().status.unwrap();
        assert_eq!(
            status.available_replicas,
            Some(2),
            "the old pods still serve"
        );
    } else {
        let rolling = json!({ "status": {
            "replicas": 3, "updatedReplicas": 1, "readyReplicas": 2, "availableReplicas": 2,
        }});
        cluster.edit_deployment_status(rolling).await;
    }
    cluster.reconcile().await.unwrap();
    let object = cluster.object().await;
    assert_eq!(condition(&object, "Available").unwrap().status, "False");
}

async fn an_empty_image_is_reported_as_misconfigured(env: TestEnv) {
    let cluster = Cluster::new(env);
    // As `MEMCACHED_IMAGE=` in the manager's environment would give it.
    let controller = with_image(&cluster.shared, Some(""));
    cluster.create(1).await;
    controller
        .reconcile(Arc::new(cluster.object().await))
        .await
        .unwrap();
    let err = controller
        .reconcile(Arc::new(cluster.object().await))
        .await
        .expect_err("nothing can be deployed without an image");
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
    cluster
        .deployments
        .create(&PostParams::default(), &theirs)
        .await
        .unwrap();
    cluster.create(2).await;
    cluster.reconcile().await.unwrap();
    let err = cluster
        .reconcile()
        .await
        .expect_err("the Deployment is not ours");
    assert!(err.to_string().contains("delete or rename"), "{err}");
    let object = cluster.object().await;
    assert_eq!(state(&object, "Degraded"), ("True", "DeploymentNotOwned"));
    assert_eq!(cluster.recorded("DeploymentNotOwned").await, 1);
    // Each retry is logged, but the status and the event already say it: no write repeats them.
    cluster.env.requests.clear();
    cluster.reconcile().await.expect_err("still not ours");
    assert_eq!(
        cluster.env.requests.writes("events"),
        0,
        "{:?}",
        cluster.requests()
    );
    assert_eq!(
        cluster.env.requests.writes("memcacheds/status"),
        0,
        "{:?}",
        cluster.requests()
    );
    let deployment = cluster.deployment().await.unwrap();
    assert_eq!(replicas(&deployment), Some(7), "left as it was");
    assert!(deployment.owner_references().is_empty());
}

async fn a_missing_status_subresource_is_an_error(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.create(2).await;
    cluster.reconcile().await.unwrap();
    // A 404 that does not name the object: what a CRD without the status subresource gives.
    cluster
        .env
        .requests
        .fail_next(Verb::Patch, "memcacheds/status", 404, 1);
    let err = cluster
        .reconcile()
        .await
        .expect_err("a status that was not written is no success");
    assert!(err.to_string().contains("404"), "{err}");
}

async fn any_valid_name_and_image_tag_work(env: TestEnv) {
    let cluster = Cluster::new(env);
    // The longest valid name (a DNS subdomain of 253 characters), and a tag that is no valid
    // label value as it is.
    let name = format!("{}.{}", "a".repeat(126), "b".repeat(126));
    let controller = with_image(&cluster.shared, Some("example.com/operand:_1.6"));
    let object = Memcached::new(&name, spec(1));
    cluster
        .objects
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
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
        assert!(
            value.starts_with(|c: char| c.is_ascii_alphanumeric()),
            "{key}={value}"
        );
    }
    assert!(deployment.name_any().len() <= 63);
    let object = cluster.objects.get(&name).await.unwrap();
    assert_eq!(condition(&object, "Degraded").unwrap().status, "False");
}

async fn a_reconcile_that_hangs_times_out(env: TestEnv) {
    let mut cluster = Cluster::new(env);
    cluster.create(2).await;
    cluster.reconcile().await.unwrap();
    // The short time limit only from here: a busy control plane may take longer to answer the
    // finalizer's write.
    cluster.shared = cluster
        .shared
        .clone()
        .with_reconcile_timeout(Duration::from_millis(300));
    cluster.controller = with_image(&cluster.shared, Some(IMAGE));
    // The Deployment write does not answer (a half-open connection, say).
    cluster
        .env
        .requests
        .delay_next(Verb::Patch, "deployments", Duration::from_secs(30));
    let started = std::time::Instant::now();
    let err = cluster
        .reconcile()
        .await
        .expect_err("the reconcile gives up");
    assert!(err.to_string().contains("did not finish"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

async fn a_deployment_scaled_by_hand_is_restored(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.converged(2).await;
    // Twice: the second event, the same, continues the first one's series.
    for scaled in [5, 5] {
        cluster
            .edit_deployment(json!({ "spec": { "replicas": scaled } }))
            .await;
        cluster.reconcile().await.unwrap();
        assert_eq!(replicas(&cluster.deployment().await.unwrap()), Some(2));
    }
    assert_eq!(cluster.recorded("Resized").await, 1);
}

async fn a_deployment_deleted_by_hand_is_recreated(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.converged(2).await;
    cluster
        .deployments
        .delete(NAME, &DeleteParams::default())
        .await
        .unwrap();
    assert!(cluster.deployment().await.is_none());
    cluster.reconcile().await.unwrap();
    assert_eq!(replicas(&cluster.deployment().await.unwrap()), Some(2));
}

async fn a_reconcile_in_steady_state_writes_nothing(env: TestEnv) {
    let cluster = Cluster::new(env);
    let before = cluster.converged(2).await;
    let deployment = cluster.deployment().await.unwrap();
    cluster.env.requests.clear();
    assert_eq!(cluster.reconcile().await.unwrap(), cluster.resync().await);
    let requests = cluster.requests();
    assert!(
        requests.is_empty(),
        "the cache answers, nothing is written: {requests:?}"
    );
    // Nothing changed on the server either.
    assert_eq!(
        cluster.object().await.resource_version(),
        before.resource_version()
    );
    assert_eq!(
        cluster.deployment().await.unwrap().resource_version(),
        deployment.resource_version()
    );
}

/// The Controller's cache can hand over an object older than the controller's own last status
/// write (while that write's watch event is on its way): reconciling it would write the same
/// status again.
async fn an_object_older_than_the_last_status_write_is_not_reconciled(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.create(2).await;
    cluster.reconcile().await.unwrap(); // adds the finalizer
    let stale = cluster.object().await;
    cluster.reconcile().await.unwrap(); // creates the Deployment, writes the status
    cluster.env.requests.clear();
    cluster.controller.reconcile(Arc::new(stale)).await.unwrap();
    let requests = cluster.requests();
    assert!(requests.is_empty(), "{requests:?}");
    // The object as it is now is reconciled as usual.
    roll_out(&cluster.env, NAME).await;
    cluster.reconcile().await.unwrap();
    assert_eq!(
        state(&cluster.object().await, "Available"),
        ("True", "Reconciling")
    );
}

/// A new operand image (the operator's own change: the objects' specs are the same) rolls out
/// to at most `--max-concurrent-rollouts` Deployments at a time, and says so on those that
/// wait; a resize the user asks for meanwhile is not held back.
async fn a_new_image_rolls_out_a_few_deployments_at_a_time(env: TestEnv) {
    let cluster = &Cluster::new(env);
    let names = ["first", "second", "third"];
    let image = |name: &'static str| async move {
        let deployment = cluster.deployments.get(name).await.unwrap();
        let pod = deployment.spec.template.spec.unwrap();
        pod.containers[0].image.clone().unwrap()
    };
    // One reconcile of `name` by `controller`, once its cache holds the Deployment as it is.
    let reconcile_with = |controller: Arc<Controller<Context>>, name: &'static str| async move {
        let cache = controller.reconciler().deployments().cache();
        eventually(
            "the cache to hold the Deployment as it is",
            WAIT,
            || async {
                let live = cluster.deployments.get_opt(name).await.unwrap();
                let live = live.and_then(|d| d.metadata.resource_version);
                let cached = cache.get(&cluster.env.namespace, name).await;
                cached.and_then(|d| d.metadata.resource_version.clone()) == live
            },
        )
        .await;
        let object = cluster.objects.get(name).await.unwrap();
        controller.reconcile(Arc::new(object)).await.unwrap()
    };
    for name in names {
        let object = Memcached::new(name, spec(1));
        cluster
            .objects
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
        reconcile_with(cluster.controller.clone(), name).await; // the finalizer
        reconcile_with(cluster.controller.clone(), name).await; // the Deployment
        roll_out(&cluster.env, name).await;
        reconcile_with(cluster.controller.clone(), name).await; // Available
    }

    // The operator restarts with a new image, one rollout at a time.
    let shared = cluster.shared.clone().with_max_concurrent_rollouts(1);
    let new_image = format!("{IMAGE}-new");
    let controller = with_image(&shared, Some(&new_image));
    reconcile_with(controller.clone(), "first").await;
    assert_eq!(image("first").await, new_image);
    let waits = reconcile_with(controller.clone(), "second").await;
    assert_eq!(
        image("second").await,
        IMAGE,
        "the second waits for the first"
    );
    assert_ne!(waits, Action::await_change(), "it comes back to try again");
    let second = cluster.objects.get("second").await.unwrap();
    assert_eq!(state(&second, "Degraded"), ("False", "RolloutWaiting"));
    assert_eq!(state(&second, "Available"), ("True", "Reconciling"));

    // The user resizes the third meanwhile: the size changes at once, the image waits.
    cluster
        .objects
        .patch(
            "third",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "size": 2 } })),
        )
        .await
        .unwrap();
    reconcile_with(controller.clone(), "third").await;
    assert_eq!(
        replicas(&cluster.deployments.get("third").await.unwrap()),
        Some(2)
    );
    assert_eq!(image("third").await, IMAGE);

    // Once the first has rolled out, the next goes.
    roll_out(&cluster.env, "first").await;
    reconcile_with(controller.clone(), "first").await;
    reconcile_with(controller.clone(), "second").await;
    assert_eq!(image("second").await, new_image);
}

/// Deployments that are unhealthy for reasons of their own (a progress deadline passed) take
/// no place among the rollouts: a new image still reaches the others.
async fn unhealthy_deployments_do_not_hold_back_a_new_image(env: TestEnv) {
    let cluster = Cluster::new(env);
    if cluster.env.rolls_out() {
        // The deployment controller owns the status there: the stand-in is in memory only.
        return;
    }
    cluster.converged(1).await;
    let stuck = json!({ "status": { "conditions": [{
        "type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
        "message": "ReplicaSet has timed out progressing.",
    }]}});
    cluster.edit_deployment_status(stuck).await;
    let shared = cluster.shared.clone().with_max_concurrent_rollouts(1);
    let old = with_image(&shared, Some(IMAGE));
    // The controller sees the failed rollout (one it did not start).
    let object = Arc::new(cluster.object().await);
    old.reconcile(object).await.unwrap();
    assert_eq!(
        state(&cluster.object().await, "Degraded"),
        ("True", "RolloutFailed")
    );

    // A second object, healthy; then a new image, applied to it at once.
    let other = Memcached::new("other", spec(1));
    cluster
        .objects
        .create(&PostParams::default(), &other)
        .await
        .unwrap();
    for _ in 0..2 {
        let object = cluster.objects.get("other").await.unwrap();
        old.reconcile(Arc::new(object)).await.unwrap();
    }
    roll_out(&cluster.env, "other").await;
    let new_image = format!("{IMAGE}-new");
    let new = with_image(&shared, Some(&new_image));
    let cache = new.reconciler().deployments().cache();
    eventually("the new cache to list", WAIT, || async {
        cache.get(&cluster.env.namespace, "other").await.is_some()
    })
    .await;
    let object = cluster.objects.get("other").await.unwrap();
    new.reconcile(Arc::new(object)).await.unwrap();
    let deployment = cluster.deployments.get("other").await.unwrap();
    let pod = deployment.spec.template.spec.unwrap();
    assert_eq!(pod.containers[0].image.as_deref(), Some(new_image.as_str()));
}

/// A resize reports that it is under way once, and that it is done once: not a status write
/// per pod that comes up (each one a watch event for every watcher of Memcacheds).
async fn a_resize_writes_the_status_twice_not_once_per_pod(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.converged(1).await;
    cluster.edit_object(json!({ "spec": { "size": 3 } })).await;
    cluster.env.requests.clear();
    cluster.reconcile().await.unwrap();
    if cluster.env.rolls_out() {
        roll_out(&cluster.env, NAME).await;
    } else {
        // The pods come up one at a time.
        for available in 1..3 {
            let status = json!({ "status": {
                "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3,
                "readyReplicas": available, "availableReplicas": available,
            }});
            cluster.edit_deployment_status(status).await;
            cluster.reconcile().await.unwrap();
        }
        roll_out(&cluster.env, NAME).await;
    }
    cluster.reconcile().await.unwrap();
    assert_eq!(
        state(&cluster.object().await, "Available"),
        ("True", "Reconciling")
    );
    assert_eq!(cluster.env.requests.writes("memcacheds/status"), 2);
}

async fn deletion_runs_the_finalizer_then_the_deployment_is_collected(env: TestEnv) {
    let cluster = Cluster::new(env);
    let object = cluster.converged(1).await;
    cluster
        .objects
        .delete(NAME, &DeleteParams::default())
        .await
        .unwrap();
    let deleting = cluster.object().await;
    assert!(
        deleting.metadata.deletion_timestamp.is_some(),
        "the finalizer holds the object"
    );

    // The cleanup says it is done (Degraded=True), then the finalizer goes: fail the status
    // write, then the finalizer's removal, to see each in turn.
    cluster
        .env
        .requests
        .fail_next(Verb::Patch, "memcacheds/status", 500, 1);
    assert!(cluster.reconcile().await.is_err());
    assert!(cluster.object().await.metadata.deletion_timestamp.is_some());
    assert_eq!(cluster.recorded("Deleting").await, 1);

    cluster
        .env
        .requests
        .fail_next(Verb::Patch, "memcacheds", 500, 1);
    assert!(cluster.reconcile().await.is_err());
    let finalized = cluster.object().await;
    assert_eq!(state(&finalized, "Degraded"), ("True", "Finalizing"));

    cluster.reconcile().await.unwrap();
    assert!(
        cluster.objects.get_opt(NAME).await.unwrap().is_none(),
        "the object is gone"
    );
    if cluster.env.collects_garbage() {
        let deployments = &cluster.deployments;
        eventually("the Deployment garbage-collected", WAIT, || async {
            deployments.get_opt(NAME).await.unwrap().is_none()
        })
        .await;
    } else {
        // No garbage collector runs: check what it would act on.
        let deployment = cluster.deployment().await.unwrap();
        assert_eq!(deployment.owner_references()[0].uid, object.uid().unwrap());
    }
}

async fn a_failed_deployment_write_is_reported_and_retried(env: TestEnv) {
    failed_deployment_write(env, 500).await
}

async fn a_throttled_deployment_write_is_reported_and_retried(env: TestEnv) {
    failed_deployment_write(env, 429).await
}

/// A write that fails with `code`: 500, or 429 from API Priority and Fairness. (A 409 cannot
/// happen: every write is a forced server-side apply or a JSON patch guarded by a `test`.)
async fn failed_deployment_write(env: TestEnv, code: u16) {
    let cluster = Cluster::new(env);
    cluster.create(2).await;
    cluster.reconcile().await.unwrap(); // adds the finalizer
    cluster
        .env
        .requests
        .fail_next(Verb::Patch, "deployments", code, 1);
    let err = cluster
        .reconcile()
        .await
        .expect_err("the injected failure surfaces");
    assert!(err.to_string().contains(&code.to_string()), "{err}");
    assert!(
        cluster.deployment().await.is_none(),
        "no Deployment was half-written"
    );
    let object = cluster.object().await;
    assert_eq!(condition(&object, "Available").unwrap().status, "False");
    assert_eq!(condition(&object, "Degraded").unwrap().status, "True");

    cluster.reconcile().await.unwrap();
    assert_eq!(replicas(&cluster.deployment().await.unwrap()), Some(2));
    roll_out(&cluster.env, NAME).await;
    cluster.reconcile().await.unwrap();
    let object = cluster.object().await;
    assert_eq!(condition(&object, "Available").unwrap().status, "True");
    assert_eq!(condition(&object, "Degraded").unwrap().status, "False");
}

async fn a_failed_status_write_is_retried_without_touching_the_deployment_again(env: TestEnv) {
    failed_status_write(env, 500).await
}

async fn a_throttled_status_write_is_retried_without_touching_the_deployment_again(env: TestEnv) {
    failed_status_write(env, 429).await
}

async fn failed_status_write(env: TestEnv, code: u16) {
    let cluster = Cluster::new(env);
    cluster.create(2).await;
    cluster.reconcile().await.unwrap();
    // The status write after the apply fails.
    cluster
        .env
        .requests
        .fail_next(Verb::Patch, "memcacheds/status", code, 1);
    assert!(cluster.reconcile().await.is_err());
    let object = cluster.object().await;
    assert!(object.status.is_none_or(|s| s.conditions.is_empty()));
    assert!(cluster.deployment().await.is_some());

    roll_out(&cluster.env, NAME).await;
    cluster.env.requests.clear();
    cluster.reconcile().await.unwrap();
    assert_eq!(
        cluster.env.requests.writes("deployments"),
        0,
        "the Deployment was already right"
    );
    assert_eq!(cluster.env.requests.writes("memcacheds/status"), 1);
    assert_eq!(
        condition(&cluster.object().await, "Available")
            .unwrap()
            .status,
        "True"
    );
}

async fn an_object_deleted_before_its_reconcile_is_left_alone(env: TestEnv) {
    let cluster = Cluster::new(env);
    let stale = Arc::new(cluster.create(2).await);
    cluster
        .objects
        .delete(NAME, &DeleteParams::default())
        .await
        .unwrap();
    let action = cluster.controller.reconcile(stale).await.unwrap();
    assert_eq!(action, Action::await_change());
    assert!(cluster.deployment().await.is_none());
}

async fn failures_back_off_exponentially(env: TestEnv) {
    let cluster = Cluster::new(env);
    let object = Arc::new(cluster.create(1).await);
    let err = Error::Invalid("boom".into());
    let first = cluster.controller.error_policy(&object, &err);
    let second = cluster.controller.error_policy(&object, &err);
    assert_eq!(first, Action::requeue(Duration::from_millis(5)));
    assert_eq!(second, Action::requeue(Duration::from_millis(10)));
}

async fn the_real_controller_loop_converges_and_shuts_down(env: TestEnv) {
    let cluster = Cluster::new(env);
    let _pods = Workloads::start(&cluster.env);
    let shared = cluster.shared.clone();
    let ctx = Context::with_image(&shared, Some(IMAGE.into()));
    let controller = tokio::spawn(controller(&shared, ctx).run());
    cluster.create(2).await;

    let deployments = &cluster.deployments;
    eventually("the Deployment at size 2", WAIT, || async {
        deployments
            .get_opt(NAME)
            .await
            .unwrap()
            .as_ref()
            .and_then(replicas)
            == Some(2)
    })
    .await;
    eventually("Available=True", WAIT, || async {
        let object = cluster.object().await;
        condition(&object, "Available").is_some_and(|c| c.status == "True")
    })
    .await;
    let readiness = shared.readiness();
    eventually("the controller ready once synced", WAIT, || async {
        readiness.check().is_none()
    })
    .await;

    cluster
        .edit_deployment(json!({ "spec": { "replicas": 1 } }))
        .await;
    eventually("the hand-scaled Deployment restored to 2", WAIT, || async {
        deployments
            .get_opt(NAME)
            .await
            .unwrap()
            .as_ref()
            .and_then(replicas)
            == Some(2)
    })
    .await;

    cluster
        .objects
        .delete(NAME, &DeleteParams::default())
        .await
        .unwrap();
    let objects = &cluster.objects;
    eventually("the object gone", WAIT, || async {
        objects.get_opt(NAME).await.unwrap().is_none()
    })
    .await;
    if cluster.env.collects_garbage() {
        eventually("its Deployment gone", WAIT, || async {
            deployments.get_opt(NAME).await.unwrap().is_none()
        })
        .await;
    }

    shared.shutdown().trigger();
    let stopped = tokio::time::timeout(Duration::from_secs(5), controller).await;
    stopped
        .expect("the controller stops on shutdown")
        .unwrap()
        .unwrap();
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
        let err = objects
            .create(&PostParams::default(), &object)
            .await
            .expect_err(name);
        assert!(err.to_string().contains(field), "{name}: {err}");
    }
}

/// Server-side apply prunes what this controller no longer sets: a field that an older version
/// of the operator applied goes at the next reconcile. (Real control plane only: the in-memory
/// server's apply is a merge patch, without field ownership.)
#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn a_field_no_longer_desired_is_pruned() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let cluster = Cluster::new(env);
    cluster.converged(1).await;
    // What an older version applied: one more label, under another hash.
    let mut older = desired_deployment(&cluster.object().await, IMAGE).unwrap();
    older
        .labels_mut()
        .insert("example.com/obsolete".into(), "yes".into());
    older
        .annotations_mut()
        .insert(APPLIED_HASH.into(), "older".into());
    let params = PatchParams::apply("memcached-operator").force();
    cluster
        .deployments
        .patch(NAME, &params, &Patch::Apply(&older))
        .await
        .unwrap();

    cluster.reconcile().await.unwrap();
    let deployment = cluster.deployment().await.unwrap();
    assert!(
        !deployment.labels().contains_key("example.com/obsolete"),
        "pruned: {:?}",
        deployment.labels()
    );
    assert_eq!(cluster.recorded("Updated").await, 1);
    // A new annotation makes a new generation of a Deployment (the deployment controller copies
    // them to its ReplicaSets): `Available` waits until that generation is reported observed,
    // and then nothing is left to write.
    roll_out(&cluster.env, NAME).await;
    cluster.reconcile().await.unwrap();
    cluster.env.requests.clear();
    cluster.reconcile().await.unwrap();
    assert_eq!(cluster.env.requests.writes("*"), 0, "in sync again");
}

/// A Deployment that a mutating admission policy rewrites on the way in (here: its pods always
/// pull their image) is not applied again, with an `Updated` event, by the operator's next
/// process when nothing changed; once the policy is gone, the next process applies it again. (Real control plane only: the in-memory server runs no
/// admission.)
#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn a_restart_does_not_apply_again_what_admission_rewrote_while_it_does() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let policy = format!("{}-pull-always", env.namespace);
    let rewrite = "[JSONPatch{op: 'replace', path: '/spec/template/spec/containers/0/imagePullPolicy', value: 'Always'}]";
    let policy_objects = [
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingAdmissionPolicy",
            "metadata": { "name": policy },
            "spec": {
                "matchConstraints": { "resourceRules": [{
                    "apiGroups": ["apps"], "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"], "resources": ["deployments"],
                }]},
                "failurePolicy": "Fail",
                "reinvocationPolicy": "Never",
                "mutations": [{ "patchType": "JSONPatch", "jsonPatch": { "expression": rewrite } }],
            },
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingAdmissionPolicyBinding",
            "metadata": { "name": policy },
            "spec": {
                "policyName": policy,
                "matchResources": { "namespaceSelector": { "matchLabels": {
                    "kubernetes.io/metadata.name": env.namespace,
                }}},
            },
        }),
    ];
    for object in &policy_objects {
        memop_test::envtest::apply(&env.admin, object).await;
    }
    let cluster = Cluster::new(env);
    let pull_policy = |deployment: &Deployment| {
        let pod = deployment.spec.template.spec.as_ref().unwrap();
        pod.containers[0].image_pull_policy.clone()
    };
    // The policy is in force once a dry run of our Deployment comes back rewritten.
    let mut owner = Memcached::new(NAME, spec(1));
    owner.metadata.uid = Some("a-dry-run".into());
    let probe = desired_deployment(&owner, IMAGE).unwrap();
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    eventually("the admission policy in force", WAIT, || async {
        let created = cluster.deployments.create(&dry_run, &probe).await.unwrap();
        pull_policy(&created).as_deref() == Some("Always")
    })
    .await;

    cluster.converged(1).await;
    let deployment = cluster.deployment().await.unwrap();
    assert_eq!(
        pull_policy(&deployment).as_deref(),
        Some("Always"),
        "rewritten"
    );
    assert_eq!(cluster.recorded("Updated").await, 0);

    // The operator restarts: nothing of the last process is left in memory.
    let shared = Shared::new(
        &memcached_operator::OPERATOR,
        cluster.env.operator.clone(),
        Some(cluster.env.namespace.clone()),
    );
    let controller = with_image(&shared, Some(IMAGE));
    let cluster = Cluster {
        shared,
        controller,
        ..cluster
    };
    cluster.env.requests.clear();
    cluster.reconcile().await.unwrap();
    assert_eq!(
        cluster.env.requests.writes("deployments"),
        0,
        "not applied again"
    );
    assert_eq!(cluster.recorded("Updated").await, 0);

    // The policy goes (a registry mirror decommissioned, say): the next process undoes its
    // rewrite, although the Deployment's annotation still vouches for it.
    let policies = [
        (
            "MutatingAdmissionPolicyBinding",
            "mutatingadmissionpolicybindings",
        ),
        ("MutatingAdmissionPolicy", "mutatingadmissionpolicies"),
    ];
    for (kind, plural) in policies {
        let resource = ApiResource {
            group: "admissionregistration.k8s.io".into(),
            version: "v1".into(),
            api_version: "admissionregistration.k8s.io/v1".into(),
            kind: kind.into(),
            plural: plural.into(),
        };
        Api::<DynamicObject>::all_with(cluster.env.admin.clone(), &resource)
            .delete(&policy, &DeleteParams::default())
            .await
            .unwrap();
    }
    // A dry run of a creation under another name: the Deployment exists now. (The API server
    // drops a policy from admission on its informers' time: a loaded machine takes a while.)
    let mut probe = probe;
    probe.metadata.name = Some(format!("{NAME}-probe"));
    eventually("the admission policy out of force", WAIT * 4, || async {
        let created = cluster.deployments.create(&dry_run, &probe).await.unwrap();
        pull_policy(&created) == pull_policy(&probe)
    })
    .await;
    let shared = Shared::new(
        &memcached_operator::OPERATOR,
        cluster.env.operator.clone(),
        Some(cluster.env.namespace.clone()),
    );
    let cluster = Cluster {
        controller: with_image(&shared, Some(IMAGE)),
        shared,
        ..cluster
    };
    cluster.reconcile().await.unwrap();
    let deployment = cluster.deployment().await.unwrap();
    assert_eq!(
        pull_policy(&deployment),
        pull_policy(&probe),
        "as the controller sets it"
    );
}

/// The controller applies only its own condition types: another writer's condition survives
/// its status writes, and stays that writer's to remove. (Real control plane only: the
/// in-memory server replaces lists whole.)
#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn another_writers_condition_stays_theirs() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let cluster = Cluster::new(env);
    cluster.converged(1).await;
    let theirs = PatchParams::apply("backup-controller");
    let conditions = |conditions: serde_json::Value| {
        Patch::Apply(json!({
            "apiVersion": Memcached::api_version(&()),
            "kind": Memcached::kind(&()),
            "status": { "conditions": conditions },
        }))
    };
    let backed_up = json!([{
        "type": "BackedUp", "status": "True", "reason": "Done", "message": "nightly",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }]);
    let objects = &cluster.objects;
    objects
        .patch_status(NAME, &theirs, &conditions(backed_up))
        .await
        .unwrap();

    // A size change makes the controller write its conditions again.
    cluster.edit_object(json!({ "spec": { "size": 2 } })).await;
    cluster.reconcile().await.unwrap();
    let object = cluster.object().await;
    assert_eq!(state(&object, "Available"), ("False", "Resizing"));
    assert_eq!(state(&object, "BackedUp"), ("True", "Done"));

    objects
        .patch_status(NAME, &theirs, &conditions(json!([])))
        .await
        .unwrap();
    let object = cluster.object().await;
    assert!(
        condition(&object, "BackedUp").is_none(),
        "removed by its writer"
    );
    assert!(condition(&object, "Available").is_some());
}
