//! Admission webhooks with their context, on both API servers: on the real control plane
//! (with `KUBEBUILDER_ASSETS`) the API server calls them over TLS as it would the manager's;
//! on the in-memory one, which has no admission, the test sends them the AdmissionReviews the
//! real one would send, then writes what they allowed. Either way a [`Defaulter`] sees the
//! request's operation and user and reads another object with the context's client, and a
//! [`Validator`] gets the stored object on an update and a deletion, returns warnings the
//! client receives, checks other objects with the client, and refuses with a message (403) or
//! the fields at fault (422, a cause each).

use std::time::Duration;

use axum::Router;
use http::{Method, Request};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
use memop_runtime::manager::Shutdown;
use memop_runtime::webhook::{
    self, Context, Defaulter, FieldError, Invalid, Refusal, Validator, Verdict, Webhook,
};
use memop_test::TestEnv;
use memop_test::https::serve_with_test_ca;
use serde_json::{Value, json};
use tower::ServiceExt;

const MUTATE_PATH: &str = "/mutate-configmaps";
const VALIDATE_PATH: &str = "/validate-configmaps";
/// The ConfigMap whose `data` the defaulter copies into the others' (read with the client).
const DEFAULTS: &str = "defaults";
/// The user the in-memory tier's requests come from (the real server names its own).
const MEMORY_USER: &str = "memory-admin";

/// Defaults each ConfigMap: notes the operation and the user in annotations, and fills in the
/// keys of the `defaults` ConfigMap it lacks, read with the context's client.
struct ConfigMapDefaulter;

impl Defaulter<ConfigMap> for ConfigMapDefaulter {
    async fn default(&self, ctx: &Context, config: &mut ConfigMap) -> Result<(), Refusal> {
        let request = ctx.request();
        let operation = serde_json::to_value(&request.operation).unwrap();
        let user = request.user_info.username.clone().unwrap_or_default();
        let annotations = config.annotations_mut();
        annotations.insert("operation".into(), operation.as_str().unwrap().into());
        annotations.insert("user".into(), user);
        if config.name_any() == DEFAULTS {
            return Ok(());
        }
        let namespace = request.namespace.as_deref().unwrap_or_default();
        let defaults = Api::<ConfigMap>::namespaced(ctx.client().clone(), namespace)
            .get_opt(DEFAULTS)
            .await
            .map_err(|error| Refusal::from(format!("reading the defaults: {error}")))?;
        let data = config.data.get_or_insert_default();
        for (key, value) in defaults.and_then(|d| d.data).unwrap_or_default() {
            data.entry(key).or_insert(value);
        }
        Ok(())
    }
}

/// Validates ConfigMaps: `port` must be a number (422 on `data.port`), and no other ConfigMap
/// of the namespace may hold the same (403, checked with the client); `owner` cannot change
/// (403, from the stored object); one labelled `keep` cannot be deleted (403). Warns of a
/// ConfigMap without `owner`, and of each update that changes the port.
struct ConfigMapValidator;

impl ConfigMapValidator {
    async fn validate(ctx: &Context, config: &ConfigMap) -> Verdict {
        let data = config.data.clone().unwrap_or_default();
        let Some(port) = data.get("port") else {
            return Ok(Vec::new());
        };
        if port.parse::<u16>().is_err() {
            let mut invalid = Invalid::of(config);
            invalid.push(FieldError::invalid(
                "data.port",
                port,
                "must be a port number",
            ));
            return invalid.verdict();
        }
        let namespace = ctx.request().namespace.as_deref().unwrap_or_default();
        let others = Api::<ConfigMap>::namespaced(ctx.client().clone(), namespace)
            .list(&Default::default())
            .await
            .map_err(|error| Refusal::from(format!("listing ConfigMaps: {error}")))?;
        if let Some(other) = others.items.iter().find(|other| {
            other.name_any() != config.name_any()
                && other.data.as_ref().and_then(|d| d.get("port")) == Some(port)
        }) {
            return Err(format!("port {port} is taken by {}", other.name_any()).into());
        }
        let mut warnings = Vec::new();
        if !data.contains_key("owner") {
            warnings.push(format!("{} has no owner", config.name_any()));
        }
        Ok(warnings)
    }
}

