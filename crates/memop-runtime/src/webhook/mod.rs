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
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use clap::ArgAction;
use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations,
    ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
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
    http::spawn_with(
        "webhooks",
        addr,
        router,
        Some(tls),
        http2,
        http::Limits::WEBHOOKS,
        shared.shutdown.clone(),
    )
    .await?;
    // Only once it serves: the API server calls the webhooks as soon as it is pointed at them.
    if let Some(local) = local {
        local.point(shared, webhooks, &conversion_crds).await?;
    }
    if !conversion_crds.is_empty() {
        // The controllers' caches of the converted kinds need this server: do not let
        // readiness (which the Service routing to it waits for) wait for them.
        shared.readiness.serving_conversions();
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
/// answer is the JSON patch that makes those changes to the object as it was sent (fields the
/// type does not know are left alone, not dropped).
///
/// An object that cannot be read as a `K` is refused with a message that says why, unless the
/// request only changes its metadata (removing a finalizer, say), which is allowed as it is.
pub fn defaulting<K>(default: fn(&mut K)) -> MethodRouter
where
    K: Resource + Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    post(move |body: Body| async move {
        answer(read_body(body).await, |review| mutate(review, default))
    })
}

/// A validating webhook: `validate` decides on the change the API server asks about.
///
/// Objects are read leniently: an update whose stored object cannot be read as a `K` (stored
/// before a change of the type, say) is validated as the creation of the new object, a
/// deletion of such an object is allowed, and so is an update that only changes the metadata
/// of an object that cannot be read; each with a warning that says so.
pub fn validating<K>(validate: fn(Change<'_, K>) -> Verdict) -> MethodRouter
where
    K: Resource + Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    post(move |body: Body| async move {
        answer(read_body(body).await, |review| decide(review, validate))
    })
}

/// An admission request, with its objects as the API server sent them.
struct Admission {
    /// The request, without its objects.
    request: AdmissionRequest<DynamicObject>,
    /// The object as it would be stored (none for a deletion).
    object: Option<Value>,
    /// The object as stored (none for a creation).
    old_object: Option<Value>,
}

impl Admission {
    /// Reads an AdmissionReview, or says why it is not one, in a response to it.
    fn read(body: &[u8]) -> Result<Self, Box<AdmissionResponse>> {
        let mut review: Value = serde_json::from_slice(body)
            .map_err(|error| refusal("", format!("not an AdmissionReview: {error}")))?;
        let uid = review["request"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        // The objects are read as their kind by each webhook, and leniently: whatever they
        // hold, the rest of the request can be read.
        let mut take = |field: &str| {
            (review.pointer_mut(&format!("/request/{field}")))
                .map(Value::take)
                .filter(|object| !object.is_null())
        };
        let (object, old_object) = (take("object"), take("oldObject"));
        let request: AdmissionRequest<DynamicObject> =
            serde_json::from_value::<AdmissionReview<DynamicObject>>(review)
                .map_err(|error| refusal(&uid, format!("not an AdmissionReview: {error}")))?
                .try_into()
                .map_err(|error| refusal(&uid, format!("not an AdmissionReview: {error}")))?;
        Ok(Self {
            request,
            object,
            old_object,
        })
    }

    /// The kind the request is about, for messages.
    fn kind(&self) -> &str {
        &self.request.kind.kind
    }

    /// `object` read as a `K`, or why it cannot be.
    fn read_as<K: DeserializeOwned>(&self, object: &Value) -> Result<K, String> {
        K::deserialize(object)
            .map_err(|error| format!("cannot read the {} object: {error}", self.kind()))
    }

    /// Whether this is an update that changes nothing but the object's metadata (labels,
    /// annotations, finalizers, owners).
    fn only_changes_metadata(&self) -> bool {
        let (Some(Value::Object(new)), Some(Value::Object(old))) = (&self.object, &self.old_object)
        else {
            return false;
        };
        self.request.operation == Operation::Update
            && new.len() == old.len()
            && new
                .iter()
                .all(|(key, value)| key == "metadata" || old.get(key) == Some(value))
    }
}

/// The answer to a request that cannot be read: refused, with a message that says why (as
/// controller-runtime answers, with HTTP 200 and code 400 in the review).
fn refusal(uid: &str, message: String) -> Box<AdmissionResponse> {
    refusal_with(uid, message, 400, "BadRequest")
}

/// [`refusal`], with the HTTP `code` and `reason` the review's status gives.
fn refusal_with(uid: &str, message: String, code: u16, reason: &str) -> Box<AdmissionResponse> {
    tracing::warn!(%message, "admission request refused");
    let mut response = AdmissionResponse::invalid(&message);
    response.uid = uid.to_string();
    response.result = Status::failure(&message, reason).with_code(code);
    Box::new(response)
}

/// The largest request body a webhook reads: controller-runtime's limit (7 MiB), room for an
/// update's two objects of the API server's 3 MiB each and the rest of the review. A larger
/// body is answered with a review that refuses it (code 413), not with a bare HTTP error.
pub const MAX_REQUEST_SIZE: usize = 7 * 1024 * 1024;

/// Why a request body was not read.
#[derive(Debug)]
enum Unread {
    /// It is larger than [`MAX_REQUEST_SIZE`]; `uid` is the review's, if its first bytes say.
    TooLarge { uid: String },
    /// The connection failed while it was sent.
    Failed(String),
}

impl Unread {
    /// The review's uid, the message, the HTTP code and the reason to answer with.
    fn answer(self, what: &str) -> (String, String, u16, &'static str) {
        match self {
            Unread::TooLarge { uid } => (
                uid,
                format!("request entity is too large; limit is {MAX_REQUEST_SIZE} bytes"),
                413,
                "RequestEntityTooLarge",
            ),
            Unread::Failed(error) => (
                String::new(),
                format!("cannot read the {what}: {error}"),
                400,
                "BadRequest",
            ),
        }
    }
}

/// Reads a request body of at most [`MAX_REQUEST_SIZE`] bytes (axum's extractors stop at
/// 2 MiB, with a bare HTTP 413), without buffering more than that.
async fn read_body(body: Body) -> Result<Vec<u8>, Unread> {
    use futures::StreamExt as _;
    let mut stream = body.into_data_stream();
    let mut read = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| Unread::Failed(error.to_string()))?;
        let room = MAX_REQUEST_SIZE - read.len();
        if chunk.len() > room {
            read.extend_from_slice(&chunk[..room]);
            return Err(Unread::TooLarge {
                uid: leading_uid(&read),
            });
        }
        read.extend_from_slice(&chunk);
    }
    Ok(read)
}

