//! `crate::migration`: a kind's stored objects migrated to its new storage version and
//! its CRD's `storedVersions` pruned, so that the old version can be removed.
//!
//! On the real control plane (skipped without `KUBEBUILDER_ASSETS`; kube-controller-manager
//! runs its storage version migrator there): objects written in `v1alpha1`, the storage moved
//! to `v1`, the migration run as the operator's ServiceAccount with only the role of
//! `migration::role_yaml`, `storedVersions` pruned to `[v1]`, `v1alpha1` removed from the CRD,
//! and every object still read in `v1` with every field. A second run does nothing.
//!
//! On the in-memory server, which has no discovery and no versions to convert between (objects
//! are kept per version path, never converted, and no controller runs migrations): the fallback
//! that rewrites every object and prunes `storedVersions`, its guard against objects written
//! meanwhile, and the second run that does nothing. What it skips: that the rewrite stores the
//! objects in another version, which only the real server shows.

use std::path::Path;
use std::time::Duration;

use crate::Operator;
use crate::manager::Shared;
use crate::migration::{self, Method, Outcome, StorageMigration};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use memop_test::TestEnv;
use memop_test::requests::Verb;
use serde_json::{Value, json};

const OPERATOR: Operator = Operator {
    name: "example-operator",
    domain: "example.com",
};
const GROUP: &str = "migration.example.com";
const CRD: &str = "gadgets.migration.example.com";

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture_migration")
}

/// The CRD of `Gadget`, served in `v1alpha1` and `v1` with the same schema (so `None`
/// conversion loses nothing), stored in `storage`.
fn crd(storage: &str, versions: &[&str]) -> CustomResourceDefinition {
    let schema = json!({ "openAPIV3Schema": {
        "type": "object",
        "properties": { "spec": { "type": "object", "properties": {
            "size": { "type": "integer" },
            "label": { "type": "string" },
            "tags": { "type": "array", "items": { "type": "string" } },
        } } },
    } });
    let versions: Vec<Value> = versions
        .iter()
        .map(|version| {
            json!({
                "name": version,
                "served": true,
                "storage": *version == storage,
                "schema": schema,
            })
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": CRD },
        "spec": {
            "group": GROUP,
            "names": { "kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList" },
            "scope": "Namespaced",
            "versions": versions,
        },
    }))
    .expect("a CRD")
}

fn gadgets(version: &str) -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: version.into(),
        api_version: format!("{GROUP}/{version}"),
        kind: "Gadget".into(),
        plural: "gadgets".into(),
    }
}

fn gadget(version: &str, i: usize) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{version}"),
        "kind": "Gadget",
        "metadata": { "name": format!("gadget-{i}") },
        "spec": { "size": i, "label": format!("label {i}"), "tags": ["a", format!("t{i}")] },
    }))
    .expect("a Gadget")
}