impl Validator<ConfigMap> for ConfigMapValidator {
    async fn validate_create(&self, ctx: &Context, config: &ConfigMap) -> Verdict {
        Self::validate(ctx, config).await
    }

    async fn validate_update(&self, ctx: &Context, old: &ConfigMap, new: &ConfigMap) -> Verdict {
        let owner = |config: &ConfigMap| config.data.as_ref()?.get("owner").cloned();
        if owner(old).is_some() && owner(old) != owner(new) {
            let old = owner(old).unwrap_or_default();
            return Err(format!("the owner ({old}) cannot change").into());
        }
        let mut warnings = Self::validate(ctx, new).await?;
        let port = |config: &ConfigMap| config.data.as_ref()?.get("port").cloned();
        if port(old) != port(new) {
            warnings.push(format!(
                "port changed from {:?}",
                port(old).unwrap_or_default()
            ));
        }
        Ok(warnings)
    }

    async fn validate_delete(&self, _: &Context, config: &ConfigMap) -> Verdict {
        if config.labels().contains_key("keep") {
            return Err(format!("{} is kept", config.name_any()).into());
        }
        Ok(vec![format!("{} deleted", config.name_any())])
    }
}

fn router(client: &Client) -> Router {
    Router::new()
        .route(
            MUTATE_PATH,
            webhook::defaulting(ConfigMapDefaulter, client.clone()),
        )
        .route(
            VALIDATE_PATH,
            webhook::validating(ConfigMapValidator, client.clone()),
        )
}

fn webhooks() -> [Webhook; 2] {
    let webhook = |mutating: bool, path: &'static str| Webhook {
        mutating,
        name: if mutating {
            "mconfigmap.webhooks.example.com"
        } else {
            "vconfigmap.webhooks.example.com"
        },
        path,
        group: "",
        version: "v1",
        resource: "configmaps",
        operations: if mutating {
            &["CREATE", "UPDATE"]
        } else {
            &["CREATE", "UPDATE", "DELETE"]
        },
    };
    [webhook(true, MUTATE_PATH), webhook(false, VALIDATE_PATH)]
}

/// What the API server answered: the object and the warnings, or the refusal's status.
#[derive(Debug)]
enum Answer {
    Stored(Box<ConfigMap>, Vec<String>),
    Refused(Value),
}

impl Answer {
    fn stored(self) -> (ConfigMap, Vec<String>) {
        match self {
            Self::Stored(config, warnings) => (*config, warnings),
            Self::Refused(status) => panic!("refused: {status}"),
        }
    }

    fn refused(self) -> Value {
        match self {
            Self::Refused(status) => status,
            Self::Stored(config, _) => panic!("stored: {config:?}"),
        }
    }
}

/// The API server, calling the webhooks.
enum Server {
    /// The real one, which calls them over TLS.
    Real {
        shutdown: Shutdown,
        names: [String; 2],
    },
    /// The in-memory one, to which the test relays what they allow.
    Memory(Router),
}

impl Server {
    async fn start(env: &TestEnv) -> Self {
        let router = router(&env.admin);
        if !env.is_real() {
            return Self::Memory(router);
        }
        let shutdown = Shutdown::default();
        let (port, ca) = serve_with_test_ca(router, &shutdown).await;
        let names = [
            format!("{}-mutating", env.namespace),
            format!("{}-validating", env.namespace),
        ];
        let (mut mutating, mut validating) =
            webhook::configurations(&webhooks(), [&names[0], &names[1]], |hook| {
                WebhookClientConfig {
                    url: Some(format!("https://localhost:{port}{}", hook.path)),
                    ca_bundle: Some(ByteString(ca.as_bytes().to_vec())),
                    service: None,
                }
            });
        // Only the test's namespace: other tests' ConfigMaps never reach these webhooks.
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
        for hook in mutating.webhooks.iter_mut().flatten() {
            hook.namespace_selector = Some(selector.clone());
        }
        for hook in validating.webhooks.iter_mut().flatten() {
            hook.namespace_selector = Some(selector.clone());
        }
        Api::<MutatingWebhookConfiguration>::all(env.admin.clone())
            .create(&PostParams::default(), &mutating)
            .await
            .unwrap();
        Api::<ValidatingWebhookConfiguration>::all(env.admin.clone())
            .create(&PostParams::default(), &validating)
            .await
            .unwrap();
        let server = Self::Real { shutdown, names };
        server.wait_until_called(env).await;
        server
    }

