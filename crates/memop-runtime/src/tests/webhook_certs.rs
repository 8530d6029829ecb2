//! The webhook certificate the manager keeps itself (`--webhook-cert-secret`,
//! `webhook::certs::SelfManaged`) with several replicas, on the real control plane (skipped
//! without `KUBEBUILDER_ASSETS`). Each replica runs as the operator's ServiceAccount with the
//! rights of a project's `config/webhook-certs`, with a client of its own, whose requests the
//! test can slow down or fail, and serves on a port of its own. The CA is written into a
//! mutating and a validating webhook configuration and a CRD's conversion.
//!
//! - Two replicas starting at once on the empty Secret of a fresh install both start, and agree
//!   on one CA, which every configuration and the CRD carry.
//! - A renewal by two replicas at once while a third one keeps serving the previous
//!   certificate: at every point sampled, the bundle of each configuration and of the CRD
//!   verifies the certificate that each replica serves.
//! - A write of the CA that another write beat (HTTP 409) is tried again.
//! - The API server calls the webhook server that serves the certificate made on an empty
//!   Secret, trusting it with the CA written into the configuration.
//! - Started again with the certificate as it is, a replica keeps it; with one due for renewal
//!   it renews it at start, the new CA in front of the previous one.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::manager::tls::Certificate;
use crate::manager::{Shutdown, http};
use crate::webhook::certs::{self, SelfManaged};
use axum::Router;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, ResourceExt};
use memop_test::envtest::{apply, free_port};
use memop_test::https::served_certificates;
use memop_test::{Backend, RequestLog, TestEnv, Verb};
use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::json;

#[tokio::test]
async fn two_replicas_starting_at_once_on_an_empty_secret_agree_on_one_ca() {
    let Some(setup) = Setup::new().await else {
        return;
    };
    let shutdown = Shutdown::default();
    // Both replicas read the empty Secret and make a CA. Their writes of the mutating
    // configuration reach the API server 300 ms late (it is busy), so that both read it
    // before either writes it, as replicas that start at once do.
    let mut starting = Vec::new();
    for _ in 0..2 {
        let (client, log) = setup.client().await;
        log.delay_next(
            Verb::Patch,
            "mutatingwebhookconfigurations",
            Duration::from_millis(300),
        );
        starting.push(setup.keeper(client).start(shutdown.clone()));
    }
    let [first, second] = <[_; 2]>::try_from(futures::future::join_all(starting).await).unwrap();
    let first = first.expect("the first replica starts");
    let second = second.expect("the second replica starts");
    let ports = [
        ("first", serve(first, &shutdown).await),
        ("second", serve(second, &shutdown).await),
    ];

    let (ca, cert) = setup.stored().await;
    assert_eq!(ca.matches("BEGIN CERTIFICATE").count(), 1, "one CA: {ca}");
    for (object, bundle) in setup.bundles().await {
        assert_eq!(bundle.as_deref(), Some(ca.as_bytes()), "{object}");
    }
    let (served, failures) = setup.sample(&ports).await;
    assert_eq!(failures, Vec::<String>::new());
    assert_eq!(served, [der(&cert), der(&cert)], "the Secret's certificate");
    shutdown.trigger();
}

