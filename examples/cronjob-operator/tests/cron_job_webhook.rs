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

//! The CronJob webhooks called by a real kube-apiserver over TLS (skipped without
//! `KUBEBUILDER_ASSETS`): the webhook server runs here with a certificate of a test CA, and
//! webhook configurations built from `webhook::webhooks()` point the API server at it, for the
//! test's namespace only. The generated webhooks are exercised as they are, then with a defaulter and a
//! validator of the test's own, to see the API server apply a patch and relay a
//! refusal. Then the project's own webhooks, as the API server calls them (the book's
//! defaults applied, its refusals relayed with their field paths, and a warning of a
//! ServiceAccount the Jobs would run as that does not exist), and the book's
//! `cronjob_webhook_test.go`, which calls the defaulter and the validator directly (these run
//! without `KUBEBUILDER_ASSETS` too).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
// The kind by its path only, so that no kind can clash with the names imported here.
use cronjob_operator::api::batch::v1 as api;
use cronjob_operator::webhook::{self, Webhook};
use memop_runtime::manager::Shutdown;
use memop_test::TestEnv;
use memop_test::https::serve_with_test_ca;

#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn the_api_server_calls_the_generated_webhooks() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let server = WebhookServer::start(&env, webhook::routes(&env.operator)).await;
    let objects = objects(&env);
    let created = objects
        .create(&PostParams::default(), &sample(&env, "accepted"))
        .await
        .expect("the generated webhooks accept the sample");
    assert_eq!(created.name_any(), sample(&env, "accepted").name_any());
    server.stop(&env).await;
}

#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn the_api_server_applies_defaults_and_relays_refusals() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    // Webhooks of the test's own, at the generated webhooks' paths.
    let mut router = Router::new();
    for hook in webhook::cron_job::webhooks() {
        router = if hook.mutating {
            router.route(
                hook.path,
                webhook::defaulting(TestWebhook, env.admin.clone()),
            )
        } else {
            router.route(
                hook.path,
                webhook::validating(TestWebhook, env.admin.clone()),
            )
        };
    }
    let server = WebhookServer::start(&env, router).await;
    let objects = objects(&env);
    let hooks = webhook::cron_job::webhooks();
    if hooks.iter().any(|hook| hook.mutating) {
        let created = objects
            .create(&PostParams::default(), &sample(&env, "defaulted"))
            .await
            .unwrap();
        assert_eq!(
            created.labels().get("webhook-test").map(String::as_str),
            Some("defaulted"),
            "the mutating webhook's patch was applied"
        );
    }
    if hooks.iter().any(|hook| !hook.mutating) {
        let refused = objects
            .create(&PostParams::default(), &sample(&env, "refused"))
            .await
            .expect_err("the validating webhook refuses it");
        let message = refused.to_string();
        assert!(
            message.contains("names ending with \"refused\" are refused by the test"),
            "{message}"
        );
        assert!(
            objects
                .get_opt(&sample(&env, "refused").name_any())
                .await
                .unwrap()
                .is_none(),
            "not stored"
        );
    }
    server.stop(&env).await;
}

/// A CronJob with nothing but a schedule and a Job template: the webhooks' defaults fill it in.
fn bare(name: &str, schedule: &str) -> api::CronJob {
    let template = serde_json::json!({ "spec": { "template": { "spec": {
        "containers": [{ "name": "test-container", "image": "test-image" }],
        "restartPolicy": "OnFailure",
    } } } });
    let spec = api::CronJobSpec {
        schedule: schedule.into(),
        job_template: serde_json::from_value(template).unwrap(),
        ..api::CronJobSpec::default()
    };
    api::CronJob::new(name, spec)
}