/// The uid of the review that `body` begins, when its request starts with it as the API
/// server writes it (`{"kind":…,"apiVersion":…,"request":{"uid":"…"`): a review too large to
/// read is still answered with its uid, without which the API server would not take the answer
/// (and relay its message). Empty when the first bytes do not say.
fn leading_uid(body: &[u8]) -> String {
    // Only the first bytes: the request's uid comes before its objects.
    let head = &body[..body.len().min(4096)];
    let head = String::from_utf8_lossy(head);
    let Some(at) = head.find("\"request\"") else {
        return String::new();
    };
    let rest = head[at + "\"request\"".len()..].trim_start();
    let rest = rest.strip_prefix(':').map(str::trim_start);
    let rest = rest
        .and_then(|rest| rest.strip_prefix('{'))
        .map(str::trim_start);
    let rest = rest
        .and_then(|rest| rest.strip_prefix("\"uid\""))
        .map(str::trim_start);
    let rest = rest
        .and_then(|rest| rest.strip_prefix(':'))
        .map(str::trim_start);
    let Some(rest) = rest.and_then(|rest| rest.strip_prefix('"')) else {
        return String::new();
    };
    match rest.split_once('"') {
        Some((uid, _)) if uid.len() <= 128 && !uid.contains('\\') => uid.to_string(),
        _ => String::new(),
    }
}

/// Reads an AdmissionReview, and answers with the response `review` makes of it; with a
/// refusal (not an HTTP error: the API server would not relay its message) when the body is
/// not an AdmissionReview.
fn answer(
    body: Result<Vec<u8>, Unread>,
    review: impl FnOnce(Admission) -> AdmissionResponse,
) -> Response {
    let read = body.map_err(|unread| {
        let (uid, message, code, reason) = unread.answer("AdmissionReview");
        refusal_with(&uid, message, code, reason)
    });
    let response = match read.and_then(|body| Admission::read(&body)) {
        Ok(admission) => review(admission),
        Err(refused) => *refused,
    };
    match serde_json::to_vec(&response.into_review()) {
        Ok(json) => ([(CONTENT_TYPE, "application/json")], json).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n")).into_response(),
    }
}

fn mutate<K>(admission: Admission, default: fn(&mut K)) -> AdmissionResponse
where
    K: Resource + Clone + Serialize + DeserializeOwned,
{
    let response = AdmissionResponse::from(&admission.request);
    // A deletion carries no new object: nothing to default.
    let Some(raw) = &admission.object else {
        return response;
    };
    let object: K = match admission.read_as(raw) {
        Ok(object) => object,
        // Its defaults cannot be set, but a finalizer can still be removed.
        Err(_) if admission.only_changes_metadata() => return response,
        Err(message) => return response.deny(message),
    };
    let mut defaulted = object.clone();
    default(&mut defaulted);
    let patch = match (
        serde_json::to_value(&object),
        serde_json::to_value(&defaulted),
    ) {
        (Ok(before), Ok(after)) => json_patch::diff(raw, &rebase(raw, &before, &after)),
        (Err(error), _) | (_, Err(error)) => return response.deny(error),
    };
    match response.clone().with_patch(patch) {
        Ok(response) => response,
        Err(error) => response.deny(error),
    }
}