#[tokio::test]
async fn a_renewal_by_two_replicas_at_once_leaves_every_served_certificate_trusted() {
    let Some(setup) = Setup::new().await else {
        return;
    };
    let shutdown = Shutdown::default();
    // Replica a serves the certificate of a fresh install, and checks the Secret every 3 s:
    // it keeps serving that certificate while b and c renew it, then serves theirs.
    let (client, _) = setup.client().await;
    let a = setup.keeper(client);
    let a = a.start_checking_every(Duration::from_secs(3), shutdown.clone());
    let a = a.await.unwrap();
    let ports = Arc::new(Mutex::new(vec![("a", serve(a, &shutdown).await)]));
    let (first_ca, first_cert) = setup.stored().await;

    // The certificate is then due for renewal (it expires tomorrow, the Secret says) just as
    // replicas b and c start, as in a rolling update, on a busy API server: b's write of the
    // Secret takes 200 ms, so that c reads it due too, and both renew it. c is slower still: it
    // reads the mutating configuration 500 ms late, and its write of the Secret takes 1 s.
    let tomorrow = Timestamp::now() + SignedDuration::from_hours(24);
    let due = json!({ "metadata": { "annotations": { certs::NOT_AFTER: tomorrow.to_string() } } });
    Api::<Secret>::namespaced(setup.env.admin.clone(), &setup.env.namespace)
        .patch(&setup.secret, &PatchParams::default(), &Patch::Merge(&due))
        .await
        .unwrap();
    let (mut starting, mut logs) = (Vec::new(), Vec::new());
    for (name, secret_write, configuration_read) in [
        ("b", Duration::from_millis(200), Duration::ZERO),
        ("c", Duration::from_secs(1), Duration::from_millis(500)),
    ] {
        let (client, log) = setup.client().await;
        log.delay_next(Verb::Update, "secrets", secret_write);
        log.delay_next(
            Verb::Get,
            "mutatingwebhookconfigurations",
            configuration_read,
        );
        logs.push(log);
        let keeper = setup.keeper(client);
        let (ports, shutdown) = (ports.clone(), shutdown.clone());
        starting.push(tokio::spawn(async move {
            let certificate = keeper
                .start_checking_every(Duration::from_secs(1), shutdown.clone())
                .await
                .map_err(|error| format!("replica {name} does not start: {error:#}"))?;
            let port = serve(certificate, &shutdown).await;
            ports.lock().unwrap().push((name, port));
            Ok::<_, String>(())
        }));
    }

    // Sample until all three serve the renewed certificate and every object carries its
    // bundle.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut samples, mut failed, mut overlapping) = (0, Vec::new(), 0);
    let renewed = loop {
        let started;
        (started, starting) = starting.into_iter().partition(|start| start.is_finished());
        for start in started {
            start.await.unwrap().unwrap();
        }
        let serving = ports.lock().unwrap().clone();
        let (served, failures) = setup.sample(&serving).await;
        if !failures.is_empty() {
            failed.push(failures.join("\n"));
        }
        samples += 1;
        let (ca, cert) = setup.stored().await;
        // Replica a still serves the first certificate while another serves the renewed one.
        let first = served.iter().filter(|served| **served == der(&first_cert));
        overlapping += usize::from(first.count() == 1 && served.len() > 1);
        let bundles = setup.bundles().await;
        let settled = serving.len() == 3
            && served.iter().all(|served| *served == der(&cert))
            && (bundles.iter()).all(|(_, bundle)| bundle.as_deref() == Some(ca.as_bytes()));
        if cert != first_cert && settled {
            break ca;
        }
        assert!(
            Instant::now() < deadline,
            "not renewed and served within 30 s: {serving:?}"
        );
    };
    assert!(
        failed.is_empty(),
        "{} of {samples} samples saw a served certificate that the API server would not \
         trust; the first:\n{}",
        failed.len(),
        failed[0]
    );
    assert!(
        overlapping > 0,
        "{samples} samples, none during the renewal"
    );

    // Both renewed, and c's write lost: renewed once, from the first certificate. The bundle
    // is the new CA, then the first one, which replica a served until it read the new one.
    for log in &logs {
        assert_eq!(log.writes("secrets"), 1);
    }
    assert_eq!(renewed.matches("BEGIN CERTIFICATE").count(), 2, "{renewed}");
    assert!(
        renewed.ends_with(&first_ca),
        "the first CA comes second: {renewed}"
    );
    shutdown.trigger();
}

