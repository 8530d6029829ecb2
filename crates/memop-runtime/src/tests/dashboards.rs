//! The Grafana dashboards every project gets (`grafana/`, here as memop's Memcached example has
//! them) chart only metrics the manager exports: a panel on a metric that does not exist would
//! stay empty without saying why.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crate::manager::Metrics;
use serde_json::Value;

/// Every sample name the manager's metrics can have: a family shows once it has a series, so
/// each is given one.
async fn exported() -> BTreeSet<String> {
    use tower::{Layer, ServiceExt};

    let metrics = Metrics::default();
    metrics.controller("example", 1);
    drop(metrics.start("example"));
    metrics.reconciled("example", true, Duration::from_millis(1));
    metrics.retried("example");
    metrics.leading("example", true);
    let api = tower::service_fn(|_: http::Request<()>| async {
        Ok::<_, std::convert::Infallible>(http::Response::new(()))
    });
    let request = http::Request::get("/api").body(()).unwrap();
    let counted = metrics.count_requests("localhost:6443".into()).layer(api);
    counted.oneshot(request).await.unwrap();
    let mut names = BTreeSet::new();
    for line in metrics.encode().lines() {
        let mut words = line.split_whitespace();
        let (Some("#"), Some("TYPE"), Some(family), Some(kind)) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            continue;
        };
        match kind {
            "counter" => names.insert(format!("{family}_total")),
            "histogram" => {
                names.insert(format!("{family}_sum"));
                names.insert(format!("{family}_count"));
                names.insert(format!("{family}_bucket"))
            }
            _ => names.insert(family.to_string()),
        };
    }
    names
}

/// The metric names a PromQL expression uses (every identifier of a prefix the manager's
/// metrics have).
fn metrics_in(expr: &str) -> Vec<String> {
    const PREFIXES: [&str; 5] = [
        "controller_runtime_",
        "workqueue_",
        "rest_client_",
        "leader_election_",
        "process_",
    ];
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| PREFIXES.iter().any(|prefix| word.starts_with(prefix)))
        .map(str::to_string)
        .collect()
}

fn expressions(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            for (key, value) in object {
                match (key.as_str(), value) {
                    ("expr" | "query" | "definition", Value::String(expr)) => {
                        found.push(expr.clone())
                    }
                    _ => expressions(value, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| expressions(item, found)),
        _ => {}
    }
}

#[tokio::test]
async fn dashboards_chart_only_exported_metrics() {
    let exported = exported().await;
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/memcached-operator/grafana");
    let mut dashboards = 0;
    for entry in std::fs::read_dir(&dir).expect("grafana/") {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        dashboards += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let dashboard: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        let mut found = Vec::new();
        expressions(&dashboard, &mut found);
        assert!(!found.is_empty(), "{} has no queries", path.display());
        for expr in found {
            let metrics = metrics_in(&expr);
            assert!(
                !metrics.is_empty(),
                "{}: no metric in {expr}",
                path.display()
            );
            for metric in metrics {
                assert!(
                    exported.contains(&metric),
                    "{} charts {metric}, which the manager does not export ({expr})",
                    path.display()
                );
            }
        }
    }
    assert!(dashboards > 0, "no dashboard in grafana/");
}
