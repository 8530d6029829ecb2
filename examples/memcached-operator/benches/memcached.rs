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
//! Memcacheds on the in-memory API server of `tests/support`, runs the real controller until
//! every one has its Deployment and `Available=True`, and prints the wall time, the API
//! requests per object, and the writes of a steady-state pass (reconciling everything again
//! once it is in sync; the target is zero). Set `OBJECTS` to change the count (default 1000).
//!
//! A benchmark, not a test: it asserts nothing about time, so it cannot flake on a slow
//! machine. For the peak memory, run the binary under `/usr/bin/time -v`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams, PostParams};
use support::ApiServer;

use memcached_operator::api::cache::v1alpha1::{Memcached, MemcachedSpec};
use memcached_operator::controller::memcached::{self, Context, reconcile};
use memcached_operator::manager::Shared;

const NAMESPACE: &str = "default";

#[tokio::main]
async fn main() {
    let count: usize = std::env::var("OBJECTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    // Deployments roll out at once, as if every pod started instantly.
    let server = ApiServer::with_workloads();
    let shared = Shared::new(server.client(), None);
    let objects: Api<Memcached> = Api::namespaced(shared.client.clone(), NAMESPACE);
    let deployments: Api<Deployment> = Api::namespaced(shared.client.clone(), NAMESPACE);
    for i in 0..count {
        let mut object = Memcached::new(&format!("memcached-{i}"), MemcachedSpec { size: 2 });
        object.metadata.namespace = Some(NAMESPACE.into());
        objects
            .create(&PostParams::default(), &object)
            .await
            .expect("create");
    }
    server.clear_requests();

    let started = Instant::now();
    let controller = tokio::spawn(memcached::run(shared.clone()));
    // Each round of polling below makes two list requests of its own.
    let mut polls = 0;
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
        polls += 2;
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
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = started.elapsed();
    let calls = server.requests().len() - polls;
    let writes = server.writes("*");

    // Stop the controller first: what it still has queued (reconciles of its own last writes)
    // would otherwise count as writes of the pass below.
    shared.shutdown.trigger();
    controller
        .await
        .expect("controller task")
        .expect("controller");

    // The steady-state pass: reconcile every object once more, as a resync would.
    server.clear_requests();
    let ctx = Arc::new(Context::new(&shared));
    for object in objects
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
    {
        reconcile(Arc::new(object), ctx.clone())
            .await
            .expect("reconcile");
    }
    let steady_writes = server.writes("*");

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
