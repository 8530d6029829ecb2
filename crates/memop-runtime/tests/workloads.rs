//! A controller that keeps one Deployment per object, as a memop project's operand controller
//! does (the Memcached example's): what the runtime does around every such kind, so that a
//! project's own tests are about its kind. The time limit of a reconcile, failed and throttled
//! writes, a status write of an object the cache hands over stale, rollouts reported and paced,
//! the pruning of a field no longer desired, an admission rewrite not fought, another writer's
//! condition kept.
//!
//! Each scenario runs on the in-memory API server (`in_memory::*`) and, when
//! `KUBEBUILDER_ASSETS` is set, on the real control plane (`real_control_plane::*`) as the
//! operator's own ServiceAccount, with the role and CRD of `tests/fixture_workloads` (which
//! [`rules`] and [`Site`] generate); `ENVTEST_REQUIRED=1` makes that tier mandatory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use memop_runtime::Operator;
use memop_runtime::controller::{self, Builder, Controller, Reconciler, Report, Result, stamp};
use memop_runtime::manager::Shared;
use memop_runtime::operand::{Operand, controller_reference};
use memop_runtime::rbac::{Rules, Scope, role_yaml};
use memop_test::workloads::roll_out;
use memop_test::{TestEnv, Verb, eventually};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

const OPERATOR: Operator = Operator {
    name: "test-operator",
    domain: "example.com",
};

/// The label and field manager of the Deployments the controller keeps.
const MANAGER: &str = "workloads-test";
const FINALIZER: &str = "workloads.example.com/finalizer";
const RESYNC: Duration = Duration::from_secs(300);
const NAME: &str = "site";
/// The operand image (any image: kwok's node runs no container).
const IMAGE: &str = "memcached:1.6.26-alpine3.19";
/// How long a test waits for what happens in the background.
const WAIT: Duration = Duration::from_secs(30);

/// What the controller reads and writes: the rules memop-runtime derives for what it is told
/// (the kind, its finalizer and status, the Deployments it owns).
fn rules() -> Rules {
    Rules::reconciles::<Site>()
        .finalizer()
        .writes_status()
        .owns::<Deployment>()
}

/// The test's kind: a size, and the conditions the controller reports.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "workloads.example.com",
    version = "v1",
    kind = "Site",
    namespaced,
    status = "SiteStatus"
)]
pub struct SiteSpec {
    /// The replicas of its Deployment.
    size: i32,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct SiteStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "memop_runtime::manifests::conditions_schema")]
    conditions: Vec<Condition>,
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture_workloads")
}

/// Each scenario, an `async fn(TestEnv)`, as two tests: `in_memory::<name>` and
/// `real_control_plane::<name>` (which passes at once without a control plane). On the heap:
/// a scenario's future is too large for a test thread's stack in a debug build.
macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        mod in_memory {
            $(
                #[tokio::test]
                async fn $name() {
                    Box::pin(super::$name(memop_test::TestEnv::in_memory())).await
                }
            )*
        }
        mod real_control_plane {
            $(
                #[tokio::test]
                async fn $name() {
                    if let Some(env) = memop_test::TestEnv::real_for(&super::fixture()).await {
                        Box::pin(super::$name(env)).await
                    }
                }
            )*
        }
    };
}

scenarios!(
    a_stuck_rollout_is_reported_degraded,
    available_is_not_claimed_while_new_pods_fail,
    a_missing_status_subresource_is_an_error,
    a_reconcile_that_hangs_times_out,
    a_reconcile_in_steady_state_writes_nothing,
    an_edit_of_a_field_the_cache_keeps_only_a_digest_of_is_put_back,
    an_object_older_than_the_last_status_write_is_not_reconciled,
    a_new_image_rolls_out_a_few_deployments_at_a_time,
    the_rollout_limit_counts_the_rollouts_another_process_started,
    unhealthy_deployments_do_not_hold_back_a_new_image,
    a_resize_writes_the_status_twice_not_once_per_pod,
    a_failed_deployment_write_is_reported_and_retried,
    a_throttled_deployment_write_is_reported_and_retried,
    a_failed_status_write_is_retried_without_touching_the_deployment_again,
    a_throttled_status_write_is_retried_without_touching_the_deployment_again,
    an_object_deleted_before_its_reconcile_is_left_alone,
);

