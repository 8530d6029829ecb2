//! What a controller's caches cost per object, on the real control plane: the heap growth
//! (`memop_test::heap::Counting`) of a controller's own cache (`controller::Store`, fed by
//! `controller::cache`) and of an `Owned` cache (both compact JSON) while they list
//! [`OBJECTS`] ConfigMaps each, with one replica unsharded and with three sharded replicas. A
//! measurement, which checks only that the controller's cache keeps an object in its JSON and
//! at most [`KEY_ROOM`] besides (kube's typed store took 7 times the JSON): run it alone, with
//!
//! ```text
//! KUBEBUILDER_ASSETS=… cargo test -p memop-runtime --release --lib tests::cache_memory -- --ignored --nocapture
//! ```
//!
//! (docs/performance.md has the figures).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::Operator;
use crate::controller::{Builder, Owned, Reconciler, Report, Result, Store};
use crate::manager::Shared;
use crate::manager::sharding::{Config, Shard, Timings};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use memop_test::{TestEnv, eventually, heap};
use serde_json::json;

const OPERATOR: Operator = Operator {
    name: "test-operator",
    domain: "example.com",
};
const RING: &str = "test-operator.example.com";
const PRIMARY: &str = "example.com/primary=true";
const OWNED: &str = "example.com/owned=true";
/// How many primary ConfigMaps, each owning one.
const OBJECTS: usize = 3000;
/// What a cached object may take besides its JSON: its key (name and namespace), its place in
/// the map, and what the controller keeps of it besides (about 350 B).
const KEY_ROOM: usize = 512;
const WAIT: Duration = Duration::from_secs(300);

/// A controller that does nothing: only its cache is measured.
struct Idle;

impl Reconciler for Idle {
    type Object = ConfigMap;

    fn conditions(_: &ConfigMap) -> &[Condition] {
        &[]
    }

    async fn apply(&self, _: &ConfigMap, _: &mut Report) -> Result<Action> {
        Ok(Action::await_change())
    }
}

/// Makes the primary ConfigMaps (labels and a little data, as a small custom resource) and one
/// owned by each (more data, as an operand).
async fn create(env: &TestEnv) {
    let api = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    let label = |selector: &str| {
        selector
            .split_once('=')
            .map(|(k, v)| json!({ k: v }))
            .unwrap()
    };
    for i in 0..OBJECTS {
        let primary = json!({
            "metadata": { "name": format!("primary-{i:05}"), "labels": label(PRIMARY) },
            "data": { "size": "3", "image": "memcached:1.6.26-alpine" },
        });
        let primary = serde_json::from_value(primary).unwrap();
        let primary = api.create(&PostParams::default(), &primary).await.unwrap();
        let owned = json!({
            "metadata": {
                "name": format!("owned-{i:05}"),
                "labels": label(OWNED),
                "ownerReferences": [{
                    "apiVersion": "v1", "kind": "ConfigMap", "name": primary.name_any(),
                    "uid": primary.uid().unwrap(), "controller": true,
                }],
            },
            "data": { "config": "x".repeat(1000) },
        });
        let owned = serde_json::from_value(owned).unwrap();
        api.create(&PostParams::default(), &owned).await.unwrap();
    }
}

/// A replica's two caches.
struct Caches {
    store: Store<ConfigMap>,
    owned: Owned<ConfigMap>,
    _controller: tokio::task::JoinHandle<anyhow::Result<()>>,
}

fn start(env: &TestEnv, client: Client, shard: Option<Shard>) -> Caches {
    let mut shared = Shared::new(&OPERATOR, client.clone(), Some(env.namespace.clone()));
    if let Some(shard) = shard {
        shared = shared.with_shard(shard);
    }
    let controller = Builder::new("primary", &shared)
        .watching(watcher::Config::default().labels(PRIMARY))
        .build(Idle);
    let api = Api::namespaced(client, &env.namespace);
    let owned = Owned::watch(
        api,
        watcher::Config::default().labels(OWNED),
        &shared,
        "owned",
    );
    Caches {
        store: controller.store(),
        owned,
        _controller: tokio::spawn(controller.run()),
    }
}

