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

//! Tests of the CronJob controller, each run twice: on the in-memory API server of
//! `memop-test` and, when `KUBEBUILDER_ASSETS` is set, on a real kube-apiserver as the
//! operator's own ServiceAccount (see `memop_test::envtest`).
//! The controller is a skeleton: these prove its reconcile runs and its loop starts and stops.
//! Add scenarios here as you write the reconcile (see the Memcached controller's tests, from
//! `memop create api --group cache --kind Memcached`, for a complete set).

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, PostParams};
use memop_runtime::controller;
use memop_test::TestEnv;

use cronjob_operator::api::batch::v1::{CronJob, CronJobSpec};
use cronjob_operator::controller::cron_job::{Context, NAME, RESYNC, controller};
use memop_runtime::manager::Shared;

memop_test::scenarios!(
    reconcile_runs_and_writes_nothing_yet,
    the_controller_loop_reconciles_and_shuts_down,
);

fn sample() -> CronJob {
    let spec = CronJobSpec {
        foo: Some("bar".into()),
    };
    CronJob::new("cronjob-sample", spec)
}

/// The test's own view of cronjobs, as an administrator.
fn api(env: &TestEnv) -> Api<CronJob> {
    Api::namespaced(env.admin.clone(), &env.namespace)
}

fn shared(env: &TestEnv) -> Shared {
    Shared::new(
        &cronjob_operator::OPERATOR,
        env.operator.clone(),
        Some(env.namespace.clone()),
    )
}

async fn reconcile_runs_and_writes_nothing_yet(env: TestEnv) {
    let shared = shared(&env);
    let object = api(&env)
        .create(&PostParams::default(), &sample())
        .await
        .unwrap();
    env.requests.clear();
    let resync = controller::resync(&object, RESYNC);
    let reconciled = controller(&shared, Context)
        .reconcile(Arc::new(object))
        .await;
    assert_eq!(reconciled.unwrap(), resync);
    assert_eq!(env.requests.writes("*"), 0);
}

async fn the_controller_loop_reconciles_and_shuts_down(env: TestEnv) {
    let shared = shared(&env);
    let running = tokio::spawn(controller(&shared, Context).run());
    api(&env)
        .create(&PostParams::default(), &sample())
        .await
        .unwrap();
    let reconciled = format!(
        r#"controller_runtime_reconcile_total{{controller="{}",result="success"}} "#,
        NAME
    );
    let waited = tokio::time::timeout(Duration::from_secs(30), async {
        while !shared.metrics().encode().contains(&reconciled) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    waited.await.expect("the controller reconciled the object");
    shared.shutdown().trigger();
    let stopped = tokio::time::timeout(Duration::from_secs(5), running).await;
    stopped
        .expect("the controller stops on shutdown")
        .unwrap()
        .unwrap();
}