#[tokio::test]
async fn a_write_of_the_ca_that_conflicts_is_tried_again() {
    let Some(setup) = Setup::new().await else {
        return;
    };
    let shutdown = Shutdown::default();
    let (client, log) = setup.client().await;
    // As if other writers had changed the validating configuration and the CRD between the
    // replica's read and its write.
    log.fail_next(Verb::Patch, "validatingwebhookconfigurations", 409, 2);
    log.fail_next(Verb::Patch, "customresourcedefinitions", 409, 1);
    let certificate = setup
        .keeper(client)
        .start(shutdown.clone())
        .await
        .expect("conflicts are tried again");
    let (ca, _) = setup.stored().await;
    for (object, bundle) in setup.bundles().await {
        assert_eq!(bundle.as_deref(), Some(ca.as_bytes()), "{object}");
    }
    let patches = |resource: &str| {
        let requests = log.requests();
        let patches = requests.iter().filter(|r| r.verb == Verb::Patch);
        patches.filter(|r| r.resource == resource).count()
    };
    assert_eq!(patches("validatingwebhookconfigurations"), 3);
    assert_eq!(patches("customresourcedefinitions"), 2);
    let port = serve(certificate, &shutdown).await;
    assert_eq!(
        setup.sample(&[("only", port)]).await.1,
        Vec::<String>::new()
    );
    shutdown.trigger();
}

#[tokio::test]
async fn the_api_server_calls_the_webhooks_with_the_certificate_made_on_an_empty_secret() {
    let Some(setup) = Setup::new().await else {
        return;
    };
    // The validating configuration calls a webhook on the test namespace's ConfigMaps, at
    // `https://localhost:<port>/validate-configmaps`, without a CA: the replica writes it.
    const PATH: &str = "/validate-configmaps";
    let port = free_port().unwrap();
    let configmaps = json!({ "webhooks": [{
        "name": "configmaps.webhook-certs.test",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "clientConfig": { "url": format!("https://localhost:{port}{PATH}") },
        "namespaceSelector": { "matchLabels": {
            "kubernetes.io/metadata.name": setup.env.namespace,
        } },
        "rules": [{
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["configmaps"],
        }],
    }] });
    Api::<ValidatingWebhookConfiguration>::all(setup.env.admin.clone())
        .patch(
            &setup.validating,
            &PatchParams::default(),
            &Patch::Merge(&configmaps),
        )
        .await
        .unwrap();

    let shutdown = Shutdown::default();
    let certificate = setup
        .keeper(setup.env.operator.clone())
        .start(shutdown.clone())
        .await
        .expect("the operator's ServiceAccount manages the certificate");
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let allow = crate::webhook::validating(Allow, setup.env.operator.clone());
    let router = Router::new()
        .route(PATH, allow)
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                counted.fetch_add(1, Ordering::SeqCst);
                next.run(request)
            },
        ));
    serve_on(port, certificate, router, &shutdown).await;

    // The API server calls the webhook, which it trusts only with the CA written into the
    // configuration: a ConfigMap is created once it has loaded the configuration.
    let config_maps = Api::<ConfigMap>::namespaced(setup.env.admin.clone(), &setup.env.namespace);
    for _ in 0..100 {
        if calls.load(Ordering::SeqCst) > 0 {
            break;
        }
        let probe = serde_json::from_value(json!({ "metadata": { "generateName": "probe-" } }));
        let _ = config_maps
            .create(&PostParams::default(), &probe.unwrap())
            .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        calls.load(Ordering::SeqCst) > 0,
        "the API server never called the webhook"
    );
    // Now that the API server calls it (failurePolicy: Fail), a create goes through only with
    // the webhook's answer.
    let answered = serde_json::from_value(json!({ "metadata": { "name": "answered" } }));
    config_maps
        .create(&PostParams::default(), &answered.unwrap())
        .await
        .expect("the webhook allows it, over TLS");
    let (ca, _) = setup.stored().await;
    assert_eq!(ca.matches("BEGIN CERTIFICATE").count(), 1, "a new CA: {ca}");
    for (object, bundle) in setup.bundles().await {
        assert_eq!(bundle.as_deref(), Some(ca.as_bytes()), "{object}");
    }
    shutdown.trigger();
}

