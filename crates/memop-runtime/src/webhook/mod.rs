//! Webhooks the API server calls over HTTPS.
//!
//! - Admission webhooks, before it stores an object: to set its defaults (mutating webhooks)
//!   and to refuse it (validating webhooks), as kubebuilder's `CustomDefaulter` and
//!   `CustomValidator` do. One module per kind holds what its webhooks do; this one serves
//!   them and describes them for `make manifests` (`config/webhook/manifests.yaml`).
//! - The conversion webhook, for kinds served in several versions: it converts objects from
//!   the version they are stored in to the version a client asks for, and back, through one
//!   hub version per kind (`From` impls in `src/api/<group>/<spoke>/<kind>_conversion.rs`).
//!
//! A project's `src/webhook/mod.rs` lists its webhooks ([`Webhook`]s and their routes) and
//! conversions ([`Conversion`]s), and starts this server with [`serve`].

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use clap::ArgAction;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Resource;
use kube::api::ObjectMeta;
use kube::core::DynamicObject;
use kube::core::Status;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Operator;
use crate::manager::tls::Certificate;
use crate::manager::{Metrics, Shared, http, parse_bind_address};

pub mod certs;
mod local;

/// The webhook server's flags, part of the manager's.
#[derive(Debug, Clone, clap::Args)]
#[group(id = "webhook")]
pub struct Flags {
    /// Serve the webhooks; ENABLE_WEBHOOKS=false turns them off
    #[arg(long, env = "ENABLE_WEBHOOKS", action = ArgAction::Set, num_args = 0..=1, default_value_t = true, default_missing_value = "true")]
    pub enable_webhooks: bool,

    /// Address the webhook server binds to
    #[arg(long, default_value = ":9443")]
    pub webhook_bind_address: String,

    /// Directory holding the webhook server's certificate and key: the Secret cert-manager
    /// issues (config/certmanager), mounted there by config/default/manager_webhook_patch.yaml.
    /// Read again when they change
    #[arg(long, default_value = "/tmp/k8s-webhook-server/serving-certs")]
    pub webhook_cert_path: PathBuf,

    /// File name of the webhook certificate in --webhook-cert-path
    #[arg(long, default_value = "tls.crt")]
    pub webhook_cert_name: String,

    /// File name of the webhook certificate's key in --webhook-cert-path
    #[arg(long, default_value = "tls.key")]
    pub webhook_cert_key: String,

    /// Local development (`make run`): serve the webhooks on this machine, where the API server
    /// reaches them at this URL (https://HOST:PORT), with a certificate made for HOST at start.
    /// The manager points its CRDs' conversion and two webhook configurations of its own
    /// ({operator name}-local-mutating, -validating) at the URL, and undoes both when it stops
    #[arg(
        long,
        env = "WEBHOOK_URL",
        value_name = "URL",
        conflicts_with = "webhook_cert_secret"
    )]
    pub webhook_url: Option<String>,

    /// Keep the webhook server's certificate in this Secret of the manager's namespace, without
    /// cert-manager: made, written into the webhook configurations and CRDs, and renewed by the
    /// manager (config/webhook-certs). Instead of --webhook-cert-path
    #[arg(long, env = "WEBHOOK_CERT_SECRET", value_name = "NAME")]
    pub webhook_cert_secret: Option<String>,

    /// With --webhook-cert-secret: the webhook Service, whose DNS names the certificate is for
    /// [default: {operator name}-webhook-service]
    #[arg(long, value_name = "NAME")]
    pub webhook_service: Option<String>,

    /// With --webhook-cert-secret: the webhook configurations to write the CA into [default:
    /// {operator name}-mutating-webhook-configuration,{operator
    /// name}-validating-webhook-configuration]
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub webhook_configurations: Option<Vec<String>>,
}