/// The reconciler: one Deployment per Site, of the operand image.
struct Context {
    image: String,
    deployments: Operand,
}

impl Reconciler for Context {
    type Object = Site;

    fn conditions(object: &Site) -> &[Condition] {
        object
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default()
    }

    async fn apply(&self, object: &Site, report: &mut Report) -> Result<Action> {
        let desired = desired_deployment(object, &self.image)?;
        self.deployments
            .ensure(object, desired)
            .await
            .report(report)
    }
}

/// The controller, as a project's `controller` function builds it, with the operand `image`.
fn controller(shared: &Shared, image: &str) -> Arc<Controller<Context>> {
    let ctx = context(shared, image);
    Arc::new(builder(shared, &ctx).build(ctx))
}

/// The controller's context, with the operand `image`.
fn context(shared: &Shared, image: &str) -> Context {
    Context {
        image: image.into(),
        deployments: Operand::deployments(shared, "site deployments", MANAGER),
    }
}

/// The controller's builder, as a project's `controller` function has it before `build`.
fn builder(shared: &Shared, ctx: &Context) -> Builder<Site> {
    Builder::new("sites", shared)
        .finalizer(FINALIZER)
        .field_manager(MANAGER)
        .resync(RESYNC)
        .owns(&ctx.deployments)
}

/// The Deployment of `object`: named after it, `size` replicas of `image`.
fn desired_deployment(object: &Site, image: &str) -> Result<Deployment> {
    let labels = BTreeMap::from([
        ("app.kubernetes.io/instance".to_string(), object.name_any()),
        ("app.kubernetes.io/managed-by".to_string(), MANAGER.into()),
    ]);
    let deployment = json!({
        "metadata": { "name": object.name_any(), "namespace": object.namespace(), "labels": labels },
        "spec": {
            "replicas": object.spec.size,
            "selector": { "matchLabels": { "app.kubernetes.io/instance": object.name_any() } },
            "template": {
                "metadata": { "labels": labels },
                "spec": { "containers": [{
                    "name": "site", "image": image, "imagePullPolicy": "IfNotPresent",
                }] },
            },
        },
    });
    let mut deployment: Deployment = serde_json::from_value(deployment).unwrap();
    deployment.metadata.owner_references = Some(vec![controller_reference(object)?]);
    Ok(stamp(deployment))
}

fn site(name: &str, size: i32) -> Site {
    Site::new(name, SiteSpec { size })
}

/// A test's cluster, with the controller on top of it.
struct Cluster {
    env: TestEnv,
    shared: Shared,
    controller: Arc<Controller<Context>>,
    /// The test's own view, as an administrator.
    objects: Api<Site>,
    deployments: Api<Deployment>,
}

impl Cluster {
    fn new(env: TestEnv) -> Self {
        // The controller watches the test's namespace only: tests run side by side.
        let shared = Shared::new(&OPERATOR, env.operator.clone(), Some(env.namespace.clone()));
        Self {
            controller: controller(&shared, IMAGE),
            shared,
            objects: Api::namespaced(env.admin.clone(), &env.namespace),
            deployments: Api::namespaced(env.admin.clone(), &env.namespace),
            env,
        }
    }

    /// The cluster with a new process of the operator: its `shared` things and a controller
    /// of `image`.
    fn restarted(self, shared: Shared, image: &str) -> Self {
        Self {
            controller: controller(&shared, image),
            shared,
            ..self
        }
    }

    async fn create(&self, size: i32) -> Site {
        self.create_named(NAME, size).await
    }

    async fn create_named(&self, name: &str, size: i32) -> Site {
        let params = PostParams::default();
        self.objects
            .create(&params, &site(name, size))
            .await
            .unwrap()
    }

