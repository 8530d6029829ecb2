//! Deployments roll out by themselves on the real control plane of memop's own assets
//! (`scripts/envtest/build.sh`: kube-controller-manager, kube-scheduler and kwok): pods are
//! created, bound to kwok's node and made Ready, and the deployment controller reports the
//! Deployment available, while `workloads::roll_out` only waits. With `KUBEBUILDER_ASSETS` from
//! elsewhere (setup-envtest's three binaries) this test fails: it is memop's check that its own
//! real tier runs the rollout machinery, not the stand-in.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use memop_test::envtest::NODE;
use memop_test::workloads::roll_out;
use memop_test::{TestEnv, eventually};
use serde_json::{Value, json};

const NAME: &str = "web";

#[tokio::test]
async fn a_deployment_rolls_out_with_no_one_writing_its_status() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture");
    let Some(env) = TestEnv::real_for(&fixture).await else {
        return;
    };
    assert!(
        env.rolls_out(),
        "no rollouts on this control plane: KUBEBUILDER_ASSETS needs kube-controller-manager, \
         kube-scheduler, kwok and kwok.yaml (scripts/envtest/build.sh builds them)"
    );
    let deployments: Api<Deployment> = Api::namespaced(env.admin.clone(), &env.namespace);
    let pods: Api<Pod> = Api::namespaced(env.admin.clone(), &env.namespace);
    let deployment = serde_json::from_value(json!({
        "metadata": { "name": NAME },
        "spec": {
            "replicas": 2,
            "selector": { "matchLabels": { "app": NAME } },
            "template": {
                "metadata": { "labels": { "app": NAME } },
                "spec": { "containers": [{ "name": "app", "image": "example.com/web:1" }] },
            },
        },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();

    roll_out(&env, NAME).await;
    let deployment = json(&deployments.get(NAME).await.unwrap());
    let available = deployment["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Available")
        .unwrap();
    assert_eq!(available["status"], "True", "{available}");
    // The status is the deployment controller's: no one else wrote it.
    let status_writers: Vec<&Value> = deployment["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["subresource"] == "status")
        .map(|f| &f["manager"])
        .collect();
    assert_eq!(status_writers, [&json!("kube-controller-manager")]);
    // Real pods, on kwok's node, Running and Ready.
    let running = pods.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(running.len(), 2);
    for pod in running.iter().map(json) {
        assert_eq!(pod["spec"]["nodeName"], NODE, "{pod}");
        assert_eq!(pod["status"]["phase"], "Running", "{pod}");
        let conditions = pod["status"]["conditions"].as_array().unwrap();
        assert!(
            conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True"),
            "{pod}"
        );
    }

    // Scaled down, the pod left over goes away for good (kwok ends its graceful deletion).
    let scale = Patch::Merge(json!({ "spec": { "replicas": 1 } }));
    deployments
        .patch(NAME, &PatchParams::default(), &scale)
        .await
        .unwrap();
    roll_out(&env, NAME).await;
    eventually("one pod left", Duration::from_secs(30), || async {
        pods.list(&ListParams::default()).await.unwrap().items.len() == 1
    })
    .await;
}

fn json<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap()
}
