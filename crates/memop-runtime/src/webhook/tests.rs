//! The webhooks' tests: admission, conversion, bodies and configurations, served as the API
//! server calls them.

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::MethodRouter;
use kube::core::DynamicObject;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tower::ServiceExt;

use super::body::leading_uid;
use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;

use super::configuration::METADATA_ONLY_UPDATE_NAME;
use super::conversion::{Unconverted, convert, keep_metadata};
use super::server::measured;
use super::*;
use crate::manager::Metrics;

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

/// A change a test's validation function decides on, as the [`Validator`]'s methods see it.
enum Change<'a, K> {
    Create(&'a K),
    Update { old: &'a K, new: &'a K },
    Delete(&'a K),
}

/// A [`Defaulter`] of a plain function.
struct Defaults<K>(fn(&mut K));

impl<K: Send + Sync + 'static> Defaulter<K> for Defaults<K> {
    async fn default(&self, _: &Context, object: &mut K) -> Result<(), Refusal> {
        (self.0)(object);
        Ok(())
    }
}

/// A [`Validator`] of a plain function of the [`Change`].
struct Validates<K>(fn(Change<'_, K>) -> Verdict);

impl<K: Send + Sync + 'static> Validator<K> for Validates<K> {
    async fn validate_create(&self, _: &Context, object: &K) -> Verdict {
        (self.0)(Change::Create(object))
    }

    async fn validate_update(&self, _: &Context, old: &K, new: &K) -> Verdict {
        (self.0)(Change::Update { old, new })
    }

    async fn validate_delete(&self, _: &Context, object: &K) -> Verdict {
        (self.0)(Change::Delete(object))
    }
}

/// A client whose every request fails: these webhooks call no API server.
fn no_client() -> kube::Client {
    let service = tower::service_fn(|_: http::Request<kube::client::Body>| async {
        Err::<http::Response<kube::client::Body>, _>(std::io::Error::other("no API server"))
    });
    kube::Client::new(service, "default")
}

/// What [`defaulting`] and [`validating`] serve: the kinds of the adapters below.
trait Admitted: Resource + Clone + Serialize + DeserializeOwned + Send + Sync + 'static {}

impl<K: Resource + Clone + Serialize + DeserializeOwned + Send + Sync + 'static> Admitted for K {}

/// A mutating webhook that sets the defaults `default` sets.
fn defaults<K: Admitted>(default: fn(&mut K)) -> MethodRouter {
    defaulting(Defaults(default), no_client())
}

/// A validating webhook that decides as `validate` does.
fn validates<K: Admitted>(validate: fn(Change<'_, K>) -> Verdict) -> MethodRouter {
    validating(Validates(validate), no_client())
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
        defaults(label),
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
        defaults(label),
        json!({ "operation": "CREATE", "object": already }),
    )
    .await;
    assert_eq!(response["allowed"], true);
}

#[tokio::test]
async fn a_validating_webhook_relays_refusals_and_warnings() {
    let refused = review(
        validates(refuse_big),
        json!({ "operation": "CREATE", "object": thing(json!({ "big": "1" })) }),
    )
    .await;
    assert_eq!(refused["allowed"], false);
    assert_eq!(refused["status"]["message"], "big things are refused");
    // As controller-runtime's `admission.Denied`: the client sees a 403 Forbidden.
    assert_eq!(refused["status"]["code"], 403);
    assert_eq!(refused["status"]["reason"], "Forbidden");
    assert_eq!(refused["status"]["status"], "Failure");

    let update = json!({ "operation": "UPDATE", "object": thing(json!({ "a": "2" })), "oldObject": thing(json!({ "a": "1" })) });
    let warned = review(validates(refuse_big), update).await;
    assert_eq!(warned["allowed"], true);
    assert_eq!(warned["warnings"], json!(["labels changed"]));

    // A deletion is decided on the old object.
    let kept = review(
        validates(refuse_big),
        json!({ "operation": "DELETE", "oldObject": thing(json!({ "keep": "1" })) }),
    )
    .await;
    assert_eq!(kept["allowed"], false);
    let plain = review(
        validates(refuse_big),
        json!({ "operation": "CREATE", "object": thing(json!({})) }),
    )
    .await;
    assert_eq!(plain["allowed"], true);
    assert!(plain.get("warnings").is_none_or(Value::is_null), "{plain}");
}

/// Refuses a `Thing` with fewer than no replicas, or without labels, as kubebuilder's
/// validators do: `apierrors.NewInvalid` with a field error for each.
fn replicas_and_labels(change: Change<'_, v1::Thing>) -> Verdict {
    let (Change::Create(thing) | Change::Update { new: thing, .. } | Change::Delete(thing)) =
        change;
    let mut invalid = Invalid::of(thing);
    if thing.spec.replicas < 0 {
        let replicas = thing.spec.replicas;
        invalid.push(FieldError::invalid(
            "spec.replicas",
            &replicas,
            "must be at least 0",
        ));
    }
    if thing.metadata.labels.is_none() {
        invalid.push(FieldError::required(
            "metadata.labels",
            "things are labelled",
        ));
    }
    invalid.verdict()
}

fn replicas(replicas: i32, labels: Option<Value>) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": { "name": "thing", "namespace": "default", "labels": labels },
        "spec": { "replicas": replicas },
    })
}