/// On the in-memory server: the Gadget CRD stored in `v1` with `v1alpha1` still in its
/// `storedVersions` (as a move of the storage leaves it), and `count` Gadgets; the CRDs' API
/// and the Gadgets' in the test's namespace.
async fn moved_to_v1(
    env: &TestEnv,
    count: usize,
) -> (Api<CustomResourceDefinition>, Api<DynamicObject>) {
    let crds = Api::<CustomResourceDefinition>::all(env.admin.clone());
    crds.create(&PostParams::default(), &crd("v1", &["v1alpha1", "v1"]))
        .await
        .unwrap();
    let status = json!({ "status": { "storedVersions": ["v1alpha1", "v1"] } });
    crds.patch_status(CRD, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let all =
        Api::<DynamicObject>::namespaced_with(env.admin.clone(), &env.namespace, &gadgets("v1"));
    for i in 0..count {
        all.create(&PostParams::default(), &gadget("v1", i))
            .await
            .unwrap();
    }
    (crds, all)
}

/// The `StorageVersionMigration`s of the cluster.
fn storage_version_migrations(env: &TestEnv) -> Api<DynamicObject> {
    Api::all_with(
        env.admin.clone(),
        &ApiResource {
            group: migration::GROUP.into(),
            version: "v1".into(),
            api_version: format!("{}/v1", migration::GROUP),
            kind: "StorageVersionMigration".into(),
            plural: "storageversionmigrations".into(),
        },
    )
}

fn stored_versions(crd: &CustomResourceDefinition) -> Vec<String> {
    crd.status
        .as_ref()
        .and_then(|status| status.stored_versions.clone())
        .unwrap_or_default()
}

#[test]
fn the_fixture_role_is_what_role_yaml_writes() {
    let role = std::fs::read_to_string(fixture().join("config/rbac/storage_migration_role.yaml"))
        .expect("the fixture's role");
    assert_eq!(role, migration::role_yaml(&[CRD]));
}

#[tokio::test]
async fn stored_objects_migrate_and_the_old_version_can_be_removed() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    let crds = Api::<CustomResourceDefinition>::all(env.admin.clone());
    crds.create(
        &PostParams::default(),
        &crd("v1alpha1", &["v1alpha1", "v1"]),
    )
    .await
    .expect("creating the CRD");
    wait_for(&crds, |crd| {
        crd.status.as_ref().is_some_and(|status| {
            status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
    })
    .await;

    // Three objects written, and stored, in v1alpha1.
    let old = Api::<DynamicObject>::namespaced_with(
        env.admin.clone(),
        &env.namespace,
        &gadgets("v1alpha1"),
    );
    for i in 0..3 {
        old.create(&PostParams::default(), &gadget("v1alpha1", i))
            .await
            .expect("a v1alpha1 Gadget");
    }
    // The storage moves to v1: storedVersions lists both from now on.
    let mut moved = crds.get(CRD).await.unwrap();
    moved.spec = crd("v1", &["v1alpha1", "v1"]).spec;
    crds.replace(CRD, &PostParams::default(), &moved)
        .await
        .expect("moving the storage to v1");
    assert_eq!(
        stored_versions(&crds.get(CRD).await.unwrap()),
        ["v1alpha1", "v1"]
    );
    // The API server refuses to remove a version that objects may still be stored in.
    let mut removed = crds.get(CRD).await.unwrap();
    removed.spec = crd("v1", &["v1"]).spec;
    let refused = crds.replace(CRD, &PostParams::default(), &removed).await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(status)) if status.message.contains("storedVersions")),
        "{refused:?}"
    );

    // The operator, as its ServiceAccount with only the migration's role, migrates.
    let shared = Shared::new(&OPERATOR, env.operator.clone(), None);
    let migration = StorageMigration::new([CRD]).with_poll_interval(Duration::from_millis(300));
    let outcome = tokio::time::timeout(Duration::from_secs(180), migration.migrate(&shared, CRD))
        .await
        .expect("the migration finishes within 3 minutes")
        .expect("the migration succeeds");
    let Outcome::Migrated { from, to, method } = &outcome else {
        panic!("nothing migrated: {outcome:?}")
    };
    assert_eq!(
        (from.as_slice(), to.as_str()),
        (&["v1alpha1".to_string()][..], "v1")
    );
    let Method::StorageVersionMigration { name, api_version } = method else {
        panic!("migrated without a StorageVersionMigration: {method:?}")
    };
    assert_eq!(api_version, "storagemigration.k8s.io/v1");
    assert_eq!(stored_versions(&crds.get(CRD).await.unwrap()), ["v1"]);

    // Reported: the metric and an Event on the CRD.
    let metrics = shared.metrics().encode();
    assert!(
        metrics.contains(&format!(
            "memop_storage_migrations_total{{crd=\"{CRD}\",method=\"storageversionmigration\",result=\"success\"}} 1"
        )),
        "{metrics}"
    );
    let events =
        Api::<k8s_openapi::api::events::v1::Event>::namespaced(env.admin.clone(), "default");
    let events = events.list(&ListParams::default()).await.unwrap();
    let event = events
        .items
        .iter()
        .find(|event| event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(CRD))
        .expect("an Event about the CRD");
    assert_eq!(event.reason.as_deref(), Some("StorageMigrated"));
    assert!(
        event
            .note
            .as_deref()
            .unwrap_or_default()
            .contains(name.as_str()),
        "{event:?}"
    );

    // v1alpha1 can go now, and every object still reads in v1, every field kept: were one still
    // stored in v1alpha1, the API server could not decode it any more.
    let mut removed = crds.get(CRD).await.unwrap();
    removed.spec = crd("v1", &["v1"]).spec;
    crds.replace(CRD, &PostParams::default(), &removed)
        .await
        .expect("removing v1alpha1");
    let new =
        Api::<DynamicObject>::namespaced_with(env.admin.clone(), &env.namespace, &gadgets("v1"));
    let mut read = Vec::new();
    for _ in 0..100 {
        // The API server serves the new CRD version set within moments.
        match new.list(&ListParams::default()).await {
            Ok(list) if list.items.len() == 3 => {
                read = list.items;
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert_eq!(read.len(), 3, "every Gadget reads in v1");
    for (i, object) in read.iter().enumerate() {
        assert_eq!(
            object.data["spec"],
            gadget("v1", i).data["spec"],
            "gadget-{i}"
        );
        assert_eq!(
            object.types.as_ref().unwrap().api_version,
            format!("{GROUP}/v1")
        );
    }

    // A second run finds nothing to do, and creates no other migration.
    let again = migration.migrate(&shared, CRD).await.expect("a second run");
    assert_eq!(again, Outcome::UpToDate);
    let migrations = storage_version_migrations(&env);
    let mine: Vec<_> = migrations
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|m| m.data["spec"]["resource"]["group"] == GROUP)
        .collect();
    assert_eq!(mine.len(), 1, "{mine:?}");
}

#[tokio::test]
async fn without_a_migration_api_the_manager_rewrites_every_object_and_prunes() {
    let env = TestEnv::in_memory();
    let (crds, all) = moved_to_v1(&env, 3).await;

    let shared = Shared::new(&OPERATOR, env.operator.clone(), None);
    let migration = StorageMigration::new([CRD]);
    let outcome = migration
        .migrate(&shared, CRD)
        .await
        .expect("the migration");
    assert_eq!(
        outcome,
        Outcome::Migrated {
            from: vec!["v1alpha1".into()],
            to: "v1".into(),
            method: Method::Rewrite { objects: 3 },
        }
    );
    assert_eq!(stored_versions(&crds.get(CRD).await.unwrap()), ["v1"]);
    // Each object was written once, guarded by the resourceVersion it was listed at, and
    // nothing in it changed.
    let patches: Vec<_> = env
        .requests
        .requests()
        .into_iter()
        .filter(|r| r.verb == Verb::Patch && r.resource == "gadgets")
        .collect();
    assert_eq!(patches.len(), 3, "{patches:?}");
    for (i, object) in all
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .enumerate()
    {
        assert_eq!(object.data["spec"], gadget("v1", i).data["spec"]);
    }
    let metrics = shared.metrics().encode();
    assert!(
        metrics.contains(&format!(
            "memop_storage_migrations_total{{crd=\"{CRD}\",method=\"rewrite\",result=\"success\"}} 1"
        )),
        "{metrics}"
    );

    // Once pruned, a run reads the CRD and writes nothing.
    env.requests.clear();
    assert_eq!(
        migration.migrate(&shared, CRD).await.unwrap(),
        Outcome::UpToDate
    );
    let writes: Vec<_> = env
        .requests
        .requests()
        .into_iter()
        .filter(|r| r.verb.is_write())
        .collect();
    assert!(writes.is_empty(), "{writes:?}");
}

#[tokio::test]
async fn an_object_written_during_the_rewrite_is_not_written_again() {
    // A conflict on the rewrite's guarded write means the object was written since it was
    // listed, so it is stored in the storage version already: the rewrite goes on.
    let env = TestEnv::in_memory();
    let (crds, _) = moved_to_v1(&env, 2).await;
    env.requests.fail_next(Verb::Patch, "gadgets", 409, 1);
    let shared = Shared::new(&OPERATOR, env.operator.clone(), None);
    let outcome = StorageMigration::new([CRD])
        .migrate(&shared, CRD)
        .await
        .unwrap();
    assert_eq!(
        outcome,
        Outcome::Migrated {
            from: vec!["v1alpha1".into()],
            to: "v1".into(),
            method: Method::Rewrite { objects: 1 },
        }
    );
    assert_eq!(stored_versions(&crds.get(CRD).await.unwrap()), ["v1"]);
}

/// The rewrite of a kind with more objects than it can patch before etcd compacts the
/// revision its list began at: the API server answers the next page 410 Expired, with a token
/// that resumes the list where it stopped (as the real server's `handleCompactedErrorForPaging`
/// does). The rewrite goes on with it, each object written once, instead of failing (or
/// starting over, to expire again).
#[tokio::test]
async fn a_rewrite_whose_list_expires_resumes_where_it_stopped() {
    const OBJECTS: usize = 1_100;
    let env = TestEnv::in_memory();
    let memop_test::Backend::InMemory(server) = &env.backend else {
        unreachable!("in memory")
    };
    let (crds, _) = moved_to_v1(&env, OBJECTS).await;
    server.expire_continue_tokens(1);

    let shared = Shared::new(&OPERATOR, env.operator.clone(), None);
    let outcome = StorageMigration::new([CRD])
        .migrate(&shared, CRD)
        .await
        .expect("the migration");
    assert_eq!(
        outcome,
        Outcome::Migrated {
            from: vec!["v1alpha1".into()],
            to: "v1".into(),
            method: Method::Rewrite { objects: OBJECTS },
        }
    );
    let requests = env.requests.requests();
    let lists: Vec<_> = (requests.iter())
        .filter(|r| r.verb == Verb::List && r.resource == "gadgets")
        .collect();
    // Three pages of 500, the second asked for again with the token of the 410.
    assert_eq!(lists.len(), 4, "{lists:?}");
    let mut patched: Vec<_> = (requests.iter())
        .filter(|r| r.verb == Verb::Patch && r.resource == "gadgets")
        .filter_map(|r| r.name.clone())
        .collect();
    assert_eq!(patched.len(), OBJECTS, "each object written once");
    patched.sort();
    patched.dedup();
    assert_eq!(patched.len(), OBJECTS);
    assert_eq!(stored_versions(&crds.get(CRD).await.unwrap()), ["v1"]);
}

/// A `StorageVersionMigration` marked `Failed` (by kube-controller-manager, after an error
/// listing or writing the objects) does not block the migration for ever: its name is fixed by
/// the CRD, the storage version and the generation, so every attempt finds it again; the
/// manager rewrites the objects itself instead, and prunes.
#[tokio::test]
async fn a_failed_storage_version_migration_is_not_the_end_of_the_migration() {
    let Some(env) = TestEnv::real_for(&fixture()).await else {
        return;
    };
    // A CRD of its own: the control plane, and its cluster-scoped CRDs, serve the whole binary.
    const GROUP: &str = "failing.example.com";
    const CRD: &str = "gizmos.failing.example.com";
    let mut definition = crd("v1alpha1", &["v1alpha1", "v1"]);
    definition.metadata.name = Some(CRD.into());
    definition.spec.group = GROUP.into();
    definition.spec.names.kind = "Gizmo".into();
    definition.spec.names.plural = "gizmos".into();
    definition.spec.names.singular = Some("gizmo".into());
    definition.spec.names.list_kind = Some("GizmoList".into());
    let crds = Api::<CustomResourceDefinition>::all(env.admin.clone());
    crds.create(&PostParams::default(), &definition)
        .await
        .expect("creating the CRD");
    let gizmos = |version: &str| ApiResource {
        group: GROUP.into(),
        version: version.into(),
        api_version: format!("{GROUP}/{version}"),
        kind: "Gizmo".into(),
        plural: "gizmos".into(),
    };
    let old = Api::<DynamicObject>::namespaced_with(
        env.admin.clone(),
        &env.namespace,
        &gizmos("v1alpha1"),
    );
    for i in 0..3 {
        let mut object = gadget("v1alpha1", i);
        object.types.as_mut().unwrap().api_version = format!("{GROUP}/v1alpha1");
        object.types.as_mut().unwrap().kind = "Gizmo".into();
        // The CRD is served within moments of its creation.
        let mut created = false;
        for _ in 0..100 {
            if old.create(&PostParams::default(), &object).await.is_ok() {
                created = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(created, "a v1alpha1 Gizmo");
    }
    let mut moved = crds.get(CRD).await.unwrap();
    let mut to_v1 = definition.spec.clone();
    for version in &mut to_v1.versions {
        version.storage = version.name == "v1";
    }
    moved.spec = to_v1;
    let moved = crds
        .replace(CRD, &PostParams::default(), &moved)
        .await
        .expect("moving the storage to v1");
    let generation = moved.metadata.generation.unwrap();

    // The migration of this CRD, storage version and generation is there already, and
    // Failed: made before, for a resource that is not there, so that kube-controller-manager
    // cannot make it succeed, and marked Failed through its status.
    let migrations = storage_version_migrations(&env);
    let name = format!("{CRD}-v1-{generation}");
    let failed: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{}/v1", migration::GROUP),
        "kind": "StorageVersionMigration",
        "metadata": { "name": name },
        "spec": { "resource": { "group": "nowhere.example.com", "resource": "nothings" } },
    }))
    .unwrap();
    migrations
        .create(&PostParams::default(), &failed)
        .await
        .expect("creating the migration");
    let status = json!({ "status": { "conditions": [{
        "type": "Failed", "status": "True", "reason": "MigrationFailed",
        "message": "the test failed it", "lastTransitionTime": "2026-12-05T00:00:00Z",
    }] } });
    migrations
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("marking the migration Failed");

    let shared = Shared::new(&OPERATOR, env.admin.clone(), None);
    let migration = StorageMigration::new([CRD]).with_poll_interval(Duration::from_millis(300));
    let outcome = tokio::time::timeout(Duration::from_secs(60), migration.migrate(&shared, CRD))
        .await
        .expect("the migration finishes within a minute");
    let outcome = outcome.expect("a failed StorageVersionMigration blocks the migration");
    assert_eq!(
        outcome,
        Outcome::Migrated {
            from: vec!["v1alpha1".into()],
            to: "v1".into(),
            method: Method::Rewrite { objects: 3 },
        }
    );
    assert_eq!(stored_versions(&crds.get(CRD).await.unwrap()), ["v1"]);
    // v1alpha1 can go: every object is stored in v1.
    let mut removed = crds.get(CRD).await.unwrap();
    removed.spec.versions.retain(|version| version.name == "v1");
    crds.replace(CRD, &PostParams::default(), &removed)
        .await
        .expect("removing v1alpha1");
    let new =
        Api::<DynamicObject>::namespaced_with(env.admin.clone(), &env.namespace, &gizmos("v1"));
    let mut read = 0;
    for _ in 0..100 {
        match new.list(&ListParams::default()).await {
            Ok(list) if list.items.len() == 3 => {
                read = 3;
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert_eq!(read, 3, "every Gizmo reads in v1");
    crds.delete(CRD, &Default::default()).await.unwrap();
}

async fn wait_for(
    crds: &Api<CustomResourceDefinition>,
    ready: impl Fn(&CustomResourceDefinition) -> bool,
) {
    for _ in 0..100 {
        if crds.get(CRD).await.is_ok_and(|crd| ready(&crd)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{CRD} never became ready");
}
