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

//! The admission webhooks of CronJob (batch.tutorial.kubebuilder.io/v1): what the API
//! server asks before it stores a CronJob. kubebuilder's book, "Tutorial: Building CronJob"
//! (`internal/webhook/v1/cronjob_webhook.go`): the defaults of [`DEFAULTS`], and the refusal of
//! a schedule that does not parse or a name too long for the Jobs named after it, with
//! kubebuilder's field paths and messages; and, beyond the book, a warning when the Jobs would
//! run as a ServiceAccount that does not exist.

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::ResourceExt;
use kube::api::Api;
use memop_runtime::webhook::{FieldError, Invalid};

// Only the kind is imported by name, so that no kind can clash with an import here.
use crate::api::batch::v1::{ConcurrencyPolicy, CronJob};
use crate::controller::cron_job::parse_schedule;

/// Where the API server sends a CronJob to be defaulted.
pub const MUTATE_PATH: &str = "/mutate-batch-tutorial-kubebuilder-io-v1-cronjob";

/// Where the API server asks whether to store a CronJob.
pub const VALIDATE_PATH: &str = "/validate-batch-tutorial-kubebuilder-io-v1-cronjob";

/// The longest name of a CronJob: its Jobs are named `<name>-<Unix time>`, 11 characters
/// more, and a Job's name goes into a label of its pods, at most 63 characters (a DNS-1035
/// label).
pub const MAX_NAME_LENGTH: usize = 63 - 11;

/// The defaults a CronJob gets for the fields it leaves out (the book's `CronJobDefaulter`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Defaults {
    /// `concurrencyPolicy`.
    pub concurrency_policy: ConcurrencyPolicy,
    /// `suspend`.
    pub suspend: bool,
    /// `successfulJobsHistoryLimit`.
    pub successful_jobs_history_limit: i32,
    /// `failedJobsHistoryLimit`.
    pub failed_jobs_history_limit: i32,
}

/// The defaults the webhook sets: runs may overlap, not suspended, 3 successful and 1 failed
/// Job kept.
pub const DEFAULTS: Defaults = Defaults {
    concurrency_policy: ConcurrencyPolicy::Allow,
    suspend: false,
    successful_jobs_history_limit: 3,
    failed_jobs_history_limit: 1,
};

impl Defaults {
    /// Sets each field of `cronjob` that is not set to its default.
    pub fn apply(&self, cronjob: &mut CronJob) {
        let spec = &mut cronjob.spec;
        spec.concurrency_policy
            .get_or_insert(self.concurrency_policy);
        spec.suspend.get_or_insert(self.suspend);
        let successful = &mut spec.successful_jobs_history_limit;
        successful.get_or_insert(self.successful_jobs_history_limit);
        let failed = &mut spec.failed_jobs_history_limit;
        failed.get_or_insert(self.failed_jobs_history_limit);
    }
}

/// The webhooks of CronJob (the book's `CronJobCustomDefaulter` and `CronJobCustomValidator`).
pub struct CronJobWebhook;

impl super::Defaulter<CronJob> for CronJobWebhook {
    /// Sets the defaults of a CronJob the API server is about to create or update: [`DEFAULTS`].
    async fn default(
        &self,
        ctx: &super::Context,
        cronjob: &mut CronJob,
    ) -> Result<(), super::Refusal> {
        let operation = &ctx.request().operation;
        tracing::info!(name = %cronjob.name_any(), ?operation, "Defaulting for CronJob");
        DEFAULTS.apply(cronjob);
        Ok(())
    }
}

impl super::Validator<CronJob> for CronJobWebhook {
    /// A CronJob is created only with a valid name and schedule ([`validate_cron_job`]); with a
    /// warning if its Jobs would run as a ServiceAccount that does not exist.
    async fn validate_create(&self, ctx: &super::Context, cronjob: &CronJob) -> super::Verdict {
        tracing::info!(name = %cronjob.name_any(), "Validation for CronJob upon creation");
        let mut warnings = validate_cron_job(cronjob)?;
        warnings.extend(missing_service_account(ctx, cronjob).await);
        Ok(warnings)
    }