/// Starts the webhook server of `operator` (unless --enable-webhooks=false) with `routes`, and
/// the certificate of --webhook-cert-path or --webhook-cert-secret (which also trusts it in the
/// CRDs named `conversion_crds`); HTTP/2 only with `http2` (--enable-http2). With --webhook-url
/// it serves on this machine instead, and points the API server at it: the conversion of
/// `conversion_crds`, and `webhooks` (what `config/webhook/manifests.yaml` declares).
pub async fn serve(
    operator: &Operator,
    flags: &Flags,
    http2: bool,
    shared: &Shared,
    routes: Router,
    conversion_crds: Vec<String>,
    webhooks: &[Webhook],
) -> anyhow::Result<()> {
    if !flags.enable_webhooks {
        tracing::info!("webhooks disabled (ENABLE_WEBHOOKS=false)");
        return Ok(());
    }
    let Some(addr) = parse_bind_address(&flags.webhook_bind_address)? else {
        return Ok(());
    };
    let local = (flags.webhook_url.as_deref())
        .map(|url| local::Local::new(operator, url))
        .transpose()?;
    let certificate = match (&local, &flags.webhook_cert_secret) {
        (Some(local), _) => local.certificate()?,
        (None, Some(secret)) => {
            let namespace = shared.client.default_namespace().to_string();
            let name = operator.name;
            let service = (flags.webhook_service.clone())
                .unwrap_or_else(|| format!("{name}-webhook-service"));
            let configurations = flags.webhook_configurations.clone().unwrap_or_else(|| {
                vec![
                    format!("{name}-mutating-webhook-configuration"),
                    format!("{name}-validating-webhook-configuration"),
                ]
            });
            certs::SelfManaged {
                client: shared.client.clone(),
                ca_name: format!("{name}-webhook-ca"),
                dns_names: vec![
                    format!("{service}.{namespace}.svc"),
                    format!("{service}.{namespace}.svc.cluster.local"),
                ],
                namespace,
                secret: secret.clone(),
                configurations,
                crds: conversion_crds.clone(),
            }
            .start(shared.shutdown.clone())
            .await
            .context("managing the webhook certificate (--webhook-cert-secret)")?
        }
        (None, None) => {
            let certificate = Certificate::from_files(
                &flags.webhook_cert_path,
                &flags.webhook_cert_name,
                &flags.webhook_cert_key,
            )
            .context(
                "the webhook server's certificate: deploy with cert-manager (the [CERTMANAGER] sections of \
                 config/default/kustomization.yaml) or with config/webhook-certs, pass --webhook-cert-path; on \
                 your machine, pass --webhook-url (make run does) or run with ENABLE_WEBHOOKS=false",
            )?;
            let certificate = Arc::new(certificate);
            certificate.watch(shared.shutdown.clone());
            certificate
        }
    };
    let tls = certificate.acceptor(http2)?;
    let router = measured(routes, shared.metrics.clone());
    http::spawn(
        "webhooks",
        addr,
        router,
        Some(tls),
        http2,
        shared.shutdown.clone(),
    )
    .await?;
    // Only once it serves: the API server calls the webhooks as soon as it is pointed at them.
    if let Some(local) = local {
        local.point(shared, webhooks, &conversion_crds).await?;
    }
    Ok(())
}

/// Where the API server sends objects to convert, for every kind with a conversion webhook
/// (the CRD patches of `config/crd/patches` point it there).
pub const CONVERT_PATH: &str = "/convert";

/// `router` with each request to a webhook counted, timed and tracked in flight by its path,
/// as controller-runtime's `controller_runtime_webhook_*` metrics do. Only requests that match
/// a route are measured, and webhook routes have no parameters, so the paths that label the
/// series are the webhooks' own: requests to other paths cannot grow them.
pub fn measured(router: Router, metrics: Arc<Metrics>) -> Router {
    router.route_layer(axum::middleware::from_fn_with_state(metrics, measure))
}

async fn measure(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let measuring = metrics.webhook(request.uri().path());
    let response = next.run(request).await;
    measuring.answered(response.status().as_u16());
    response
}

/// A change the API server asks a validating webhook about.
#[derive(Debug)]
pub enum Change<'a, K> {
    /// An object being created.
    Create(&'a K),
    /// An object being updated: the stored one and the new one.
    Update {
        /// The object as stored.
        old: &'a K,
        /// The object as it would be stored.
        new: &'a K,
    },
    /// An object being deleted (the stored one).
    Delete(&'a K),
}

/// What a validating webhook answers: allowed, with warnings for the client (kubectl prints
/// them), or refused with a message that says why.
pub type Verdict = Result<Vec<String>, String>;

/// A mutating webhook: the API server sends the object, `default` sets its defaults, and the
/// answer is the JSON patch between the two.
pub fn defaulting<K>(default: fn(&mut K)) -> MethodRouter
where
    K: Resource + Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    post(move |body: Bytes| async move { answer(&body, |review| mutate(review, default)) })
}

