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

//! How the Memcached controller scales: `cargo bench --bench memcached` (`make bench`)
//! creates many Memcacheds, runs the real controller until every one has its Deployment and
//! `Available=True`, and prints the project's scale envelope: the wall time; the API requests per
//! object the controller sent, and its writes against the floor (each object's Deployment and
//! one status write); the writes of a steady-state pass (reconciling everything again once it is
//! in sync; the target is zero); the 99th percentile of the reconcile time (the bucket of
//! `controller_runtime_reconcile_time_seconds` it falls in); and, on the real control plane, the
//! memory each object costs the controller and how many objects one replica holds within the
//! memory limit of `config/manager/manager.yaml`. Set `OBJECTS` to change the count (default
//! 1000).
//!
//! It runs on the in-memory API server of `memop-test`, or with `BACKEND=real` on the real
//! control plane of `KUBEBUILDER_ASSETS` (`make setup-envtest`), as the operator's
//! ServiceAccount. On the in-memory server `Workloads` plays the deployment controller,
//! reporting each Deployment's pods up as soon as its spec is written; on a real control plane
//! that rolls out for real (memop's `scripts/envtest/build.sh` assets: kube-controller-manager,
//! kube-scheduler, kwok) the pods come up as they would in a cluster, which takes longer. The
//! memory is measured only there: the in-memory server keeps its objects in this process.
//!
//! A benchmark, not a test: it asserts nothing about time, so it cannot flake on a slow
//! machine. For the peak memory, run the binary under `/usr/bin/time -v`: with `BACKEND=real`
//! that is the controller's alone, as the control plane runs in processes of its own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams, PostParams};
use memop_test::workloads::Workloads;
use memop_test::{TestEnv, heap};

use memcached_operator::api::cache::v1alpha1::{Memcached, MemcachedSpec};
use memcached_operator::controller::memcached::{Context, controller};
use memop_runtime::manager::Shared;

/// The system allocator, counting the bytes allocated and not yet freed: what the controller's
/// caches hold once the benchmark's own lists are dropped.
#[global_allocator]
static COUNTING_ALLOCATOR: heap::Counting = heap::Counting;

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
        // The spec's other fields (those you add to the type) from `Default`, so that the
        // benchmark keeps compiling as the type grows.
        #[allow(clippy::needless_update)]
        let spec = MemcachedSpec {
            size: 2,
            ..Default::default()
        };
        let object = Memcached::new(&format!("memcached-{i}"), spec);
        objects
            .create(&PostParams::default(), &object)
            .await
            .expect("create");
    }
    env.requests.clear();
    let (live_before, resident_before) = (heap::live(), resident_bytes());

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
    let requests = env.requests.requests();
    let calls = requests.len();
    let writes = env.requests.writes("*");
    let mut writes_by_resource = std::collections::BTreeMap::<String, usize>::new();
    for request in requests.iter().filter(|r| r.verb.is_write() && !r.dry_run) {
        *writes_by_resource
            .entry(request.resource.clone())
            .or_default() += 1;
    }
    // What the controller's caches (every Memcached and every Deployment) hold, with the
    // control plane in processes of its own; the request log of the calls counted above goes
    // first.
    env.requests.clear();
    let per_object = heap::live().saturating_sub(live_before) / count;
    let p99 = reconcile_time_p99(&shared.metrics().encode());

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
    // The floor: no convergence writes less than each object's Deployment and one status.
    let by_resource: Vec<String> = writes_by_resource
        .iter()
        .map(|(resource, n)| format!("{resource} {:.2}", *n as f64 / count as f64))
        .collect();
    println!(
        "writes per object:               {:.2}, the floor being 2 ({})",
        writes as f64 / count as f64,
        by_resource.join(", ")
    );
    println!("writes in a steady-state pass:   {steady_writes}");
    match p99 {
        Some(seconds) => println!("reconcile time, 99th percentile: <= {seconds} s"),
        None => println!("reconcile time, 99th percentile: no reconcile measured"),
    }
    let (limit, quantity) = memory_limit();
    match resident_before {
        Some(base) if env.is_real() && per_object > 0 => {
            // A relist (a watch that expired, a restart of the API server) is applied to the
            // caches in place: it needs no room for a second copy.
            let room = limit.saturating_sub(base) / per_object as u64;
            println!(
                "memory per object:               {per_object} bytes (the controller's caches)"
            );
            println!("objects per replica at {quantity}:    {room}");
        }
        _ => println!("memory per object:               measured with BACKEND=real only"),
    }
}

/// This process's resident memory, in bytes (Linux; `None` elsewhere).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The upper bound of the bucket of `controller_runtime_reconcile_time_seconds` that holds
/// the 99th percentile, from the metrics' text.
fn reconcile_time_p99(metrics: &str) -> Option<f64> {
    let buckets: Vec<(f64, u64)> = metrics
        .lines()
        .filter(|line| line.starts_with("controller_runtime_reconcile_time_seconds_bucket{"))
        .filter_map(|line| {
            let bound = line.split("le=\"").nth(1)?.split('"').next()?;
            let bound = if bound == "+Inf" {
                f64::INFINITY
            } else {
                bound.parse().ok()?
            };
            Some((bound, line.rsplit(' ').next()?.parse().ok()?))
        })
        .collect();
    let total = buckets.last()?.1;
    let wanted = total.checked_mul(99)?.div_ceil(100).max(1);
    buckets
        .iter()
        .find(|(_, count)| *count >= wanted)
        .map(|(bound, _)| *bound)
}

/// The manager's memory limit in `config/manager/manager.yaml`, in bytes and as written.
fn memory_limit() -> (u64, String) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/manager/manager.yaml");
    let text = std::fs::read_to_string(&path).expect("config/manager/manager.yaml");
    let documents: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&text).expect("config/manager/manager.yaml is YAML");
    let quantity = documents
        .iter()
        .find(|document| document["kind"] == "Deployment")
        .and_then(|manager| {
            manager.pointer("/spec/template/spec/containers/0/resources/limits/memory")
        })
        .and_then(|limit| limit.as_str())
        .expect("a memory limit on the manager's container")
        .to_string();
    let (number, unit) = quantity.split_at(quantity.trim_end_matches(char::is_alphabetic).len());
    let scale: u64 = match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        other => panic!("memory limit {quantity}: unit {other} not understood"),
    };
    let number: u64 = number.parse().expect("a whole number in the memory limit");
    (number * scale, quantity)
}