    async fn object(&self) -> Site {
        self.objects.get(NAME).await.unwrap()
    }

    async fn deployment(&self) -> Option<Deployment> {
        self.deployments.get_opt(NAME).await.unwrap()
    }

    async fn reconcile(&self) -> Result<Action> {
        self.reconcile_with(&self.controller, NAME).await
    }

    /// One reconcile of object `name` by `controller`, as the Controller would run it: once
    /// its cache holds the Deployment as it is now.
    async fn reconcile_with(&self, controller: &Controller<Context>, name: &str) -> Result<Action> {
        self.cached(controller, name).await;
        let object = self.objects.get(name).await.unwrap();
        controller.reconcile(Arc::new(object)).await
    }

    /// Waits until `controller`'s cache holds Deployment `name` as it is now.
    async fn cached(&self, controller: &Controller<Context>, name: &str) {
        let cache = controller.reconciler().deployments.cache();
        eventually(
            "the cache to hold the Deployment as it is",
            WAIT,
            || async {
                let live = self.deployments.get_opt(name).await.unwrap();
                let live = live.and_then(|d| d.metadata.resource_version);
                let cached = cache.get(&self.env.namespace, name).await;
                cached.and_then(|d| d.metadata.resource_version.clone()) == live
            },
        )
        .await;
    }

    /// What a reconcile of the object in sync returns.
    async fn resync(&self) -> Action {
        controller::resync(&self.object().await, RESYNC)
    }

    /// Creates the object and reconciles until it is in sync: the finalizer, the Deployment,
    /// and once its pods are up, `Available`.
    async fn converged(&self, size: i32) -> Site {
        self.converged_named(NAME, size).await
    }

    async fn converged_named(&self, name: &str, size: i32) -> Site {
        self.create_named(name, size).await;
        let reconcile = || self.reconcile_with(&self.controller, name);
        assert_eq!(reconcile().await.unwrap(), Action::await_change());
        reconcile().await.unwrap();
        roll_out(&self.env, name).await;
        reconcile().await.unwrap();
        self.objects.get(name).await.unwrap()
    }

    async fn edit_object(&self, patch: serde_json::Value) {
        let patch = Patch::Merge(patch);
        let params = PatchParams::default();
        self.objects.patch(NAME, &params, &patch).await.unwrap();
    }

    /// Writes the Deployment's status as the deployment controller would (only where none
    /// runs: [`TestEnv::rolls_out`]).
    async fn edit_deployment_status(&self, patch: serde_json::Value) {
        assert!(
            !self.env.rolls_out(),
            "the deployment controller would undo it"
        );
        let patch = Patch::Merge(patch);
        let params = PatchParams::default();
        self.deployments
            .patch_status(NAME, &params, &patch)
            .await
            .unwrap();
    }

    /// Where Deployments roll out for real, pauses Deployment `name` (`hold`) or resumes it: a
    /// rollout started meanwhile stays under way, its old pods running and no new one made,
    /// until it is resumed. (Elsewhere nothing rolls out by itself.)
    async fn hold_rollouts(&self, name: &str, hold: bool) {
        if !self.env.rolls_out() {
            return;
        }
        let patch = Patch::Merge(json!({ "spec": { "paused": hold } }));
        let params = PatchParams::default();
        self.deployments.patch(name, &params, &patch).await.unwrap();
    }

    /// Fills the namespace's pod quota with the `pods` that run: the API server refuses new
    /// pods from now on.
    async fn fill_pod_quota(&self, pods: i32) {
        let quotas: Api<ResourceQuota> =
            Api::namespaced(self.env.admin.clone(), &self.env.namespace);
        let quota = json!({ "metadata": { "name": "pods" }, "spec": { "hard": { "pods": pods.to_string() } } });
        let quota = serde_json::from_value(quota).unwrap();
        quotas.create(&PostParams::default(), &quota).await.unwrap();
    }

    /// What the operator sent since the log was last cleared, but for watches.
    fn requests(&self) -> Vec<memop_test::Request> {
        let requests = self.env.requests.requests();
        requests
            .into_iter()
            .filter(|r| r.verb != Verb::Watch)
            .collect()
    }

