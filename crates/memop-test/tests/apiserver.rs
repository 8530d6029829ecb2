//! Tests of the in-memory API server itself, through a real `kube::Client`.

use std::{sync::Arc, time::Duration};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Namespace},
    events::v1::Event as K8sEvent,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{
        ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
        PostParams, WatchEvent, WatchParams,
    },
    runtime::{
        Controller,
        controller::Action,
        events::{Event, EventType, Recorder, Reporter},
        finalizer::{Event as Finalizer, finalizer},
        watcher,
    },
};
use memop_test::{ApiServer, Verb};
use serde_json::{Value, json};
use tokio::{
    sync::{mpsc, oneshot},
    time::timeout,
};

/// Generous bound for awaits that must complete; they normally take milliseconds.
const WAIT: Duration = Duration::from_secs(5);

fn config_map(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": labels },
        "data": { "key": "value" },
    }))
    .expect("valid ConfigMap")
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "app", "image": "app:1" }] },
            },
        },
    }))
    .expect("valid Deployment")
}

fn api_error(result: Result<impl std::fmt::Debug, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn names(list: impl IntoIterator<Item = ConfigMap>) -> Vec<String> {
    list.into_iter().map(|cm| cm.name_any()).collect()
}

#[tokio::test]
async fn get_of_a_missing_object_is_a_not_found_status() {
    let api: Api<ConfigMap> = Api::default_namespaced(ApiServer::new().client());

    let status = api_error(api.get("missing").await);

    assert!(status.is_not_found());
    assert_eq!(status.code, 404);
    assert_eq!(status.message, r#"configmaps "missing" not found"#);
    assert!(api.get_opt("missing").await.unwrap().is_none());
}

#[tokio::test]
async fn create_sets_server_fields_and_rejects_duplicates() {
    let api: Api<ConfigMap> = Api::default_namespaced(ApiServer::new().client());
    let pp = PostParams::default();

    let created = api.create(&pp, &config_map("a", json!({}))).await.unwrap();
    let other = api.create(&pp, &config_map("b", json!({}))).await.unwrap();

    assert_eq!(created.namespace().as_deref(), Some("default"));
    assert!(created.uid().is_some() && created.uid() != other.uid());
    assert!(created.creation_timestamp().is_some());
    assert_eq!(created.metadata.generation, Some(1));
    let rv = |cm: &ConfigMap| cm.resource_version().unwrap().parse::<u64>().unwrap();
    assert!(rv(&other) > rv(&created));
    assert_eq!(api.get("a").await.unwrap(), created);

    let status = api_error(api.create(&pp, &config_map("a", json!({}))).await);
    assert!(status.is_already_exists());
    assert_eq!(status.code, 409);

    let mut generated = config_map("", json!({}));
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let generated = api.create(&pp, &generated).await.unwrap();
    assert!(generated.name_any().starts_with("gen-"));
}

#[tokio::test]
async fn writes_with_a_stale_resource_version_conflict() {
    let api: Api<ConfigMap> = Api::default_namespaced(ApiServer::new().client());
    let pp = PostParams::default();
    let stale = api.create(&pp, &config_map("a", json!({}))).await.unwrap();
    let mut fresh = stale.clone();
    fresh.data = Some([("key".to_owned(), "new".to_owned())].into());
    api.replace("a", &pp, &fresh).await.unwrap();

    assert!(api_error(api.replace("a", &pp, &stale).await).is_conflict());
    let stale_patch = json!({ "metadata": { "resourceVersion": stale.resource_version() } });
    let status = api_error(
        api.patch("a", &PatchParams::default(), &Patch::Merge(stale_patch))
            .await,
    );
    assert!(status.is_conflict());
    assert_eq!(api.get("a").await.unwrap().data, fresh.data);
    assert!(
        api_error(
            api.replace("missing", &pp, &config_map("missing", json!({})))
                .await
        )
        .is_not_found()
    );
}

#[tokio::test]
async fn lists_filter_by_namespace_and_label_and_field_selectors() {
    let client = ApiServer::new().client();
    let pp = PostParams::default();
    let default: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let other: Api<ConfigMap> = Api::namespaced(client.clone(), "other");
    default
        .create(
            &pp,
            &config_map("web", json!({ "app": "web", "tier": "front" })),
        )
        .await
        .unwrap();
    default
        .create(
            &pp,
            &config_map("db", json!({ "app": "db", "tier": "back" })),
        )
        .await
        .unwrap();
    default
        .create(&pp, &config_map("plain", json!({})))
        .await
        .unwrap();
    other
        .create(&pp, &config_map("web", json!({ "app": "web" })))
        .await
        .unwrap();
    let all: Api<ConfigMap> = Api::all(client);

    let select = |labels: &str| ListParams::default().labels(labels);
    assert_eq!(
        names(default.list(&select("app=web")).await.unwrap()),
        ["web"]
    );
    assert_eq!(
        names(default.list(&select("app==db")).await.unwrap()),
        ["db"]
    );
    assert_eq!(
        names(default.list(&select("app!=web")).await.unwrap()),
        ["db", "plain"]
    );
    assert_eq!(
        names(
            default
                .list(&select("tier in (front, back)"))
                .await
                .unwrap()
        ),
        ["db", "web"]
    );
    assert_eq!(
        names(default.list(&select("tier notin (front)")).await.unwrap()),
        ["db", "plain"]
    );
    assert_eq!(
        names(default.list(&select("app,!tier")).await.unwrap()),
        Vec::<String>::new()
    );
    assert_eq!(
        names(all.list(&select("app=web,!tier")).await.unwrap()),
        ["web"]
    );
    assert!(api_error(default.list(&select("app in web")).await).code == 400);

    let fields = |fields: &str| ListParams::default().fields(fields);
    assert_eq!(
        names(all.list(&fields("metadata.name=web")).await.unwrap()).len(),
        2
    );
    let outside_default = all
        .list(&fields("metadata.namespace!=default"))
        .await
        .unwrap();
    assert_eq!(
        outside_default.items[0].namespace().as_deref(),
        Some("other")
    );
    assert_eq!(outside_default.items.len(), 1);

    // Paged: each page goes on from the last one's continue token, the last has none.
    let mut pages = Vec::new();
    let mut params = ListParams::default().limit(3);
    loop {
        let page = all.list(&params).await.unwrap();
        assert!(page.metadata.resource_version.is_some());
        pages.push(page.items.iter().map(|o| o.name_any()).collect::<Vec<_>>());
        match page.metadata.continue_ {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [3, 1]);
    assert_eq!(pages.concat().len(), 4);
}

/// A list continued after its token expired is answered as the real server answers it once
/// etcd compacted the revision the list began at: 410 Expired, with a token in the `Status`'s
/// list metadata that goes on from where the list stopped.
#[tokio::test]
async fn an_expired_continue_token_is_answered_with_one_that_resumes_the_list() {
    let server = ApiServer::new();
    let client = server.client();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    for name in ["a", "b", "c"] {
        let object = serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap();
        api.create(&PostParams::default(), &object).await.unwrap();
    }
    let first = api.list(&ListParams::default().limit(2)).await.unwrap();
    let token = first.metadata.continue_.expect("a second page");
    server.expire_continue_tokens(1);
    let expired = api
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = expired else {
        panic!("{expired}")
    };
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    let resume = status.metadata.and_then(|m| m.continue_).expect("a token");
    let rest = api
        .list(&ListParams::default().limit(2).continue_token(&resume))
        .await
        .unwrap();
    let names: Vec<String> = rest.items.iter().map(|o| o.name_any()).collect();
    assert_eq!(names, ["c"]);
    assert!(rest.metadata.continue_.is_none());
}

#[tokio::test]
async fn any_group_and_scope_works_without_registration() {
    let server = ApiServer::new();
    let client = server.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({ "metadata": { "name": "team" } })).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let status = Patch::Merge(json!({ "status": { "phase": "Active" } }));
    let ns = namespaces
        .patch_status("team", &PatchParams::default(), &status)
        .await
        .unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
    assert_eq!(ns.metadata.namespace, None, "cluster-scoped");

    let gvk = GroupVersionKind::gvk("cache.example.com", "v1alpha1", "Memcached");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "memcacheds");
    let memcacheds: Api<DynamicObject> = Api::namespaced_with(client, "team", &resource);
    let mut memcached = DynamicObject::new("sample", &resource);
    memcached.data = json!({ "spec": { "size": 2 } });
    memcacheds
        .create(&PostParams::default(), &memcached)
        .await
        .unwrap();
    let listed = memcacheds.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items[0].data["spec"]["size"], 2);
    assert_eq!(listed.types.kind, "MemcachedList");
    let status = Patch::Merge(json!({ "status": { "ready": true } }));
    memcacheds
        .patch_status("sample", &PatchParams::default(), &status)
        .await
        .unwrap();

    let last = server.requests().pop().unwrap();
    assert_eq!(last.resource, "memcacheds/status");
    assert_eq!(last.namespace.as_deref(), Some("team"));
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let status = api_error(memcacheds.create(&dry_run, &memcached).await);
    assert_eq!(
        status.code, 400,
        "dry runs are refused rather than persisted"
    );
}