#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn the_api_server_applies_the_books_defaults_and_relays_its_refusals() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let server = WebhookServer::start(&env, webhook::routes(&env.operator)).await;
    let objects = objects(&env);
    let created = objects
        .create(&PostParams::default(), &bare("defaulted", "*/5 * * * *"))
        .await
        .expect("a valid CronJob is stored");
    let spec = created.spec;
    assert_eq!(spec.concurrency_policy, Some(api::ConcurrencyPolicy::Allow));
    assert_eq!(spec.suspend, Some(false));
    assert_eq!(spec.successful_jobs_history_limit, Some(3));
    assert_eq!(spec.failed_jobs_history_limit, Some(1));

    // The API server relays kubebuilder's `apierrors.NewInvalid` as the client sees it from
    // a Go webhook: 422 Invalid, the message after the webhook's name, a cause per field.
    let refused = refusal(objects.create(
        &PostParams::default(),
        &bare("unparseable", "invalid-cron-schedule"),
    ))
    .await;
    let expected = r#"admission webhook "vcronjob-v1.batch.tutorial.kubebuilder.io" denied the request: CronJob.batch.tutorial.kubebuilder.io "unparseable" is invalid: spec.schedule: Invalid value: "invalid-cron-schedule": Expected exactly 5 fields, found 1: invalid-cron-schedule"#;
    assert_eq!(refused.message, expected);
    assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));
    let details = refused.details.expect("the refusal's details");
    let kind = (details.group.as_str(), details.kind.as_str());
    assert_eq!(kind, ("batch.tutorial.kubebuilder.io", "CronJob"));
    assert_eq!(details.name, "unparseable");
    let causes = serde_json::to_value(&details.causes).unwrap();
    let expected = serde_json::json!([{
        "reason": "FieldValueInvalid",
        "message": "Invalid value: \"invalid-cron-schedule\": Expected exactly 5 fields, found 1: invalid-cron-schedule",
        "field": "spec.schedule",
    }]);
    assert_eq!(causes, expected);

    let long = "a-name-of-fifty-three-characters-for-a-cronjob-object";
    assert_eq!(long.len(), 53);
    let refused = refusal(objects.create(&PostParams::default(), &bare(long, "*/5 * * * *"))).await;
    let expected =
        format!(r#"metadata.name: Invalid value: "{long}": must be no more than 52 characters"#);
    assert!(refused.message.contains(&expected), "{}", refused.message);
    assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));
    let causes = refused.details.expect("the refusal's details").causes;
    let fields: Vec<_> = causes.iter().map(|cause| cause.field.as_str()).collect();
    assert_eq!(fields, ["metadata.name"]);
    let fifty_two = &long[..52];
    objects
        .create(&PostParams::default(), &bare(fifty_two, "@hourly"))
        .await
        .expect("52 characters are enough");
    server.stop(&env).await;
}

/// Beyond the book: the validator reads the ServiceAccount the Jobs would run as with its client
/// (the manager's, whose `RULES` let it), and warns while it is missing.
#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn the_validator_warns_of_a_missing_service_account() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let server = WebhookServer::start(&env, webhook::routes(&env.operator)).await;
    let runs_as = |name: &str| {
        let mut cronjob = bare(name, "@hourly");
        let job = cronjob.spec.job_template.spec.as_mut().unwrap();
        job.template.spec.as_mut().unwrap().service_account_name = Some("robot".into());
        cronjob
    };
    let warnings = create_with_warnings(&env, &runs_as("early")).await;
    let expected = format!(
        r#"spec.jobTemplate.spec.template.spec.serviceAccountName: ServiceAccount "robot" not found in namespace "{}": the Jobs' pods cannot be created until it exists"#,
        env.namespace
    );
    assert_eq!(warnings, [expected]);

    let account = serde_json::from_value(serde_json::json!({ "metadata": { "name": "robot" } }));
    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(
        env.admin.clone(),
        &env.namespace,
    )
    .create(&PostParams::default(), &account.unwrap())
    .await
    .unwrap();
    let warnings = create_with_warnings(&env, &runs_as("late")).await;
    assert_eq!(warnings, Vec::<String>::new());
    server.stop(&env).await;
}

