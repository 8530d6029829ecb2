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
//! server asks before it stores a CronJob. Fill in [`default`] and [`validate`]; the rest
//! (serving them, `config/webhook/manifests.yaml`) follows from [`webhooks`].

use kube::ResourceExt;

// Only the kind is imported by name, so that no kind can clash with an import here.
use crate::api::batch::v1::CronJob;

/// Where the API server sends a CronJob to be defaulted.
pub const MUTATE_PATH: &str = "/mutate-batch-tutorial-kubebuilder-io-v1-cronjob";

/// Where the API server asks whether to store a CronJob.
pub const VALIDATE_PATH: &str = "/validate-batch-tutorial-kubebuilder-io-v1-cronjob";

/// Sets the defaults of a CronJob the API server is about to create or update (kubebuilder's
/// `CustomDefaulter`); the API server stores what this leaves.
///
/// A constant default is better declared on the type (`#[serde(default = ...)]` becomes the
/// CRD schema's `default`, which the API server applies itself). This is for the rest:
/// defaults that depend on other fields, or on the object's name or namespace. For example,
/// to label each CronJob with its name:
///
/// ```ignore
/// let name = cronjob.name_any();
/// cronjob.labels_mut().entry("app.kubernetes.io/instance".into()).or_insert(name);
/// ```
pub fn default(cronjob: &mut CronJob) {
    tracing::debug!(name = %cronjob.name_any(), "defaulting CronJob");
}

/// Decides whether the API server may store a change to a CronJob (kubebuilder's
/// `CustomValidator`): `Ok` with warnings for the client (kubectl prints them), or `Err` with
/// the message the client sees.
///
/// What the CRD schema can say (ranges, patterns, required fields) is better said there; this
/// is for rules across fields, or between the old and the new object. For example, to refuse
/// names too long for the objects derived from them:
///
/// ```ignore
/// Change::Create(new) if new.name_any().len() > 52 => Err("names are at most 52 characters".into()),
/// ```
///
/// Deletions come here only if [`webhooks`] lists DELETE among the operations.
pub fn validate(change: super::Change<'_, CronJob>) -> super::Verdict {
    let (super::Change::Create(cronjob)
    | super::Change::Update { new: cronjob, .. }
    | super::Change::Delete(cronjob)) = change;
    tracing::debug!(name = %cronjob.name_any(), "validating CronJob");
    Ok(Vec::new())
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