#[tokio::test]
async fn a_certificate_is_kept_until_due_then_renewed_at_start_and_the_previous_ca_trusted() {
    let Some(setup) = Setup::new().await else {
        return;
    };
    let shutdown = Shutdown::default();
    let start = || async {
        (setup.keeper(setup.env.operator.clone()))
            .start(shutdown.clone())
            .await
            .unwrap()
    };
    start().await;
    let secrets = Api::<Secret>::namespaced(setup.env.admin.clone(), &setup.env.namespace);
    let first = secrets.get(&setup.secret).await.unwrap();
    assert!(first.annotations().contains_key(certs::NOT_AFTER));
    let (first_ca, first_cert) = setup.stored().await;
    // Started again with the certificate as it is: kept.
    start().await;
    assert_eq!(setup.stored().await, (first_ca.clone(), first_cert.clone()));

    // Expiring in a day: renewed at start, with a new CA in front of the previous one.
    let tomorrow = Timestamp::now() + SignedDuration::from_hours(24);
    let due = json!({ "metadata": { "annotations": { certs::NOT_AFTER: tomorrow.to_string() } } });
    secrets
        .patch(&setup.secret, &PatchParams::default(), &Patch::Merge(&due))
        .await
        .unwrap();
    start().await;
    let (bundle, cert) = setup.stored().await;
    assert_ne!(cert, first_cert);
    assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 2, "{bundle}");
    assert!(
        bundle.ends_with(&first_ca),
        "the previous CA comes second: {bundle}"
    );
    for (object, written) in setup.bundles().await {
        assert_eq!(written.as_deref(), Some(bundle.as_bytes()), "{object}");
    }
    shutdown.trigger();
}

/// A validating webhook that allows every ConfigMap.
struct Allow;

impl crate::webhook::Validator<ConfigMap> for Allow {
    async fn validate_create(
        &self,
        _: &crate::webhook::Context,
        _: &ConfigMap,
    ) -> crate::webhook::Verdict {
        Ok(Vec::new())
    }

    async fn validate_update(
        &self,
        _: &crate::webhook::Context,
        _: &ConfigMap,
        _: &ConfigMap,
    ) -> crate::webhook::Verdict {
        Ok(Vec::new())
    }
}

/// A test's namespace with what `config/webhook-certs` installs there (the empty Secret, the
/// rights to fill it and to write the CA into the webhook configurations and the CRD, those
/// only), a mutating and a validating webhook configuration and a CRD converted by a webhook,
/// none of them with a CA yet. The webhooks are never called: nothing creates their objects.
struct Setup {
    env: TestEnv,
    secret: String,
    mutating: String,
    validating: String,
    crd: String,
}

