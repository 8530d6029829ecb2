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

//! Scenario tests of the Memcached controller against the in-memory API server of
//! `tests/support`: real `kube::Client` calls, real watches, no cluster.
//!
//! Most tests call [`reconcile`] directly, as kube's Controller would, and look at what the
//! "cluster" converged to; `the_real_controller_loop_converges_and_shuts_down` runs the very
//! `run` function `main.rs` registers.

mod support;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use serde_json::json;
use support::{ApiServer, Verb};

use memcached_operator::api::cache::v1alpha1::{Memcached, MemcachedSpec};
use memcached_operator::controller::Error;
use memcached_operator::controller::memcached::{
    self, Context, FINALIZER, IMAGE_ENV, RESYNC, error_policy, reconcile,
};
use memcached_operator::manager::Shared;

const NAMESPACE: &str = "default";
const NAME: &str = "memcached-sample";

/// The in-memory API server, with the controller's context on top of it.
struct Cluster {
    server: ApiServer,
    shared: Shared,
    ctx: Arc<Context>,
    objects: Api<Memcached>,
    deployments: Api<Deployment>,
}

impl Cluster {
    /// A cluster whose Deployments roll out at once (see `ApiServer::with_workloads`).
    fn new() -> Self {
        Self::on(ApiServer::with_workloads())
    }

    fn on(server: ApiServer) -> Self {
        let shared = Shared::new(server.client(), None);
        let ctx = Arc::new(Context::new(&shared));
        let objects = Api::namespaced(shared.client.clone(), NAMESPACE);
        let deployments = Api::namespaced(shared.client.clone(), NAMESPACE);
        Self {
            server,
            shared,
            ctx,
            objects,
            deployments,
        }
    }

    async fn create(&self, size: i32) -> Memcached {
        let mut object = Memcached::new(NAME, MemcachedSpec { size });
        object.metadata.namespace = Some(NAMESPACE.into());
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

    /// One reconcile of the object as it is now, as the Controller would run it.
    async fn reconcile(&self) -> Result<Action, Error> {
        reconcile(Arc::new(self.object().await), self.ctx.clone()).await
    }

    /// Creates the object and reconciles until it is in sync: the first reconcile only adds
    /// the finalizer (kube's finalizer helper then waits for the change), the second acts.
    async fn converged(&self, size: i32) -> Memcached {
        self.create(size).await;
        assert_eq!(self.reconcile().await.unwrap(), Action::await_change());
        assert_eq!(self.reconcile().await.unwrap(), Action::requeue(RESYNC));
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

    /// Whether an event with `reason` was recorded.
    async fn recorded(&self, reason: &str) -> bool {
        let events: Api<Event> = Api::namespaced(self.shared.client.clone(), NAMESPACE);
        let list = events.list(&ListParams::default()).await.unwrap();
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some(reason))
    }
}

/// The status and reason of condition `type_`, which must be set.
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
    deployment.spec.as_ref()?.replicas
}

/// Polls `check` until it holds; fails after five seconds.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let waited = tokio::time::timeout(Duration::from_secs(5), async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    waited
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

#[tokio::test]
async fn create_makes_the_deployment_exactly_right() {
    let cluster = Cluster::new();
    let object = cluster.converged(2).await;
    assert_eq!(object.finalizers(), [FINALIZER.to_string()]);

    let deployment = cluster.deployment().await.expect("the Deployment exists");
    let spec = deployment.spec.as_ref().unwrap();
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
    // The image from IMAGE_ENV when it is set (config/manager sets it), else the default.
    let image =
        std::env::var(IMAGE_ENV).unwrap_or_else(|_| "memcached:1.6.26-alpine3.19".to_string());
    assert_eq!(container.image.as_deref(), Some(image.as_str()));
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
    assert!(cluster.recorded("Created").await);
}

#[tokio::test]
async fn available_waits_for_the_deployment_to_roll_out() {
    // No stand-in for the deployment controller here: the Deployment reports nothing yet.
    let cluster = Cluster::on(ApiServer::new());
    let object = cluster.converged(2).await;
    assert_eq!(state(&object, "Available"), ("False", "Progressing"));
    let available = condition(&object, "Available").unwrap();
    assert!(
        available.message.contains("0 of 2"),
        "{}",
        available.message
    );

    // The pods come up: the deployment controller reports them, and the Deployment change
    // brings the next reconcile.
    let rolled_out = json!({ "status": { "observedGeneration": 1, "availableReplicas": 2 } });
    let patch = Patch::Merge(rolled_out);
    let params = PatchParams::default();
    cluster
        .deployments
        .patch_status(NAME, &params, &patch)
        .await
        .unwrap();
    cluster.reconcile().await.unwrap();
    let object = cluster.object().await;
    assert_eq!(state(&object, "Available"), ("True", "Reconciling"));
}

#[tokio::test]
async fn a_size_change_converges() {
    let cluster = Cluster::new();
    cluster.converged(1).await;
    cluster.edit_object(json!({ "spec": { "size": 3 } })).await;
    cluster.reconcile().await.unwrap();
    assert_eq!(replicas(&cluster.deployment().await.unwrap()), Some(3));
    let object = cluster.object().await;
    let available = condition(&object, "Available").unwrap();
    assert!(
        available.message.contains("3 replicas"),
        "{}",
        available.message
    );
    assert_eq!(available.observed_generation, Some(2));
}

