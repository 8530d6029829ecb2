// Copyright 2026 The cronjob-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! The webhook certificate the manager keeps itself (`--webhook-cert-secret`), on a real
//! kube-apiserver (skipped without `KUBEBUILDER_ASSETS`). It runs as the operator's
//! ServiceAccount with the roles of `config/webhook-certs` only: it fills the Secret, writes its
//! CA into a webhook configuration and into the CRDs it converts, and the API server then calls
//! the webhook server over TLS. A certificate due for renewal is renewed, and the previous CA
//! stays trusted.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use cronjob_operator::webhook;
use k8s_openapi::api::admissionregistration::v1::{
    RuleWithOperations, ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use memop_runtime::manager::{Shutdown, http};
use memop_runtime::webhook::certs::{self, SelfManaged};
use memop_test::TestEnv;
use memop_test::envtest::{apply, free_port, rename};
use serde_json::{Value, json};

/// Where the test's webhook is served.
const PATH: &str = "/validate-configmaps";

#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn the_manager_makes_its_certificate_and_the_api_server_trusts_it() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let names = Names::of(&env);
    install_webhook_certs(&env).await;
    let port = free_port().unwrap();
    configure(&env, &names, port).await;
    let crds = convert_through(&env, port).await;

    let shutdown = Shutdown::default();
    let certificate = self_managed(&env, &names, crds.clone())
        .start(shutdown.clone())
        .await
        .expect("the operator's ServiceAccount manages the certificate");
    let calls = serve(&env, certificate, port, &shutdown).await;

    // The API server calls the webhook, which it trusts only with the CA written into the
    // configuration: a ConfigMap is created once the configuration is loaded.
    let config_maps = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    wait_for(
        || calls.load(Ordering::SeqCst) > 0,
        || async {
            let config_map =
                serde_json::from_value(json!({ "metadata": { "generateName": "probe-" } }))
                    .unwrap();
            let _ = config_maps
                .create(&PostParams::default(), &config_map)
                .await;
        },
    )
    .await;
    let secret = Api::<Secret>::namespaced(env.admin.clone(), &env.namespace)
        .get(&names.secret)
        .await
        .unwrap();
    let ca = data(&secret, "ca.crt");
    assert_eq!(ca.matches("BEGIN CERTIFICATE").count(), 1, "a new CA: {ca}");
    assert!(data(&secret, "tls.key").contains("PRIVATE KEY"));
    let configuration = Api::<ValidatingWebhookConfiguration>::all(env.admin.clone())
        .get(&names.configuration)
        .await
        .unwrap();
    let bundle = &configuration.webhooks.unwrap()[0].client_config.ca_bundle;
    assert_eq!(
        bundle.as_ref().map(|b| b.0.clone()),
        Some(ca.clone().into_bytes())
    );
    for name in crds {
        let crd = Api::<CustomResourceDefinition>::all(env.admin.clone())
            .get(&name)
            .await
            .unwrap();
        let conversion = crd.spec.conversion.unwrap().webhook.unwrap();
        let bundle = conversion.client_config.unwrap().ca_bundle;
        assert_eq!(bundle.map(|b| b.0), Some(ca.clone().into_bytes()), "{name}");
    }
    shutdown.trigger();
}

#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn a_certificate_due_for_renewal_is_renewed_and_the_previous_ca_stays_trusted() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let names = Names::of(&env);
    install_webhook_certs(&env).await;
    let shutdown = Shutdown::default();
    self_managed(&env, &names, Vec::new())
        .start(shutdown.clone())
        .await
        .unwrap();
    let secrets = Api::<Secret>::namespaced(env.admin.clone(), &env.namespace);
    let first = secrets.get(&names.secret).await.unwrap();
    // Started again with the certificate as it is: kept.
    self_managed(&env, &names, Vec::new())
        .start(shutdown.clone())
        .await
        .unwrap();
    let kept = secrets.get(&names.secret).await.unwrap();
    assert_eq!(data(&kept, "tls.crt"), data(&first, "tls.crt"));

    // Expiring in a day: renewed at start, with a new CA in front of the previous one.
    assert!(first.annotations().contains_key(certs::NOT_AFTER));
    let tomorrow =
        k8s_openapi::jiff::Timestamp::now() + k8s_openapi::jiff::SignedDuration::from_hours(24);
    let expiring =
        json!({ "metadata": { "annotations": { certs::NOT_AFTER: tomorrow.to_string() } } });
    secrets
        .patch(
            &names.secret,
            &PatchParams::default(),
            &Patch::Merge(&expiring),
        )
        .await
        .unwrap();
    self_managed(&env, &names, Vec::new())
        .start(shutdown.clone())
        .await
        .unwrap();
    let renewed = secrets.get(&names.secret).await.unwrap();
    assert_ne!(data(&renewed, "tls.crt"), data(&first, "tls.crt"));
    let bundle = data(&renewed, "ca.crt");
    assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 2, "{bundle}");
    assert!(
        bundle.ends_with(&data(&first, "ca.crt")),
        "the previous CA comes second"
    );
    shutdown.trigger();
}

/// The test's objects, named as config/default's namePrefix names them in a cluster.
struct Names {
    secret: String,
    configuration: String,
}

