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

//! The CronJob controller, a skeleton: it watches CronJobs and calls
//! [`Context::apply`] for each change, which does nothing yet. Write yours there: compare what the
//! CronJob's spec asks for with what exists, change only what differs, and report in the
//! status. The Memcached controller that `memop create api --group cache --kind Memcached`
//! generates is a complete example (a Deployment per object, conditions, a finalizer, events).

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::runtime::controller::Action;

use memop_runtime::controller::{Builder, Controller, Reconciler, Report, Result};
use memop_runtime::manager::{Manager, Shared};
use memop_runtime::rbac::Rule;

use crate::api::batch::v1::CronJob;

/// The controller's name in logs, metrics and readiness.
pub const NAME: &str = "cronjob";
/// How often an object is looked at again even when nothing changed.
pub const RESYNC: Duration = Duration::from_secs(300);

/// Exactly the API access this controller uses; `make manifests` turns it into the role.
/// Add a rule here for everything your reconcile reads or writes (for instance
/// `cronjobs/status` with `patch` to write the status), then run `make manifests`.
pub const RULES: &[Rule] = &[Rule {
    api_group: "batch.tutorial.kubebuilder.io",
    resources: &["cronjobs"],
    verbs: &["list", "watch"],
}];

/// What the reconcile of a CronJob works with. Add what it needs, such as a `kube::Client`
/// (`shared.client().clone()`).
pub struct Context;

/// Registers the controller with the manager; `main.rs` calls this.
pub fn register(manager: &mut Manager) {
    manager.register(NAME, |shared| controller(&shared, Context).run());
}

/// The controller: every CronJob, reconciled with [`Context`]. memop-runtime runs around
/// each reconcile (time limit, metrics, backoff, recovery from a panic) and writes the status
/// conditions it reports. To react to changes of the objects it creates, add `.owns(..)`
/// (`memop_runtime::operand::Operand`); for cleanup before deletion, `.finalizer(..)` and
/// [`Reconciler::cleanup`].
pub fn controller(shared: &Shared, ctx: Context) -> Controller<Context> {
    Builder::new(NAME, shared).resync(RESYNC).build(ctx)
}

impl Reconciler for Context {
    type Object = CronJob;

    fn conditions(object: &CronJob) -> &[Condition] {
        object
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default()
    }

    /// Your reconcile logic. It must be idempotent: it runs again for every change and every
    /// [`RESYNC`], so it should only write what differs from what it finds. Report in `report`
    /// (conditions, events; add `cronjobs/status` with `patch` to [`RULES`] once it sets a
    /// condition), and return an error to be retried with backoff.
    async fn apply(&self, object: &CronJob, report: &mut Report) -> Result<Action> {
        tracing::info!(name = %object.name_any(), foo = ?object.spec.foo, "reconciling");
        Ok(report.resync())
    }
}