/// Creates `cronjob` and returns the warnings the API server sent with its answer (in `Warning`
/// headers, `299 - "<text>"`, which kube's `Api` does not return).
async fn create_with_warnings(env: &TestEnv, cronjob: &api::CronJob) -> Vec<String> {
    let url = format!(
        "/apis/batch.tutorial.kubebuilder.io/v1/namespaces/{}/cronjobs",
        env.namespace
    );
    let body = serde_json::to_vec(cronjob).unwrap();
    let request = kube::core::Request::new(url)
        .create(&PostParams::default(), body)
        .unwrap();
    let response = env.admin.send(request.map(Into::into)).await.unwrap();
    assert!(response.status().is_success(), "{:?}", response.status());
    let headers = response.headers().get_all("warning").iter();
    headers
        .map(|value| {
            let value = value.to_str().unwrap();
            let text = value.split_once(" - ").map_or(value, |(_, text)| text);
            serde_json::from_str(text).unwrap_or_else(|_| text.to_string())
        })
        .collect()
}

/// The status of the API server's refusal of a request.
async fn refusal<T: std::fmt::Debug>(
    request: impl Future<Output = kube::Result<T>>,
) -> kube::core::Status {
    match request.await {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected the API server's refusal, got {other:?}"),
    }
}

/// kubebuilder's book, `internal/webhook/v1/cronjob_webhook_test.go`: the defaulter and the
/// validator called directly.
mod book {
    use cronjob_operator::api::batch::v1::{ConcurrencyPolicy, CronJob, CronJobSpec};
    use cronjob_operator::webhook::cron_job::{DEFAULTS, Defaults, validate_cron_job};
    use memop_runtime::webhook::Refusal;

    const VALID_NAME: &str = "valid-cronjob-name";
    const SCHEDULE: &str = "*/5 * * * *";
    const TOO_LONG: &str =
        "this-name-is-way-too-long-and-should-fail-validation-because-it-is-way-too-long";

    fn object() -> CronJob {
        CronJob::new(
            "",
            CronJobSpec {
                schedule: SCHEDULE.into(),
                concurrency_policy: Some(ConcurrencyPolicy::Allow),
                successful_jobs_history_limit: Some(3),
                failed_jobs_history_limit: Some(1),
                ..CronJobSpec::default()
            },
        )
    }

    /// The book's defaulter, with its defaults.
    fn defaulter() -> Defaults {
        let defaulter = Defaults {
            concurrency_policy: ConcurrencyPolicy::Allow,
            suspend: false,
            successful_jobs_history_limit: 3,
            failed_jobs_history_limit: 1,
        };
        assert_eq!(defaulter, DEFAULTS, "the webhook's");
        defaulter
    }

    /// The fields a refusal names, with the reason of each: kubebuilder's `field.Invalid`s.
    fn fields(refusal: &Refusal) -> Vec<(&str, &str)> {
        let Refusal::Invalid(invalid) = refusal else {
            panic!("refused with a message, not invalid fields: {refusal}");
        };
        let errors = invalid.errors().iter();
        errors
            .map(|error| (error.field.as_str(), error.reason))
            .collect()
    }

    fn named(name: &str, schedule: &str) -> CronJob {
        let mut object = object();
        object.metadata.name = Some(name.into());
        object.spec.schedule = schedule.into();
        object
    }

    #[test]
    fn should_apply_defaults_when_a_required_field_is_empty() {
        let mut obj = object();
        obj.spec.concurrency_policy = None;
        obj.spec.suspend = None;
        obj.spec.successful_jobs_history_limit = None;
        obj.spec.failed_jobs_history_limit = None;
        defaulter().apply(&mut obj);
        assert_eq!(obj.spec.concurrency_policy, Some(ConcurrencyPolicy::Allow));
        assert_eq!(obj.spec.suspend, Some(false));
        assert_eq!(obj.spec.successful_jobs_history_limit, Some(3));
        assert_eq!(obj.spec.failed_jobs_history_limit, Some(1));
    }