/// A validating webhook: `validate` decides on the change the API server asks about.
pub fn validating<K>(validate: fn(Change<'_, K>) -> Verdict) -> MethodRouter
where
    K: Resource + Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    post(move |body: Bytes| async move { answer(&body, |review| decide(review, validate)) })
}

/// Reads an AdmissionReview, and answers with the one `review` makes of it.
fn answer<K>(
    body: &[u8],
    review: impl FnOnce(AdmissionReview<K>) -> AdmissionReview<DynamicObject>,
) -> Response
where
    K: Resource + DeserializeOwned,
{
    let request = match serde_json::from_slice::<AdmissionReview<K>>(body) {
        Ok(request) => request,
        Err(error) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("not an AdmissionReview: {error}\n"),
            )
                .into_response();
        }
    };
    match serde_json::to_vec(&review(request)) {
        Ok(json) => ([(CONTENT_TYPE, "application/json")], json).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n")).into_response(),
    }
}

fn mutate<K>(review: AdmissionReview<K>, default: fn(&mut K)) -> AdmissionReview<DynamicObject>
where
    K: Resource + Clone + Serialize,
{
    let request: AdmissionRequest<K> = match review.try_into() {
        Ok(request) => request,
        Err(error) => return AdmissionResponse::invalid(error).into_review(),
    };
    let response = AdmissionResponse::from(&request);
    // A deletion carries no new object: nothing to default.
    let Some(object) = request.object else {
        return response.into_review();
    };
    let mut defaulted = object.clone();
    default(&mut defaulted);
    let patch = match (
        serde_json::to_value(&object),
        serde_json::to_value(&defaulted),
    ) {
        (Ok(before), Ok(after)) => json_patch::diff(&before, &after),
        (Err(error), _) | (_, Err(error)) => return response.deny(error).into_review(),
    };
    match response.clone().with_patch(patch) {
        Ok(response) => response.into_review(),
        Err(error) => response.deny(error).into_review(),
    }
}

