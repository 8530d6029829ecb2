//! A stand-in for kube-controller-manager's deployment controller and the kubelets, which
//! neither back end runs: the test writes a Deployment's status as they would once every pod is
//! up, as envtest users do.

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::json;

/// Reports `name` rolled out: its current spec observed, every replica updated and available.
pub async fn roll_out(deployments: &Api<Deployment>, name: &str) {
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

/// Whether `deployment`'s status already reports its current spec rolled out.
fn rolled_out(deployment: &Deployment) -> bool {
    let replicas = replicas(deployment);
    deployment.status.as_ref().is_some_and(|status| {
        status.observed_generation == deployment.metadata.generation
            && status.available_replicas == Some(replicas)
    })
}

/// Rolls out every Deployment of a namespace whenever its spec changes, until dropped.
pub struct Workloads(tokio::task::JoinHandle<()>);

impl Workloads {
    /// Starts playing the deployment controller for the Deployments of `namespace`, writing
    /// their status with `admin`.
    pub fn start(admin: Client, namespace: &str) -> Self {
        let deployments: Api<Deployment> = Api::namespaced(admin, namespace);
        let task = tokio::spawn(async move {
            let mut changes = watcher(deployments.clone(), watcher::Config::default())
                .default_backoff()
                .applied_objects()
                .boxed();
            while let Some(change) = changes.next().await {
                if let Ok(deployment) = change
                    && !rolled_out(&deployment)
                {
                    roll_out(&deployments, &deployment.name_any()).await;
                }
            }
        });
        Self(task)
    }
}

impl Drop for Workloads {
    fn drop(&mut self) {
        self.0.abort();
    }
}
