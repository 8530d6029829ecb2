//! The webhook configurations of `crate::webhook::configurations` on the real control
//! plane (skipped without `KUBEBUILDER_ASSETS`): the API server accepts their match
//! conditions, and while the webhooks are down (the operator is, say) an update that only
//! changes an object's metadata (its finalizer removed, so that its deletion completes) goes
//! through, while any other update is refused as `failurePolicy: Fail` says. And a webhook
//! on a kind of Kubernetes' own (ConfigMaps here) skips the manager's namespace and the
//! [`SYSTEM_NAMESPACES`](webhook::SYSTEM_NAMESPACES) as `config/webhook/manifests.yaml`
//! declares it ([`webhook::manager_namespace_selector`]): with no webhook server up, such
//! objects are still created there, while everywhere else the API server refuses them.

use std::time::Duration;

use crate::webhook::{self, Webhook};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use memop_test::TestEnv;
use memop_test::envtest::free_port;
use serde_json::json;

const CRD: &str = "widgets.conditions.example.com";
const FINALIZER: &str = "conditions.example.com/cleanup";

#[derive(
    kube::CustomResource, serde::Serialize, serde::Deserialize, schemars::JsonSchema, Clone, Debug,
)]
#[kube(
    group = "conditions.example.com",
    version = "v1",
    kind = "Widget",
    namespaced
)]
pub struct WidgetSpec {
    pub size: i32,
}

