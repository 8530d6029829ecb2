//! Admission webhooks: [`defaulting`] (mutating) and [`validating`], and the AdmissionReviews
//! they read and answer.

use axum::body::Body;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, post};
use kube::Resource;
use kube::core::DynamicObject;
use kube::core::Status;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::body::{Unread, read_body};
use super::refusal::Refusal;

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
/// them), or refused, with a message that says why (`Err("...".into())`) or the fields that
/// are invalid ([`Invalid`](super::Invalid)).
pub type Verdict = Result<Vec<String>, Refusal>;

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
        Err(refusal) => {
            response.allowed = false;
            response.result = refusal.status();
            response
        }
    }
}
