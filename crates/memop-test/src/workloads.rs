//! Deployments rolling out in tests. Where the back end rolls them out by itself (the real
//! control plane with kube-controller-manager, kube-scheduler and kwok: [`TestEnv::rolls_out`]),
//! these functions wait for it and write nothing. Elsewhere (the in-memory API server, or a real
//! one from assets without those binaries) they stand in for the deployment controller and the
//! kubelets: they write a Deployment's status as those would once every pod is up, as envtest
//! users do.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::TestEnv;

/// How long a real rollout may take: pods created, scheduled and made Ready by kwok, and the
/// Deployment's status written, on a busy machine.
const ROLLOUT_TIMEOUT: Duration = Duration::from_secs(60);

/// Deployment `name` of the test's namespace rolled out: its current spec observed, every
/// replica updated and available. Where the back end rolls out by itself, waits until the
/// deployment controller reports so (and panics if it does not within a minute: the rollout
/// machinery is not running); elsewhere, writes that status.
pub async fn roll_out(env: &TestEnv, name: &str) {
    let deployments: Api<Deployment> = Api::namespaced(env.admin.clone(), &env.namespace);
    if !env.rolls_out() {
        report_rolled_out(&deployments, name).await;
        return;
    }
    let rolled_out = async {
        loop {
            let deployment = deployments
                .get(name)
                .await
                .expect("the Deployment to roll out");
            if rolled_out(&deployment) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(ROLLOUT_TIMEOUT, rolled_out)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "Deployment {name} did not roll out in {ROLLOUT_TIMEOUT:?}: are \
                 kube-controller-manager's deployment and replicaset controllers, kube-scheduler \
                 and kwok running?"
            )
        });
}

/// Writes the status of `name` as the deployment controller would once every pod is up.
async fn report_rolled_out(deployments: &Api<Deployment>, name: &str) {
    let deployment = deployments
        .get(name)
        .await
        .expect("the Deployment to roll out");
    let replicas = replicas(&deployment);
    let status = json!({ "status": {
        "observedGeneration": deployment.metadata.generation,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [
            { "type": "Available", "status": "True", "reason": "MinimumReplicasAvailable" },
            { "type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable" },
        ],
    }});
    // Gone meanwhile: nothing to roll out.
    let _ = deployments
        .patch_status(name, &PatchParams::default(), &Patch::Merge(status))
        .await;
}

/// The replicas `deployment`'s spec asks for (1 if it does not say). k8s-openapi types a
/// Deployment's spec as a struct from Kubernetes 1.37 on, as an `Option` before: this reads
/// either, whichever version the project picks.
fn replicas(deployment: &Deployment) -> i32 {
    let spec: Option<&DeploymentSpec> = (&deployment.spec).into();
    spec.and_then(|spec| spec.replicas).unwrap_or(1)
}

/// Whether `deployment`'s status reports its current spec rolled out, as the deployment
/// controller reports it when done: the new ReplicaSet available, no old pod left. (Read as
/// JSON: k8s-openapi types these fields differently from one Kubernetes version to another.)
fn rolled_out(deployment: &Deployment) -> bool {
    let replicas = i64::from(replicas(deployment));
    let Ok(deployment) = serde_json::to_value(deployment) else {
        return false;
    };
    let status = &deployment["status"];
    let count = |field: &str| status[field].as_i64().unwrap_or(0);
    let done = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Progressing" && c["reason"] == "NewReplicaSetAvailable");
    status["observedGeneration"] == deployment["metadata"]["generation"]
        && ["replicas", "updatedReplicas", "availableReplicas"]
            .iter()
            .all(|field| count(field) == replicas)
        && done
}

/// Keeps every Deployment of the test's namespace rolled out whenever its spec changes, until
/// dropped: on a back end that rolls out by itself, nothing to do; elsewhere, a task that
/// writes their status as [`roll_out`] does.
pub struct Workloads(Option<tokio::task::JoinHandle<()>>);

impl Workloads {
    /// Starts playing the deployment controller for the Deployments of `env`'s namespace, unless
    /// the back end runs the real one.
    pub fn start(env: &TestEnv) -> Self {
        if env.rolls_out() {
            return Self(None);
        }
        Self(Some(tokio::spawn(stand_in(
            env.admin.clone(),
            env.namespace.clone(),
        ))))
    }
}

/// Writes the status of each Deployment of `namespace` that is not rolled out yet, as
/// [`roll_out`] does, whenever it changes.
async fn stand_in(admin: Client, namespace: String) {
    let deployments: Api<Deployment> = Api::namespaced(admin, &namespace);
    let mut changes = watcher(deployments.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    while let Some(change) = changes.next().await {
        if let Ok(deployment) = change
            && !rolled_out(&deployment)
        {
            report_rolled_out(&deployments, &deployment.name_any()).await;
        }
    }
}

impl Drop for Workloads {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}