#[tokio::test]
async fn metadata_only_updates_do_not_need_the_webhooks() {
    let Some(env) =
        TestEnv::real_for(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture"))
            .await
    else {
        return;
    };
    let crds = Api::<CustomResourceDefinition>::all(env.admin.clone());
    if crds.get_opt(CRD).await.unwrap().is_none() {
        crds.create(&PostParams::default(), &Widget::crd())
            .await
            .unwrap();
    }
    wait_established(&crds).await;
    let widgets = Api::<Widget>::namespaced(env.admin.clone(), &env.namespace);
    let mut widget = Widget::new("widget", WidgetSpec { size: 1 });
    widget.metadata.finalizers = Some(vec![FINALIZER.into()]);
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();

    // Webhooks nothing serves: the operator is down.
    let (_, mut mutating, mut validating) = unserved(
        &env,
        ("conditions.example.com", "widgets"),
        [
            "mwidget-v1.conditions.example.com",
            "vwidget-v1.conditions.example.com",
        ],
        ["/mutate-widget", "/validate-widget"],
    );
    // Only for this test's namespace.
    let selector = LabelSelector {
        match_labels: Some(
            [(
                "kubernetes.io/metadata.name".to_string(),
                env.namespace.clone(),
            )]
            .into(),
        ),
        ..LabelSelector::default()
    };
    for hook in mutating.webhooks.iter_mut().flatten() {
        hook.namespace_selector = Some(selector.clone());
    }
    for hook in validating.webhooks.iter_mut().flatten() {
        hook.namespace_selector = Some(selector.clone());
    }
    let mutatings = Api::<MutatingWebhookConfiguration>::all(env.admin.clone());
    let validatings = Api::<ValidatingWebhookConfiguration>::all(env.admin.clone());
    // The API server compiles the match conditions' CEL when it admits the configurations.
    let mutating = mutatings
        .create(&PostParams::default(), &mutating)
        .await
        .expect("the API server accepts the mutating webhook configuration");
    let validating = validatings
        .create(&PostParams::default(), &validating)
        .await
        .expect("the API server accepts the validating webhook configuration");
    for conditions in [
        mutating.webhooks.unwrap()[0].match_conditions.clone(),
        validating.webhooks.unwrap()[0].match_conditions.clone(),
    ] {
        assert_eq!(
            conditions.unwrap()[0].expression,
            webhook::METADATA_ONLY_UPDATE
        );
    }

    // The API server loads new configurations asynchronously: wait until a change of the spec
    // is refused, since the webhooks cannot be called.
    let resize = |size: i32| {
        let widgets = widgets.clone();
        async move {
            let patch = Patch::Merge(json!({ "spec": { "size": size } }));
            widgets
                .patch("widget", &PatchParams::default(), &patch)
                .await
        }
    };
    let mut refused = None;
    for attempt in 0..100 {
        match resize(2 + attempt).await {
            Ok(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(error) => {
                refused = Some(error.to_string());
                break;
            }
        }
    }
    let refused = refused.expect("the API server never called the webhooks");
    assert!(refused.contains("failed calling webhook"), "{refused}");
    // Also when the update carries a metadata change.
    let both =
        Patch::Merge(json!({ "metadata": { "labels": { "a": "b" } }, "spec": { "size": 99 } }));
    let error = widgets
        .patch("widget", &PatchParams::default(), &both)
        .await
        .expect_err("a change of the spec needs the webhooks");
    assert!(
        error.to_string().contains("failed calling webhook"),
        "{error}"
    );

    // Metadata only: a label, then, once the widget is deleted, its finalizer.
    let label = Patch::Merge(json!({ "metadata": { "labels": { "a": "b" } } }));
    widgets
        .patch("widget", &PatchParams::default(), &label)
        .await
        .expect("a label can be added while the webhooks are down");
    widgets
        .delete("widget", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = widgets.get("widget").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    let unfinalize = Patch::Merge(json!({ "metadata": { "finalizers": null } }));
    widgets
        .patch("widget", &PatchParams::default(), &unfinalize)
        .await
        .expect("the finalizer can be removed while the webhooks are down");
    assert!(
        widgets.get_opt("widget").await.unwrap().is_none(),
        "deleted once its finalizer is gone"
    );

    let _ = mutatings
        .delete(
            &format!("{}-mutating", env.namespace),
            &DeleteParams::default(),
        )
        .await;
    let _ = validatings
        .delete(
            &format!("{}-validating", env.namespace),
            &DeleteParams::default(),
        )
        .await;
}

/// The webhooks' `namespaceSelector` keeps the manager's namespace out of their reach: with
/// the webhook server down (the manager's Pod not started yet, say) and `failurePolicy: Fail`,
/// ConfigMaps are still created there, so that the manager can start, and in `kube-system`
/// and `kube-node-lease`, while everywhere else the API server refuses them until the webhooks
/// answer. (The webhooks see only the test's ConfigMaps, by a label: the API server is shared
/// with the other tests.)
#[tokio::test]
async fn the_managers_namespace_does_not_wait_for_webhooks_on_kinds_of_kubernetes_own() {
    let Some(env) =
        TestEnv::real_for(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture"))
            .await
    else {
        return;
    };
    const TEST_LABEL: &str = "webhook-test.memop.dev/namespace";
    let namespaces = Api::<Namespace>::all(env.admin.clone());
    let manager_namespace = format!("{}-manager", env.namespace);
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(manager_namespace.clone());
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();

    // Webhooks on ConfigMaps that nothing serves: the webhook server is down.
    let (hooks, mut mutating, mut validating) = unserved(
        &env,
        ("", "configmaps"),
        [
            "mconfigmap.namespaces.example.com",
            "vconfigmap.namespaces.example.com",
        ],
        ["/mutate-configmap", "/validate-configmap"],
    );
    assert!(hooks.iter().all(Webhook::skips_manager_namespace));
    // The deployed configurations' selector, with the manager in `<namespace>-manager`; only
    // the test's ConfigMaps.
    let objects = LabelSelector {
        match_labels: Some([(TEST_LABEL.to_string(), env.namespace.clone())].into()),
        ..LabelSelector::default()
    };
    let selector = webhook::manager_namespace_selector(&manager_namespace);
    for hook in mutating.webhooks.iter_mut().flatten() {
        hook.object_selector = Some(objects.clone());
        hook.namespace_selector = Some(selector.clone());
    }
    for hook in validating.webhooks.iter_mut().flatten() {
        hook.object_selector = Some(objects.clone());
        hook.namespace_selector = Some(selector.clone());
    }
    let mutatings = Api::<MutatingWebhookConfiguration>::all(env.admin.clone());
    let validatings = Api::<ValidatingWebhookConfiguration>::all(env.admin.clone());
    mutatings
        .create(&PostParams::default(), &mutating)
        .await
        .unwrap();
    validatings
        .create(&PostParams::default(), &validating)
        .await
        .unwrap();

    let sample = |name: &str| {
        let mut config_map = ConfigMap::default();
        config_map.metadata.name = Some(name.to_string());
        config_map.metadata.labels = Some([(TEST_LABEL.to_string(), env.namespace.clone())].into());
        config_map
    };
    let objects = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    // The API server loads new webhook configurations asynchronously: probe with dry-run
    // creates (which admission webhooks see too) until it refuses.
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mut refusal = None;
    for _ in 0..100 {
        if let Err(error) = objects.create(&dry_run, &sample("down")).await {
            refusal = Some(error.to_string());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let refusal = refusal.expect("the API server never called the webhooks");
    assert!(refusal.contains("failed calling webhook"), "{refusal}");
    assert!(
        objects
            .create(&PostParams::default(), &sample("down"))
            .await
            .is_err(),
        "refused in any namespace but the manager's"
    );

    Api::<ConfigMap>::namespaced(env.admin.clone(), &manager_namespace)
        .create(&PostParams::default(), &sample("manager"))
        .await
        .expect("the manager's namespace does not wait for the webhooks");
    // Nor do the cluster's own (its Pods, the nodes' heartbeat Leases): a dry run, which the
    // webhooks would see, leaves nothing there.
    for system in webhook::SYSTEM_NAMESPACES {
        Api::<ConfigMap>::namespaced(env.admin.clone(), system)
            .create(&dry_run, &sample(&format!("{}-system", env.namespace)))
            .await
            .unwrap_or_else(|error| panic!("{system} waits for the webhooks: {error}"));
    }

    let _ = mutatings
        .delete(
            &format!("{}-mutating", env.namespace),
            &DeleteParams::default(),
        )
        .await;
    let _ = validatings
        .delete(
            &format!("{}-validating", env.namespace),
            &DeleteParams::default(),
        )
        .await;
    let _ = namespaces
        .delete(&manager_namespace, &DeleteParams::default())
        .await;
}

async fn wait_established(crds: &Api<CustomResourceDefinition>) {
    for _ in 0..100 {
        let crd = crds.get(CRD).await.unwrap();
        let established = (crd.status.and_then(|status| status.conditions))
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        if established {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{CRD} never became established");
}

/// A mutating and a validating webhook (`names`, served at `paths`) on creates and updates of
/// `resource` of `group` (v1), and their configurations named after the test's namespace,
/// pointing at a free port that nothing serves: the operator's webhooks while it is down.
fn unserved(
    env: &TestEnv,
    (group, resource): (&'static str, &'static str),
    names: [&'static str; 2],
    paths: [&'static str; 2],
) -> (
    [Webhook; 2],
    MutatingWebhookConfiguration,
    ValidatingWebhookConfiguration,
) {
    let hook = |i: usize| Webhook {
        mutating: i == 0,
        name: names[i],
        path: paths[i],
        group,
        version: "v1",
        resource,
        operations: &["CREATE", "UPDATE"],
    };
    let hooks = [hook(0), hook(1)];
    let down = free_port().unwrap();
    let configurations = [
        format!("{}-mutating", env.namespace),
        format!("{}-validating", env.namespace),
    ];
    let (mutating, validating) =
        webhook::configurations(&hooks, [&configurations[0], &configurations[1]], |hook| {
            WebhookClientConfig {
                url: Some(format!("https://127.0.0.1:{down}{}", hook.path)),
                ..WebhookClientConfig::default()
            }
        });
    (hooks, mutating, validating)
}