#[tokio::test]
async fn status_subresource_is_isolated_and_generation_follows_spec() {
    let api: Api<Deployment> = Api::default_namespaced(ApiServer::new().client());
    let pp = PatchParams::default();
    let created = api
        .create(&PostParams::default(), &deployment("web", 1))
        .await
        .unwrap();
    assert!(created.status.is_none());

    let status = json!({ "status": { "replicas": 1 }, "spec": { "replicas": 9 } });
    let after_status = api
        .patch_status("web", &pp, &Patch::Merge(status))
        .await
        .unwrap();
    assert_eq!(after_status.status.as_ref().unwrap().replicas, Some(1));
    assert_eq!(
        after_status.spec.replicas,
        Some(1),
        "status writes keep spec"
    );
    assert_eq!(after_status.metadata.generation, Some(1));
    assert_ne!(after_status.resource_version(), created.resource_version());

    let main = json!({ "status": { "replicas": 5 }, "metadata": { "labels": { "a": "b" } } });
    let after_labels = api.patch("web", &pp, &Patch::Merge(main)).await.unwrap();
    assert_eq!(
        after_labels.status, after_status.status,
        "main writes keep status"
    );
    assert_eq!(
        after_labels.metadata.generation,
        Some(1),
        "labels are not spec"
    );

    let spec = json!({ "spec": { "replicas": 3 } });
    let after_spec = api.patch("web", &pp, &Patch::Merge(&spec)).await.unwrap();
    assert_eq!(after_spec.metadata.generation, Some(2));

    let again = api.patch("web", &pp, &Patch::Merge(&spec)).await.unwrap();
    assert_eq!(
        again.resource_version(),
        after_spec.resource_version(),
        "no-op write"
    );

    let mut replaced = again.clone();
    replaced.metadata.uid = Some("forged".into());
    replaced.metadata.creation_timestamp = None;
    let replaced = api
        .replace("web", &PostParams::default(), &replaced)
        .await
        .unwrap();
    assert_eq!(
        replaced.uid(),
        created.uid(),
        "server-owned metadata is immutable"
    );
    assert_eq!(replaced.creation_timestamp(), created.creation_timestamp());
}