#[tokio::test]
async fn invalid_fields_are_refused_as_422_invalid_with_a_cause_each() {
    let refused = review(
        validates(replicas_and_labels),
        json!({ "operation": "CREATE", "object": replicas(-1, None) }),
    )
    .await;
    assert_eq!(refused["allowed"], false);
    // apierrors.NewInvalid's status, which the API server relays with its details.
    let expected = json!({
        "status": "Failure",
        "code": 422,
        "reason": "Invalid",
        "message": "Thing.example.com \"thing\" is invalid: [spec.replicas: Invalid value: -1: must be at least 0, metadata.labels: Required value: things are labelled]",
        "details": {
            "group": "example.com",
            "kind": "Thing",
            "name": "thing",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: -1: must be at least 0",
                    "field": "spec.replicas",
                },
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: things are labelled",
                    "field": "metadata.labels",
                },
            ],
        },
    });
    assert_eq!(refused["status"], expected);

    let one = review(
        validates(replicas_and_labels),
        json!({ "operation": "CREATE", "object": replicas(-1, Some(json!({ "a": "1" }))) }),
    )
    .await;
    let message = "Thing.example.com \"thing\" is invalid: spec.replicas: Invalid value: -1: must be at least 0";
    assert_eq!(
        one["status"]["message"], message,
        "one error, without brackets"
    );

    let valid = review(
        validates(replicas_and_labels),
        json!({ "operation": "CREATE", "object": replicas(1, Some(json!({ "a": "1" }))) }),
    )
    .await;
    assert_eq!(valid["allowed"], true);
}