fn decide<K>(
    review: AdmissionReview<K>,
    validate: fn(Change<'_, K>) -> Verdict,
) -> AdmissionReview<DynamicObject>
where
    K: Resource + Clone,
{
    let request: AdmissionRequest<K> = match review.try_into() {
        Ok(request) => request,
        Err(error) => return AdmissionResponse::invalid(error).into_review(),
    };
    let mut response = AdmissionResponse::from(&request);
    let (object, old) = (request.object.as_ref(), request.old_object.as_ref());
    let change = match (&request.operation, object, old) {
        (Operation::Create, Some(new), _) => Change::Create(new),
        (Operation::Update, Some(new), Some(old)) => Change::Update { old, new },
        (Operation::Delete, _, Some(old)) => Change::Delete(old),
        // CONNECT, or a request without the objects its operation needs: nothing to decide.
        _ => return response.into_review(),
    };
    match validate(change) {
        Ok(warnings) => {
            if !warnings.is_empty() {
                response.warnings = Some(warnings);
            }
            response.into_review()
        }
        Err(message) => response.deny(message).into_review(),
    }
}

/// How one version of a kind (a spoke) converts to and from the kind's hub version, as
/// kubebuilder's `Convertible` and `Hub` do: any version converts to any other through the hub.
pub struct Conversion {
    kind: String,
    hub: String,
    spoke: String,
    to_hub: fn(Value) -> Result<Value, String>,
    from_hub: fn(Value) -> Result<Value, String>,
}

impl Conversion {
    /// Converts between `Spoke` and `Hub`, two versions of one kind, with their `From` impls.
    pub fn between<Hub, Spoke>() -> Self
    where
        Hub: Resource<DynamicType = ()> + Serialize + DeserializeOwned + From<Spoke>,
        Spoke: Resource<DynamicType = ()> + Serialize + DeserializeOwned + From<Hub>,
    {
        Self {
            kind: Hub::kind(&()).into_owned(),
            hub: Hub::api_version(&()).into_owned(),
            spoke: Spoke::api_version(&()).into_owned(),
            to_hub: |object| encode(&Hub::from(decode::<Spoke>(object)?)),
            from_hub: |object| encode(&Spoke::from(decode::<Hub>(object)?)),
        }
    }
}

fn decode<K: DeserializeOwned>(object: Value) -> Result<K, String> {
    serde_json::from_value(object).map_err(|error| error.to_string())
}

fn encode<K: Serialize>(object: &K) -> Result<Value, String> {
    serde_json::to_value(object).map_err(|error| error.to_string())
}

/// The names of the CRDs among `crds` whose kinds `conversions` converts: their conversion
/// webhook is served here, so `--webhook-cert-secret` writes its CA into them.
pub fn conversion_crds(
    conversions: &[Conversion],
    crds: Vec<CustomResourceDefinition>,
) -> Vec<String> {
    crds.into_iter()
        .filter(|crd| {
            conversions.iter().any(|c| {
                c.kind == crd.spec.names.kind
                    && c.hub
                        .split_once('/')
                        .is_some_and(|(group, _)| group == crd.spec.group)
            })
        })
        .filter_map(|crd| crd.metadata.name)
        .collect()
}

/// The conversion webhook: converts each object of a ConversionReview to the version it asks
/// for. The API server refuses the whole request when one object fails.
pub fn converting(conversions: Vec<Conversion>) -> MethodRouter {
    let conversions = Arc::new(conversions);
    post(move |body: Bytes| async move {
        let review = match serde_json::from_slice::<ConversionReview>(&body) {
            Ok(review) => review,
            Err(error) => {
                return (
                    StatusCode::BAD_REQUEST,
                    format!("not a ConversionReview: {error}\n"),
                )
                    .into_response();
            }
        };
        let response = match ConversionRequest::from_review(review) {
            Ok(request) => {
                let desired = request.desired_api_version.clone();
                let converted: Result<Vec<Value>, String> = request
                    .objects
                    .iter()
                    .map(|object| convert(&conversions, object.clone(), &desired))
                    .collect();
                let response = ConversionResponse::for_request(request);
                match converted {
                    Ok(objects) => response.success(objects),
                    Err(message) => response.failure(Status::failure(&message, "ConversionFailed")),
                }
            }
            Err(error) => {
                ConversionResponse::invalid(Status::failure(&error.to_string(), "InvalidRequest"))
            }
        };
        match serde_json::to_vec(&response.into_review()) {
            Ok(json) => ([(CONTENT_TYPE, "application/json")], json).into_response(),
            Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n")).into_response(),
        }
    })
}

/// Converts `object` to `desired` (an apiVersion of its kind): to its kind's hub, then from it.
fn convert(conversions: &[Conversion], object: Value, desired: &str) -> Result<Value, String> {
    let text = |field: &str| object[field].as_str().unwrap_or_default().to_string();
    let (kind, from) = (text("kind"), text("apiVersion"));
    if from == desired {
        return Ok(object);
    }
    let Some(hub) = conversions
        .iter()
        .find(|c| c.kind == kind && (c.hub == from || c.spoke == from))
        .map(|c| &c.hub)
    else {
        return Err(format!("no conversion of {kind} {from}"));
    };
    let spoke = |version: &str| {
        conversions
            .iter()
            .find(|c| c.kind == kind && c.hub == *hub && c.spoke == version)
            .ok_or_else(|| format!("no conversion of {kind} between {version} and {hub}"))
    };
    let object = if from == *hub {
        object
    } else {
        (spoke(&from)?.to_hub)(object)?
    };
    if desired == hub.as_str() {
        Ok(object)
    } else {
        (spoke(desired)?.from_hub)(object)
    }
}

/// One webhook, as `config/webhook/manifests.yaml` declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// Mutating (defaulting) or validating.
    pub mutating: bool,
    /// Its name, unique in the cluster.
    pub name: &'static str,
    /// The path the webhook server serves it at.
    pub path: &'static str,
    /// The API group of the resource it is called for.
    pub group: &'static str,
    /// The version of that resource.
    pub version: &'static str,
    /// The resource (plural).
    pub resource: &'static str,
    /// The operations it is called for: CREATE, UPDATE, DELETE.
    pub operations: &'static [&'static str],
}