impl Names {
    fn of(env: &TestEnv) -> Self {
        Self {
            secret: format!("{}-webhook-server-cert", env.namespace),
            configuration: format!("{}-validating-webhook-configuration", env.namespace),
        }
    }
}

/// The certificate manager as the manager runs it, for `localhost` (where the test serves),
/// as the operator's ServiceAccount.
fn self_managed(env: &TestEnv, names: &Names, crds: Vec<String>) -> SelfManaged {
    SelfManaged {
        client: env.operator.clone(),
        ca_name: "cronjob-operator-webhook-ca".into(),
        namespace: env.namespace.clone(),
        secret: names.secret.clone(),
        dns_names: vec!["localhost".into()],
        configurations: vec![names.configuration.clone()],
        crds,
    }
}

/// Installs config/webhook-certs for the test's namespace as kustomize would with the prefix
/// `<namespace>-`, the resourceNames of its roles included.
async fn install_webhook_certs(env: &TestEnv) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/webhook-certs");
    let kustomization: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap())
            .unwrap();
    let prefix = format!("{}-", env.namespace);
    for file in kustomization["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
    {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let text = text.replace("cronjob-operator-", &prefix);
        let mut object: Value = serde_saphyr::from_str(&text).unwrap();
        rename(&mut object, &prefix, &env.namespace);
        apply(&env.admin, &object).await;
    }
}

/// A validating webhook configuration for the test namespace's ConfigMaps, calling
/// `https://localhost:<port>/validate-configmaps`, without a CA: the manager writes it.
async fn configure(env: &TestEnv, names: &Names, port: u16) {
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
    let mut configuration = ValidatingWebhookConfiguration::default();
    configuration.metadata.name = Some(names.configuration.clone());
    configuration.webhooks = Some(vec![ValidatingWebhook {
        name: "configmaps.webhook-certs.test".into(),
        admission_review_versions: vec!["v1".into()],
        client_config: WebhookClientConfig {
            url: Some(format!("https://localhost:{port}{PATH}")),
            ..WebhookClientConfig::default()
        },
        failure_policy: Some("Fail".into()),
        namespace_selector: Some(selector),
        rules: Some(vec![RuleWithOperations {
            api_groups: Some(vec![String::new()]),
            api_versions: Some(vec!["v1".into()]),
            operations: Some(vec!["CREATE".into()]),
            resources: Some(vec!["configmaps".into()]),
            scope: None,
        }]),
        side_effects: "None".into(),
        ..ValidatingWebhook::default()
    }]);
    Api::<ValidatingWebhookConfiguration>::all(env.admin.clone())
        .create(&PostParams::default(), &configuration)
        .await
        .unwrap();
}

/// Points the conversion of every CRD the project converts at the test's server, without a
/// CA, and returns their names. (This test binary has a control plane of its own, so no other
/// test sees these CRDs converted.)
async fn convert_through(env: &TestEnv, port: u16) -> Vec<String> {
    let crds = memop_runtime::webhook::conversion_crds(
        &webhook::conversions(),
        cronjob_operator::api::crds(),
    );
    for name in &crds {
        let conversion = json!({ "spec": { "conversion": {
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": { "url": format!("https://localhost:{port}{}", webhook::CONVERT_PATH) },
                "conversionReviewVersions": ["v1"],
            },
        } } });
        Api::<CustomResourceDefinition>::all(env.admin.clone())
            .patch(name, &PatchParams::default(), &Patch::Merge(&conversion))
            .await
            .unwrap();
    }
    crds
}

/// Serves the project's webhooks and the test's on `port` with `certificate`; returns the
/// count of calls to the test's.
async fn serve(
    env: &TestEnv,
    certificate: Arc<memop_runtime::manager::tls::Certificate>,
    port: u16,
    shutdown: &Shutdown,
) -> Arc<AtomicUsize> {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let allow = webhook::validating(Allow, env.operator.clone());
    let router = webhook::routes(&env.operator).merge(Router::new().route(PATH, allow).layer(
        axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                counted.fetch_add(1, Ordering::SeqCst);
                next.run(request)
            },
        ),
    ));
    let tls = certificate.acceptor(false).unwrap();
    let addr = ([127, 0, 0, 1], port).into();
    http::spawn("webhooks", addr, router, Some(tls), false, shutdown.clone())
        .await
        .unwrap();
    calls
}

/// A validating webhook that allows every ConfigMap.
struct Allow;

impl webhook::Validator<ConfigMap> for Allow {
    async fn validate_create(&self, _: &webhook::Context, _: &ConfigMap) -> webhook::Verdict {
        Ok(Vec::new())
    }

    async fn validate_update(
        &self,
        _: &webhook::Context,
        _: &ConfigMap,
        _: &ConfigMap,
    ) -> webhook::Verdict {
        Ok(Vec::new())
    }
}

/// Runs `probe` until `done`, for at most 10 s (the API server loads webhook configurations
/// asynchronously).
async fn wait_for<F: Future<Output = ()>>(done: impl Fn() -> bool, probe: impl Fn() -> F) {
    for _ in 0..100 {
        if done() {
            return;
        }
        probe().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the API server never called the webhook");
}

fn data(secret: &Secret, key: &str) -> String {
    let bytes = &secret.data.as_ref().unwrap()[key].0;
    String::from_utf8(bytes.clone()).unwrap()
}
