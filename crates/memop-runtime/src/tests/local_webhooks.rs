//! `make run`'s webhooks (`--webhook-url`) on the real control plane (skipped without
//! `KUBEBUILDER_ASSETS`): a CRD installed as `make install` installs a converted kind (its
//! conversion pointing at the in-cluster webhook Service, no CA), and a webhook server started
//! with `--webhook-url` on this machine. The API server must then convert through it and call
//! its mutating webhook; at shutdown the CRD's conversion is as it was, and the webhook
//! configurations are gone.

use std::time::Duration;

use crate::Operator;
use crate::manager::Shared;
use crate::webhook::{self, CONVERT_PATH, Conversion, Webhook};
use axum::Router;
use clap::Parser;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::{CustomResourceExt, ResourceExt};
use memop_test::TestEnv;
use memop_test::envtest::free_port;
use serde_json::json;

const OPERATOR: Operator = Operator {
    name: "local-operator",
    domain: "example.com",
};
const CRD: &str = "gadgets.local.example.com";

/// Two versions of a kind, whose field `size` became `replicas`: v1 is stored and is the hub.
mod v1 {
    #[derive(
        kube::CustomResource,
        serde::Serialize,
        serde::Deserialize,
        schemars::JsonSchema,
        Clone,
        Debug,
    )]
    #[kube(
        group = "local.example.com",
        version = "v1",
        kind = "Gadget",
        namespaced
    )]
    pub struct GadgetSpec {
        pub replicas: i32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub defaulted: Option<String>,
    }
}

mod v1beta1 {
    #[derive(
        kube::CustomResource,
        serde::Serialize,
        serde::Deserialize,
        schemars::JsonSchema,
        Clone,
        Debug,
    )]
    #[kube(
        group = "local.example.com",
        version = "v1beta1",
        kind = "Gadget",
        namespaced
    )]
    pub struct GadgetSpec {
        pub size: i32,
    }

    impl From<Gadget> for super::v1::Gadget {
        fn from(spoke: Gadget) -> Self {
            let spec = super::v1::GadgetSpec {
                replicas: spoke.spec.size,
                defaulted: None,
            };
            Self {
                metadata: spoke.metadata,
                spec,
            }
        }
    }

    impl From<super::v1::Gadget> for Gadget {
        fn from(hub: super::v1::Gadget) -> Self {
            let spec = GadgetSpec {
                size: hub.spec.replicas,
            };
            Self {
                metadata: hub.metadata,
                spec,
            }
        }
    }
}

struct GadgetWebhook;

impl webhook::Defaulter<v1::Gadget> for GadgetWebhook {
    async fn default(
        &self,
        _: &webhook::Context,
        gadget: &mut v1::Gadget,
    ) -> Result<(), webhook::Refusal> {
        gadget.spec.defaulted = Some("by the local webhook".into());
        Ok(())
    }
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    webhook: webhook::Flags,
}