#[test]
fn field_errors_read_as_apimachinerys() {
    let name = FieldError::invalid("metadata.name", &"a\"b", "too long");
    assert_eq!(
        name.to_string(),
        r#"metadata.name: Invalid value: "a\"b": too long"#
    );
    let template = FieldError::invalid("spec.template", &json!({ "a": [1] }), "");
    assert_eq!(template.message, r#"Invalid value: {"a":[1]}"#);
    let forbidden = FieldError::forbidden("spec.suspend", "not while running");
    assert_eq!(forbidden.reason, "FieldValueForbidden");
    assert_eq!(
        forbidden.to_string(),
        "spec.suspend: Forbidden: not while running"
    );
    // A message repeated is listed once, as apimachinery's aggregate lists it.
    let thing = v1::Thing::new("thing", v1::ThingSpec { replicas: 0 });
    let mut invalid = Invalid::of(&thing);
    invalid.push(forbidden.clone());
    invalid.push(forbidden);
    assert_eq!(
        invalid.to_string(),
        r#"Thing.example.com "thing" is invalid: spec.suspend: Forbidden: not while running"#
    );
    assert_eq!(invalid.errors().len(), 2);
    let core = Invalid::of(&k8s_openapi::api::core::v1::ConfigMap::default());
    assert_eq!(
        core.to_string(),
        r#"ConfigMap "" is invalid"#,
        "the core group is not named"
    );
    assert_eq!(core.verdict(), Ok(Vec::new()));
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
async fn an_object_that_cannot_be_converted_fails_the_review_naming_it() {
    let good = json!({ "apiVersion": "example.com/v1beta1", "kind": "Thing", "metadata": { "name": "good" }, "spec": { "size": 2 } });
    // Stored before `size` was required, say.
    let bad = json!({ "apiVersion": "example.com/v1beta1", "kind": "Thing", "metadata": { "name": "bad", "namespace": "default" }, "spec": {} });
    let conversions = || vec![Conversion::between::<v1::Thing, v1beta1::Thing>()];
    let answer = post_to(
        converting(conversions()),
        conversion_review("example.com/v1", json!([good, bad])),
    )
    .await;
    // Not relabelled and passed on in its old shape: the API server would prune what the
    // version asked for does not have, and a write through it would store the pruned object.
    let response = &answer["response"];
    assert_eq!(response["uid"], "1");
    assert_eq!(response["result"]["status"], "Failure", "{answer}");
    assert_eq!(response["convertedObjects"], json!([]), "{answer}");
    let message = response["result"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "cannot convert Thing default/bad from example.com/v1beta1 to example.com/v1: \
             cannot read it as example.com/v1beta1: missing field `size`"
        ),
        "{message}"
    );
    // The good one alone converts.
    let answer = post_to(
        converting(conversions()),
        conversion_review("example.com/v1", json!([good])),
    )
    .await;
    assert_eq!(answer["response"]["result"]["status"], "Success");
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
    let answer = answer_to(validates(refuse_big), admission(3 * mib / 2)).await;
    assert_eq!(answer["response"]["uid"], "b7e1");
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    let answer = answer_to(defaults(label), admission(3 * mib / 2)).await;
    assert_eq!(answer["response"]["allowed"], true);
    assert_eq!(answer["response"]["patchType"], "JSONPatch");

    // Over 7 MiB: refused, with the review's uid and code 413, as controller-runtime does.
    for route in [validates(refuse_big), defaults(label)] {
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
        Router::new().route("/validate-things", validates(refuse_big)),
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
        for route in [validates(refuse_big), defaults(label)] {
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
    let mut sent =
        widget(json!({ "future": { "x": 1 }, "ports": [{ "port": 80, "appProtocol": "http" }] }));
    let response = review(
        defaults(default_widget),
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
    for route in [defaults(default_widget), validates(accept_widgets)] {
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
        validates(accept_widgets),
        json!({ "operation": "DELETE", "oldObject": unreadable }),
    )
    .await;
    assert_eq!(deleted["allowed"], true, "{deleted}");
    // Repaired by an update: validated as a new object.
    let repaired = widget(json!({ "size": 3 }));
    let updated = review(
        validates(accept_widgets),
        json!({ "operation": "UPDATE", "object": repaired, "oldObject": unreadable }),
    )
    .await;
    assert_eq!(updated["allowed"], true, "{updated}");
    assert_eq!(updated["warnings"][1], "created", "{updated}");
    let refused = review(
        validates(accept_widgets),
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

#[test]
fn webhooks_on_kubernetes_kinds_skip_the_managers_namespace() {
    let hook = |name: &'static str, group: &'static str| Webhook {
        mutating: true,
        name,
        path: "/mutate",
        group,
        version: "v1",
        resource: "things",
        operations: &["CREATE"],
    };
    let hooks = [
        hook("mpod-v1.core.example.com", ""),
        hook("mdeployment-v1.apps.example.com", "apps"),
        hook("mingress-v1.networking.example.com", "networking.k8s.io"),
        hook("mthing-v1.cache.example.com", "cache.example.com"),
    ];
    let skips: Vec<bool> = hooks.iter().map(Webhook::skips_manager_namespace).collect();
    assert_eq!(skips, [true, true, true, false]);

    let yaml = manifests_yaml(&hooks);
    let documents: Vec<Value> = yaml
        .split("---\n")
        .skip(1)
        .map(|document| serde_saphyr::from_str(document).unwrap())
        .collect();
    // The manager's namespace (first: config/default puts the real one there), and the
    // cluster's own, whose Pods and node Leases must not wait for a manager that is down.
    let selector = json!({ "matchExpressions": [
        { "key": "kubernetes.io/metadata.name", "operator": "NotIn",
          "values": ["system", "kube-node-lease", "kube-system"] }
    ]});
    for webhook in documents[0]["webhooks"].as_array().unwrap() {
        let name = webhook["name"].as_str().unwrap();
        if name.starts_with("mthing") {
            assert!(webhook.get("namespaceSelector").is_none(), "{yaml}");
            assert!(webhook.get("timeoutSeconds").is_none(), "{yaml}");
        } else {
            assert_eq!(webhook["namespaceSelector"], selector, "{name}: {yaml}");
            assert_eq!(webhook["timeoutSeconds"], json!(5), "{name}: {yaml}");
        }
        if name.starts_with("mpod") {
            assert_eq!(webhook["rules"][0]["apiGroups"], json!([""]), "{yaml}");
        }
    }
    assert_eq!(
        serde_json::to_value(manager_namespace_selector("system")).unwrap(),
        selector
    );
}