    /// Waits until the API server calls both webhooks (it loads new configurations
    /// asynchronously): a dry-run ConfigMap comes back defaulted, and a bad port is refused.
    async fn wait_until_called(&self, env: &TestEnv) {
        let probe = |port: &str| config("probe", json!({ "port": port }));
        for _ in 0..100 {
            let defaulted = match self.send(env, Method::POST, None, &probe("1"), true).await {
                Answer::Stored(config, _) => config.annotations().contains_key("operation"),
                Answer::Refused(_) => false,
            };
            let refused = matches!(
                self.send(env, Method::POST, None, &probe("x"), true).await,
                Answer::Refused(_)
            );
            if defaulted && refused {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the API server never called the webhooks");
    }

    async fn create(&self, env: &TestEnv, config: &ConfigMap) -> Answer {
        self.send(env, Method::POST, None, config, false).await
    }

    async fn replace(&self, env: &TestEnv, config: &ConfigMap) -> Answer {
        let name = config.name_any();
        self.send(env, Method::PUT, Some(&name), config, false)
            .await
    }

    async fn delete(&self, env: &TestEnv, name: &str) -> Answer {
        let none = ConfigMap::default();
        self.send(env, Method::DELETE, Some(name), &none, false)
            .await
    }

    /// Sends `method` for `config` (named `name`, except for a POST), as a dry run if asked.
    async fn send(
        &self,
        env: &TestEnv,
        method: Method,
        name: Option<&str>,
        config: &ConfigMap,
        dry_run: bool,
    ) -> Answer {
        match self {
            Self::Real { .. } => real_send(env, method, name, config, dry_run).await,
            Self::Memory(router) => memory_send(env, router, method, name, config).await,
        }
    }

    async fn stop(self, env: &TestEnv) {
        if let Self::Real { shutdown, names } = self {
            let _ = Api::<MutatingWebhookConfiguration>::all(env.admin.clone())
                .delete(&names[0], &DeleteParams::default())
                .await;
            let _ = Api::<ValidatingWebhookConfiguration>::all(env.admin.clone())
                .delete(&names[1], &DeleteParams::default())
                .await;
            shutdown.trigger();
        }
    }
}

/// The request to the real API server, with the warnings of its `Warning` headers.
async fn real_send(
    env: &TestEnv,
    method: Method,
    name: Option<&str>,
    config: &ConfigMap,
    dry_run: bool,
) -> Answer {
    let mut uri = format!("/api/v1/namespaces/{}/configmaps", env.namespace);
    if let Some(name) = name {
        uri = format!("{uri}/{name}");
    }
    if dry_run {
        uri.push_str("?dryRun=All");
    }
    let body = match method {
        Method::DELETE => Vec::new(),
        _ => serde_json::to_vec(config).unwrap(),
    };
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    let response = env.admin.send(request.map(Into::into)).await.unwrap();
    // `299 - "<warning>"`
    let warnings = (response.headers().get_all("warning").iter())
        .map(|value| {
            let value = value.to_str().unwrap();
            let quoted = value.split_once(" - ").map_or(value, |(_, text)| text);
            serde_json::from_str::<String>(quoted).unwrap_or_else(|_| quoted.to_string())
        })
        .collect();
    let status = response.status();
    let body = axum::body::to_bytes(axum::body::Body::new(response.into_body()), 1 << 20)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    if !status.is_success() {
        return Answer::Refused(body);
    }
    // A deletion answers with the deleted object (or a Status, when it is gone at once).
    let config = serde_json::from_value(body).unwrap_or_default();
    Answer::Stored(Box::new(config), warnings)
}

/// What the real API server does with the webhooks' answers, on the in-memory one: the
/// AdmissionReviews it would send, the patch applied, the refusal relayed with its status.
async fn memory_send(
    env: &TestEnv,
    router: &Router,
    method: Method,
    name: Option<&str>,
    config: &ConfigMap,
) -> Answer {
    let configs = Api::<ConfigMap>::namespaced(env.admin.clone(), &env.namespace);
    let old = match name {
        Some(name) => Some(serde_json::to_value(configs.get(name).await.unwrap()).unwrap()),
        None => None,
    };
    let operation = match method {
        Method::POST => "CREATE",
        Method::PUT => "UPDATE",
        _ => "DELETE",
    };
    let mut object = match method {
        Method::DELETE => Value::Null,
        _ => serde_json::to_value(config).unwrap(),
    };
    if method == Method::POST {
        object["metadata"]["namespace"] = env.namespace.clone().into();
    }
    let mut warnings = Vec::new();
    for (path, mutating) in [(MUTATE_PATH, true), (VALIDATE_PATH, false)] {
        if mutating && method == Method::DELETE {
            continue;
        }
        let review = json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "7c8d9e0f",
                "kind": { "group": "", "version": "v1", "kind": "ConfigMap" },
                "resource": { "group": "", "version": "v1", "resource": "configmaps" },
                "name": name.map_or_else(|| config.name_any(), str::to_string),
                "namespace": env.namespace,
                "operation": operation,
                "userInfo": { "username": MEMORY_USER },
                "object": object,
                "oldObject": old,
                "dryRun": false,
            },
        });
        let request = axum::http::Request::post(path)
            .body(axum::body::Body::from(review.to_string()))
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let response: Value = serde_json::from_slice(&body).unwrap();
        let response = &response["response"];
        if response["allowed"] != true {
            let mut status = response["status"].clone();
            // As the real API server relays it.
            let webhook = if mutating { "mconfigmap" } else { "vconfigmap" };
            let message = status["message"].as_str().unwrap_or_default().to_string();
            status["message"] = format!(
                "admission webhook \"{webhook}.webhooks.example.com\" denied the request: {message}"
            )
            .into();
            return Answer::Refused(status);
        }
        for warning in response["warnings"].as_array().into_iter().flatten() {
            warnings.push(warning.as_str().unwrap().to_string());
        }
        if let Some(patch) = response.get("patch").filter(|p| !p.is_null()) {
            let bytes: Vec<u8> = serde_json::from_value(patch.clone()).unwrap();
            let patch: json_patch::Patch = serde_json::from_slice(&bytes).unwrap();
            json_patch::patch(&mut object, &patch).unwrap();
        }
    }
    let params = PostParams::default();
    let stored = match method {
        Method::POST => configs
            .create(&params, &serde_json::from_value(object).unwrap())
            .await
            .unwrap(),
        Method::PUT => configs
            .replace(
                &config.name_any(),
                &params,
                &serde_json::from_value(object).unwrap(),
            )
            .await
            .unwrap(),
        _ => {
            let name = name.unwrap();
            configs
                .delete(name, &DeleteParams::default())
                .await
                .unwrap();
            ConfigMap::default()
        }
    };
    Answer::Stored(Box::new(stored), warnings)
}

