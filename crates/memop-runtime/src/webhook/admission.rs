//! Admission webhooks: [`defaulting`] (mutating) with a [`Defaulter`], and [`validating`]
//! with a [`Validator`], each called with the request's [`Context`]; and the AdmissionReviews
//! they read and answer.

use std::future::Future;
use std::sync::Arc;

use axum::body::Body;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use kube::core::DynamicObject;
use kube::core::Status;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::body::{Unread, read_body};
use super::refusal::Refusal;

/// What a webhook knows of the request besides its objects (controller-runtime's
/// `admission.RequestFromContext(ctx)`), and a client of the API server.
#[derive(Clone)]
pub struct Context {
    request: AdmissionRequest<DynamicObject>,
    client: Client,
}

impl Context {
    /// The admission request without its objects (the webhook gets those typed): its
    /// `operation`, the user who asks (`user_info`), `dry_run` (a webhook with side effects
    /// must make none then), the object's `name` and `namespace`, the `sub_resource`, the
    /// `options` of the create, update or delete.
    pub fn request(&self) -> &AdmissionRequest<DynamicObject> {
        &self.request
    }

    /// A client of the API server, as the manager's own (its ServiceAccount's rights): to read
    /// other objects a decision depends on. A webhook answers within its timeout (10 s by
    /// default), so read little, or from a cache the webhook keeps.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// What a validating webhook answers: allowed, with warnings for the client (kubectl prints
/// them), or refused, with a message that says why (`Err("...".into())`, 403 Forbidden) or the
/// fields that are invalid ([`Invalid`](super::Invalid), 422 Invalid).
pub type Verdict = Result<Vec<String>, Refusal>;

/// Sets the defaults of a `K` the API server is about to create or update: kubebuilder's
/// `CustomDefaulter`. The API server stores what [`default`](Defaulter::default) leaves;
/// an `Err` refuses the request, as a validating webhook's does.
///
/// ```
/// # use memop_runtime::webhook::{Context, Defaulter, Refusal};
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # use kube::ResourceExt;
/// struct ConfigMapWebhook;
///
/// impl Defaulter<ConfigMap> for ConfigMapWebhook {
///     async fn default(&self, ctx: &Context, config: &mut ConfigMap) -> Result<(), Refusal> {
///         let user = ctx.request().user_info.username.clone().unwrap_or_default();
///         config.labels_mut().entry("created-by".into()).or_insert(user);
///         Ok(())
///     }
/// }
/// ```
pub trait Defaulter<K>: Send + Sync + 'static {
    /// Sets the defaults of `object`, as the API server sent it.
    fn default(
        &self,
        ctx: &Context,
        object: &mut K,
    ) -> impl Future<Output = Result<(), Refusal>> + Send;
}

/// Decides whether the API server may store a change to a `K`: kubebuilder's
/// `CustomValidator`. Deletions come here only if the webhook's operations list DELETE.
pub trait Validator<K>: Send + Sync + 'static {
    /// Decides on the creation of `object`.
    fn validate_create(&self, ctx: &Context, object: &K) -> impl Future<Output = Verdict> + Send;

    /// Decides on the update of `old` (as stored) to `new`.
    fn validate_update(
        &self,
        ctx: &Context,
        old: &K,
        new: &K,
    ) -> impl Future<Output = Verdict> + Send;

    /// Decides on the deletion of `object` (as stored); allowed unless implemented.
    fn validate_delete(&self, ctx: &Context, object: &K) -> impl Future<Output = Verdict> + Send {
        let _ = (ctx, object);
        async { Ok(Vec::new()) }
    }
}

/// A mutating webhook: the API server sends the object, `defaulter` sets its defaults (with
/// `client` in its [`Context`]), and the answer is the JSON patch that makes those changes to
/// the object as it was sent (fields the type does not know are left alone, not dropped).
///
/// An object that cannot be read as a `K` is refused with a message that says why, unless the
/// request only changes its metadata (removing a finalizer, say), which is allowed as it is.
pub fn defaulting<K>(defaulter: impl Defaulter<K>, client: Client) -> MethodRouter
where
    K: Resource + Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    let defaulter = Arc::new(defaulter);
    post(move |body: Body| async move {
        let read = Admission::read(read_body(body).await, &client);
        answer(match read {
            Ok(admission) => mutate(admission, &*defaulter).await,
            Err(refused) => *refused,
        })
    })
}