    #[test]
    fn should_not_overwrite_fields_that_are_already_set() {
        let mut obj = object();
        obj.spec.concurrency_policy = Some(ConcurrencyPolicy::Forbid);
        obj.spec.suspend = Some(true);
        obj.spec.successful_jobs_history_limit = Some(5);
        obj.spec.failed_jobs_history_limit = Some(2);
        defaulter().apply(&mut obj);
        assert_eq!(obj.spec.concurrency_policy, Some(ConcurrencyPolicy::Forbid));
        assert_eq!(obj.spec.suspend, Some(true));
        assert_eq!(obj.spec.successful_jobs_history_limit, Some(5));
        assert_eq!(obj.spec.failed_jobs_history_limit, Some(2));
    }

    #[test]
    fn should_deny_creation_if_the_name_is_too_long() {
        let obj = named(TOO_LONG, SCHEDULE);
        let refusal = validate_cron_job(&obj).unwrap_err();
        let refused = refusal.to_string();
        assert!(
            refused.contains("must be no more than 52 characters"),
            "{refused}"
        );
        assert_eq!(fields(&refusal), [("metadata.name", "FieldValueInvalid")]);
        assert_eq!(
            refused,
            format!(
                r#"CronJob.batch.tutorial.kubebuilder.io "{TOO_LONG}" is invalid: metadata.name: Invalid value: "{TOO_LONG}": must be no more than 52 characters"#
            )
        );
    }

    #[test]
    fn should_admit_creation_if_the_name_is_valid() {
        let obj = named(VALID_NAME, SCHEDULE);
        assert_eq!(validate_cron_job(&obj), Ok(Vec::new()));
    }

