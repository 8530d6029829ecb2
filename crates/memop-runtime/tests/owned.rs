//! `controller::Owned` against the in-memory API server of memop-test: a cache that cannot list
//! its kind keeps the manager unready, saying which cache, until it can.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use memop_runtime::Operator;
use memop_runtime::controller::Owned;
use memop_runtime::manager::Shared;
use memop_test::{TestEnv, Verb};

const OPERATOR: Operator = Operator {
    name: "test-operator",
    domain: "example.com",
};

#[tokio::test]
async fn a_cache_that_cannot_list_keeps_the_manager_unready_until_it_can() {
    let env = TestEnv::in_memory();
    let shared = Shared::new(&OPERATOR, env.operator.clone(), None);
    let readiness = &shared.readiness;
    let configmaps: Api<ConfigMap> = Api::namespaced(env.operator.clone(), &env.namespace);
    // The role does not allow listing ConfigMaps, for now: the first two lists are refused.
    env.requests.fail_next(Verb::List, "configmaps", 403, 2);
    let owned = Owned::watch(
        configmaps,
        watcher::Config::default(),
        &shared,
        "configmaps",
    );

    tokio::time::sleep(Duration::from_millis(300)).await;
    let why = readiness
        .check()
        .expect("not ready while the cache cannot list");
    assert!(why.contains("configmaps"), "{why}");

    // The role is fixed: the watcher's backoff lists again, and the cache syncs.
    let object =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": "a" } })).unwrap();
    Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace)
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), async {
        while readiness.check().is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("ready once the cache has listed");
    assert!(owned.get(&env.namespace, "a").await.is_some());
}