/// The heap once it has stopped moving (transient lists freed).
async fn settled_heap() -> usize {
    tokio::time::sleep(Duration::from_secs(3)).await;
    heap::live()
}

#[tokio::test]
#[ignore = "a measurement: run it alone, with --ignored"]
async fn bytes_per_cached_object() {
    let Some(env) =
        TestEnv::real_for(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture")).await
    else {
        return;
    };
    create(&env).await;
    let api = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    let json = |selector: &str| {
        let api = api.clone();
        let selector = selector.to_string();
        async move {
            let list = api
                .list(&ListParams::default().labels(&selector))
                .await
                .unwrap();
            let bytes: usize = (list.items.into_iter())
                .map(|mut o| {
                    o.managed_fields_mut().clear();
                    serde_json::to_vec(&o).unwrap().len()
                })
                .sum();
            bytes / OBJECTS
        }
    };
    let (primary_json, owned_json) = (json(PRIMARY).await, json(OWNED).await);
    println!(
        "{OBJECTS} primary objects of {primary_json} B of JSON each (without managedFields), {OBJECTS} owned of {owned_json} B"
    );

    // Unsharded: one replica caches everything.
    let before = settled_heap().await;
    let one = start(&env, env.operator.clone(), None);
    eventually("the unsharded caches listed", WAIT, || async {
        one.store.len() == OBJECTS && one.owned.len() == OBJECTS
    })
    .await;
    let after = settled_heap().await;
    println!(
        "unsharded: {} B per primary-and-owned pair ({} objects each)",
        (after - before) / OBJECTS,
        OBJECTS
    );
    // Each cache alone: the owned cache's share, by dropping it.
    drop(one.owned);
    let without_owned = settled_heap().await;
    let primary = without_owned.saturating_sub(before) / OBJECTS;
    println!(
        "unsharded: owned cache {} B per object, controller cache {primary} B per object",
        (after.saturating_sub(without_owned)) / OBJECTS,
    );
    assert!(
        primary <= primary_json + KEY_ROOM,
        "the controller's cache takes {primary} B per object of {primary_json} B of JSON"
    );
    one._controller.abort();
    drop(one.store);

    // Three sharded replicas in this process: each caches its share.
    let base = settled_heap().await;
    let timings = Timings {
        lease_duration: Duration::from_secs(4),
        renew_deadline: Duration::from_secs(3),
        retry_period: Duration::from_millis(500),
    };
    let replicas: Vec<(Shard, Caches)> = ["shard-a", "shard-b", "shard-c"]
        .into_iter()
        .map(|identity| {
            let config =
                Config::new(&OPERATOR, RING, Some(&env.namespace), identity).with_timings(timings);
            let shard = Shard::start(env.operator.clone(), config);
            let caches = start(&env, env.operator.clone(), Some(shard.clone()));
            (shard, caches)
        })
        .collect();
    eventually("the ring settled and its caches listed", WAIT, || async {
        let mut held = BTreeMap::new();
        for (shard, caches) in &replicas {
            held.insert(shard.identity().to_string(), caches.store.len());
        }
        replicas.iter().all(|(shard, _)| shard.members().len() == 3)
            && replicas
                .iter()
                .map(|(s, _)| s.active().count_ones())
                .sum::<u32>()
                == 64
            && held.values().sum::<usize>() == OBJECTS
            && replicas.iter().map(|(_, c)| c.owned.len()).sum::<usize>() == OBJECTS
    })
    .await;
    let sharded = settled_heap().await;
    for (shard, caches) in &replicas {
        println!(
            "{}: {} buckets, caches {} primary and {} owned objects",
            shard.identity(),
            shard.active().count_ones(),
            caches.store.len(),
            caches.owned.len()
        );
    }
    println!(
        "three shards: {} B in all, {} B per primary-and-owned pair, about {} B per replica",
        sharded - base,
        (sharded - base) / OBJECTS,
        (sharded - base) / 3
    );
    for (shard, _) in &replicas {
        shard.abandon();
    }
}