    #[test]
    fn should_deny_creation_if_the_schedule_is_invalid() {
        let obj = named(VALID_NAME, "invalid-cron-schedule");
        let refusal = validate_cron_job(&obj).unwrap_err();
        assert_eq!(fields(&refusal), [("spec.schedule", "FieldValueInvalid")]);
        let refused = refusal.to_string();
        assert!(
            refused.contains("Expected exactly 5 fields, found 1: invalid-cron-schedule"),
            "{refused}"
        );
        assert!(refused.contains(r#"spec.schedule: Invalid value: "invalid-cron-schedule""#));
    }

    #[test]
    fn should_admit_creation_if_the_schedule_is_valid() {
        let obj = named(VALID_NAME, SCHEDULE);
        assert_eq!(validate_cron_job(&obj), Ok(Vec::new()));
    }

    #[test]
    fn should_deny_update_if_both_name_and_spec_are_invalid() {
        // An update is validated on the new object, as the book's `ValidateUpdate` does.
        let new = named(TOO_LONG, "invalid-cron-schedule");
        let refusal = validate_cron_job(&new).unwrap_err();
        let invalid = [
            ("metadata.name", "FieldValueInvalid"),
            ("spec.schedule", "FieldValueInvalid"),
        ];
        assert_eq!(fields(&refusal), invalid);
        let refused = refusal.to_string();
        // Both errors, in brackets, as apimachinery's aggregate lists them.
        assert!(
            refused.contains(": [metadata.name: Invalid value: "),
            "{refused}"
        );
        assert!(refused.ends_with(r#", spec.schedule: Invalid value: "invalid-cron-schedule": Expected exactly 5 fields, found 1: invalid-cron-schedule]"#), "{refused}");
    }

    #[test]
    fn should_admit_update_if_both_name_and_spec_are_valid() {
        let new = named("valid-cronjob-name-updated", "0 0 * * *");
        assert_eq!(validate_cron_job(&new), Ok(Vec::new()));
    }
}

/// Webhooks of the test's own: they label what they default, and refuse names ending with
/// "refused".
struct TestWebhook;

impl webhook::Defaulter<api::CronJob> for TestWebhook {
    async fn default(
        &self,
        _: &webhook::Context,
        object: &mut api::CronJob,
    ) -> Result<(), webhook::Refusal> {
        object
            .labels_mut()
            .insert("webhook-test".into(), "defaulted".into());
        Ok(())
    }
}

impl webhook::Validator<api::CronJob> for TestWebhook {
    async fn validate_create(
        &self,
        _: &webhook::Context,
        object: &api::CronJob,
    ) -> webhook::Verdict {
        if object.name_any().ends_with("refused") {
            return Err("names ending with \"refused\" are refused by the test".into());
        }
        Ok(vec!["checked by the test".into()])
    }

    async fn validate_update(
        &self,
        _: &webhook::Context,
        _: &api::CronJob,
        _: &api::CronJob,
    ) -> webhook::Verdict {
        Ok(vec!["checked by the test".into()])
    }
}

/// The sample of `config/samples`, named `name` after the test's namespace (so that names of
/// cluster-scoped objects do not clash between tests).
fn sample(env: &TestEnv, name: &str) -> api::CronJob {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/samples/batch_v1_cronjob.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut sample: api::CronJob = serde_saphyr::from_str(&text).unwrap();
    sample.metadata.name = Some(format!("{}-{name}", env.namespace));
    sample.metadata.namespace = None;
    sample
}

/// Where the test's cronjobs live.
fn objects(env: &TestEnv) -> Api<api::CronJob> {
    Api::namespaced(env.admin.clone(), &env.namespace)
}

/// The webhook server, serving `router` on a free port with a certificate of a test CA, and
/// the webhook configurations that send the test namespace's requests to it.
struct WebhookServer {
    shutdown: Shutdown,
    names: (String, String),
    /// Requests the webhook server received.
    requests: Arc<AtomicUsize>,
}

impl WebhookServer {
    async fn start(env: &TestEnv, router: Router) -> Self {
        let shutdown = Shutdown::default();
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        let router = router.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                counted.fetch_add(1, Ordering::SeqCst);
                next.run(request)
            },
        ));
        let (port, ca) = serve_with_test_ca(router, &shutdown).await;
        let names = configure(&env.admin, &env.namespace, port, ca).await;
        let server = Self {
            shutdown,
            names,
            requests,
        };
        server.wait_until_called(env).await;
        server
    }

    /// Waits until the API server sends requests to the webhooks (it loads new webhook
    /// configurations asynchronously), probing with dry-run creates.
    async fn wait_until_called(&self, env: &TestEnv) {
        let objects = objects(env);
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        for _ in 0..100 {
            if self.requests.load(Ordering::SeqCst) > 0 {
                return;
            }
            let _ = objects.create(&dry_run, &sample(env, "probe")).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the API server never called the webhooks");
    }

    async fn stop(self, env: &TestEnv) {
        let mutating = Api::<MutatingWebhookConfiguration>::all(env.admin.clone());
        let validating = Api::<ValidatingWebhookConfiguration>::all(env.admin.clone());
        let _ = mutating
            .delete(&self.names.0, &DeleteParams::default())
            .await;
        let _ = validating
            .delete(&self.names.1, &DeleteParams::default())
            .await;
        self.shutdown.trigger();
    }
}

/// Creates the webhook configurations of [`webhook::webhooks`] for `namespace`, calling
/// `https://localhost:<port><path>` with `ca`; returns their names.
async fn configure(admin: &Client, namespace: &str, port: u16, ca: String) -> (String, String) {
    let names = (
        format!("{namespace}-mutating"),
        format!("{namespace}-validating"),
    );
    let (mut mutating, mut validating) = memop_runtime::webhook::configurations(
        &webhook::webhooks(),
        [&names.0, &names.1],
        |hook: &Webhook| WebhookClientConfig {
            url: Some(format!("https://localhost:{port}{}", hook.path)),
            ca_bundle: Some(ByteString(ca.as_bytes().to_vec())),
            service: None,
        },
    );
    // Only for the test's namespace: other tests' objects never reach this server.
    let selector = LabelSelector {
        match_labels: Some(
            [(
                "kubernetes.io/metadata.name".to_string(),
                namespace.to_string(),
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
    Api::<MutatingWebhookConfiguration>::all(admin.clone())
        .create(&PostParams::default(), &mutating)
        .await
        .unwrap();
    Api::<ValidatingWebhookConfiguration>::all(admin.clone())
        .create(&PostParams::default(), &validating)
        .await
        .unwrap();
    names
}
