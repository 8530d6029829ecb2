//! The `config/` of a project with webhooks renders with `kubectl kustomize` both ways its
//! comments describe: with cert-manager (the default), and with the manager keeping its own
//! webhook certificate (`[WEBHOOK-CERTS]`), where the names the manager's flag and its roles
//! carry must be the names kustomize gives the objects.

use std::path::Path;

use serde::Deserialize;
use serde_yaml::Value;

use crate::common;

/// Every object `kubectl kustomize config/default` renders in `dir`.
fn render(dir: &Path) -> Vec<Value> {
    let yaml = common::check(dir, "kubectl", &["kustomize", "config/default"]);
    serde_yaml::Deserializer::from_str(&yaml).map(|doc| Value::deserialize(doc).unwrap()).collect()
}

fn named<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap()
}

#[test]
fn webhook_certificates_render_with_cert_manager_or_without() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("cache-operator");
    std::fs::create_dir(&dir).unwrap();
    common::run(&dir, &["init", "--domain", "example.com"]);
    common::run(&dir, &["create", "api", "--group", "cache", "--kind", "Memcached"]);
    common::run(&dir, &["create", "api", "--group", "cache", "--version", "v1", "--kind", "Memcached"]);
    let webhook = ["create", "webhook", "--group", "cache", "--kind", "Memcached"];
    common::run(
        &dir,
        &[&webhook[..], &["--version", "v1alpha1", "--defaulting", "--programmatic-validation"]].concat(),
    );
    common::run(&dir, &[&webhook[..], &["--version", "v1", "--conversion"]].concat());

    // cert-manager: its Certificate, and its CA injected into the webhook configurations and
    // into the CRD, whose conversion calls the webhook Service (renamed by the prefix).
    let objects = render(&dir);
    // The webhook's; the metrics' is left out while nothing uses it ([METRICS-WITH-CERTS]), as
    // the chart leaves it out.
    let certificates: Vec<&str> = named(&objects, "Certificate").into_iter().map(name).collect();
    assert_eq!(certificates, ["cache-operator-serving-cert"]);
    let service = name(named(&objects, "Service").into_iter().find(|s| name(s).ends_with("webhook-service")).unwrap());
    assert_eq!(service, "cache-operator-webhook-service");
    let crd = named(&objects, "CustomResourceDefinition")[0];
    let injected = "cert-manager.io/inject-ca-from";
    assert_eq!(crd["metadata"]["annotations"][injected], "cache-operator-system/cache-operator-serving-cert");
    assert_eq!(crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["name"], service);
    for kind in ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"] {
        assert!(named(&objects, kind)[0]["metadata"]["annotations"][injected].is_string(), "{kind}");
    }

    // [WEBHOOK-CERTS], as its comments say.
    let path = dir.join("config/default/kustomization.yaml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    for (from, to) in [
        ("\n- ../certmanager\n", "\n#- ../certmanager\n"),
        ("\n#- ../webhook-certs\n", "\n- ../webhook-certs\n"),
        (
            "\n#- path: manager_webhook_certs_patch.yaml\n#  target:\n#    kind: Deployment\n",
            "\n- path: manager_webhook_certs_patch.yaml\n  target:\n    kind: Deployment\n",
        ),
    ] {
        assert!(text.contains(from), "no {from:?} in {text}");
        text = text.replacen(from, to, 1);
    }
    let start = text.find("\nreplacements:\n").expect("cert-manager's replacements") + 1;
    let end = text.find("# +memop:scaffold:webhook-replacements").unwrap();
    let commented: String = text[start..end].lines().map(|line| format!("#{line}\n")).collect();
    text = format!("{}{commented}{}", &text[..start], &text[end..]);
    std::fs::write(&path, text).unwrap();

    let objects = render(&dir);
    assert!(named(&objects, "Certificate").is_empty() && named(&objects, "Issuer").is_empty());
    let crd = named(&objects, "CustomResourceDefinition")[0];
    assert!(crd["metadata"]["annotations"][injected].is_null(), "the manager writes the CA itself");
    let secret = name(named(&objects, "Secret")[0]);
    let deployment = named(&objects, "Deployment")[0];
    let manager = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = manager["args"].as_sequence().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(args.contains(&format!("--webhook-cert-secret={secret}").as_str()), "{args:?}");
    let volumes = deployment["spec"]["template"]["spec"]["volumes"].as_sequence().unwrap();
    assert!(volumes.iter().any(|v| v["secret"]["secretName"] == secret), "{volumes:?}");

    // The roles name exactly the objects kustomize renders, and nothing else.
    let resource_names = |kind: &str| -> Vec<String> {
        let role = named(&objects, kind).into_iter().find(|r| name(r).ends_with("webhook-certs-role")).unwrap();
        let rules = role["rules"].as_sequence().unwrap();
        rules
            .iter()
            .flat_map(|r| r["resourceNames"].as_sequence().unwrap().clone())
            .map(|n| n.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(resource_names("Role"), [secret]);
    let configurations = ["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"];
    let mut expected: Vec<String> = configurations.iter().map(|k| name(named(&objects, k)[0]).to_string()).collect();
    expected.push(name(crd).to_string());
    assert_eq!(resource_names("ClusterRole"), expected);
    // The manager's defaults for the Service and the configurations (memop-runtime's, from the
    // operator's name in src/lib.rs) are the rendered names.
    let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    let operator = lib.split("name: \"").nth(1).and_then(|rest| rest.split('"').next()).expect("OPERATOR's name");
    assert_eq!(format!("{operator}-webhook-service"), service, "--webhook-service");
    let defaults =
        [format!("{operator}-mutating-webhook-configuration"), format!("{operator}-validating-webhook-configuration")];
    assert_eq!(defaults[..], expected[..2], "--webhook-configurations");
    let runtime = include_str!("../../crates/memop-runtime/src/webhook/server.rs");
    for default in [
        "\"{name}-webhook-service\"",
        "\"{name}-mutating-webhook-configuration\"",
        "\"{name}-validating-webhook-configuration\"",
    ] {
        assert!(runtime.contains(default), "memop-runtime's webhook flags default to {default}");
    }
}