    /// How many events with `reason` were recorded.
    async fn recorded(&self, reason: &str) -> usize {
        let events: Api<Event> = Api::namespaced(self.env.admin.clone(), &self.env.namespace);
        let list = events.list(&ListParams::default()).await.unwrap();
        let reasons = list
            .items
            .iter()
            .filter(|e| e.reason.as_deref() == Some(reason));
        reasons.count()
    }
}

/// The status and reason of condition `type_`, which must be set.
fn state<'a>(object: &'a Site, type_: &str) -> (&'a str, &'a str) {
    let condition = condition(object, type_).unwrap_or_else(|| panic!("no {type_} condition"));
    (condition.status.as_str(), condition.reason.as_str())
}

fn condition<'a>(object: &'a Site, type_: &str) -> Option<&'a Condition> {
    let status = object.status.as_ref()?;
    status.conditions.iter().find(|c| c.type_ == type_)
}

fn image(deployment: &Deployment) -> &str {
    let pod = deployment.spec.template.spec.as_ref().unwrap();
    pod.containers[0].image.as_deref().unwrap()
}

fn replicas(deployment: &Deployment) -> Option<i32> {
    deployment.spec.replicas
}

#[test]
fn the_fixtures_role_and_crd_are_generated_from_the_code() {
    let role = role_yaml(Scope::Cluster, &[rules()]);
    let mut generated = vec![(PathBuf::from("config/rbac/role.yaml"), role)];
    generated.extend(memop_runtime::manifests::crd_files(&[Site::crd()]).unwrap());
    for (path, generated) in generated {
        let file = std::fs::read_to_string(fixture().join(&path)).unwrap();
        assert!(
            file.ends_with(&generated),
            "{} is stale; it should end with:\n{generated}",
            path.display()
        );
    }
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
        cluster.controller = controller(&cluster.shared, &format!("{IMAGE}-new"));
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

async fn a_missing_status_subresource_is_an_error(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.create(2).await;
    cluster.reconcile().await.unwrap();
    // A 404 that does not name the object: what a CRD without the status subresource gives.
    let requests = &cluster.env.requests;
    requests.fail_next(Verb::Patch, "sites/status", 404, 1);
    let err = cluster
        .reconcile()
        .await
        .expect_err("a status not written is no success");
    assert!(err.to_string().contains("404"), "{err}");
}

async fn a_reconcile_that_hangs_times_out(env: TestEnv) {
    let mut cluster = Cluster::new(env);
    cluster.create(2).await;
    cluster.reconcile().await.unwrap();
    // The short time limit only from here: a busy control plane may take longer to answer the
    // finalizer's write.
    let ctx = context(&cluster.shared, IMAGE);
    let builder = builder(&cluster.shared, &ctx).reconcile_timeout(Duration::from_millis(300));
    cluster.controller = Arc::new(builder.build(ctx));
    // The Deployment write does not answer (a half-open connection, say).
    let requests = &cluster.env.requests;
    requests.delay_next(Verb::Patch, "deployments", Duration::from_secs(30));
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
    let after = cluster.object().await;
    assert_eq!(after.resource_version(), before.resource_version());
    let after = cluster.deployment().await.unwrap();
    assert_eq!(after.resource_version(), deployment.resource_version());
}

/// The operand's cache keeps a Deployment it applied as a projection (metadata, size, status)
/// and a digest of the fields applied: someone's edit of the container's image, which the cache
/// no longer holds, is still seen and put back; the reconcile after it is in sync again,
/// without a read.
async fn an_edit_of_a_field_the_cache_keeps_only_a_digest_of_is_put_back(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.converged(2).await;
    let cache = cluster.controller.reconciler().deployments.cache();
    let cached = cache.get(&cluster.env.namespace, NAME).await.unwrap();
    assert!(
        cached.spec.template.spec.is_none(),
        "the cache holds no pod template: {cached:?}"
    );
    // Its labels stay: a reconciler selects children by them.
    assert_eq!(
        cached
            .labels()
            .get("app.kubernetes.io/instance")
            .map(String::as_str),
        Some(NAME),
        "the cache keeps the labels: {cached:?}"
    );
    assert_eq!(replicas(&cached), Some(2));

    let container =
        json!({ "name": "site", "image": "theirs:1", "imagePullPolicy": "IfNotPresent" });
    let edit = json!({ "spec": { "template": { "spec": { "containers": [container] } } } });
    let patch = Patch::Merge(edit);
    (cluster.deployments)
        .patch(NAME, &PatchParams::default(), &patch)
        .await
        .unwrap();
    cluster.env.requests.clear();
    cluster.reconcile().await.unwrap();
    let deployment = cluster.deployment().await.unwrap();
    assert_eq!(image(&deployment), IMAGE, "the image is put back");
    assert_eq!(
        cluster.env.requests.writes("deployments"),
        1,
        "{:?}",
        cluster.requests()
    );

    // In sync again: the digest of what came back is the one the cache compares with.
    roll_out(&cluster.env, NAME).await;
    cluster.reconcile().await.unwrap();
    cluster.env.requests.clear();
    assert_eq!(cluster.reconcile().await.unwrap(), cluster.resync().await);
    let requests = cluster.requests();
    assert!(requests.is_empty(), "nothing read or written: {requests:?}");
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
    let object = cluster.object().await;
    assert_eq!(state(&object, "Available"), ("True", "Reconciling"));
}

/// A new operand image (the operator's own change: the objects' specs are the same) rolls out
/// to at most `--max-concurrent-rollouts` Deployments at a time, and says so on those that
/// wait; a resize the user asks for meanwhile is not held back.
async fn a_new_image_rolls_out_a_few_deployments_at_a_time(env: TestEnv) {
    let cluster = &Cluster::new(env);
    for name in ["first", "second", "third"] {
        cluster.converged_named(name, 1).await;
    }
    let image_of = |name: &'static str| async move {
        let deployment = cluster.deployments.get(name).await.unwrap();
        image(&deployment).to_string()
    };

    // The operator restarts with a new image, one rollout at a time. (Where Deployments roll
    // out for real, the first's is held until it is resumed: the count is the cluster's, and
    // kwok's pods would complete it at once.)
    cluster.hold_rollouts("first", true).await;
    let shared = cluster.shared.clone().with_max_concurrent_rollouts(1);
    let new_image = format!("{IMAGE}-new");
    let new = controller(&shared, &new_image);
    cluster.reconcile_with(&new, "first").await.unwrap();
    assert_eq!(image_of("first").await, new_image);
    let waits = cluster.reconcile_with(&new, "second").await.unwrap();
    assert_eq!(
        image_of("second").await,
        IMAGE,
        "the second waits for the first"
    );
    assert_ne!(waits, Action::await_change(), "it comes back to try again");
    let second = cluster.objects.get("second").await.unwrap();
    assert_eq!(state(&second, "Degraded"), ("False", "RolloutWaiting"));
    assert_eq!(state(&second, "Available"), ("True", "Reconciling"));

    // The user resizes the third meanwhile: the size changes at once, the image waits.
    let resize = Patch::Merge(json!({ "spec": { "size": 2 } }));
    let params = PatchParams::default();
    cluster
        .objects
        .patch("third", &params, &resize)
        .await
        .unwrap();
    cluster.reconcile_with(&new, "third").await.unwrap();
    let third = cluster.deployments.get("third").await.unwrap();
    assert_eq!(replicas(&third), Some(2));
    assert_eq!(image(&third), IMAGE);

    // Once the first has rolled out, the next goes.
    cluster.hold_rollouts("first", false).await;
    roll_out(&cluster.env, "first").await;
    cluster.reconcile_with(&new, "first").await.unwrap();
    cluster.reconcile_with(&new, "second").await.unwrap();
    assert_eq!(image_of("second").await, new_image);
}