/// The mutating and the validating webhook configuration of `webhooks`, named `names`, each
/// webhook calling the server `client_config` gives it (a URL or a Service, and the CA), with
/// the settings of `config/webhook/manifests.yaml`: fail when it cannot be called, no side
/// effects. A configuration without webhooks has an empty list.
pub fn configurations(
    webhooks: &[Webhook],
    names: [&str; 2],
    client_config: impl Fn(&Webhook) -> WebhookClientConfig,
) -> (MutatingWebhookConfiguration, ValidatingWebhookConfiguration) {
    let rules = |webhook: &Webhook| {
        Some(vec![RuleWithOperations {
            api_groups: Some(vec![webhook.group.into()]),
            api_versions: Some(vec![webhook.version.into()]),
            operations: Some(webhook.operations.iter().map(|op| op.to_string()).collect()),
            resources: Some(vec![webhook.resource.into()]),
            scope: None,
        }])
    };
    let named = |name: &str| ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    };
    let of = |mutating: bool| {
        webhooks
            .iter()
            .filter(move |webhook| webhook.mutating == mutating)
    };
    let mutating = MutatingWebhookConfiguration {
        metadata: named(names[0]),
        webhooks: Some(
            of(true)
                .map(|webhook| MutatingWebhook {
                    name: webhook.name.into(),
                    admission_review_versions: vec!["v1".into()],
                    client_config: client_config(webhook),
                    failure_policy: Some("Fail".into()),
                    rules: rules(webhook),
                    side_effects: "None".into(),
                    ..MutatingWebhook::default()
                })
                .collect(),
        ),
    };
    let validating = ValidatingWebhookConfiguration {
        metadata: named(names[1]),
        webhooks: Some(
            of(false)
                .map(|webhook| ValidatingWebhook {
                    name: webhook.name.into(),
                    admission_review_versions: vec!["v1".into()],
                    client_config: client_config(webhook),
                    failure_policy: Some("Fail".into()),
                    rules: rules(webhook),
                    side_effects: "None".into(),
                    ..ValidatingWebhook::default()
                })
                .collect(),
        ),
    };
    (mutating, validating)
}

/// `config/webhook/manifests.yaml`: the webhook configurations of `webhooks`, calling the
/// `webhook-service` Service of config/webhook, in order of name.
pub fn manifests_yaml(webhooks: &[Webhook]) -> String {
    let mut webhooks = webhooks.to_vec();
    // By name, so that the file does not depend on the order kinds were added in.
    webhooks.sort_by_key(|webhook| webhook.name);
    let mut yaml = String::from("# Generated by `make manifests` from src/webhook: do not edit.\n");
    for (mutating, kind) in [
        (true, "MutatingWebhookConfiguration"),
        (false, "ValidatingWebhookConfiguration"),
    ] {
        let webhooks: Vec<&Webhook> = webhooks.iter().filter(|w| w.mutating == mutating).collect();
        if webhooks.is_empty() {
            continue;
        }
        let name = if mutating {
            "mutating-webhook-configuration"
        } else {
            "validating-webhook-configuration"
        };
        yaml.push_str(&format!(
            "---\napiVersion: admissionregistration.k8s.io/v1\nkind: {kind}\nmetadata:\n  name: {name}\nwebhooks:\n"
        ));
        for webhook in webhooks {
            let operations: String = webhook
                .operations
                .iter()
                .map(|op| format!("    - {op}\n"))
                .collect();
            yaml.push_str(&format!(
                "- admissionReviewVersions:\n  - v1\n  clientConfig:\n    service:\n      name: webhook-service\n      namespace: system\n      path: {path}\n  failurePolicy: Fail\n  name: {name}\n  rules:\n  - apiGroups:\n    - {group}\n    apiVersions:\n    - {version}\n    operations:\n{operations}    resources:\n    - {resource}\n  sideEffects: None\n",
                path = webhook.path,
                name = webhook.name,
                group = webhook.group,
                version = webhook.version,
                resource = webhook.resource,
            ));
        }
    }
    yaml
}

#[cfg(test)]
mod tests {
    use kube::ResourceExt;
    use serde_json::{Value, json};
    use tower::ServiceExt;

    use super::*;