/// A validating webhook: `validator` decides on the change the API server asks about (with
/// `client` in its [`Context`]).
///
/// Objects are read leniently: an update whose stored object cannot be read as a `K` (stored
/// before a change of the type, say) is validated as the creation of the new object, a
/// deletion of such an object is allowed, and so is an update that only changes the metadata
/// of an object that cannot be read; each with a warning that says so.
pub fn validating<K>(validator: impl Validator<K>, client: Client) -> MethodRouter
where
    K: Resource + Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    let validator = Arc::new(validator);
    post(move |body: Body| async move {
        let read = Admission::read(read_body(body).await, &client);
        answer(match read {
            Ok(admission) => decide(admission, &*validator).await,
            Err(refused) => *refused,
        })
    })
}

/// An admission request, with its objects as the API server sent them.
struct Admission {
    /// The request, without its objects, and the client.
    context: Context,
    /// The object as it would be stored (none for a deletion).
    object: Option<Value>,
    /// The object as stored (none for a creation).
    old_object: Option<Value>,
}

impl Admission {
    /// Reads an AdmissionReview (with `client` for the webhook's context), or says why it is
    /// not one (or could not be read), in a response to it: a refusal, not an HTTP error,
    /// which the API server would not relay.
    fn read(
        body: Result<Vec<u8>, Unread>,
        client: &Client,
    ) -> Result<Self, Box<AdmissionResponse>> {
        let body = body.map_err(|unread| {
            let (uid, message, code, reason) = unread.answer("AdmissionReview");
            refusal_with(&uid, message, code, reason)
        })?;
        let mut review: Value = serde_json::from_slice(&body)
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
        let client = client.clone();
        Ok(Self {
            context: Context { request, client },
            object,
            old_object,
        })
    }

    /// The kind the request is about, for messages.
    fn kind(&self) -> &str {
        &self.context.request.kind.kind
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
        self.context.request.operation == Operation::Update
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
/// The AdmissionReview that answers with `response`.
fn answer(response: AdmissionResponse) -> Response {
    match serde_json::to_vec(&response.into_review()) {
        Ok(json) => ([(CONTENT_TYPE, "application/json")], json).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n")).into_response(),
    }
}

/// `response` refused for `refusal`, with the status the API server relays to the client.
fn refused(mut response: AdmissionResponse, refusal: &Refusal) -> AdmissionResponse {
    response.allowed = false;
    response.result = refusal.status();
    response
}

async fn mutate<K>(admission: Admission, defaulter: &impl Defaulter<K>) -> AdmissionResponse
where
    K: Resource + Clone + Serialize + DeserializeOwned + Send + Sync,
{
    let response = AdmissionResponse::from(&admission.context.request);
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
    if let Err(refusal) = defaulter.default(&admission.context, &mut defaulted).await {
        return refused(response, &refusal);
    }
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

async fn decide<K>(admission: Admission, validator: &impl Validator<K>) -> AdmissionResponse
where
    K: Resource + Clone + DeserializeOwned + Send + Sync,
{
    let ctx = &admission.context;
    let mut response = AdmissionResponse::from(&ctx.request);
    let mut warnings = Vec::new();
    let (new, old) = (admission.object.as_ref(), admission.old_object.as_ref());
    let read = |object: &Value| admission.read_as::<K>(object);
    let verdict = match (&ctx.request.operation, new, old) {
        (Operation::Create, Some(new), _) => match read(new) {
            Ok(new) => validator.validate_create(ctx, &new).await,
            Err(message) => return response.deny(message),
        },
        (Operation::Update, Some(new), Some(old)) => match (read(new), read(old)) {
            (Ok(new), Ok(old)) => validator.validate_update(ctx, &old, &new).await,
            // The stored object is unreadable (stored before a change of the type, say): an
            // update is how it is repaired, so the new object is validated as if created.
            (Ok(new), Err(message)) => {
                warnings.push(format!("{message}; validated as a new object"));
                validator.validate_create(ctx, &new).await
            }
            (Err(message), _) if admission.only_changes_metadata() => {
                response.warnings = Some(vec![format!("{message}; only its metadata changes")]);
                return response;
            }
            (Err(message), _) => return response.deny(message),
        },
        (Operation::Delete, _, Some(old)) => match read(old) {
            Ok(old) => validator.validate_delete(ctx, &old).await,
            // Whatever it holds, an object that cannot be read can be deleted.
            Err(message) => {
                response.warnings = Some(vec![format!("{message}; not validated")]);
                return response;
            }
        },
        // CONNECT, or a request without the objects its operation needs: nothing to decide.
        _ => return response,
    };
    match verdict {
        Ok(mut more) => {
            warnings.append(&mut more);
            if !warnings.is_empty() {
                response.warnings = Some(warnings);
            }
            response
        }
        Err(refusal) => refused(response, &refusal),
    }
}