    /// The same for an update; a deletion is always allowed.
    async fn validate_update(
        &self,
        ctx: &super::Context,
        _old: &CronJob,
        cronjob: &CronJob,
    ) -> super::Verdict {
        tracing::info!(name = %cronjob.name_any(), "Validation for CronJob upon update");
        let mut warnings = validate_cron_job(cronjob)?;
        warnings.extend(missing_service_account(ctx, cronjob).await);
        Ok(warnings)
    }
}

/// A warning when the ServiceAccount the CronJob's Jobs run as (`serviceAccountName` of their
/// pods) does not exist in its namespace, read with the webhook's client: their pods cannot
/// be created until it does. Not a refusal, since it is often created right after, by the same
/// `kubectl apply`.
async fn missing_service_account(ctx: &super::Context, cronjob: &CronJob) -> Option<String> {
    let job = cronjob.spec.job_template.spec.as_ref()?;
    let pod = job.template.spec.as_ref()?;
    let name = pod.service_account_name.as_deref()?;
    let namespace = ctx.request().namespace.as_deref()?;
    let accounts = Api::<ServiceAccount>::namespaced(ctx.client().clone(), namespace);
    let field = "spec.jobTemplate.spec.template.spec.serviceAccountName";
    match accounts.get_opt(name).await {
        Ok(Some(_)) => None,
        Ok(None) => Some(format!(
            "{field}: ServiceAccount {name:?} not found in namespace {namespace:?}: the Jobs' pods cannot be created until it exists"
        )),
        // Whether it exists is only worth a warning: it does not hold up the CronJob.
        Err(error) => Some(format!(
            "{field}: could not read ServiceAccount {name:?}: {error}"
        )),
    }
}

/// Refuses a CronJob whose name is longer than [`MAX_NAME_LENGTH`] or whose schedule does not
/// parse, as kubebuilder's `apierrors.NewInvalid` does: a `422 Invalid` whose message is
/// `CronJob.batch.tutorial.kubebuilder.io "<name>" is invalid: <errors>` (each error
/// `<field path>: Invalid value: "<value>": <why>`, several in brackets), with a cause per field.
pub fn validate_cron_job(cronjob: &CronJob) -> super::Verdict {
    let mut invalid = Invalid::of(cronjob);
    let name = cronjob.name_any();
    if name.len() > MAX_NAME_LENGTH {
        let detail = format!("must be no more than {MAX_NAME_LENGTH} characters");
        invalid.push(FieldError::invalid("metadata.name", &name, &detail));
    }
    let schedule = &cronjob.spec.schedule;
    if let Err(error) = parse_schedule(schedule) {
        invalid.push(FieldError::invalid("spec.schedule", schedule, &error));
    }
    invalid.verdict()
}

/// The routes of these webhooks on the webhook server, whose [`Context`](super::Context) has
/// `client`.
pub fn routes(client: &kube::Client) -> axum::Router {
    axum::Router::new()
        .route(
            MUTATE_PATH,
            super::defaulting(CronJobWebhook, client.clone()),
        )
        .route(
            VALIDATE_PATH,
            super::validating(CronJobWebhook, client.clone()),
        )
}

/// These webhooks, as `make manifests` declares them.
pub fn webhooks() -> Vec<super::Webhook> {
    vec![
        super::Webhook {
            mutating: true,
            name: "mcronjob-v1.batch.tutorial.kubebuilder.io",
            path: MUTATE_PATH,
            group: "batch.tutorial.kubebuilder.io",
            version: "v1",
            resource: "cronjobs",
            operations: &["CREATE", "UPDATE"],
        },
        super::Webhook {
            mutating: false,
            name: "vcronjob-v1.batch.tutorial.kubebuilder.io",
            path: VALIDATE_PATH,
            group: "batch.tutorial.kubebuilder.io",
            version: "v1",
            resource: "cronjobs",
            operations: &["CREATE", "UPDATE"],
        },
    ]
}