fn config(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({ "metadata": { "name": name }, "data": data })).unwrap()
}

/// On the real control plane when there is one, else on the in-memory API server.
async fn env() -> TestEnv {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture");
    match TestEnv::real_for(&fixture).await {
        Some(env) => env,
        None => TestEnv::in_memory(),
    }
}

#[tokio::test]
async fn a_defaulter_sees_the_operation_and_the_user_and_reads_with_the_client() {
    let env = env().await;
    let server = Server::start(&env).await;
    let defaults = config(DEFAULTS, json!({ "owner": "team-a", "port": "8000" }));
    server.create(&env, &defaults).await.stored();

    let (created, _) = server
        .create(&env, &config("web", json!({ "port": "8080" })))
        .await
        .stored();
    let annotation = |config: &ConfigMap, key: &str| config.annotations().get(key).cloned();
    assert_eq!(annotation(&created, "operation").as_deref(), Some("CREATE"));
    let user = annotation(&created, "user").unwrap_or_default();
    assert!(!user.is_empty(), "the request names its user");
    if !env.is_real() {
        assert_eq!(user, MEMORY_USER);
    }
    let data = created.data.clone().unwrap_or_default();
    assert_eq!(
        data["owner"], "team-a",
        "read from the defaults with the client"
    );
    assert_eq!(data["port"], "8080", "the object's own value is kept");

    // An update of the data (one of the metadata alone does not call the webhooks).
    let mut changed = created.clone();
    changed
        .data
        .get_or_insert_default()
        .insert("port".into(), "8081".into());
    let (updated, _) = server.replace(&env, &changed).await.stored();
    assert_eq!(annotation(&updated, "operation").as_deref(), Some("UPDATE"));
    server.stop(&env).await;
}

