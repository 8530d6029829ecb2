//! `examples/memcached-operator` is exactly what the README's two commands generate.
//! When a template changes, `scripts/update-example.sh` rewrites it.

mod common;

use std::path::Path;

#[test]
fn the_example_is_what_the_readme_commands_generate() {
    let scratch = tempfile::tempdir().unwrap();
    let fresh = scratch.path().join("memcached-operator");
    std::fs::create_dir(&fresh).unwrap();
    common::run(&fresh, &["init", "--domain", "example.com"]);
    common::run(&fresh, &["create", "api", "--group", "cache", "--kind", "Memcached"]);

    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/memcached-operator");
    let committed = common::tree(&example);
    let generated = common::tree(&fresh);
    let mut report = String::new();
    for path in committed.keys().chain(generated.keys()).collect::<std::collections::BTreeSet<_>>() {
        match (committed.get(path), generated.get(path)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => {
                let shown = path.display().to_string();
                let diff = similar::TextDiff::from_lines(a, b);
                let unified = diff.unified_diff().header(&shown, &shown).to_string();
                report.push_str(&unified);
            }
            (Some(_), None) => report.push_str(&format!("only in examples/: {}\n", path.display())),
            (None, _) => report.push_str(&format!("missing from examples/: {}\n", path.display())),
        }
    }
    assert!(report.is_empty(), "examples/memcached-operator is stale; run scripts/update-example.sh\n{report}");
}

/// The opt-in sections of `config/` (kubebuilder's `[CERTMANAGER]`, `[METRICS-WITH-CERTS]`,
/// `[PROMETHEUS]`, `[PROMETHEUS-WITH-CERTS]` and `[NETWORK POLICY]`) render once uncommented as
/// their comments say, and wire cert-manager's metrics certificate to the Service, the manager
/// and the ServiceMonitor.
#[test]
fn the_opt_in_sections_of_config_render_when_uncommented() {
    let scratch = tempfile::tempdir().unwrap();
    let config = scratch.path().join("config");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/memcached-operator/config");
    copy(&example, &config);

    let uncomment = |file: &str, from: &str, lines: &[&str]| {
        let path = config.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let start = text.find(from).unwrap_or_else(|| panic!("{file} has no {from:?}"));
        let (head, tail) = text.split_at(start);
        let mut tail = tail.to_string();
        for line in lines {
            let commented = format!("#{line}");
            assert!(tail.contains(&commented), "{file}: no {commented:?}");
            tail = tail.replace(&commented, line);
        }
        std::fs::write(&path, format!("{head}{tail}")).unwrap();
    };
    uncomment(
        "default/kustomization.yaml",
        "resources:",
        &["- ../certmanager", "- ../prometheus", "- ../network-policy"],
    );
    uncomment(
        "default/kustomization.yaml",
        "[METRICS-WITH-CERTS]",
        &["- path: cert_metrics_manager_patch.yaml", "  target:", "    kind: Deployment"],
    );
    // Every line of the replacements block, which starts at `#replacements:`.
    let path = config.join("default/kustomization.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let at = text.find("#replacements:").expect("the cert-manager replacements");
    // Up to the blank line that ends it.
    let end = text[at..].find("\n\n").map_or(text.len(), |n| at + n + 1);
    let block: String =
        text[at..end].lines().map(|line| format!("{}\n", line.strip_prefix('#').unwrap_or(line))).collect();
    std::fs::write(&path, format!("{}{block}{}", &text[..at], &text[end..])).unwrap();
    uncomment(
        "prometheus/kustomization.yaml",
        "[PROMETHEUS-WITH-CERTS]",
        &["patches:", "  - path: monitor_tls_patch.yaml", "    target:", "      kind: ServiceMonitor"],
    );

    let rendered = common::check(scratch.path(), "kubectl", &["kustomize", "config/default"]);
    let service = "memcached-operator-controller-manager-metrics-service.memcached-operator-system.svc";
    for expected in [
        format!("- {service}\n"),
        format!("- {service}.cluster.local\n"),
        format!("serverName: {service}\n"),
        "--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs".to_string(),
        "secretName: metrics-server-cert".to_string(),
        "kind: NetworkPolicy".to_string(),
        "kind: Issuer".to_string(),
    ] {
        assert!(rendered.contains(&expected), "no {expected:?} in\n{rendered}");
    }
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