impl Setup {
    async fn new() -> Option<Self> {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture");
        let env = TestEnv::real_for(&fixture).await?;
        let namespace = env.namespace.clone();
        let setup = Self {
            secret: format!("{namespace}-webhook-server-cert"),
            mutating: format!("{namespace}-mutating-webhook-configuration"),
            validating: format!("{namespace}-validating-webhook-configuration"),
            crd: format!("gizmos.{namespace}.example.com"),
            env,
        };
        let group = format!("{namespace}.example.com");
        let account = json!({
            "kind": "ServiceAccount",
            "name": format!("{namespace}-controller-manager"),
            "namespace": namespace,
        });
        let rbac = "rbac.authorization.k8s.io";
        let cluster_role = format!("{namespace}-webhook-certs");
        let objects = [
            json!({
                "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": { "name": setup.secret, "namespace": namespace },
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": { "name": "webhook-certs", "namespace": namespace },
                "rules": [{
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": [setup.secret],
                    "verbs": ["get", "update"],
                }],
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": { "name": "webhook-certs", "namespace": namespace },
                "roleRef": { "apiGroup": rbac, "kind": "Role", "name": "webhook-certs" },
                "subjects": [account],
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": { "name": cluster_role },
                "rules": [
                    {
                        "apiGroups": ["admissionregistration.k8s.io"],
                        "resources": [
                            "mutatingwebhookconfigurations",
                            "validatingwebhookconfigurations",
                        ],
                        "resourceNames": [setup.mutating, setup.validating],
                        "verbs": ["get", "patch"],
                    },
                    {
                        "apiGroups": ["apiextensions.k8s.io"],
                        "resources": ["customresourcedefinitions"],
                        "resourceNames": [setup.crd],
                        "verbs": ["get", "patch"],
                    },
                ],
            }),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": { "name": cluster_role },
                "roleRef": { "apiGroup": rbac, "kind": "ClusterRole", "name": cluster_role },
                "subjects": [account],
            }),
            json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": { "name": setup.crd },
                "spec": {
                    "group": group,
                    "names": {
                        "kind": "Gizmo",
                        "listKind": "GizmoList",
                        "plural": "gizmos",
                        "singular": "gizmo",
                    },
                    "scope": "Namespaced",
                    "versions": [{
                        "name": "v1", "served": true, "storage": true,
                        "schema": { "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": true,
                        } },
                    }],
                    "conversion": { "strategy": "Webhook", "webhook": {
                        "conversionReviewVersions": ["v1"],
                        "clientConfig": { "url": "https://localhost:1/convert" },
                    } },
                },
            }),
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": { "name": setup.mutating },
                "webhooks": [webhook("mgizmo", &group), webhook("mgizmo-status", &group)],
            }),
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": { "name": setup.validating },
                "webhooks": [webhook("vgizmo", &group)],
            }),
        ];
        for object in &objects {
            apply(&setup.env.admin, object).await;
        }
        // The authorizer sees new roles a moment later.
        let secrets = Api::<Secret>::namespaced(setup.env.operator.clone(), &namespace);
        let crds = Api::<CustomResourceDefinition>::all(setup.env.operator.clone());
        for _ in 0..100 {
            if secrets.get(&setup.secret).await.is_ok() && crds.get(&setup.crd).await.is_ok() {
                return Some(setup);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the operator's ServiceAccount never got the rights of config/webhook-certs");
    }

    /// A replica's client: the operator's ServiceAccount, with a request log of its own.
    async fn client(&self) -> (Client, RequestLog) {
        let Backend::Real { kubeconfig, .. } = &self.env.backend else {
            unreachable!("TestEnv::real_for runs on the real control plane")
        };
        let kubeconfig = Kubeconfig::read_from(kubeconfig).unwrap();
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
        let log = RequestLog::default();
        let client = kube::client::ClientBuilder::try_from(config)
            .unwrap()
            .with_layer(&log)
            .build();
        (client, log)
    }

    /// What a replica runs, with `client`, for a certificate for `localhost` (where the test
    /// serves).
    fn keeper(&self, client: Client) -> SelfManaged {
        SelfManaged {
            client,
            ca_name: "webhook-certs-test-ca".into(),
            namespace: self.env.namespace.clone(),
            secret: self.secret.clone(),
            dns_names: vec!["localhost".into()],
            configurations: vec![self.mutating.clone(), self.validating.clone()],
            crds: vec![self.crd.clone()],
        }
    }

    /// The Secret's CA bundle and certificate.
    async fn stored(&self) -> (String, String) {
        let secret = Api::<Secret>::namespaced(self.env.admin.clone(), &self.env.namespace)
            .get(&self.secret)
            .await
            .unwrap();
        let data = secret.data.unwrap_or_default();
        let text = |key: &str| String::from_utf8(data[key].0.clone()).unwrap();
        (text("ca.crt"), text("tls.crt"))
    }

    /// The CA bundles the API server trusts the webhooks with now: each webhook's, then the
    /// CRD conversion's, with where each is.
    async fn bundles(&self) -> Vec<(String, Option<Vec<u8>>)> {
        let admin = &self.env.admin;
        let mutating = Api::<MutatingWebhookConfiguration>::all(admin.clone())
            .get(&self.mutating)
            .await
            .unwrap();
        let validating = Api::<ValidatingWebhookConfiguration>::all(admin.clone())
            .get(&self.validating)
            .await
            .unwrap();
        let crd = Api::<CustomResourceDefinition>::all(admin.clone())
            .get(&self.crd)
            .await
            .unwrap();
        let webhooks = (mutating.webhooks.into_iter().flatten())
            .map(|w| (w.name, w.client_config.ca_bundle))
            .chain(
                (validating.webhooks.into_iter().flatten())
                    .map(|w| (w.name, w.client_config.ca_bundle)),
            );
        let conversion = crd.spec.conversion.and_then(|c| c.webhook?.client_config);
        let conversion = (self.crd.clone(), conversion.and_then(|c| c.ca_bundle));
        webhooks
            .chain([conversion])
            .map(|(object, bundle)| (object, bundle.map(|b| b.0)))
            .collect()
    }

    /// The certificate each replica of `ports` serves, and where a bundle the API server reads
    /// does not verify one of them as the API server verifies a webhook it calls. What the
    /// replicas serve is read first, then the bundles: a replica serves a certificate only once
    /// every object trusts its CA, so the bundles read afterwards must verify it.
    async fn sample(&self, ports: &[(&str, u16)]) -> (Vec<CertificateDer<'static>>, Vec<String>) {
        let mut chains = Vec::new();
        for (_, port) in ports {
            chains.push(served_certificates(*port).await.unwrap());
        }
        let bundles = self.bundles().await;
        let mut failures = Vec::new();
        for ((replica, _), chain) in ports.iter().zip(&chains) {
            for (object, bundle) in &bundles {
                if let Err(error) = verifies(bundle.as_deref(), chain) {
                    failures.push(format!(
                        "{object}'s bundle does not verify replica {replica}'s certificate: {error}"
                    ));
                }
            }
        }
        let served = chains.into_iter().map(|chain| chain[0].clone()).collect();
        (served, failures)
    }
}

