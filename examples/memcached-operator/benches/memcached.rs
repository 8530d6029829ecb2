// Copyright 2026 The memcached-operator Authors.
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

//! How the Memcached controller scales: `cargo bench --bench memcached` creates many
//! Memcacheds, runs the real controller until every one has its Deployment and
//! `Available=True`, and prints the wall time, the API requests per object the controller sent,
//! and the writes of a steady-state pass (reconciling everything again once it is in sync; the
//! target is zero). Set `OBJECTS` to change the count (default 1000).
//!
//! It runs on the in-memory API server of `memop-test`, or with `BACKEND=real` on the real
//! control plane of `KUBEBUILDER_ASSETS` (`make setup-envtest`), as the operator's
//! ServiceAccount. On the in-memory server `Workloads` plays the deployment controller,
//! reporting each Deployment's pods up as soon as its spec is written; on a real control plane
//! that rolls out for real (memop's `scripts/envtest/build.sh` assets: kube-controller-manager,
//! kube-scheduler, kwok) the pods come up as they would in a cluster, which takes longer.
//!
//! A benchmark, not a test: it asserts nothing about time, so it cannot flake on a slow
//! machine. For the peak memory, run the binary under `/usr/bin/time -v`: with `BACKEND=real`
//! that is the controller's alone, as the control plane runs in processes of its own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams, PostParams};
use memop_test::TestEnv;
use memop_test::workloads::Workloads;

use memcached_operator::api::cache::v1alpha1::{Memcached, MemcachedSpec};
use memcached_operator::controller::memcached::{Context, controller};
use memop_runtime::manager::Shared;

/// The operand image, as `config/manager/manager.yaml` sets it.
const IMAGE: &str = "memcached:1.6.26-alpine3.19";

#[tokio::main]
async fn main() {
    let count: usize = std::env::var("OBJECTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let env = match std::env::var("BACKEND").as_deref() {
        Ok("real") => TestEnv::real()
            .await
            .expect("BACKEND=real needs KUBEBUILDER_ASSETS (make setup-envtest)"),
        _ => TestEnv::in_memory(),
    };
    let _pods = Workloads::start(&env);
    let shared = Shared::new(
        &memcached_operator::OPERATOR,
        env.operator.clone(),
        Some(env.namespace.clone()),
    );
    let objects: Api<Memcached> = Api::namespaced(env.admin.clone(), &env.namespace);
    let deployments: Api<Deployment> = Api::namespaced(env.admin.clone(), &env.namespace);
    for i in 0..count {
        let object = Memcached::new(&format!("memcached-{i}"), MemcachedSpec { size: 2 });
        objects
            .create(&PostParams::default(), &object)
            .await
            .expect("create");
    }
    env.requests.clear();

    let started = Instant::now();
    let ctx = Context::with_image(&shared, Some(IMAGE.into()));
    let running = tokio::spawn(controller(&shared, ctx).run());
    let available = |o: &Memcached| {
        let conditions = o
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        conditions
            .iter()
            .any(|c| c.type_ == "Available" && c.status == "True")
    };
    loop {
        // The benchmark's own polling goes through the admin client: it is not counted.
        let converged = objects.list(&ListParams::default()).await.expect("list");
        let ready = converged.items.iter().filter(|o| available(o)).count();
        let created = deployments
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len();
        if ready == count && created == count {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "no convergence after 10 minutes"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = started.elapsed();
    let calls = env.requests.requests().len();
    let writes = env.requests.writes("*");

    // Stop the controller first: what it still has queued (reconciles of its own last writes)
    // would otherwise count as writes of the pass below.
    shared.shutdown().trigger();
    running.await.expect("controller task").expect("controller");

    // The steady-state pass: reconcile every object once more, as a resync would.
    env.requests.clear();
    let controller = controller(&shared, Context::with_image(&shared, Some(IMAGE.into())));
    for object in objects
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
    {
        controller
            .reconcile(Arc::new(object))
            .await
            .expect("reconcile");
    }
    let steady_writes = env.requests.writes("*");

    let backend = if env.is_real() {
        "real control plane"
    } else {
        "in-memory API server"
    };
    println!("back end:                        {backend}");
    println!("objects:                         {count}");
    println!(
        "time to converge:                {:.2} s",
        took.as_secs_f64()
    );
    println!(
        "API calls per object:            {:.1} ({} writes)",
        calls as f64 / count as f64,
        writes
    );
    println!("writes in a steady-state pass:   {steady_writes}");
}
