//! `controller::Owned` against the in-memory API server of memop-test: a cache that cannot list
//! its kind keeps the manager unready, saying which cache, until it can; a relist tells what
//! changed while the watch was down from what did not; and on both back ends, a cache's list is
//! streamed where the API server serves it, and paged where it refuses.

use std::path::Path;
use std::time::Duration;

use crate::Operator;
use crate::controller::Owned;
use crate::controller::Priority;
use crate::manager::Shared;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use memop_test::{Backend, TestEnv, Verb};
use serde_json::json;

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

/// A relist (the watch expired: etcd compacted the revision it followed) brings every object
/// again. Those the cache held as they are ask their owners' reconciles at low priority, as the
/// first list's do; one changed while the watch was down is a change, and asks at normal
/// priority, so that it is not queued behind every object of the relist.
#[tokio::test]
async fn a_relist_asks_at_low_priority_only_for_what_did_not_change() {
    let env = TestEnv::in_memory();
    let Backend::InMemory(server) = &env.backend else {
        unreachable!("in memory")
    };
    let admin: Api<ConfigMap> = Api::namespaced(env.admin.clone(), &env.namespace);
    for name in ["a", "b", "c"] {
        let object = json!({ "metadata": { "name": name, "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": format!("owner-{name}"),
            "uid": format!("uid-{name}"), "controller": true,
        }] } });
        let object = serde_json::from_value(object).unwrap();
        admin.create(&PostParams::default(), &object).await.unwrap();
    }
    let shared = Shared::new(&OPERATOR, env.operator.clone(), None);
    let configmaps: Api<ConfigMap> = Api::namespaced(env.operator.clone(), &env.namespace);
    let owned = Owned::watch(configmaps, watcher::Config::default(), &shared, "owned");
    let mut requests = owned.owned_by::<ConfigMap>().boxed();
    let mut next = async || {
        let request = tokio::time::timeout(Duration::from_secs(30), requests.next());
        let (owner, priority) = request.await.expect("a request").unwrap();
        (owner.to_string(), priority)
    };
    for _ in 0..3 {
        assert_eq!(next().await.1, Priority::Low, "the first list");
    }

    // The watch expires, and the lists that follow fail for a while: b changes meanwhile.
    env.requests
        .fail_next(Verb::List, "configmaps", 503, usize::MAX);
    server.expire_watches();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let patch = kube::api::Patch::Merge(json!({ "data": { "v": "2" } }));
    (admin.patch("b", &Default::default(), &patch).await).unwrap();
    env.requests.heal();
    let mut relisted = Vec::new();
    for _ in 0..3 {
        relisted.push(next().await);
    }
    relisted.sort();
    assert_eq!(
        relisted,
        [
            (format!("{}/owner-a", env.namespace), Priority::Low),
            (format!("{}/owner-b", env.namespace), Priority::Normal),
            (format!("{}/owner-c", env.namespace), Priority::Low),
        ]
    );
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

/// Each test on the in-memory API server, then on the real control plane when there is one.
async fn backends() -> Vec<TestEnv> {
    let mut envs = vec![TestEnv::in_memory()];
    envs.extend(
        TestEnv::real_for(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture")).await,
    );
    envs
}

/// Makes `n` ConfigMaps `name-<i>` as the admin.
async fn configmaps(env: &TestEnv, name: &str, n: usize) {
    let admin = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    for i in 0..n {
        // As `kubectl apply` makes them: with its record of the object.
        let object = json!({ "metadata": {
            "name": format!("{name}-{i}"),
            "annotations": { LAST_APPLIED: r#"{"kind":"ConfigMap"}"#, "example.com/kept": "yes" },
        } });
        admin
            .create(
                &PostParams::default(),
                &serde_json::from_value(object).unwrap(),
            )
            .await
            .unwrap();
    }
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The lists of ConfigMaps the operator's client sent: `streamed` ones (watches that stream
/// the list), or list requests.
fn lists(env: &TestEnv, streamed: bool) -> usize {
    let requests = env.requests.requests();
    requests
        .iter()
        .filter(|r| r.verb == Verb::List && r.resource == "configmaps")
        .filter(|r| r.streamed == streamed)
        .count()
}

/// The list comes as the watch's first events (Kubernetes' streaming lists, WatchList, on by
/// default in 1.37): the cache is filled without a list request, so without a page of
/// objects decoded beside it.
#[tokio::test]
async fn a_cache_streams_its_list_where_the_server_serves_it() {
    for env in backends().await {
        let shared = Shared::new(&OPERATOR, env.operator.clone(), None);
        configmaps(&env, "streamed", 30).await;
        env.requests.clear();
        let configmaps: Api<ConfigMap> = Api::namespaced(env.operator.clone(), &env.namespace);
        let owned = Owned::watch(
            configmaps,
            watcher::Config::default(),
            &shared,
            "configmaps",
        );
        tokio::time::timeout(Duration::from_secs(30), owned.ready())
            .await
            .expect("the cache lists");
        assert_eq!(owned.len(), 30, "real: {}", env.is_real());
        assert_eq!(lists(&env, false), 0, "real: {}", env.is_real());
        assert_eq!(lists(&env, true), 1, "real: {}", env.is_real());
        // Cached without what no reconcile reads: `kubectl apply`'s record, `managedFields`.
        let cached = owned.get(&env.namespace, "streamed-0").await.unwrap();
        let annotations = cached.metadata.annotations.as_ref().unwrap();
        assert!(!annotations.contains_key(LAST_APPLIED), "{annotations:?}");
        assert_eq!(annotations["example.com/kept"], "yes");
        assert_eq!(cached.metadata.managed_fields, None);
    }
}

/// An API server that refuses to stream a list (the WatchList feature gate off answers 422)
/// is listed in pages instead: the cache still syncs.
#[tokio::test]
async fn a_cache_lists_in_pages_where_the_server_refuses_to_stream() {
    for env in backends().await {
        let shared = Shared::new(&OPERATOR, env.operator.clone(), None);
        configmaps(&env, "paged", 30).await;
        env.requests.clear();
        env.requests.fail_next(Verb::List, "configmaps", 422, 1);
        let configmaps: Api<ConfigMap> = Api::namespaced(env.operator.clone(), &env.namespace);
        let owned = Owned::watch(
            configmaps,
            watcher::Config::default(),
            &shared,
            "configmaps",
        );
        tokio::time::timeout(Duration::from_secs(30), owned.ready())
            .await
            .expect("the cache lists in pages");
        assert_eq!(owned.len(), 30, "real: {}", env.is_real());
        // The streamed list refused, then a list request.
        assert_eq!(lists(&env, true), 1, "real: {}", env.is_real());
        assert_eq!(lists(&env, false), 1, "real: {}", env.is_real());
    }
}
