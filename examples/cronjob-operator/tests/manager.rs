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
//! (no webhook certificate needed), it runs a CronJob's due run on the system clock, as the
//! book's controller does: a Job named `<cronjob>-<scheduled Unix time>` with the
//! `scheduled-at` annotation, controlled by the CronJob, in `status.active`, and
//! `status.lastScheduleTime`.
//!
//! `CRONJOB_MANAGER=<path>` runs another build of the manager instead of this one's: the
//! benchmark's release build (`scripts/bench-cronjob.sh` runs this test on it first).

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
    let binary = std::env::var_os("CRONJOB_MANAGER").map_or_else(
        || env!("CARGO_BIN_EXE_cronjob-operator").into(),
        PathBuf::from,
    );
    let child = Command::new(binary)
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

    // The run of the last whole minute (or of the next, if a minute turned meanwhile): a Job
    // named after its Unix time, with the time in its annotation, controlled by the CronJob.
    let due = |job: &Job| {
        let name = job.name_any();
        let time: i64 = name.strip_prefix("every-minute-")?.parse().ok()?;
        (time > earlier).then_some((time, job.clone()))
    };
    eventually("the due run's Job", Duration::from_secs(60), || async {
        let list = jobs.list(&ListParams::default()).await.unwrap();
        list.items.iter().any(|job| due(job).is_some())
    })
    .await;
    let list = jobs.list(&ListParams::default()).await.unwrap();
    let (time, job) = list.items.iter().find_map(due).unwrap();
    assert_eq!(time % 60, 0, "a whole minute: {}", job.name_any());
    let scheduled = k8s_openapi::jiff::Timestamp::from_second(time).unwrap();
    assert_eq!(
        job.annotations()[SCHEDULED_TIME_ANNOTATION],
        scheduled.to_string(),
        "RFC 3339"
    );
    let owner = &job.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("CronJob", "every-minute")
    );
    assert_eq!(owner.controller, Some(true));
    assert_eq!(job.labels()["app.kubernetes.io/managed-by"], MANAGED_BY);

    // The status, rebuilt from the Jobs: both active (and a later run's, should a minute
    // turn meanwhile), the last scheduled time the run's or later.
    eventually("both in status.active", Duration::from_secs(30), || async {
        let status = cronjobs.get("every-minute").await.unwrap().status;
        status.is_some_and(|s| {
            let active: Vec<_> = s.active.iter().filter_map(|r| r.name.clone()).collect();
            active.contains(&format!("every-minute-{earlier}"))
                && active.contains(&job.name_any())
                && s.last_schedule_time
                    .is_some_and(|t| t.0.as_second() >= time)
        })
    })
    .await;
    drop(manager);
}
