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

//! Webhooks the API server calls over HTTPS.
//!
//! - Admission webhooks, before it stores an object: to set its defaults (mutating webhooks)
//!   and to refuse it (validating webhooks), as kubebuilder's `CustomDefaulter` and
//!   `CustomValidator` do. One module per kind holds what its webhooks do.
//! - The conversion webhook, for kinds served in several versions: it converts objects from
//!   the version they are stored in to the version a client asks for, and back, through one
//!   hub version per kind (`From` impls in `src/api/<group>/<spoke>/<kind>_conversion.rs`).
//!
//! This module lists them; `memop_runtime::webhook` serves them, and describes them for `make
//! manifests` (`config/webhook/manifests.yaml`). `memop create webhook` adds each kind at the
//! scaffold markers below; keep the marker lines.

use axum::Router;
use kube::Client;
use memop_runtime::manager::Shared;
pub use memop_runtime::webhook::{
    CONVERT_PATH, Context, Conversion, Defaulter, FieldError, Flags, Invalid, Refusal, Validator,
    Verdict, Webhook, defaulting, validating,
};

pub mod cron_job;
// +memop:scaffold:webhook-modules

/// Starts the webhook server with every webhook of the project (unless
/// `--enable-webhooks=false`); HTTP/2 only with `http2` (`--enable-http2`). `make run` serves
/// them on your machine (`--webhook-url`).
pub async fn serve(flags: &Flags, http2: bool, shared: &Shared) -> anyhow::Result<()> {
    let crds = memop_runtime::webhook::conversion_crds(&conversions(), crate::api::crds());
    let (operator, routes, webhooks) = (&crate::OPERATOR, routes(shared.client()), webhooks());
    memop_runtime::webhook::serve(operator, flags, http2, shared, routes, crds, &webhooks).await
}

/// Every webhook of the project, by its path; `client` (the manager's) is the admission
/// webhooks' [`Context::client`].
pub fn routes(client: &Client) -> Router {
    let of_each_kind: &[fn(&Client) -> Router] = &[
        cron_job::routes,
        // +memop:scaffold:webhook-routes
    ];
    let router = Router::new().route(
        CONVERT_PATH,
        memop_runtime::webhook::converting(conversions()),
    );
    of_each_kind
        .iter()
        .fold(router, |router, routes| router.merge(routes(client)))
}

/// Every conversion of the project: one per spoke version of each kind.
pub fn conversions() -> Vec<Conversion> {
    vec![
        Conversion::between::<crate::api::batch::v1::CronJob, crate::api::batch::v2::CronJob>(),
        // +memop:scaffold:conversions
    ]
}

/// Every webhook of the project, as `make manifests` declares them.
pub fn webhooks() -> Vec<Webhook> {
    let of_each_kind: &[Vec<Webhook>] = &[
        cron_job::webhooks(),
        // +memop:scaffold:webhook-manifests
    ];
    of_each_kind.concat()
}
