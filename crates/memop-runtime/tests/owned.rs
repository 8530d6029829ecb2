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
    let readiness = shared.readiness();
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

/// The cache's watch never waits for the controller it triggers: kube's controller stops
/// taking changes for a while after an error of its own watch (its trigger's backoff), and
/// meanwhile the cache must go on following the API server. Here the controller never runs at
/// all, and the cache still lists and follows 1,500 changes (more than any channel's slots).
#[tokio::test]
async fn the_cache_follows_its_watch_while_the_controller_takes_no_changes() {
    let env = TestEnv::in_memory();
    let shared = Shared::new(&OPERATOR, env.operator.clone(), None);
    let admin = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    let object = |name: String| -> ConfigMap {
        serde_json::from_value(serde_json::json!({ "metadata": { "name": name } })).unwrap()
    };
    for i in 0..1_200 {
        admin
            .create(&PostParams::default(), &object(format!("before-{i}")))
            .await
            .unwrap();
    }
    let configmaps: Api<ConfigMap> = Api::namespaced(env.operator.clone(), &env.namespace);
    let owned = Owned::watch(
        configmaps.clone(),
        watcher::Config::default(),
        &shared,
        "configmaps",
    );
    // A controller that is never run: nothing takes the changes the cache sends it.
    let _requests = owned.owned_by::<ConfigMap>();
    tokio::time::timeout(Duration::from_secs(30), owned.ready())
        .await
        .expect("the cache lists although its controller takes nothing");
    for i in 0..300 {
        admin
            .create(&PostParams::default(), &object(format!("after-{i}")))
            .await
            .unwrap();
    }
    tokio::time::timeout(Duration::from_secs(30), async {
        while !owned.contains(&env.namespace, "after-299") {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the cache follows its watch although its controller takes nothing");
}
