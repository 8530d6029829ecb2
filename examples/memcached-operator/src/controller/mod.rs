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

//! The controllers, one module per API, and what they share: the error type, the retry
//! backoff, status conditions, and the comparison that keeps reconciles free of needless writes.
//!
//! `memop create api` adds each controller's module at the marker below.

pub mod memcached;
// +memop:scaffold:controller-modules

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use serde_json::Value;

/// Everything a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("Kubernetes API request failed: {0}")]
    Kube(#[from] kube::Error),
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<Error>>),
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Per-object exponential backoff for failed reconciles, as controller-runtime's default rate
/// limiter: 5 ms doubling on each consecutive failure, at most 5 minutes; a success resets it.
#[derive(Default)]
pub struct Backoff {
    failures: Mutex<HashMap<String, u32>>,
}

impl Backoff {
    const BASE: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(300);

    /// Records a failure of `key` and returns when to retry it.
    pub fn failed<K: kube::Resource<DynamicType = ()>>(&self, key: &ObjectRef<K>) -> Action {
        let mut failures = self.failures.lock().expect("backoff lock");
        let count = failures.entry(key.to_string()).or_default();
        let delay = Self::BASE
            .saturating_mul(2u32.saturating_pow(*count))
            .min(Self::MAX);
        *count = count.saturating_add(1);
        Action::requeue(delay)
    }

    pub fn succeeded<K: kube::Resource<DynamicType = ()>>(&self, key: &ObjectRef<K>) {
        self.failures
            .lock()
            .expect("backoff lock")
            .remove(&key.to_string());
    }
}

/// The status conditions of one object, being updated for one generation of its spec.
pub struct Conditions<'a> {
    list: &'a mut Vec<Condition>,
    generation: Option<i64>,
}

impl<'a> Conditions<'a> {
    pub fn new(list: &'a mut Vec<Condition>, generation: Option<i64>) -> Self {
        Self { list, generation }
    }

    /// Sets condition `type_`, keeping its `lastTransitionTime` unless its status changes (as
    /// `meta.SetStatusCondition` does in Go), so that setting it again changes nothing.
    pub fn set(&mut self, type_: &str, status: bool, reason: &str, message: String) {
        let status = if status { "True" } else { "False" };
        let last_transition_time = match self.list.iter().find(|c| c.type_ == type_) {
            Some(existing) if existing.status == status => existing.last_transition_time.clone(),
            // The API server keeps whole seconds; so do we, so that a re-read compares equal.
            _ => Time(Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_default()),
        };
        let condition = Condition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: reason.to_string(),
            message,
            observed_generation: self.generation,
            last_transition_time,
        };
        match self.list.iter_mut().find(|c| c.type_ == type_) {
            Some(existing) => *existing = condition,
            None => self.list.push(condition),
        }
    }
}

/// True when every field set in `desired` has the same value in `observed`.
///
/// The API server fills in defaults (a container's `terminationMessagePath`, a port's
/// `protocol`, …), so an object it returns never equals the one we sent; what matters is that
/// everything we asked for is there.
pub fn contains(observed: &Value, desired: &Value) -> bool {
    match (observed, desired) {
        (Value::Object(o), Value::Object(d)) => d
            .iter()
            .all(|(k, v)| o.get(k).is_some_and(|ov| contains(ov, v))),
        // A list of objects is usually a map keyed by a field (containers by name, ports by
        // number) that other field managers may add to: each wanted element must be there.
        (Value::Array(o), Value::Array(d)) if d.iter().all(Value::is_object) => {
            d.iter().all(|dv| o.iter().any(|ov| contains(ov, dv)))
        }
        // A list of scalars (a command, capabilities) is atomic: it must be equal.
        (Value::Array(o), Value::Array(d)) => o == d,
        _ => observed == desired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    #[test]
    fn contains_ignores_server_defaults_but_not_changes() {
        let desired = json!({"spec": {"replicas": 2, "ports": [{"containerPort": 80}]}});
        let observed = json!({"spec": {"replicas": 2, "ports": [{"containerPort": 80, "protocol": "TCP"}], "paused": false}});
        assert!(contains(&observed, &desired));
        let scaled = json!({"spec": {"replicas": 1, "ports": [{"containerPort": 80}]}});
        assert!(!contains(&scaled, &desired));
        let extra_port = json!({"spec": {"replicas": 2, "ports": [{"containerPort": 81}, {"containerPort": 80}]}});
        assert!(
            contains(&extra_port, &desired),
            "another manager's port is not drift"
        );
        let command = json!({"command": ["memcached", "-v"]});
        assert!(!contains(
            &json!({"command": ["memcached", "-v", "-x"]}),
            &command
        ));
    }

    #[test]
    fn backoff_doubles_and_resets() {
        let backoff = Backoff::default();
        let key = ObjectRef::<ConfigMap>::new("a").within("ns");
        assert_eq!(
            backoff.failed(&key),
            Action::requeue(Duration::from_millis(5))
        );
        assert_eq!(
            backoff.failed(&key),
            Action::requeue(Duration::from_millis(10))
        );
        for _ in 0..30 {
            backoff.failed(&key);
        }
        assert_eq!(
            backoff.failed(&key),
            Action::requeue(Duration::from_secs(300))
        );
        backoff.succeeded(&key);
        assert_eq!(
            backoff.failed(&key),
            Action::requeue(Duration::from_millis(5))
        );
    }

    #[test]
    fn setting_a_condition_again_keeps_its_transition_time() {
        let long_ago = Time(Timestamp::from_second(946_684_800).unwrap()); // 2000-01-01
        let mut list = vec![Condition {
            type_: "Available".into(),
            status: "True".into(),
            reason: "Reconciling".into(),
            message: "ok".into(),
            observed_generation: Some(1),
            last_transition_time: long_ago.clone(),
        }];
        Conditions::new(&mut list, Some(2)).set("Available", true, "Reconciling", "still".into());
        assert_eq!(list.len(), 1);
        assert_eq!(
            list[0].last_transition_time, long_ago,
            "same status: time kept"
        );
        assert_eq!(list[0].message, "still");
        assert_eq!(list[0].observed_generation, Some(2));
        Conditions::new(&mut list, Some(2)).set("Available", false, "Failed", "down".into());
        assert_ne!(
            list[0].last_transition_time, long_ago,
            "status changed: time moves"
        );
        Conditions::new(&mut list, Some(2)).set("Degraded", false, "Reconciling", "fine".into());
        assert_eq!(list.len(), 2);
    }
}