    /// Sends `request` (an AdmissionRequest's fields, operation and objects) to `route` as the
    /// API server would, and returns the AdmissionResponse.
    async fn review(route: MethodRouter, request: Value) -> Value {
        let mut review = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": { "group": "example.com", "version": "v1", "kind": "Thing" },
                "resource": { "group": "example.com", "version": "v1", "resource": "things" },
                "name": "thing",
                "namespace": "default",
                "userInfo": { "username": "admin" },
            },
        });
        for (key, value) in request.as_object().unwrap() {
            review["request"][key] = value.clone();
        }
        let request = axum::http::Request::post("/")
            .body(axum::body::Body::from(review.to_string()))
            .unwrap();
        let response = Router::new()
            .route("/", route)
            .oneshot(request)
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&body).unwrap();
        answer["response"].clone()
    }

    fn thing(labels: Value) -> Value {
        json!({
            "apiVersion": "example.com/v1",
            "kind": "Thing",
            "metadata": { "name": "thing", "namespace": "default", "labels": labels },
        })
    }

    fn label(thing: &mut DynamicObject) {
        thing.labels_mut().insert("defaulted".into(), "yes".into());
    }

    fn refuse_big(change: Change<'_, DynamicObject>) -> Verdict {
        match change {
            Change::Create(new) if new.labels().contains_key("big") => {
                Err("big things are refused".into())
            }
            Change::Update { old, new } if old.labels() != new.labels() => {
                Ok(vec!["labels changed".into()])
            }
            Change::Delete(old) if old.labels().contains_key("keep") => Err("kept".into()),
            _ => Ok(Vec::new()),
        }
    }

    #[tokio::test]
    async fn a_mutating_webhook_answers_with_the_patch_of_its_defaults() {
        let response = review(
            defaulting(label),
            json!({ "operation": "CREATE", "object": thing(json!({})) }),
        )
        .await;
        assert_eq!(response["allowed"], true);
        assert_eq!(response["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
        assert_eq!(response["patchType"], "JSONPatch");
        // The patch's JSON, as bytes (kube sends them as a list of numbers, which the API server
        // reads as Go reads a []byte).
        let bytes: Vec<u8> = serde_json::from_value(response["patch"].clone()).expect("a patch");
        let patch: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            patch,
            json!([{ "op": "add", "path": "/metadata/labels/defaulted", "value": "yes" }])
        );

        // Nothing to default: allowed, with an empty patch.
        let already = thing(json!({ "defaulted": "yes" }));
        let response = review(
            defaulting(label),
            json!({ "operation": "CREATE", "object": already }),
        )
        .await;
        assert_eq!(response["allowed"], true);
    }

    #[tokio::test]
    async fn a_validating_webhook_relays_refusals_and_warnings() {
        let refused = review(
            validating(refuse_big),
            json!({ "operation": "CREATE", "object": thing(json!({ "big": "1" })) }),
        )
        .await;
        assert_eq!(refused["allowed"], false);
        assert_eq!(refused["status"]["message"], "big things are refused");

        let update = json!({ "operation": "UPDATE", "object": thing(json!({ "a": "2" })), "oldObject": thing(json!({ "a": "1" })) });
        let warned = review(validating(refuse_big), update).await;
        assert_eq!(warned["allowed"], true);
        assert_eq!(warned["warnings"], json!(["labels changed"]));

        // A deletion is decided on the old object.
        let kept = review(
            validating(refuse_big),
            json!({ "operation": "DELETE", "oldObject": thing(json!({ "keep": "1" })) }),
        )
        .await;
        assert_eq!(kept["allowed"], false);
        let plain = review(
            validating(refuse_big),
            json!({ "operation": "CREATE", "object": thing(json!({})) }),
        )
        .await;
        assert_eq!(plain["allowed"], true);
        assert!(plain.get("warnings").is_none_or(Value::is_null), "{plain}");
    }

    /// Two versions of a kind, whose field `size` became `replicas`.
    mod v1 {
        #[derive(kube::CustomResource, serde::Serialize, serde::Deserialize, Clone, Debug)]
        #[kube(
            group = "example.com",
            version = "v1",
            kind = "Thing",
            schema = "disabled"
        )]
        pub struct ThingSpec {
            pub replicas: i32,
        }
    }

    mod v1beta1 {
        #[derive(kube::CustomResource, serde::Serialize, serde::Deserialize, Clone, Debug)]
        #[kube(
            group = "example.com",
            version = "v1beta1",
            kind = "Thing",
            schema = "disabled"
        )]
        pub struct ThingSpec {
            pub size: i32,
        }

        impl From<Thing> for super::v1::Thing {
            fn from(thing: Thing) -> Self {
                Self {
                    metadata: thing.metadata,
                    spec: super::v1::ThingSpec {
                        replicas: thing.spec.size,
                    },
                }
            }
        }

        impl From<super::v1::Thing> for Thing {
            fn from(thing: super::v1::Thing) -> Self {
                Self {
                    metadata: thing.metadata,
                    spec: ThingSpec {
                        size: thing.spec.replicas,
                    },
                }
            }
        }
    }

    #[tokio::test]
    async fn the_conversion_webhook_converts_through_the_hub() {
        let spoke = json!({
            "apiVersion": "example.com/v1beta1",
            "kind": "Thing",
            "metadata": { "name": "thing", "namespace": "default", "labels": { "a": "b" } },
            "spec": { "size": 3 },
        });
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": { "uid": "0b0e8c3c", "desiredAPIVersion": "example.com/v1", "objects": [spoke] },
        });
        let conversions = vec![Conversion::between::<v1::Thing, v1beta1::Thing>()];
        let request = axum::http::Request::post("/")
            .body(axum::body::Body::from(review.to_string()))
            .unwrap();
        let response = Router::new()
            .route("/", converting(conversions))
            .oneshot(request)
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["response"]["uid"], "0b0e8c3c");
        assert_eq!(answer["response"]["result"]["status"], "Success");
        let hub = &answer["response"]["convertedObjects"][0];
        assert_eq!(hub["apiVersion"], "example.com/v1");
        assert_eq!(hub["spec"], json!({ "replicas": 3 }));
        assert_eq!(
            hub["metadata"], spoke["metadata"],
            "metadata is kept as it is"
        );

        // And back, and between a version and itself.
        let conversions = [Conversion::between::<v1::Thing, v1beta1::Thing>()];
        let back = convert(&conversions, hub.clone(), "example.com/v1beta1").unwrap();
        assert_eq!(back, spoke);
        assert_eq!(
            convert(&conversions, spoke.clone(), "example.com/v1beta1").unwrap(),
            spoke
        );
        let unknown = convert(&conversions, spoke, "example.com/v2").unwrap_err();
        assert_eq!(
            unknown,
            "no conversion of Thing between example.com/v2 and example.com/v1"
        );
    }

    #[tokio::test]
    async fn a_conversion_that_fails_fails_the_review() {
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {
                "uid": "1",
                "desiredAPIVersion": "example.com/v1",
                "objects": [{ "apiVersion": "example.com/v1beta1", "kind": "Thing", "metadata": { "name": "x" }, "spec": {} }],
            },
        });
        let conversions = vec![Conversion::between::<v1::Thing, v1beta1::Thing>()];
        let request = axum::http::Request::post("/")
            .body(axum::body::Body::from(review.to_string()))
            .unwrap();
        let response = Router::new()
            .route("/", converting(conversions))
            .oneshot(request)
            .await
            .unwrap();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer["response"]["result"]["status"], "Failure");
        let message = answer["response"]["result"]["message"].as_str().unwrap();
        assert!(message.contains("missing field `size`"), "{message}");
    }

    #[tokio::test]
    async fn webhook_requests_are_measured_by_their_route() {
        let metrics = Arc::new(Metrics::default());
        let router = measured(
            Router::new().route("/validate-things", validating(refuse_big)),
            metrics.clone(),
        );
        let request = |path: &str| {
            axum::http::Request::post(path)
                .body(axum::body::Body::from("{}"))
                .unwrap()
        };
        let response = router
            .clone()
            .oneshot(request("/validate-things"))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        // An unknown path is answered, not measured.
        let response = router.oneshot(request("/anything")).await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let text = metrics.encode();
        let counted =
            r#"controller_runtime_webhook_requests_total{webhook="/validate-things",code="400"} 1"#;
        assert!(text.contains(counted), "{text}");
        assert!(!text.contains("/anything"), "{text}");
    }

    #[tokio::test]
    async fn a_request_that_is_not_an_admission_review_is_a_bad_request() {
        let request = axum::http::Request::post("/")
            .body(axum::body::Body::from("{}"))
            .unwrap();
        let response = Router::new()
            .route("/", validating(refuse_big))
            .oneshot(request)
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    }
}