/// The limit is the fleet's, read from the cache: another process of the operator (another
/// shard, or the new leader after a failover) counts a rollout the first one started and that
/// has not completed, and starts none past the limit; once that rollout completes, the next
/// goes, without the second process ever reconciling the first's object.
async fn the_rollout_limit_counts_the_rollouts_another_process_started(env: TestEnv) {
    let cluster = &Cluster::new(env);
    for name in ["first", "second"] {
        cluster.converged_named(name, 1).await;
    }
    let image_of = |name: &'static str| async move {
        let deployment = cluster.deployments.get(name).await.unwrap();
        image(&deployment).to_string()
    };
    // The first's rollout stays under way (its old pod runs, no new one) until resumed.
    cluster.hold_rollouts("first", true).await;
    let new_image = format!("{IMAGE}-new");
    let one = controller(
        &cluster.shared.clone().with_max_concurrent_rollouts(1),
        &new_image,
    );
    cluster.reconcile_with(&one, "first").await.unwrap();
    assert_eq!(image_of("first").await, new_image);
    if cluster.env.rolls_out() {
        eventually("the first's rollout reported under way", WAIT, || async {
            let first = cluster.deployments.get("first").await.unwrap();
            let status = first.status.unwrap_or_default();
            status.observed_generation == first.metadata.generation
                && status.updated_replicas.unwrap_or(0) < status.replicas.unwrap_or(0)
        })
        .await;
    } else {
        // As the deployment controller reports it: a pod of the new template beside the old.
        let generation = cluster
            .deployments
            .get("first")
            .await
            .unwrap()
            .metadata
            .generation;
        let rolling = Patch::Merge(json!({ "status": {
            "observedGeneration": generation, "replicas": 2, "updatedReplicas": 1,
            "readyReplicas": 1, "availableReplicas": 1,
        }}));
        let params = PatchParams::default();
        cluster
            .deployments
            .patch_status("first", &params, &rolling)
            .await
            .unwrap();
    }

    // A second process, with a cache of its own and nothing in memory of the first's rollout.
    let shared = Shared::new(
        &OPERATOR,
        cluster.env.operator.clone(),
        Some(cluster.env.namespace.clone()),
    )
    .with_max_concurrent_rollouts(1);
    let other = controller(&shared, &new_image);
    cluster.reconcile_with(&other, "second").await.unwrap();
    assert_eq!(
        image_of("second").await,
        IMAGE,
        "the second waits for the first's rollout, started by another process"
    );
    let second = cluster.objects.get("second").await.unwrap();
    assert_eq!(state(&second, "Degraded"), ("False", "RolloutWaiting"));

    // The first's rollout completes: the second process sees it in its cache, and goes on.
    cluster.hold_rollouts("first", false).await;
    roll_out(&cluster.env, "first").await;
    cluster.cached(&other, "first").await;
    cluster.reconcile_with(&other, "second").await.unwrap();
    assert_eq!(image_of("second").await, new_image);
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
    let old = controller(&shared, IMAGE);
    // The controller sees the failed rollout (one it did not start).
    cluster.reconcile_with(&old, NAME).await.unwrap();
    let object = cluster.object().await;
    assert_eq!(state(&object, "Degraded"), ("True", "RolloutFailed"));

    // A second object, healthy; then a new image, applied to it at once.
    cluster.create_named("other", 1).await;
    for _ in 0..2 {
        cluster.reconcile_with(&old, "other").await.unwrap();
    }
    roll_out(&cluster.env, "other").await;
    let new_image = format!("{IMAGE}-new");
    let new = controller(&shared, &new_image);
    cluster.reconcile_with(&new, "other").await.unwrap();
    let other = cluster.deployments.get("other").await.unwrap();
    assert_eq!(image(&other), new_image);
}

