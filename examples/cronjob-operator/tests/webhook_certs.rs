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

//! This project's `config/webhook-certs` on a real kube-apiserver (skipped without
//! `KUBEBUILDER_ASSETS`): with its roles only, as the operator's ServiceAccount, the webhook
//! server starts as the manager starts it with `--webhook-cert-secret`, keeping its certificate
//! itself: it fills the Secret, writes its CA into the webhook configuration and into the CRDs
//! the project converts, and serves the certificate. (How it renews the certificate, and that
//! the API server trusts it, are memop-runtime's tests.)

use std::path::Path;

use clap::Parser;
use cronjob_operator::webhook;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use memop_runtime::manager::Shared;
use memop_test::TestEnv;
use memop_test::envtest::{apply, free_port, rename};
use memop_test::https::served_certificates;
use serde_json::{Value, json};

/// The manager's webhook flags, as `src/main.rs` takes them.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    webhook: webhook::Flags,
}

#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn the_manager_keeps_its_certificate_with_the_roles_of_config_webhook_certs() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let names = Names::of(&env);
    install_webhook_certs(&env).await;
    configure(&env, &names).await;
    let port = free_port().unwrap();
    let crds = convert_through(&env, port).await;

    let cli = Cli::try_parse_from([
        "manager".to_string(),
        format!("--webhook-bind-address=127.0.0.1:{port}"),
        format!("--webhook-cert-secret={}", names.secret),
        format!("--webhook-configurations={}", names.configuration),
    ])
    .unwrap();
    let shared = Shared::new(
        &cronjob_operator::OPERATOR,
        env.operator.clone(),
        Some(env.namespace.clone()),
    );
    webhook::serve(&cli.webhook, false, &shared)
        .await
        .expect("the operator's ServiceAccount manages the certificate");
    let served = served_certificates(port)
        .await
        .expect("the webhook server serves over TLS");
    assert!(!served.is_empty());

    let secret = Api::<Secret>::namespaced(env.admin.clone(), &env.namespace)
        .get(&names.secret)
        .await
        .unwrap();
    let ca = data(&secret, "ca.crt");
    assert_eq!(ca.matches("BEGIN CERTIFICATE").count(), 1, "a new CA: {ca}");
    assert!(data(&secret, "tls.crt").contains("BEGIN CERTIFICATE"));
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
    shared.shutdown().trigger();
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

/// A validating webhook configuration without a CA (the manager writes it), whose webhook the
/// API server never calls: it is for ConfigMaps of the test's namespace with a label none has.
async fn configure(env: &TestEnv, names: &Names) {
    let configuration = json!({
        "metadata": { "name": names.configuration },
        "webhooks": [{
            "name": "configmaps.webhook-certs.test",
            "admissionReviewVersions": ["v1"],
            "clientConfig": { "url": "https://localhost:1/validate-configmaps" },
            "failurePolicy": "Ignore",
            "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": env.namespace } },
            "objectSelector": { "matchLabels": { "webhook-certs.test/never": "true" } },
            "rules": [{
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["configmaps"],
            }],
            "sideEffects": "None",
        }],
    });
    let configuration: ValidatingWebhookConfiguration =
        serde_json::from_value(configuration).unwrap();
    Api::<ValidatingWebhookConfiguration>::all(env.admin.clone())
        .create(&PostParams::default(), &configuration)
        .await
        .unwrap();
}

/// Points the conversion of every CRD the project converts at the test's webhook server on
/// `port`, without a CA, and returns their names. (This test binary has a control plane of its
/// own, so no other test sees these CRDs converted.)
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

fn data(secret: &Secret, key: &str) -> String {
    let bytes = &secret.data.as_ref().unwrap()[key].0;
    String::from_utf8(bytes.clone()).unwrap()
}