#[tokio::test]
async fn make_runs_webhooks_are_served_on_this_machine_and_undone_at_shutdown() {
    let Some(env) =
        TestEnv::real_for(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture"))
            .await
    else {
        return;
    };
    let crds = Api::<CustomResourceDefinition>::all(env.admin.clone());
    let mut crd = crate::manifests::merge_versions(
        vec![v1::Gadget::crd(), v1beta1::Gadget::crd()],
        &[(CRD, "v1")],
    )
    .remove(0);
    // What `make install` applies after `memop create webhook --conversion`.
    let installed = json!({
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": { "service": { "name": "webhook-service", "namespace": "system", "path": CONVERT_PATH } },
        },
    });
    crd.spec.conversion = Some(serde_json::from_value(installed).unwrap());
    // v1 as it was before `replicas` became required: objects stored then cannot be read as
    // today's v1::Gadget.
    let mut schema = serde_json::to_value(&crd.spec.versions[0].schema).unwrap();
    assert_eq!(crd.spec.versions[0].name, "v1");
    schema["openAPIV3Schema"]["properties"]["spec"]["required"] = json!([]);
    crd.spec.versions[0].schema = serde_json::from_value(schema).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    wait_established(&crds).await;
    // Stored in v1 (the storage version: no conversion, and no webhook yet to refuse it).
    let v1_dynamic = Api::<DynamicObject>::namespaced_with(
        env.admin.clone(),
        &env.namespace,
        &ApiResource::erase::<v1::Gadget>(&()),
    );
    let unreadable: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "local.example.com/v1",
        "kind": "Gadget",
        "metadata": { "name": "unreadable" },
        "spec": { "defaulted": "kept" },
    }))
    .unwrap();
    v1_dynamic
        .create(&PostParams::default(), &unreadable)
        .await
        .unwrap();
    // As stored, with the API server's defaults (the Service's port).
    let installed = serde_json::to_value(crds.get(CRD).await.unwrap().spec.conversion).unwrap();

    let port = free_port().unwrap();
    let url = format!("https://127.0.0.1:{port}");
    let cli = Cli::parse_from([
        "manager",
        "--webhook-url",
        &url,
        "--webhook-bind-address",
        &format!("127.0.0.1:{port}"),
    ]);
    let shared = Shared::new(&OPERATOR, env.admin.clone(), None);
    let routes = Router::new()
        .route(
            CONVERT_PATH,
            webhook::converting(vec![Conversion::between::<v1::Gadget, v1beta1::Gadget>()]),
        )
        .route(
            "/mutate-gadget",
            webhook::defaulting(GadgetWebhook, env.admin.clone()),
        );
    let webhooks = [Webhook {
        mutating: true,
        name: "mgadget-v1.local.example.com",
        path: "/mutate-gadget",
        group: "local.example.com",
        version: "v1",
        resource: "gadgets",
        operations: &["CREATE", "UPDATE"],
    }];
    webhook::serve(
        &OPERATOR,
        &cli.webhook,
        false,
        &shared,
        routes,
        vec![CRD.into()],
        &webhooks,
    )
    .await
    .unwrap();

    // Written in the hub, defaulted by the local webhook. The API server loads new webhook
    // configurations asynchronously, so a first write may miss it: write new objects until one
    // is defaulted.
    let spokes = Api::<v1beta1::Gadget>::namespaced(env.admin.clone(), &env.namespace);
    let hubs = Api::<v1::Gadget>::namespaced(env.admin.clone(), &env.namespace);
    let mut last = String::new();
    let mut defaulted = false;
    for attempt in 0..100 {
        let spec = v1::GadgetSpec {
            replicas: 1,
            defaulted: None,
        };
        let hub = v1::Gadget::new(&format!("gadget-{attempt}"), spec);
        match hubs.create(&PostParams::default(), &hub).await {
            Ok(created) if created.spec.defaulted.is_some() => {
                defaulted = true;
                break;
            }
            Ok(_) => last = "created, not defaulted".into(),
            Err(error) => last = error.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        defaulted,
        "the API server never called the local mutating webhook: {last}"
    );
    // Written in the spoke, stored in the hub, read in both: converted by the From impls.
    let spoke = v1beta1::Gadget::new("spoke", v1beta1::GadgetSpec { size: 2 });
    spokes.create(&PostParams::default(), &spoke).await.unwrap();
    assert_eq!(hubs.get("spoke").await.unwrap().spec.replicas, 2);
    assert_eq!(spokes.get("spoke").await.unwrap().spec.size, 2);
    // An object the webhook cannot convert: read and written through v1beta1, it fails with a
    // message that names it, and it is stored as it was (relabelled and passed on in its old
    // shape, the API server would prune `defaulted`, which v1beta1 lacks, and store the pruned
    // object back at the write).
    let v1beta1_dynamic = Api::<DynamicObject>::namespaced_with(
        env.admin.clone(),
        &env.namespace,
        &ApiResource::erase::<v1beta1::Gadget>(&()),
    );
    let expected = format!(
        "cannot convert Gadget {}/unreadable from local.example.com/v1 to local.example.com/v1beta1: \
         cannot read it as local.example.com/v1: missing field `replicas`",
        env.namespace
    );
    let error = v1beta1_dynamic.get("unreadable").await.unwrap_err();
    assert!(error.to_string().contains(&expected), "{error}");
    let label = json!({ "metadata": { "labels": { "touched": "yes" } } });
    let error = v1beta1_dynamic
        .patch("unreadable", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap_err();
    assert!(error.to_string().contains(&expected), "{error}");
    let stored = v1_dynamic.get("unreadable").await.unwrap();
    assert_eq!(stored.data["spec"], json!({ "defaulted": "kept" }));
    v1_dynamic
        .delete("unreadable", &Default::default())
        .await
        .unwrap();

    let pointed = crds
        .get(CRD)
        .await
        .unwrap()
        .spec
        .conversion
        .unwrap()
        .webhook
        .unwrap();
    let client_config = pointed.client_config.unwrap();
    assert_eq!(
        client_config.url.as_deref(),
        Some(format!("{url}{CONVERT_PATH}").as_str())
    );
    assert!(client_config.ca_bundle.is_some() && client_config.service.is_none());

    shared.shutdown().trigger();
    shared
        .shutdown()
        .run_deferred(Duration::from_secs(10))
        .await;
    let restored = serde_json::to_value(crds.get(CRD).await.unwrap().spec.conversion).unwrap();
    assert_eq!(
        restored, installed,
        "the CRD's conversion as make install applied it"
    );
    let mutating = Api::<MutatingWebhookConfiguration>::all(env.admin.clone());
    let validating = Api::<ValidatingWebhookConfiguration>::all(env.admin.clone());
    assert!(
        mutating
            .get_opt("local-operator-local-mutating")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        validating
            .get_opt("local-operator-local-validating")
            .await
            .unwrap()
            .is_none()
    );

    // A local manager killed before its cleanup (SIGKILL, a laptop gone) leaves the CRD
    // pointed at it, with a lease that says what to put back; the next `make run` puts back
    // that, not the conversion the killed one left.
    let killed = local_manager(&env).await;
    killed.shutdown().trigger(); // Its servers and lease renewals stop; its cleanup never runs.
    let left = crds.get(CRD).await.unwrap();
    let lease = left.annotations().get(webhook::LOCAL_CONVERSION).cloned();
    let again = local_manager(&env).await;
    again.shutdown().trigger();
    again.shutdown().run_deferred(Duration::from_secs(10)).await;
    let crd = crds.get(CRD).await.unwrap();
    let restored = serde_json::to_value(&crd.spec.conversion).unwrap();
    assert_eq!(
        restored, installed,
        "the CRD's conversion as make install applied it, not as the killed manager left it"
    );
    assert!(!crd.annotations().contains_key(webhook::LOCAL_CONVERSION));
    let lease: serde_json::Value = serde_json::from_str(&lease.expect("a lease")).unwrap();
    assert_eq!(lease["restore"], installed);
    assert!(lease["expires"].as_u64().is_some(), "{lease}");
}

/// A manager serving its webhooks on this machine (`--webhook-url`), as `make run` starts it.
async fn local_manager(env: &TestEnv) -> Shared {
    let port = free_port().unwrap();
    let url = format!("https://127.0.0.1:{port}");
    let bind = format!("127.0.0.1:{port}");
    let cli = Cli::parse_from([
        "manager",
        "--webhook-url",
        &url,
        "--webhook-bind-address",
        &bind,
    ]);
    let shared = Shared::new(&OPERATOR, env.admin.clone(), None);
    let conversions = vec![Conversion::between::<v1::Gadget, v1beta1::Gadget>()];
    let routes = Router::new().route(CONVERT_PATH, webhook::converting(conversions));
    webhook::serve(
        &OPERATOR,
        &cli.webhook,
        false,
        &shared,
        routes,
        vec![CRD.into()],
        &[],
    )
    .await
    .unwrap();
    shared
}

#[tokio::test]
async fn a_bad_webhook_url_is_refused_with_the_form_it_takes() {
    let env = TestEnv::in_memory();
    let shared = Shared::new(&OPERATOR, env.admin.clone(), None);
    let cli = Cli::parse_from(["manager", "--webhook-url", "http://127.0.0.1:9443"]);
    let error = webhook::serve(
        &OPERATOR,
        &cli.webhook,
        false,
        &shared,
        Router::new(),
        vec![],
        &[],
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("is not https") && error.contains("https://HOST:PORT"),
        "{error}"
    );
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
