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
//! kubebuilder's field paths and messages.

use kube::ResourceExt;
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

/// Sets the defaults of a CronJob the API server is about to create or update: [`DEFAULTS`].
pub fn default(cronjob: &mut CronJob) {
    tracing::info!(name = %cronjob.name_any(), "Defaulting for CronJob");
    DEFAULTS.apply(cronjob);
}

/// Decides whether the API server may store a CronJob: created or updated, its name and
/// schedule must be valid ([`validate_cron_job`]); a deletion is always allowed.
pub fn validate(change: super::Change<'_, CronJob>) -> super::Verdict {
    match change {
        super::Change::Create(cronjob) => {
            tracing::info!(name = %cronjob.name_any(), "Validation for CronJob upon creation");
            validate_cron_job(cronjob)
        }
        super::Change::Update { new, .. } => {
            tracing::info!(name = %new.name_any(), "Validation for CronJob upon update");
            validate_cron_job(new)
        }
        super::Change::Delete(_) => Ok(Vec::new()),
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

/// The routes of these webhooks on the webhook server.
pub fn routes() -> axum::Router {
    axum::Router::new()
        .route(MUTATE_PATH, super::defaulting::<CronJob>(default))
        .route(VALIDATE_PATH, super::validating::<CronJob>(validate))
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