#[tokio::test]
async fn finalizers_delay_deletion_until_removed_by_json_patch() {
    let api: Api<ConfigMap> = Api::default_namespaced(ApiServer::new().client());
    let mut cm = config_map("held", json!({}));
    cm.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    api.create(&PostParams::default(), &cm).await.unwrap();

    let deleted = api.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = deleted.left().expect("the object, not a Status");
    let deletion_timestamp = marked.metadata.deletion_timestamp.clone();
    assert!(deletion_timestamp.is_some());
    let again = api.delete("held", &DeleteParams::default()).await.unwrap();
    assert_eq!(
        again.left().unwrap().metadata.deletion_timestamp,
        deletion_timestamp
    );
    assert!(api.get_opt("held").await.unwrap().is_some());

    let remove: json_patch::Patch = serde_json::from_value(json!([
        { "op": "test", "path": "/metadata/finalizers/0", "value": "example.com/cleanup" },
        { "op": "remove", "path": "/metadata/finalizers/0" },
    ]))
    .unwrap();
    api.patch("held", &PatchParams::default(), &Patch::<()>::Json(remove))
        .await
        .unwrap();
    assert!(api.get_opt("held").await.unwrap().is_none());
}

#[tokio::test]
async fn deleting_an_owner_garbage_collects_its_dependents() {
    let client = ApiServer::new().client();
    let pp = PostParams::default();
    let config_maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let deployments: Api<Deployment> = Api::default_namespaced(client);
    let owner = config_maps
        .create(&pp, &config_map("owner", json!({})))
        .await
        .unwrap();
    let owned_by = |owner: &ConfigMap| vec![owner.controller_owner_ref(&()).unwrap()];

    let mut child = deployment("child", 1);
    child.metadata.owner_references = Some(owned_by(&owner));
    let child = deployments.create(&pp, &child).await.unwrap();
    let mut grandchild = config_map("grandchild", json!({}));
    grandchild.metadata.owner_references = Some(vec![child.controller_owner_ref(&()).unwrap()]);
    config_maps.create(&pp, &grandchild).await.unwrap();
    let mut guarded = config_map("guarded", json!({}));
    guarded.metadata.owner_references = Some(owned_by(&owner));
    guarded.metadata.finalizers = Some(vec!["example.com/keep".into()]);
    config_maps.create(&pp, &guarded).await.unwrap();
    config_maps
        .create(&pp, &config_map("unrelated", json!({})))
        .await
        .unwrap();

    config_maps
        .delete("owner", &DeleteParams::default())
        .await
        .unwrap();

    assert!(deployments.get_opt("child").await.unwrap().is_none());
    assert!(config_maps.get_opt("grandchild").await.unwrap().is_none());
    let guarded = config_maps.get("guarded").await.unwrap();
    assert!(guarded.metadata.deletion_timestamp.is_some());
    assert!(config_maps.get_opt("unrelated").await.unwrap().is_some());
}

