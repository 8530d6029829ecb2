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

//! The manager binary as a black box on the real control plane (skipped without
//! `KUBEBUILDER_ASSETS`): started as the operator's ServiceAccount with kubebuilder's flags
//! (`--metrics-bind-address=0`, metrics off; `--health-probe-bind-address`;
//! `--leader-elect=false`) and `ENABLE_WEBHOOKS=false`, as the book's `main.go` is run locally
//! (no webhook certificate needed), it runs a CronJob's due run on the system clock.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use memop_runtime::operand::controller_reference;
use memop_test::envtest::{free_port, http_get};
use memop_test::{Backend, TestEnv, eventually};
use serde_json::json;

use cronjob_operator::api::batch::v1::CronJob;
use cronjob_operator::controller::cron_job::{MANAGED_BY, SCHEDULED_TIME_ANNOTATION};

/// The manager process, killed when dropped; its output in `log`.
struct Manager {
    child: Child,
    log: PathBuf,
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Manager {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

#[cfg_attr(envtest, tokio::test)]
#[cfg_attr(not(envtest), allow(dead_code))]
async fn the_manager_runs_due_runs_with_kubebuilders_flags_and_webhooks_off() {
    let Some(env) = TestEnv::real().await else {
        return;
    };
    let Backend::Real { kubeconfig, .. } = &env.backend else {
        unreachable!("TestEnv::real is the real control plane")
    };
    let probes = free_port().unwrap();
    let log = std::env::temp_dir().join(format!("cronjob-manager-{}.log", env.namespace));
    let output = std::fs::File::create(&log).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_cronjob-operator"))
        .arg("--metrics-bind-address=0")
        .arg(format!("--health-probe-bind-address=127.0.0.1:{probes}"))
        .arg("--leader-elect=false")
        .env("KUBECONFIG", kubeconfig)
        .env("ENABLE_WEBHOOKS", "false")
        .env("WATCH_NAMESPACE", &env.namespace)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(output.try_clone().unwrap())
        .stderr(output)
        .spawn()
        .expect("starting the manager");
    let manager = Manager { child, log };
    eventually("the manager ready", Duration::from_secs(60), || async {
        http_get(probes, "/readyz").is_some_and(|(code, _)| code == 200)
    })
    .await;
    assert!(
        manager.log().contains("ENABLE_WEBHOOKS=false"),
        "{}",
        manager.log()
    );

    // A CronJob whose last run, a Job of its own, was three minutes ago: the run of the last
    // whole minute is due at once.
    let cronjobs: Api<CronJob> = Api::namespaced(env.admin.clone(), &env.namespace);
    let sample = json!({
        "apiVersion": "batch.tutorial.kubebuilder.io/v1",
        "kind": "CronJob",
        "metadata": { "name": "every-minute" },
        "spec": {
            "schedule": "*/1 * * * *",
            "jobTemplate": { "spec": { "template": { "spec": {
                "containers": [{ "name": "hello", "image": "busybox" }],
                "restartPolicy": "OnFailure",
            } } } },
        },
    });
    let cronjob = cronjobs
        .create(
            &PostParams::default(),
            &serde_json::from_value(sample).unwrap(),
        )
        .await
        .unwrap();
    let jobs: Api<Job> = Api::namespaced(env.admin.clone(), &env.namespace);
    let earlier = k8s_openapi::jiff::Timestamp::now().as_second() / 60 * 60 - 180;
    let mut last: Job = serde_json::from_value(json!({
        "metadata": {
            "name": format!("every-minute-{earlier}"),
            "labels": { "app.kubernetes.io/managed-by": MANAGED_BY },
            "annotations": { SCHEDULED_TIME_ANNOTATION: k8s_openapi::jiff::Timestamp::from_second(earlier).unwrap().to_string() },
        },
        "spec": { "template": { "spec": {
            "containers": [{ "name": "hello", "image": "busybox" }],
            "restartPolicy": "OnFailure",
        } } },
    }))
    .unwrap();
    last.metadata.owner_references = Some(vec![controller_reference(&cronjob).unwrap()]);
    jobs.create(&PostParams::default(), &last).await.unwrap();

    eventually("the due run's Job", Duration::from_secs(60), || async {
        let list = jobs.list(&ListParams::default()).await.unwrap();
        list.items.iter().any(|job| {
            job.name_any() != format!("every-minute-{earlier}")
                && job.name_any().starts_with("every-minute-")
                && job.annotations().contains_key(SCHEDULED_TIME_ANNOTATION)
        })
    })
    .await;
    eventually("both in status.active", Duration::from_secs(30), || async {
        let status = cronjobs.get("every-minute").await.unwrap().status;
        status.is_some_and(|s| {
            s.active.len() == 2
                && s.last_schedule_time
                    .is_some_and(|t| t.0.as_second() > earlier)
        })
    })
    .await;
    drop(manager);
}