#[tokio::test]
async fn a_deployment_scaled_by_hand_is_restored() {
    let cluster = Cluster::new();
    cluster.converged(2).await;
    cluster
        .edit_deployment(json!({ "spec": { "replicas": 5 } }))
        .await;
    cluster.reconcile().await.unwrap();
    assert_eq!(replicas(&cluster.deployment().await.unwrap()), Some(2));
    assert!(cluster.recorded("Updated").await);
}

#[tokio::test]
async fn a_deployment_deleted_by_hand_is_recreated() {
    let cluster = Cluster::new();
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

#[tokio::test]
async fn a_reconcile_in_steady_state_writes_nothing() {
    let cluster = Cluster::new();
    cluster.converged(2).await;
    cluster.server.clear_requests();
    assert_eq!(cluster.reconcile().await.unwrap(), Action::requeue(RESYNC));
    let writes = cluster.server.writes("*");
    let reads = cluster.server.requests().len() - writes;
    println!("steady-state reconcile: {writes} writes, {reads} reads");
    assert_eq!(writes, 0, "requests: {:?}", cluster.server.requests());
}

#[tokio::test]
async fn deletion_runs_the_finalizer_then_the_deployment_is_collected() {
    let cluster = Cluster::new();
    cluster.converged(1).await;
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

    // Fail the finalizer's removal once, to see the status the cleanup wrote before it.
    cluster.server.fail_next(Verb::Patch, "memcacheds", 500, 1);
    assert!(cluster.reconcile().await.is_err());
    let finalizing = cluster.object().await;
    assert_eq!(state(&finalizing, "Degraded"), ("True", "Finalizing"));
    assert!(cluster.recorded("Deleting").await);

    cluster.reconcile().await.unwrap();
    assert!(
        cluster.objects.get_opt(NAME).await.unwrap().is_none(),
        "the object is gone"
    );
    assert!(
        cluster.deployment().await.is_none(),
        "its Deployment was garbage-collected"
    );
}

#[tokio::test]
async fn a_failed_deployment_write_is_reported_and_retried() {
    for code in [500, 409] {
        let cluster = Cluster::new();
        cluster.create(2).await;
        cluster.reconcile().await.unwrap(); // adds the finalizer
        cluster
            .server
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
        let object = cluster.object().await;
        assert_eq!(condition(&object, "Available").unwrap().status, "True");
        assert_eq!(condition(&object, "Degraded").unwrap().status, "False");
    }
}

#[tokio::test]
async fn a_failed_status_write_is_retried_without_touching_the_deployment_again() {
    for code in [500, 409] {
        let cluster = Cluster::new();
        cluster.create(2).await;
        cluster.reconcile().await.unwrap();
        cluster
            .server
            .fail_next(Verb::Patch, "memcacheds/status", code, 1);
        assert!(cluster.reconcile().await.is_err());
        assert!(
            cluster.object().await.status.is_none(),
            "no status was written"
        );
        assert!(cluster.deployment().await.is_some());

        cluster.server.clear_requests();
        cluster.reconcile().await.unwrap();
        assert_eq!(
            cluster.server.writes("deployments"),
            0,
            "the Deployment was already right"
        );
        assert_eq!(cluster.server.writes("memcacheds/status"), 1);
        assert_eq!(
            condition(&cluster.object().await, "Available")
                .unwrap()
                .status,
            "True"
        );
    }
}

#[tokio::test]
async fn an_object_deleted_before_its_reconcile_is_left_alone() {
    let cluster = Cluster::new();
    let stale = Arc::new(cluster.create(2).await);
    cluster
        .objects
        .delete(NAME, &DeleteParams::default())
        .await
        .unwrap();
    let action = reconcile(stale, cluster.ctx.clone()).await.unwrap();
    assert_eq!(action, Action::await_change());
    assert!(cluster.deployment().await.is_none());
}

#[tokio::test]
async fn failures_back_off_exponentially() {
    let cluster = Cluster::new();
    let object = Arc::new(cluster.create(1).await);
    let err = Error::Invalid("boom".into());
    let first = error_policy(object.clone(), &err, cluster.ctx.clone());
    let second = error_policy(object.clone(), &err, cluster.ctx.clone());
    assert_eq!(first, Action::requeue(Duration::from_millis(5)));
    assert_eq!(second, Action::requeue(Duration::from_millis(10)));
}

#[tokio::test]
async fn the_real_controller_loop_converges_and_shuts_down() {
    let cluster = Cluster::new();
    let shared = cluster.shared.clone();
    let controller = tokio::spawn(memcached::run(shared.clone()));
    cluster.create(2).await;

    let deployments = &cluster.deployments;
    eventually("the Deployment at size 2", || async {
        deployments
            .get_opt(NAME)
            .await
            .unwrap()
            .as_ref()
            .and_then(replicas)
            == Some(2)
    })
    .await;
    eventually("Available=True", || async {
        let object = cluster.object().await;
        condition(&object, "Available").is_some_and(|c| c.status == "True")
    })
    .await;
    assert_eq!(
        shared.readiness.check(),
        None,
        "the controller reports ready once synced"
    );

    cluster
        .edit_deployment(json!({ "spec": { "replicas": 1 } }))
        .await;
    eventually("the hand-scaled Deployment restored to 2", || async {
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
    eventually("the object and its Deployment gone", || async {
        objects.get_opt(NAME).await.unwrap().is_none()
            && deployments.get_opt(NAME).await.unwrap().is_none()
    })
    .await;

    shared.shutdown.trigger();
    let stopped = tokio::time::timeout(Duration::from_secs(5), controller).await;
    stopped
        .expect("the controller stops on shutdown")
        .unwrap()
        .unwrap();
}