#[tokio::test]
async fn kube_runtime_finalizer_helper_adds_and_removes_its_finalizer() {
    let api: Api<ConfigMap> = Api::default_namespaced(ApiServer::new().client());
    api.create(&PostParams::default(), &config_map("cm", json!({})))
        .await
        .unwrap();
    let (cleaned_tx, mut cleaned_rx) = mpsc::unbounded_channel();
    let run = |cm: ConfigMap| {
        let cleaned_tx = cleaned_tx.clone();
        let api = api.clone();
        async move {
            finalizer(
                &api,
                "example.com/cleanup",
                Arc::new(cm),
                |event| async move {
                    if let Finalizer::Cleanup(cm) = event {
                        cleaned_tx.send(cm.name_any())?;
                    }
                    Ok::<_, mpsc::error::SendError<String>>(Action::await_change())
                },
            )
            .await
        }
    };

    // No finalizers yet: the helper's JSON patch tests `/metadata/finalizers` for null.
    run(api.get("cm").await.unwrap()).await.unwrap();
    assert_eq!(
        api.get("cm").await.unwrap().finalizers(),
        ["example.com/cleanup"]
    );

    api.delete("cm", &DeleteParams::default()).await.unwrap();
    run(api.get("cm").await.unwrap()).await.unwrap();
    assert_eq!(cleaned_rx.recv().await.as_deref(), Some("cm"));
    assert!(api.get_opt("cm").await.unwrap().is_none());
}

#[tokio::test]
async fn merge_patch_and_server_side_apply() {
    let api: Api<ConfigMap> = Api::default_namespaced(ApiServer::new().client());
    let apply = PatchParams::apply("memop-test");
    let desired = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "applied" },
        "data": { "a": "1", "b": "2" },
    });

    let created = api
        .patch("applied", &apply, &Patch::Apply(&desired))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.uid().is_some());

    let merge = json!({ "data": { "a": null, "c": "3" } });
    let merged = api
        .patch("applied", &PatchParams::default(), &Patch::Merge(merge))
        .await
        .unwrap();
    let data = merged.data.unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["b", "c"]);

    let status = api_error(
        api.patch("applied", &PatchParams::default(), &Patch::Apply(&desired))
            .await,
    );
    assert!(status.is_invalid());
    assert_eq!(status.code, 422);
    let missing = api
        .patch("missing", &PatchParams::default(), &Patch::Merge(json!({})))
        .await;
    assert!(api_error(missing).is_not_found());
}