/// A resize reports that it is under way once, and that it is done once: not a status write
/// per pod that comes up (each one a watch event for every watcher of the kind).
async fn a_resize_writes_the_status_twice_not_once_per_pod(env: TestEnv) {
    let cluster = Cluster::new(env);
    cluster.converged(1).await;
    cluster.edit_object(json!({ "spec": { "size": 3 } })).await;
    cluster.env.requests.clear();
    cluster.reconcile().await.unwrap();
    if !cluster.env.rolls_out() {
        // The pods come up one at a time.
        for available in 1..3 {
            let status = json!({ "status": {
                "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3,
                "readyReplicas": available, "availableReplicas": available,
            }});
            cluster.edit_deployment_status(status).await;
            cluster.reconcile().await.unwrap();
        }
    }
    roll_out(&cluster.env, NAME).await;
    cluster.reconcile().await.unwrap();
    let object = cluster.object().await;
    assert_eq!(state(&object, "Available"), ("True", "Reconciling"));
    assert_eq!(cluster.env.requests.writes("sites/status"), 2);
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
    let requests = &cluster.env.requests;
    requests.fail_next(Verb::Patch, "deployments", code, 1);
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
    let requests = &cluster.env.requests;
    requests.fail_next(Verb::Patch, "sites/status", code, 1);
    assert!(cluster.reconcile().await.is_err());
    let object = cluster.object().await;
    assert!(object.status.is_none_or(|s| s.conditions.is_empty()));
    assert!(cluster.deployment().await.is_some());

    roll_out(&cluster.env, NAME).await;
    requests.clear();
    cluster.reconcile().await.unwrap();
    assert_eq!(
        requests.writes("deployments"),
        0,
        "the Deployment was already right"
    );
    assert_eq!(requests.writes("sites/status"), 1);
    let object = cluster.object().await;
    assert_eq!(condition(&object, "Available").unwrap().status, "True");
}