/// A webhook of the test's configurations, for gizmos, at a URL nothing serves.
fn webhook(name: &str, group: &str) -> serde_json::Value {
    json!({
        "name": format!("{name}.{group}"),
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": { "url": format!("https://localhost:1/{name}") },
        "rules": [{
            "apiGroups": [group],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["gizmos"],
        }],
    })
}

/// Serves `certificate` on a free loopback port until `shutdown`; returns the port.
async fn serve(certificate: Arc<Certificate>, shutdown: &Shutdown) -> u16 {
    let port = free_port().unwrap();
    serve_on(port, certificate, Router::new(), shutdown).await;
    port
}

/// Serves `router` with `certificate` on loopback port `port` until `shutdown`.
async fn serve_on(port: u16, certificate: Arc<Certificate>, router: Router, shutdown: &Shutdown) {
    let tls = certificate.acceptor(false).unwrap();
    let addr = ([127, 0, 0, 1], port).into();
    http::spawn("webhooks", addr, router, Some(tls), false, shutdown.clone())
        .await
        .unwrap();
}

/// Whether the PEM CA `bundle` verifies `chain` (what a replica serves) for `localhost`.
fn verifies(bundle: Option<&[u8]>, chain: &[CertificateDer<'static>]) -> Result<(), String> {
    let bundle = bundle.ok_or("no CA bundle")?;
    let mut roots = RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(bundle) {
        roots
            .add(ca.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| e.to_string())?;
    let (end_entity, intermediates) = chain.split_first().ok_or("no certificate served")?;
    let localhost = ServerName::try_from("localhost").unwrap();
    verifier
        .verify_server_cert(end_entity, intermediates, &localhost, &[], UnixTime::now())
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The DER of a PEM certificate.
fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
}