#[tokio::test]
async fn injected_failures_come_first_and_are_logged() {
    let server = ApiServer::new();
    let api: Api<Deployment> = Api::default_namespaced(server.client());
    server.fail_next(Verb::Create, "deployments", 500, 1);

    let status = api_error(
        api.create(&PostParams::default(), &deployment("web", 1))
            .await,
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (500, "InternalError")
    );
    assert!(
        api.get_opt("web").await.unwrap().is_none(),
        "no state change"
    );
    api.create(&PostParams::default(), &deployment("web", 1))
        .await
        .unwrap();
    let status_patch = Patch::Merge(json!({ "status": { "replicas": 1 } }));
    api.patch_status("web", &PatchParams::default(), &status_patch)
        .await
        .unwrap();

    let requests = server.requests();
    let summary: Vec<_> = requests
        .iter()
        .map(|r| (r.verb, r.resource.as_str(), r.injected_failure))
        .collect();
    assert_eq!(
        summary,
        [
            (Verb::Create, "deployments", Some(500)),
            (Verb::Get, "deployments", None),
            (Verb::Create, "deployments", None),
            (Verb::Patch, "deployments/status", None),
        ]
    );
    assert_eq!(requests[3].namespace.as_deref(), Some("default"));
    assert_eq!(requests[3].name.as_deref(), Some("web"));
    assert_eq!(server.writes("deployments"), 2);
    assert_eq!(server.writes("deployments/status"), 1);
    assert_eq!(server.writes("*"), 3);

    server.clear_requests();
    assert!(server.requests().is_empty());
    server.fail_next(Verb::Get, "*", 409, 2);
    assert!(api_error(api.get("web").await).is_conflict());
    assert!(api_error(api.get("web").await).is_conflict());
    api.get("web").await.unwrap();
    assert_eq!(server.writes("*"), 0);
}

#[tokio::test]
async fn watch_replays_from_a_resource_version_then_streams_live() {
    let api: Api<ConfigMap> = Api::default_namespaced(ApiServer::new().client());
    // Something before the starting point, which the watch must not replay.
    api.create(&PostParams::default(), &config_map("before", json!({})))
        .await
        .unwrap();
    let start = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    api.create(&PostParams::default(), &config_map("cm", json!({})))
        .await
        .unwrap();

    let mut events = api
        .watch(&WatchParams::default(), &start)
        .await
        .unwrap()
        .boxed();
    let mut next = async || {
        timeout(WAIT, events.try_next())
            .await
            .expect("event in time")
            .unwrap()
    };
    assert!(matches!(next().await, Some(WatchEvent::Added(cm)) if cm.name_any() == "cm"));

    let patch = Patch::Merge(json!({ "data": { "key": "changed" } }));
    api.patch("cm", &PatchParams::default(), &patch)
        .await
        .unwrap();
    let Some(WatchEvent::Modified(modified)) = next().await else {
        panic!("expected MODIFIED")
    };
    assert_eq!(modified.data.unwrap()["key"], "changed");

    api.delete("cm", &DeleteParams::default()).await.unwrap();
    assert!(matches!(next().await, Some(WatchEvent::Deleted(cm)) if cm.name_any() == "cm"));
}

#[tokio::test]
async fn watch_with_a_selector_sees_objects_enter_and_leave_it() {
    let api: Api<ConfigMap> = Api::default_namespaced(ApiServer::new().client());
    let params = WatchParams::default().labels("app=web");
    let mut events = api.watch(&params, "0").await.unwrap().boxed();
    let mut next = async || {
        timeout(WAIT, events.try_next())
            .await
            .expect("event in time")
            .unwrap()
    };
    let pp = PatchParams::default();

    api.create(&PostParams::default(), &config_map("cm", json!({})))
        .await
        .unwrap();
    api.patch(
        "cm",
        &pp,
        &Patch::Merge(json!({ "metadata": { "labels": { "app": "web" } } })),
    )
    .await
    .unwrap();
    assert!(matches!(next().await, Some(WatchEvent::Added(_))));
    api.patch(
        "cm",
        &pp,
        &Patch::Merge(json!({ "metadata": { "labels": { "app": "db" } } })),
    )
    .await
    .unwrap();
    assert!(matches!(next().await, Some(WatchEvent::Deleted(_))));
}