#[tokio::test]
async fn a_validator_warns_refuses_with_fields_or_a_message_and_sees_the_old_object() {
    let env = env().await;
    let server = Server::start(&env).await;

    // Warnings reach the client.
    let (web, warnings) = server
        .create(&env, &config("web", json!({ "port": "8080" })))
        .await
        .stored();
    assert_eq!(warnings, ["web has no owner"]);

    // A field error: 422 Invalid, with a cause naming the field.
    let status = server
        .create(&env, &config("bad", json!({ "port": "eighty" })))
        .await
        .refused();
    assert_eq!(status["code"], 422, "{status}");
    assert_eq!(status["reason"], "Invalid", "{status}");
    assert_eq!(
        status["details"]["causes"][0],
        json!({
            "reason": "FieldValueInvalid",
            "message": "Invalid value: \"eighty\": must be a port number",
            "field": "data.port",
        }),
        "{status}"
    );
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains(
            "ConfigMap \"bad\" is invalid: data.port: Invalid value: \"eighty\": must be a port number"
        ),
        "{message}"
    );

    // A check of other objects with the client: 403 Forbidden with the message.
    let status = server
        .create(&env, &config("clash", json!({ "port": "8080" })))
        .await
        .refused();
    assert_eq!(status["code"], 403, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .ends_with("denied the request: port 8080 is taken by web"),
        "{status}"
    );

    // The stored object arrives with an update: the owner set, then kept.
    let mut owned = web.clone();
    owned.data.get_or_insert_default().extend([
        ("owner".to_string(), "team-a".to_string()),
        ("port".to_string(), "8081".to_string()),
    ]);
    let (owned, warnings) = server.replace(&env, &owned).await.stored();
    assert_eq!(warnings, ["port changed from \"8080\""]);
    let mut stolen = owned.clone();
    stolen
        .data
        .get_or_insert_default()
        .insert("owner".into(), "team-b".into());
    let status = server.replace(&env, &stolen).await.refused();
    assert_eq!(status["code"], 403, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .ends_with("the owner (team-a) cannot change"),
        "{status}"
    );

    // And with a deletion.
    let mut kept = config("kept", json!({ "owner": "team-a" }));
    kept.labels_mut().insert("keep".into(), "yes".into());
    server.create(&env, &kept).await.stored();
    let status = server.delete(&env, "kept").await.refused();
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .ends_with("kept is kept"),
        "{status}"
    );
    let (_, warnings) = server.delete(&env, "web").await.stored();
    assert_eq!(warnings, ["web deleted"]);
    server.stop(&env).await;
}
