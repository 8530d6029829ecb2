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

//! Prometheus metrics, named as controller-runtime's so dashboards and alerts carry over (the
//! `result` label is `success` or `error`; controller-runtime also counts requeues apart):
//! `controller_runtime_reconcile_total{controller, result}`,
//! `controller_runtime_reconcile_errors_total{controller}` and
//! `controller_runtime_reconcile_time_seconds{controller}`.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: &'static str,
    result: Outcome,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)] // label values are lowercase, as controller-runtime's
enum Outcome {
    success,
    error,
}

type TimeHistogram = Family<ControllerLabels, Histogram, fn() -> Histogram>;

pub struct Metrics {
    registry: Registry,
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    duration: TimeHistogram,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let reconciles = Family::<ResultLabels, Counter>::default();
        let errors = Family::<ControllerLabels, Counter>::default();
        let duration: TimeHistogram =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.005, 2.0, 14)));
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconciles.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            duration.clone(),
        );
        Self {
            registry,
            reconciles,
            errors,
            duration,
        }
    }
}

impl Metrics {
    /// Records one reconcile of `controller`.
    pub fn reconciled(&self, controller: &'static str, ok: bool, took: Duration) {
        let result = if ok { Outcome::success } else { Outcome::error };
        self.reconciles
            .get_or_create(&ResultLabels { controller, result })
            .inc();
        if !ok {
            self.errors
                .get_or_create(&ControllerLabels { controller })
                .inc();
        }
        self.duration
            .get_or_create(&ControllerLabels { controller })
            .observe(took.as_secs_f64());
    }

    /// The metrics in the Prometheus text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

pub fn router(metrics: Arc<Metrics>) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let metrics = metrics.clone();
            async move {
                (
                    [(
                        CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    metrics.encode(),
                )
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_reconciles_by_controller_and_result() {
        let metrics = Metrics::default();
        metrics.reconciled("memcached", true, Duration::from_millis(3));
        metrics.reconciled("memcached", false, Duration::from_millis(3));
        let text = metrics.encode();
        assert!(
            text.contains(
                r#"controller_runtime_reconcile_total{controller="memcached",result="success"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"controller_runtime_reconcile_errors_total{controller="memcached"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(
                "controller_runtime_reconcile_time_seconds_count{controller=\"memcached\"} 2"
            ),
            "{text}"
        );
    }
}