#[tokio::test]
async fn runtime_watcher_sees_objects_created_after_it_started() {
    let api: Api<ConfigMap> = Api::default_namespaced(ApiServer::new().client());
    for config in [
        watcher::Config::default(),
        watcher::Config::default().streaming_lists(),
    ] {
        let early = format!("early-{:?}", config.initial_list_strategy);
        api.create(&PostParams::default(), &config_map(&early, json!({})))
            .await
            .unwrap();
        let mut events = watcher(api.clone(), config).boxed();
        let mut next = async || {
            timeout(WAIT, events.try_next())
                .await
                .expect("event in time")
                .unwrap()
        };

        assert!(matches!(next().await, Some(watcher::Event::Init)));
        let mut initial = Vec::new();
        loop {
            match next().await {
                Some(watcher::Event::InitApply(cm)) => initial.push(cm.name_any()),
                Some(watcher::Event::InitDone) => break,
                other => panic!("unexpected watcher event {other:?}"),
            }
        }
        assert!(initial.contains(&early));
        // The initial list is done (InitDone): what comes next arrives through the watch.
        let late = format!("late-{early}");
        api.create(&PostParams::default(), &config_map(&late, json!({})))
            .await
            .unwrap();
        assert!(matches!(next().await, Some(watcher::Event::Apply(cm)) if cm.name_any() == late));
    }
}

#[tokio::test]
async fn controller_reconciles_new_objects_and_shuts_down_gracefully() {
    type Seen = mpsc::UnboundedSender<String>;
    async fn reconcile(
        cm: Arc<ConfigMap>,
        seen: Arc<Seen>,
    ) -> Result<Action, mpsc::error::SendError<String>> {
        seen.send(cm.name_any())?;
        Ok(Action::await_change())
    }
    fn error_policy(_: Arc<ConfigMap>, _: &mpsc::error::SendError<String>, _: Arc<Seen>) -> Action {
        Action::await_change()
    }

    let client = ApiServer::new().client();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.create(&PostParams::default(), &config_map("first", json!({})))
        .await
        .unwrap();
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let controller = Controller::new(Api::<ConfigMap>::all(client), watcher::Config::default())
        .graceful_shutdown_on(async move {
            stop_rx.await.ok();
        })
        .run(reconcile, error_policy, Arc::new(seen_tx))
        .for_each(|_| async {});
    let controller = tokio::spawn(controller);
    let mut next = async || {
        timeout(WAIT, seen_rx.recv())
            .await
            .expect("reconciled in time")
    };

    // Once the first object is reconciled, the initial list is over: the next one must come
    // through the watch.
    assert_eq!(next().await.as_deref(), Some("first"));
    api.create(&PostParams::default(), &config_map("second", json!({})))
        .await
        .unwrap();
    assert_eq!(next().await.as_deref(), Some("second"));

    stop_tx.send(()).unwrap();
    timeout(WAIT, controller)
        .await
        .expect("controller stopped")
        .unwrap();
}

#[tokio::test]
async fn recorder_publishes_events_and_series() {
    let client = ApiServer::new().client();
    let config_maps: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm = config_maps
        .create(&PostParams::default(), &config_map("cm", json!({})))
        .await
        .unwrap();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "memop-test".into(),
            instance: None,
        },
    );
    let event = Event {
        type_: EventType::Normal,
        reason: "Reconciled".into(),
        note: Some("all good".into()),
        action: "Reconcile".into(),
        secondary: None,
    };

    recorder.publish(&event, &cm.object_ref(&())).await.unwrap();
    recorder.publish(&event, &cm.object_ref(&())).await.unwrap();

    let events: Api<K8sEvent> = Api::default_namespaced(client);
    let published = events.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].reason.as_deref(), Some("Reconciled"));
    assert_eq!(
        published[0].regarding.as_ref().unwrap().name.as_deref(),
        Some("cm")
    );
    assert_eq!(published[0].series.as_ref().map(|s| s.count), Some(2));
}
