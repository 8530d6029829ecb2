//! The conversion webhook ([`converting`]) and the conversions it makes ([`Conversion`]).

use std::sync::Arc;

use axum::body::Body;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, post};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Resource;
use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::body::read_body;

/// Where the API server sends objects to convert, for every kind with a conversion webhook
/// (the CRD patches of `config/crd/patches` point it there).
pub const CONVERT_PATH: &str = "/convert";
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
/// As controller-runtime's conversion webhook, it fails the whole review when one object
/// cannot be converted (cannot be read as its version's type: stored before a change of the
/// type, say), with a message that names the object and says what failed; the API server then
/// fails the request (a GET, or a LIST or WATCH of objects among which it is). Passing such an
/// object on unconverted, relabelled with the version asked for, would be worse: the API server
/// prunes the fields that version does not have, and a write through that version (a status
/// update, a label) would store the pruned object, losing every field whose name differs
/// between versions. The object is repaired by writing it in its stored version, or by fixing
/// its `From` impls. A review is also failed, with a ConversionReview that says why (HTTP 200)
/// rather than an HTTP error, when the request is not a ConversionReview or asks for a
/// conversion this webhook does not know.
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
            Err(Unconverted::Unreadable(why)) => {
                let text = |field: &str| object[field].as_str().unwrap_or_default();
                let metadata = &object["metadata"];
                let name = match metadata["namespace"].as_str() {
                    Some(namespace) => format!(
                        "{namespace}/{}",
                        metadata["name"].as_str().unwrap_or_default()
                    ),
                    None => metadata["name"].as_str().unwrap_or_default().to_string(),
                };
                let message = format!(
                    "cannot convert {} {name} from {} to {desired}: {why}",
                    text("kind"),
                    text("apiVersion"),
                );
                tracing::warn!(%message, "conversion failed");
                let response = ConversionResponse::for_request(request);
                return response.failure(Status::failure(&message, "ConversionFailed"));
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
pub(super) fn keep_metadata(converted: &mut Value, original: &Value) {
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
pub(super) enum Unconverted {
    /// No conversion between its version and the one asked for.
    Unknown(String),
    /// It cannot be read as its version's type (or the converted one cannot be written).
    Unreadable(String),
}

/// Converts `object` to `desired` (an apiVersion of its kind): to its kind's hub, then from it.
pub(super) fn convert(
    conversions: &[Conversion],
    object: Value,
    desired: &str,
) -> Result<Value, Unconverted> {
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
        Some(spoke) => (spoke.to_hub)(object)
            .map_err(|why| Unconverted::Unreadable(format!("cannot read it as {from}: {why}")))?,
        None => object,
    };
    match from_hub {
        Some(spoke) => (spoke.from_hub)(object).map_err(|why| {
            Unconverted::Unreadable(match from == *hub {
                true => format!("cannot read it as {hub}: {why}"),
                false => format!("its conversion to {hub} cannot be read: {why}"),
            })
        }),
        None => Ok(object),
    }
}