/// `raw` with the changes from `before` to `after` made to it, where `before` is `raw` read
/// as a type and written back, and `after` the same once changed: what the change did, and
/// nothing the type's round trip does (fields it does not know are kept, fields it writes
/// although `raw` lacks them, such as `null`s, are not added).
fn rebase(raw: &Value, before: &Value, after: &Value) -> Value {
    if before == after {
        return raw.clone();
    }
    match (raw, before, after) {
        (Value::Object(raw), Value::Object(before), Value::Object(after)) => {
            let mut rebased = raw.clone();
            let keys: std::collections::BTreeSet<&String> =
                before.keys().chain(after.keys()).collect();
            for key in keys {
                let (was, is) = (before.get(key), after.get(key));
                if was == is {
                    continue;
                }
                match is {
                    None | Some(Value::Null) => {
                        rebased.remove(key);
                    }
                    Some(is) => {
                        let kept = rebased.get(key).unwrap_or(&Value::Null);
                        let value = rebase(kept, was.unwrap_or(&Value::Null), is);
                        rebased.insert(key.clone(), value);
                    }
                }
            }
            Value::Object(rebased)
        }
        (Value::Array(raw), Value::Array(before), Value::Array(after))
            if raw.len() == before.len() && before.len() == after.len() =>
        {
            let items = raw.iter().zip(before).zip(after);
            Value::Array(
                items
                    .map(|((raw, before), after)| rebase(raw, before, after))
                    .collect(),
            )
        }
        _ => after.clone(),
    }
}