async fn an_object_deleted_before_its_reconcile_is_left_alone(env: TestEnv) {
    let cluster = Cluster::new(env);
    let stale = Arc::new(cluster.create(2).await);
    let params = DeleteParams::default();
    cluster.objects.delete(NAME, &params).await.unwrap();
    let action = cluster.controller.reconcile(stale).await.unwrap();
    assert_eq!(action, Action::await_change());
    assert!(cluster.deployment().await.is_none());
}

/// Server-side apply prunes what the controller no longer sets: a field that an older version
/// of the operator applied goes at the next reconcile. (Real control plane only: the in-memory
/// server's apply is a merge patch, without field ownership.)
#[tokio::test]
async fn a_field_no_longer_desired_is_pruned() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
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
        .insert("memop.rs/applied-hash".into(), "older".into());
    let params = PatchParams::apply(MANAGER).force();
    cluster
        .deployments
        .patch(NAME, &params, &Patch::Apply(&older))
        .await
        .unwrap();

    cluster.reconcile().await.unwrap();
    let deployment = cluster.deployment().await.unwrap();
    let labels = deployment.labels();
    assert!(
        !labels.contains_key("example.com/obsolete"),
        "pruned: {labels:?}"
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
/// process when nothing changed; once the policy is gone, the next process applies it again.
/// (Real control plane only: the in-memory server runs no admission.)
#[tokio::test]
async fn a_restart_does_not_apply_again_what_admission_rewrote_while_it_does() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
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
        let pod = deployment.spec.template.spec.as_ref()?;
        pod.containers[0].image_pull_policy.clone()
    };
    // The policy is in force once a dry run of our Deployment comes back rewritten.
    let mut owner = site(NAME, 1);
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
    let restart = |cluster: Cluster| {
        let shared = Shared::new(
            &OPERATOR,
            cluster.env.operator.clone(),
            Some(cluster.env.namespace.clone()),
        );
        cluster.restarted(shared, IMAGE)
    };
    let cluster = restart(cluster);
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
    let cluster = restart(cluster);
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
#[tokio::test]
async fn another_writers_condition_stays_theirs() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let cluster = Cluster::new(env);
    cluster.converged(1).await;
    let theirs = PatchParams::apply("backup-controller");
    let conditions = |conditions: serde_json::Value| {
        Patch::Apply(json!({
            "apiVersion": Site::api_version(&()),
            "kind": Site::kind(&()),
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