fn decide<K>(admission: Admission, validate: fn(Change<'_, K>) -> Verdict) -> AdmissionResponse
where
    K: Resource + Clone + DeserializeOwned,
{
    let mut response = AdmissionResponse::from(&admission.request);
    let mut warnings = Vec::new();
    let (new, old) = (admission.object.as_ref(), admission.old_object.as_ref());
    let read = |object: &Value| admission.read_as::<K>(object);
    let (new, old) = match (&admission.request.operation, new, old) {
        (Operation::Create, Some(new), _) => match read(new) {
            Ok(new) => (Some(new), None),
            Err(message) => return response.deny(message),
        },
        (Operation::Update, Some(new), Some(old)) => match (read(new), read(old)) {
            (Ok(new), Ok(old)) => (Some(new), Some(old)),
            // The stored object is unreadable (stored before a change of the type, say): an
            // update is how it is repaired, so the new object is validated as if created.
            (Ok(new), Err(message)) => {
                warnings.push(format!("{message}; validated as a new object"));
                (Some(new), None)
            }
            (Err(message), _) if admission.only_changes_metadata() => {
                response.warnings = Some(vec![format!("{message}; only its metadata changes")]);
                return response;
            }
            (Err(message), _) => return response.deny(message),
        },
        (Operation::Delete, _, Some(old)) => match read(old) {
            Ok(old) => (None, Some(old)),
            // Whatever it holds, an object that cannot be read can be deleted.
            Err(message) => {
                response.warnings = Some(vec![format!("{message}; not validated")]);
                return response;
            }
        },
        // CONNECT, or a request without the objects its operation needs: nothing to decide.
        _ => return response,
    };
    let change = match (&admission.request.operation, &new, &old) {
        (Operation::Update, Some(new), Some(old)) => Change::Update { old, new },
        (Operation::Delete, _, Some(old)) => Change::Delete(old),
        (_, Some(new), _) => Change::Create(new),
        _ => return response,
    };
    match validate(change) {
        Ok(mut more) => {
            warnings.append(&mut more);
            if !warnings.is_empty() {
                response.warnings = Some(warnings);
            }
            response
        }
        Err(message) => response.deny(message),
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
/// for.
///
/// The API server fails a whole LIST or WATCH when one object fails to convert, so objects are
/// converted one by one, and one that cannot be read as its version's type (stored before a
/// change of the type, say) is passed on as it is, in the version asked for, with a warning in
/// the log: it reaches clients that can read it (kubectl, the garbage and namespace
/// collectors), and is stored again as it was if written back unchanged. A review is failed
/// only when the request is not a ConversionReview or asks for a conversion this webhook does
/// not know, and then with a ConversionReview that says why (HTTP 200), not an HTTP error.
pub fn converting(conversions: Vec<Conversion>) -> MethodRouter {
    let conversions = Arc::new(conversions);
    post(move |body: Body| async move {
        let response = match read_body(body).await {
            Ok(body) => convert_review(&conversions, &body),
            Err(unread) => {
                let (uid, message, code, reason) = unread.answer("ConversionReview");
                conversion_refusal(&uid, message, code, reason)
            }
        };
        match serde_json::to_vec(&response.into_review()) {
            Ok(json) => ([(CONTENT_TYPE, "application/json")], json).into_response(),
            Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n")).into_response(),
        }
    })
}

/// A ConversionReview that fails a request that cannot be read, saying why (HTTP 200).
fn conversion_refusal(uid: &str, message: String, code: u16, reason: &str) -> ConversionResponse {
    tracing::warn!(%message, "conversion request refused");
    let mut response =
        ConversionResponse::invalid(Status::failure(&message, reason).with_code(code));
    response.uid = uid.to_string();
    response
}

/// The response to the ConversionReview `body`.
fn convert_review(conversions: &[Conversion], body: &[u8]) -> ConversionResponse {
    let invalid = |uid: &str, message: String| conversion_refusal(uid, message, 400, "BadRequest");
    let review: Value = match serde_json::from_slice(body) {
        Ok(review) => review,
        Err(error) => return invalid("", format!("not a ConversionReview: {error}")),
    };
    let uid = review["request"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let request = match serde_json::from_value::<ConversionReview>(review)
        .map_err(|error| error.to_string())
        .and_then(|review| {
            ConversionRequest::from_review(review).map_err(|error| error.to_string())
        }) {
        Ok(request) => request,
        Err(error) => return invalid(&uid, format!("not a ConversionReview: {error}")),
    };
    let desired = request.desired_api_version.clone();
    let mut converted = Vec::with_capacity(request.objects.len());
    for object in &request.objects {
        match convert(conversions, object.clone(), &desired) {
            Ok(mut converted_object) => {
                keep_metadata(&mut converted_object, object);
                converted.push(converted_object);
            }
            Err(Unconverted::Unreadable(message)) => {
                let metadata = &object["metadata"];
                tracing::warn!(
                    name = metadata["name"].as_str().unwrap_or_default(),
                    namespace = metadata["namespace"].as_str().unwrap_or_default(),
                    %desired,
                    %message,
                    "passing on an object that cannot be converted as it is"
                );
                let mut object = object.clone();
                object["apiVersion"] = Value::String(desired.clone());
                converted.push(object);
            }
            Err(Unconverted::Unknown(message)) => {
                let response = ConversionResponse::for_request(request);
                return response.failure(Status::failure(&message, "ConversionFailed"));
            }
        }
    }
    ConversionResponse::for_request(request).success(converted)
}

/// Gives `converted` the metadata of `original`, but for the labels and annotations a
/// conversion may change: the API server refuses a conversion that changes anything else.
fn keep_metadata(converted: &mut Value, original: &Value) {
    let (Some(Value::Object(kept)), Some(Value::Object(original))) =
        (converted.get("metadata"), original.get("metadata"))
    else {
        return;
    };
    let mut metadata = original.clone();
    for field in ["labels", "annotations"] {
        match kept.get(field) {
            Some(value) if !value.is_null() => metadata.insert(field.into(), value.clone()),
            _ => metadata.remove(field),
        };
    }
    converted["metadata"] = Value::Object(metadata);
}

/// Why an object is not converted.
#[derive(Debug, PartialEq, Eq)]
enum Unconverted {
    /// No conversion between its version and the one asked for.
    Unknown(String),
    /// It cannot be read as its version's type (or the converted one cannot be written).
    Unreadable(String),
}

/// Converts `object` to `desired` (an apiVersion of its kind): to its kind's hub, then from it.
fn convert(conversions: &[Conversion], object: Value, desired: &str) -> Result<Value, Unconverted> {
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
        return Err(Unconverted::Unknown(format!(
            "no conversion of {kind} {from}"
        )));
    };
    let spoke = |version: &str| {
        conversions
            .iter()
            .find(|c| c.kind == kind && c.hub == *hub && c.spoke == version)
            .ok_or_else(|| {
                Unconverted::Unknown(format!(
                    "no conversion of {kind} between {version} and {hub}"
                ))
            })
    };
    // Both steps are known before either is tried: an unknown version fails the review
    // whatever the object holds.
    let to_hub = (from != *hub).then(|| spoke(&from)).transpose()?;
    let from_hub = (desired != hub.as_str())
        .then(|| spoke(desired))
        .transpose()?;
    let object = match to_hub {
        Some(spoke) => (spoke.to_hub)(object).map_err(Unconverted::Unreadable)?,
        None => object,
    };
    match from_hub {
        Some(spoke) => (spoke.from_hub)(object).map_err(Unconverted::Unreadable),
        None => Ok(object),
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

/// The name of the match condition ([`METADATA_ONLY_UPDATE`]) of every webhook called for
/// updates.
pub const METADATA_ONLY_UPDATE_NAME: &str = "not-a-metadata-only-update";

/// The CEL expression of a match condition that keeps the API server from calling a webhook
/// for an update that changes nothing but the object's metadata (labels, annotations,
/// finalizers, owners): such an update (removing a finalizer while the operator is down, or
/// while its namespace is deleted) must not depend on the webhook being up, and the object's
/// defaults and validity do not change with it. Every other request is sent.
pub const METADATA_ONLY_UPDATE: &str = "request.operation != 'UPDATE' || \
     object.exists(k, k != 'metadata' && (!(k in oldObject) || object[k] != oldObject[k])) || \
     oldObject.exists(k, k != 'metadata' && !(k in object))";

/// The match conditions of `webhook`: [`METADATA_ONLY_UPDATE`] when it is called for updates.
fn match_conditions(webhook: &Webhook) -> Option<Vec<MatchCondition>> {
    webhook.operations.contains(&"UPDATE").then(|| {
        vec![MatchCondition {
            name: METADATA_ONLY_UPDATE_NAME.into(),
            expression: METADATA_ONLY_UPDATE.into(),
        }]
    })
}

/// The mutating and the validating webhook configuration of `webhooks`, named `names`, each
/// webhook calling the server `client_config` gives it (a URL or a Service, and the CA), with
/// the settings of `config/webhook/manifests.yaml`: fail when it cannot be called, no side
/// effects, not called for updates that only change metadata ([`METADATA_ONLY_UPDATE`]). A
/// configuration without webhooks has an empty list.
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
                    match_conditions: match_conditions(webhook),
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
                    match_conditions: match_conditions(webhook),
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
            let match_conditions = match match_conditions(webhook) {
                Some(conditions) => conditions
                    .iter()
                    .map(|c| {
                        format!(
                            "  - expression: {}\n    name: {}\n",
                            // A JSON string is a YAML one.
                            Value::String(c.expression.clone()),
                            c.name
                        )
                    })
                    .collect::<String>(),
                None => String::new(),
            };
            let match_conditions = if match_conditions.is_empty() {
                match_conditions
            } else {
                format!("  matchConditions:\n{match_conditions}")
            };
            yaml.push_str(&format!(
                "- admissionReviewVersions:\n  - v1\n  clientConfig:\n    service:\n      name: webhook-service\n      namespace: system\n      path: {path}\n  failurePolicy: Fail\n{match_conditions}  name: {name}\n  rules:\n  - apiGroups:\n    - {group}\n    apiVersions:\n    - {version}\n    operations:\n{operations}    resources:\n    - {resource}\n  sideEffects: None\n",
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
            Unconverted::Unknown(
                "no conversion of Thing between example.com/v2 and example.com/v1".into()
            )
        );
    }

    /// Posts `body` to `route`, and returns the answer, which must be an HTTP 200.
    async fn post_to(route: MethodRouter, body: String) -> Value {
        let request = axum::http::Request::post("/")
            .body(axum::body::Body::from(body))
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
        serde_json::from_slice(&body).unwrap()
    }

    fn conversion_review(desired: &str, objects: Value) -> String {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": { "uid": "1", "desiredAPIVersion": desired, "objects": objects },
        })
        .to_string()
    }

    #[tokio::test]
    async fn an_object_that_cannot_be_converted_does_not_fail_the_others() {
        let good = json!({ "apiVersion": "example.com/v1beta1", "kind": "Thing", "metadata": { "name": "good" }, "spec": { "size": 2 } });
        // Stored before `size` was required, say.
        let bad = json!({ "apiVersion": "example.com/v1beta1", "kind": "Thing", "metadata": { "name": "bad" }, "spec": {} });
        let conversions = vec![Conversion::between::<v1::Thing, v1beta1::Thing>()];
        let answer = post_to(
            converting(conversions),
            conversion_review("example.com/v1", json!([good, bad])),
        )
        .await;
        let response = &answer["response"];
        assert_eq!(response["uid"], "1");
        assert_eq!(response["result"]["status"], "Success", "{answer}");
        let objects = response["convertedObjects"].as_array().unwrap();
        assert_eq!(objects.len(), 2);
        assert_eq!(objects[0]["spec"], json!({ "replicas": 2 }));
        // Passed on as it is, in the version asked for.
        let mut passed = bad.clone();
        passed["apiVersion"] = json!("example.com/v1");
        assert_eq!(objects[1], passed);
    }

    #[tokio::test]
    async fn a_conversion_the_webhook_does_not_know_fails_the_review() {
        let thing = json!({ "apiVersion": "example.com/v1beta1", "kind": "Thing", "metadata": { "name": "x" }, "spec": { "size": 1 } });
        let conversions = vec![Conversion::between::<v1::Thing, v1beta1::Thing>()];
        let answer = post_to(
            converting(conversions),
            conversion_review("example.com/v2", json!([thing])),
        )
        .await;
        assert_eq!(answer["response"]["uid"], "1");
        assert_eq!(answer["response"]["result"]["status"], "Failure");
        let message = answer["response"]["result"]["message"].as_str().unwrap();
        assert!(message.contains("no conversion of Thing"), "{message}");
    }

    #[tokio::test]
    async fn a_body_that_is_not_a_conversion_review_is_answered_with_one_that_says_so() {
        for (body, uid) in [
            ("not json".to_string(), ""),
            (
                json!({ "request": { "uid": "7", "objects": 3 } }).to_string(),
                "7",
            ),
        ] {
            let answer = post_to(converting(Vec::new()), body).await;
            assert_eq!(answer["kind"], "ConversionReview");
            assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
            let response = &answer["response"];
            assert_eq!(response["uid"], uid, "the request's uid, when it has one");
            assert_eq!(response["result"]["status"], "Failure");
            let message = response["result"]["message"].as_str().unwrap();
            assert!(message.starts_with("not a ConversionReview"), "{message}");
        }
    }

    /// A review as the API server writes it (its request's uid first), of `kind`, whose
    /// request's other fields are `request`, sent in chunks of 64 KiB.
    fn large_review(kind: &str, api_version: &str, request: Value) -> axum::body::Body {
        let fields = request.to_string();
        let body =
            format!(r#"{{"kind":"{kind}","apiVersion":"{api_version}","request":{{"uid":"b7e1","#)
                + &fields[1..]
                + "}";
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (body.into_bytes().chunks(64 << 10))
            .map(|chunk| Ok(chunk.to_vec()))
            .collect();
        axum::body::Body::from_stream(futures::stream::iter(chunks))
    }

    async fn answer_to(route: MethodRouter, body: axum::body::Body) -> Value {
        let request = axum::http::Request::post("/").body(body).unwrap();
        let response = Router::new()
            .route("/", route)
            .oneshot(request)
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::OK,
            "a review, not an HTTP error"
        );
        let body = axum::body::to_bytes(response.into_body(), 16 << 20)
            .await
            .unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// A Thing with `size` bytes of data.
    fn large_thing(size: usize) -> Value {
        let mut thing = thing(json!({}));
        thing["data"] = json!("x".repeat(size));
        thing
    }

    #[tokio::test]
    async fn bodies_up_to_7_mib_are_read_and_larger_ones_refused_with_a_review() {
        let mib = 1 << 20;
        // An update of a 1.5 MiB object: two of them, 3 MiB (axum's default limit is 2 MiB).
        let update = |size| {
            json!({
                "kind": { "group": "example.com", "version": "v1", "kind": "Thing" },
                "resource": { "group": "example.com", "version": "v1", "resource": "things" },
                "name": "thing",
                "namespace": "default",
                "operation": "UPDATE",
                "userInfo": { "username": "admin" },
                "object": large_thing(size),
                "oldObject": large_thing(size),
            })
        };
        let admission = |size| large_review("AdmissionReview", "admission.k8s.io/v1", update(size));
        let answer = answer_to(validating(refuse_big), admission(3 * mib / 2)).await;
        assert_eq!(answer["response"]["uid"], "b7e1");
        assert_eq!(answer["response"]["allowed"], true, "{answer}");
        let answer = answer_to(defaulting(label), admission(3 * mib / 2)).await;
        assert_eq!(answer["response"]["allowed"], true);
        assert_eq!(answer["response"]["patchType"], "JSONPatch");

        // Over 7 MiB: refused, with the review's uid and code 413, as controller-runtime does.
        for route in [validating(refuse_big), defaulting(label)] {
            let answer = answer_to(route, admission(4 * mib)).await;
            let response = &answer["response"];
            assert_eq!(answer["kind"], "AdmissionReview");
            assert_eq!(response["uid"], "b7e1");
            assert_eq!(response["allowed"], false);
            assert_eq!(response["status"]["code"], 413);
            let message = response["status"]["message"].as_str().unwrap();
            assert!(message.contains("too large"), "{message}");
        }

        // The same for conversions.
        let conversions = || vec![Conversion::between::<v1::Thing, v1beta1::Thing>()];
        let conversion = |size| {
            let mut thing = large_thing(size);
            thing["apiVersion"] = json!("example.com/v1beta1");
            thing["spec"] = json!({ "size": 1 });
            let request = json!({ "desiredAPIVersion": "example.com/v1", "objects": [thing] });
            large_review("ConversionReview", "apiextensions.k8s.io/v1", request)
        };
        let answer = answer_to(converting(conversions()), conversion(3 * mib)).await;
        assert_eq!(answer["response"]["uid"], "b7e1");
        assert_eq!(answer["response"]["result"]["status"], "Success");
        let answer = answer_to(converting(conversions()), conversion(8 * mib)).await;
        let response = &answer["response"];
        assert_eq!(answer["kind"], "ConversionReview");
        assert_eq!(response["uid"], "b7e1");
        assert_eq!(response["result"]["status"], "Failure");
        assert_eq!(response["result"]["code"], 413);
    }

    #[test]
    fn the_uid_of_a_review_is_read_from_its_first_bytes() {
        let head = br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"705ab4f5","kind":"#;
        assert_eq!(leading_uid(head), "705ab4f5");
        let spaced = br#"{ "request" : { "uid" : "7" , "#;
        assert_eq!(leading_uid(spaced), "7");
        for unknown in [
            &br#"{"request":{"kind":{},"uid":"7""#[..],
            b"",
            b"{\"request\":{\"uid\":\"7",
        ] {
            assert_eq!(
                leading_uid(unknown),
                "",
                "{}",
                String::from_utf8_lossy(unknown)
            );
        }
    }

    #[test]
    fn a_conversion_keeps_the_metadata_but_labels_and_annotations() {
        let original = json!({ "metadata": { "name": "x", "creationTimestamp": "2026-12-01T00:00:00Z", "labels": { "a": "1" }, "unknownToTheTypes": 1 } });
        let mut converted = json!({ "metadata": { "name": "x", "creationTimestamp": "2026-12-01T00:00:00+00:00", "annotations": { "b": "2" } } });
        keep_metadata(&mut converted, &original);
        assert_eq!(
            converted,
            json!({ "metadata": { "name": "x", "creationTimestamp": "2026-12-01T00:00:00Z", "annotations": { "b": "2" }, "unknownToTheTypes": 1 } })
        );
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
        // Not an AdmissionReview: refused in one, with HTTP 200.
        assert_eq!(response.status(), StatusCode::OK);
        // An unknown path is answered, not measured.
        let response = router.oneshot(request("/anything")).await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let text = metrics.encode();
        let counted =
            r#"controller_runtime_webhook_requests_total{webhook="/validate-things",code="200"} 1"#;
        assert!(text.contains(counted), "{text}");
        assert!(!text.contains("/anything"), "{text}");
    }

    #[tokio::test]
    async fn a_body_that_is_not_an_admission_review_is_refused_in_one() {
        for (body, uid) in [
            ("{}".to_string(), ""),
            ("not json".to_string(), ""),
            (
                json!({ "request": { "uid": "9", "operation": 3 } }).to_string(),
                "9",
            ),
        ] {
            for route in [validating(refuse_big), defaulting(label)] {
                let answer = post_to(route, body.clone()).await;
                assert_eq!(answer["kind"], "AdmissionReview");
                assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
                let response = &answer["response"];
                assert_eq!(response["uid"], uid, "the request's uid, when it has one");
                assert_eq!(response["allowed"], false);
                assert_eq!(response["status"]["code"], 400);
                let message = response["status"]["message"].as_str().unwrap();
                assert!(message.starts_with("not an AdmissionReview"), "{message}");
            }
        }
    }

    /// A kind whose fields serialise although the object lacks them: a `null`, an empty list.
    mod widget {
        #[derive(kube::CustomResource, serde::Serialize, serde::Deserialize, Clone, Debug)]
        #[kube(
            group = "example.com",
            version = "v1",
            kind = "Widget",
            schema = "disabled"
        )]
        pub struct WidgetSpec {
            #[serde(default)]
            pub size: Option<i32>,
            #[serde(default)]
            pub items: Vec<String>,
            #[serde(default)]
            pub ports: Vec<Port>,
        }

        #[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
        pub struct Port {
            pub port: i32,
            #[serde(default)]
            pub protocol: Option<String>,
        }
    }

    fn default_widget(widget: &mut widget::Widget) {
        widget.spec.size.get_or_insert(1);
        if widget.spec.items.is_empty() {
            widget.spec.items.push("first".into());
        }
        for port in &mut widget.spec.ports {
            port.protocol.get_or_insert_with(|| "TCP".into());
        }
    }

    fn widget(spec: Value) -> Value {
        json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": { "name": "widget", "namespace": "default", "finalizers": ["example.com/cleanup"] },
            "spec": spec,
        })
    }

    /// The patch of a mutating webhook's answer.
    fn patch_of(response: &Value) -> json_patch::Patch {
        let bytes: Vec<u8> = serde_json::from_value(response["patch"].clone()).expect("a patch");
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn the_defaulting_patch_applies_to_the_object_as_sent() {
        // Fields the type does not know (a newer CRD, x-kubernetes-preserve-unknown-fields), at
        // the top and inside a list's items; none of the fields the type writes anyway.
        let mut sent = widget(
            json!({ "future": { "x": 1 }, "ports": [{ "port": 80, "appProtocol": "http" }] }),
        );
        let response = review(
            defaulting(default_widget),
            json!({ "operation": "CREATE", "object": sent }),
        )
        .await;
        assert_eq!(response["allowed"], true, "{response}");
        let patch = patch_of(&response);
        // As the API server applies it: to the object it sent.
        json_patch::patch(&mut sent, &patch).unwrap_or_else(|error| {
            panic!("the patch does not apply to the object sent: {error}: {patch:?}")
        });
        assert_eq!(
            sent["spec"],
            json!({
                "future": { "x": 1 },
                "ports": [{ "port": 80, "appProtocol": "http", "protocol": "TCP" }],
                "size": 1,
                "items": ["first"],
            })
        );
        assert_eq!(sent["metadata"], widget(json!({}))["metadata"], "untouched");
    }

    #[tokio::test]
    async fn objects_that_cannot_be_read_are_refused_with_a_message_unless_only_metadata_changes() {
        let unreadable = widget(json!({ "size": "three" }));
        for route in [defaulting(default_widget), validating(accept_widgets)] {
            let created = review(
                route.clone(),
                json!({ "operation": "CREATE", "object": unreadable }),
            )
            .await;
            assert_eq!(created["allowed"], false);
            let message = created["status"]["message"].as_str().unwrap();
            assert!(
                message.starts_with("cannot read the Thing object: invalid type"),
                "{message}"
            );

            // Its finalizer removed: only the metadata changes.
            let mut unfinalized = unreadable.clone();
            unfinalized["metadata"]["finalizers"] = json!([]);
            let updated = review(
                route.clone(),
                json!({ "operation": "UPDATE", "object": unfinalized, "oldObject": unreadable }),
            )
            .await;
            assert_eq!(updated["allowed"], true, "{updated}");
            assert!(updated.get("patch").is_none_or(Value::is_null), "{updated}");
        }
        // Deleted, whatever it holds.
        let deleted = review(
            validating(accept_widgets),
            json!({ "operation": "DELETE", "oldObject": unreadable }),
        )
        .await;
        assert_eq!(deleted["allowed"], true, "{deleted}");
        // Repaired by an update: validated as a new object.
        let repaired = widget(json!({ "size": 3 }));
        let updated = review(
            validating(accept_widgets),
            json!({ "operation": "UPDATE", "object": repaired, "oldObject": unreadable }),
        )
        .await;
        assert_eq!(updated["allowed"], true, "{updated}");
        assert_eq!(updated["warnings"][1], "created", "{updated}");
        let refused = review(
            validating(accept_widgets),
            json!({ "operation": "UPDATE", "object": widget(json!({ "size": 0 })), "oldObject": unreadable }),
        )
        .await;
        assert_eq!(refused["allowed"], false, "{refused}");
    }

    fn accept_widgets(change: Change<'_, widget::Widget>) -> Verdict {
        match change {
            Change::Create(new) if new.spec.size == Some(0) => Err("no empty widgets".into()),
            Change::Create(_) => Ok(vec!["created".into()]),
            Change::Update { .. } => Ok(vec!["updated".into()]),
            Change::Delete(_) => Ok(Vec::new()),
        }
    }

    #[test]
    fn webhooks_called_for_updates_skip_those_that_only_change_metadata() {
        let hooks = [
            Webhook {
                mutating: true,
                name: "mthing.example.com",
                path: "/mutate",
                group: "example.com",
                version: "v1",
                resource: "things",
                operations: &["CREATE", "UPDATE"],
            },
            Webhook {
                mutating: false,
                name: "vthing.example.com",
                path: "/validate",
                group: "example.com",
                version: "v1",
                resource: "things",
                operations: &["DELETE"],
            },
        ];
        let (mutating, validating) =
            configurations(&hooks, ["m", "v"], |_| WebhookClientConfig::default());
        let conditions = mutating.webhooks.unwrap()[0]
            .match_conditions
            .clone()
            .unwrap();
        assert_eq!(conditions[0].name, METADATA_ONLY_UPDATE_NAME);
        assert_eq!(conditions[0].expression, METADATA_ONLY_UPDATE);
        assert_eq!(
            validating.webhooks.unwrap()[0].match_conditions,
            None,
            "not called for updates"
        );

        let yaml = manifests_yaml(&hooks);
        let documents: Vec<Value> = yaml
            .split("---\n")
            .skip(1)
            .map(|document| serde_saphyr::from_str(document).unwrap())
            .collect();
        assert_eq!(
            documents[0]["webhooks"][0]["matchConditions"],
            json!([{ "name": METADATA_ONLY_UPDATE_NAME, "expression": METADATA_ONLY_UPDATE }]),
            "{yaml}"
        );
        assert!(
            documents[1]["webhooks"][0].get("matchConditions").is_none(),
            "{yaml}"
        );
    }
}
