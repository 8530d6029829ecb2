//! The Helm chart of `memop edit --plugins=helm/v2-alpha`, checked with the real `helm` (the
//! `HELM` variable, which `scripts/helm/build.sh` prints): it lints, renders the objects of
//! `kubectl kustomize config/default`, takes every option, refuses a bad value by its schema, and
//! keeps the user's edits when a later `create api` regenerates it.
//!
//! Without `HELM` the tests that need helm skip with a notice; `ENVTEST_REQUIRED=1` (as CI sets)
//! makes them fail instead.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{commit, git};
use serde_yaml::Value;

/// The helm binary, or `None` (with a notice) when the test is to be skipped.
fn helm() -> Option<PathBuf> {
    match std::env::var_os("HELM") {
        Some(helm) => Some(PathBuf::from(helm)),
        None if std::env::var_os("ENVTEST_REQUIRED").is_some_and(|v| v == "1") => {
            panic!("HELM is not set, and ENVTEST_REQUIRED=1: run HELM=\"$(scripts/helm/build.sh)\" cargo test")
        }
        None => {
            eprintln!("skipped: needs HELM (HELM=\"$(scripts/helm/build.sh)\")");
            None
        }
    }
}

/// Runs `helm args` in `dir`: its stdout, or its stderr as the error.
fn run_helm(helm: &Path, dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new(helm).current_dir(dir).args(args).output().expect("running helm");
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        false => Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))),
    }
}

/// A new project in `scratch/<name>` made by `commands`, committed to git.
fn project(scratch: &Path, name: &str, commands: &[&[&str]]) -> PathBuf {
    let dir = scratch.join(name);
    std::fs::create_dir(&dir).unwrap();
    for args in commands {
        common::run(&dir, args);
    }
    git(&dir, &["init", "-q"]);
    commit(&dir, "scaffold");
    dir
}

const MEMCACHED: &[&str] = &["create", "api", "--group", "cache", "--kind", "Memcached"];
/// A second operand kind of the same group.
const REDIS: &[&str] =
    &["create", "api", "--group", "cache", "--kind", "Redis", "--image", "redis:7.4", "--image-container-port", "6379"];

/// The objects of a multi-document YAML text by kind and name, without what Helm adds or names
/// differently: its labels (app.kubernetes.io/*, helm.sh/*, in labels and selectors alike) and
/// annotations (helm.sh/*), and the Namespace, which is the release's.
fn objects(yaml: &str) -> std::collections::BTreeMap<(String, String), Value> {
    fn strip(value: &mut Value) {
        match value {
            Value::Mapping(map) => {
                map.retain(|key, _| {
                    key.as_str().is_none_or(|k| !k.starts_with("app.kubernetes.io/") && !k.starts_with("helm.sh/"))
                });
                for (_, v) in map.iter_mut() {
                    strip(v);
                }
                // Maps left empty by that are no maps at all.
                map.retain(|key, v| {
                    let empty = v.is_null() || v.as_mapping().is_some_and(|m| m.is_empty());
                    !(empty && matches!(key.as_str(), Some("labels" | "annotations" | "matchLabels" | "selector")))
                });
            }
            Value::Sequence(items) => items.iter_mut().for_each(strip),
            // One number however written (the CRD's `maximum: 3.0` is kustomize's `3`), as the
            // API server reads JSON.
            Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0 && f.abs() < 1e15) => {
                *value = Value::from(n.as_f64().unwrap() as i64)
            }
            _ => {}
        }
    }
    let mut out = std::collections::BTreeMap::new();
    for document in serde_yaml::Deserializer::from_str(yaml) {
        let mut object = Value::deserialize(document).unwrap();
        if object.is_null() || object["kind"] == "Namespace" {
            continue;
        }
        strip(&mut object);
        let key = (object["kind"].as_str().unwrap().to_string(), object["metadata"]["name"].as_str().unwrap().into());
        assert!(out.insert(key.clone(), object).is_none(), "{key:?} twice");
    }
    out
}

use serde::Deserialize as _;

/// `helm template` with the default values gives `kubectl kustomize config/default`'s objects,
/// for a release named like the project in the project's namespace, and the chart lints.
///
/// One difference is Helm's names: the chart names the webhook certificate's Secret after the
/// release too (kustomize's prefix does not reach a Secret it does not make). config/certmanager,
/// which config/default takes whole with webhooks, holds the metrics Certificate too, which
/// nothing uses by default: config/default leaves it out as the chart does (it rendered it, its
/// DNS names unreplaced placeholders).
fn assert_renders_what_kustomize_renders(helm: &Path, dir: &Path) {
    let name = dir.file_name().unwrap().to_str().unwrap();
    run_helm(helm, dir, &["lint", "--strict", "dist/chart"]).unwrap();
    let chart = run_helm(helm, dir, &["template", name, "dist/chart", "-n", &format!("{name}-system")]).unwrap();
    let chart = chart.replace(&format!("secretName: {name}-webhook-server-cert"), "secretName: webhook-server-cert");
    let kustomize = common::check(dir, "kubectl", &["kustomize", "config/default"]);
    let (chart, kustomize) = (objects(&chart), objects(&kustomize));
    let keys =
        |objects: &std::collections::BTreeMap<(String, String), Value>| objects.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&chart), keys(&kustomize), "the chart's objects and config/default's differ");
    for (key, object) in &kustomize {
        // Value's maps compare regardless of key order.
        assert!(
            &chart[key] == object,
            "{key:?}: the chart's and config/default's differ:\n{}\n---\n{}",
            serde_yaml::to_string(&chart[key]).unwrap(),
            serde_yaml::to_string(object).unwrap()
        );
    }
}

#[test]
fn the_chart_lints_and_renders_the_objects_of_config_default() {
    let Some(helm) = helm() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let memcached = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&memcached, &["edit", "--plugins=helm/v2-alpha"]);
    assert_renders_what_kustomize_renders(&helm, &memcached);
    // The generated project's own target, which its CI workflow runs.
    let lint = common::check(&memcached, "make", &["helm-lint", &format!("HELM={}", helm.display())]);
    assert!(lint.contains("1 chart(s) linted, 0 chart(s) failed"), "{lint}");

    // Two operands and a cluster-scoped skeleton kind in another group, the chart made first and
    // updated by each kind.
    let fleet = project(
        scratch.path(),
        "fleet-operator",
        &[&["init", "--domain", "example.org"], MEMCACHED, &["edit", "--plugins=helm/v2-alpha"]],
    );
    common::run(&fleet, REDIS);
    common::run(
        &fleet,
        &["create", "api", "--group", "batch", "--version", "v1", "--kind", "CronJob", "--namespaced=false"],
    );
    assert_renders_what_kustomize_renders(&helm, &fleet);

    // Webhooks: defaulting and validation of Memcached v1alpha1, its conversion to v1 (the hub),
    // validation of a second kind and defaulting of Pods, added to a project with a chart: their Service,
    // configurations, cert-manager's certificate and CA, the CRD's conversion; then the manager
    // keeping its own certificate.
    let hooks = project(
        scratch.path(),
        "hooks-operator",
        &[&["init", "--domain", "example.com"], MEMCACHED, &["edit", "--plugins=helm/v2-alpha"]],
    );
    let memcached_v1 = ["--group", "cache", "--version", "v1", "--kind", "Memcached"];
    let redis = ["--group", "cache", "--kind", "Redis"];
    for args in [
        &["create", "webhook", "--group", "cache", "--kind", "Memcached", "--defaulting", "--programmatic-validation"]
            [..],
        &[&["create", "api"][..], &memcached_v1, &["--storage-version"]].concat(),
        &[&["create", "webhook"][..], &memcached_v1, &["--conversion"]].concat(),
        &[&["create", "api"][..], &redis, &["--image", "redis:7.4", "--image-container-port", "6379"]].concat(),
        &[&["create", "webhook"][..], &redis, &["--programmatic-validation"]].concat(),
        // A kind of Kubernetes' own, whose webhooks skip the manager's namespace.
        &["create", "webhook", "--group", "core", "--version", "v1", "--kind", "Pod", "--defaulting"],
    ] {
        common::run(&hooks, args);
    }
    assert_renders_what_kustomize_renders(&helm, &hooks);
    let set = "webhook.certificates=selfManaged";
    run_helm(&helm, &hooks, &["lint", "--strict", "dist/chart", "--set", set]).unwrap();
    let self_managed =
        objects(&run_helm(&helm, &hooks, &["template", "hooks-operator", "dist/chart", "--set", set]).unwrap());
    let role = &self_managed[&("ClusterRole".to_string(), "hooks-operator-webhook-certs-role".to_string())];
    assert_eq!(role["rules"][1]["resourceNames"][0], "memcacheds.cache.example.com", "{role:?}");
    assert!(self_managed.contains_key(&("Secret".to_string(), "hooks-operator-webhook-server-cert".to_string())));
    assert!(!self_managed.keys().any(|(kind, _)| kind == "Certificate" || kind == "Issuer"), "{self_managed:?}");
    let manager = &self_managed[&("Deployment".to_string(), "hooks-operator-controller-manager".to_string())];
    let args = serde_yaml::to_string(&manager["spec"]["template"]["spec"]["containers"][0]["args"]).unwrap();
    assert!(args.contains("--webhook-cert-secret=hooks-operator-webhook-server-cert"), "{args}");
    assert!(args.contains("--webhook-service=hooks-operator-webhook-service"), "{args}");
    let crd = &self_managed[&("CustomResourceDefinition".to_string(), "memcacheds.cache.example.com".to_string())];
    assert_eq!(
        crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["name"],
        "hooks-operator-webhook-service"
    );
    assert!(crd["metadata"].get("annotations").is_none(), "no cert-manager CA to inject: {crd:?}");
    // The webhook server's port is no other server's.
    let refused = run_helm(&helm, &hooks, &["template", "r", "dist/chart", "--set", "metrics.port=9443"]).unwrap_err();
    assert!(refused.contains("port 9443 is the webhook server's"), "{refused}");
    run_helm(&helm, &hooks, &["template", "r", "dist/chart", "--set", "metrics.port=9443,webhook.enabled=false"])
        .unwrap();
    // Both NetworkPolicies; and without webhooks, none of their objects and no webhook server.
    let set = "networkPolicy.enabled=true";
    let policies =
        objects(&run_helm(&helm, &hooks, &["template", "hooks-operator", "dist/chart", "--set", set]).unwrap());
    for name in ["hooks-operator-allow-metrics-traffic", "hooks-operator-allow-webhook-traffic"] {
        assert!(policies.contains_key(&("NetworkPolicy".to_string(), name.to_string())), "{name}");
    }
    let set = "webhook.enabled=false";
    let off = objects(&run_helm(&helm, &hooks, &["template", "hooks-operator", "dist/chart", "--set", set]).unwrap());
    assert!(!off.keys().any(|(kind, name)| kind.contains("Webhook") || name.contains("webhook")), "{off:?}");
    let manager = &off[&("Deployment".to_string(), "hooks-operator-controller-manager".to_string())];
    let args = serde_yaml::to_string(&manager["spec"]["template"]["spec"]["containers"][0]["args"]).unwrap();
    assert!(args.contains("--enable-webhooks=false"), "{args}");
    let crd = &off[&("CustomResourceDefinition".to_string(), "memcacheds.cache.example.com".to_string())];
    assert!(crd["spec"].get("conversion").is_none(), "{crd:?}");

    // A namespaced project: a Role, not a ClusterRole, and WATCH_NAMESPACE.
    let shop =
        project(scratch.path(), "shop-operator", &[&["init", "--domain", "example.com", "--namespaced"], MEMCACHED]);
    common::run(&shop, &["edit", "--plugins=helm/v2-alpha"]);
    assert_renders_what_kustomize_renders(&helm, &shop);
}

#[test]
fn every_option_renders_and_lints_and_a_bad_value_is_refused_naming_it() {
    let Some(helm) = helm() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    let values = dir.join("all-on.yaml");
    std::fs::write(
        &values,
        r#"namespaceOverride: ops
fullnameOverride: mc
manager:
  replicas: 2
  image: {repository: registry.example.com/memcached-operator, tag: v1.2.3, pullPolicy: Always}
  imagePullSecrets: [{name: regcred}]
  leaderElection: {enabled: true}
  logLevel: "info,kube=debug"
  operandImages: {MEMCACHED_IMAGE: "registry.example.com/memcached:1.6"}
  env: [{name: EXTRA, value: "1"}]
  extraArgs: [--log-format=json]
  resources: {limits: {cpu: "1", memory: 256Mi}}
  nodeSelector: {kubernetes.io/os: linux}
  tolerations: [{key: dedicated, operator: Exists, effect: NoSchedule}]
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]}]}}}
  podAnnotations: {example.com/a: "b"}
  podLabels: {team: storage}
serviceAccount: {annotations: {example.com/role: operator}}
rbac: {helpers: {enabled: true}}
crd: {enabled: true, keep: true}
metrics: {enabled: true, secure: true, port: 9443}
certManager: {enabled: true}
prometheus: {enabled: true}
networkPolicy: {enabled: true}
"#,
    )
    .unwrap();
    run_helm(&helm, &dir, &["lint", "--strict", "dist/chart", "-f", "all-on.yaml"]).unwrap();
    let rendered = objects(&run_helm(&helm, &dir, &["template", "r", "dist/chart", "-f", "all-on.yaml"]).unwrap());
    let object = |kind: &str, name: &str| {
        rendered.get(&(kind.to_string(), name.to_string())).unwrap_or_else(|| panic!("no {kind} {name}: {rendered:?}"))
    };
    for (kind, name) in [
        ("ServiceMonitor", "mc-controller-manager-metrics-monitor"),
        ("Certificate", "mc-metrics-certs"),
        ("Issuer", "mc-selfsigned-issuer"),
        ("NetworkPolicy", "mc-allow-metrics-traffic"),
        ("ClusterRole", "mc-cache-memcached-editor-role"),
    ] {
        assert_eq!(object(kind, name)["metadata"]["namespace"].as_str().unwrap_or("ops"), "ops", "{kind} {name}");
    }
    let deployment = object("Deployment", "mc-controller-manager");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "registry.example.com/memcached-operator:v1.2.3");
    let args: Vec<&str> = container["args"].as_sequence().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(
        args,
        [
            "--metrics-bind-address=:9443",
            "--leader-elect",
            "--health-probe-bind-address=:8081",
            "--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs",
            "--log-format=json"
        ]
    );
    let env = serde_yaml::to_string(&container["env"]).unwrap();
    assert!(env.contains("value: registry.example.com/memcached:1.6") && env.contains("name: EXTRA"), "{env}");
    assert_eq!(pod["volumes"][0]["secret"]["secretName"], "mc-metrics-server-cert");
    assert_eq!(pod["nodeSelector"]["kubernetes.io/os"], "linux");
    assert_eq!(pod["imagePullSecrets"][0]["name"], "regcred");
    assert_eq!(deployment["spec"]["template"]["metadata"]["labels"]["team"], "storage");

    // Off: no metrics Service, no metrics-auth roles, no CRD.
    let off = run_helm(
        &helm,
        &dir,
        &["template", "r", "dist/chart", "--set", "metrics.enabled=false,crd.enabled=false,rbac.helpers.enabled=false"],
    )
    .unwrap();
    let off = objects(&off);
    assert!(
        off.keys().all(|(kind, name)| kind != "Service"
            && kind != "CustomResourceDefinition"
            && !name.ends_with("-admin-role")),
        "{off:?}"
    );

    // Two servers of the manager on one port are refused, naming both values (from a file too,
    // whose numbers Helm reads as floats).
    let refused = run_helm(&helm, &dir, &["template", "r", "dist/chart", "--set", "metrics.port=8081"]).unwrap_err();
    assert!(refused.contains("metrics.port and manager.healthProbe.port are both 8081"), "{refused}");
    std::fs::write(dir.join("ports.yaml"), "metrics: {port: 8081}\n").unwrap();
    let refused = run_helm(&helm, &dir, &["template", "r", "dist/chart", "-f", "ports.yaml"]).unwrap_err();
    assert!(refused.contains("are both 8081"), "{refused}");
    run_helm(&helm, &dir, &["template", "r", "dist/chart", "--set", "metrics.port=8081,metrics.enabled=false"])
        .unwrap();

    // The schema refuses a wrong value, naming it.
    for (set, named) in [
        ("metrics.port=https", "/metrics/port"),
        ("manager.image.pullPolicy=Sometimes", "/manager/image/pullPolicy"),
        ("crd.keep=maybe", "/crd/keep"),
        ("manager.replicaz=2", "replicaz"),
    ] {
        let refused = run_helm(&helm, &dir, &["template", "r", "dist/chart", "--set", set]).unwrap_err();
        assert!(
            refused.contains("values don't meet the specifications of the schema") && refused.contains(named),
            "{set}: {refused}"
        );
    }
}

/// What `--set` and values files give: a key the chart does not have, at any level (a typo, or
/// another chart's `image.tag`), is refused rather than silently ignored; a tag of digits (a build
/// number) is taken as the tag; an env value Kubernetes would refuse (a number) is refused by the
/// schema, naming it.
#[test]
fn the_schema_refuses_unknown_keys_and_takes_numeric_tags() {
    let Some(helm) = helm() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    for (set, named) in [
        ("image.tag=v1", "image"),
        ("managr.replicas=2", "managr"),
        ("manager.env[0].name=A,manager.env[0].value=1", "/manager/env/0/value"),
    ] {
        let refused = run_helm(&helm, &dir, &["template", "r", "dist/chart", "--set", set]).unwrap_err();
        assert!(
            refused.contains("values don't meet the specifications of the schema") && refused.contains(named),
            "{set}: {refused}"
        );
    }
    // Helm's own `global` (an umbrella chart's) is no typo.
    run_helm(&helm, &dir, &["template", "r", "dist/chart", "--set", "global.registry=x"]).unwrap();
    let image = |rendered: &str| {
        let objects = objects(rendered);
        let deployment = &objects[&("Deployment".to_string(), "r-memcached-operator-controller-manager".to_string())];
        deployment["spec"]["template"]["spec"]["containers"][0]["image"].as_str().unwrap().to_string()
    };
    let set = run_helm(&helm, &dir, &["template", "r", "dist/chart", "--set", "manager.image.tag=20241201"]).unwrap();
    assert_eq!(image(&set), "controller:20241201");
    std::fs::write(dir.join("tag.yaml"), "manager:\n  image:\n    tag: 20241201\n").unwrap();
    let file = run_helm(&helm, &dir, &["template", "r", "dist/chart", "-f", "tag.yaml"]).unwrap();
    assert_eq!(image(&file), "controller:20241201");
}

/// Pod labels and annotations of the user's that the chart sets itself are left out rather than
/// written twice: the last of two equal keys would win, and a `control-plane` label of the
/// user's would leave the Deployment's selector matching no pod.
#[test]
fn pod_labels_and_annotations_do_not_replace_the_charts_own() {
    let Some(helm) = helm() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    let set = "manager.podLabels.control-plane=mine,manager.podLabels.team=storage,\
               manager.podAnnotations.kubectl\\.kubernetes\\.io/default-container=sidecar,manager.podAnnotations.a=b";
    let rendered = run_helm(&helm, &dir, &["template", "r", "dist/chart", "--set", set]).unwrap();
    assert_eq!(rendered.matches("control-plane: mine").count(), 0, "{rendered}");
    assert_eq!(rendered.matches("default-container:").count(), 1, "{rendered}");
    let objects = objects(&rendered);
    let deployment = &objects[&("Deployment".to_string(), "r-memcached-operator-controller-manager".to_string())];
    let pod = &deployment["spec"]["template"]["metadata"];
    assert_eq!(pod["labels"]["control-plane"], "controller-manager");
    assert_eq!(pod["labels"]["team"], "storage");
    assert_eq!(pod["annotations"]["kubectl.kubernetes.io/default-container"], "manager");
    assert_eq!(pod["annotations"]["a"], "b");
    // Without either map at all.
    let set = "manager.podLabels=null,manager.podAnnotations=null";
    run_helm(&helm, &dir, &["template", "r", "dist/chart", "--set", set]).unwrap();
}

/// The chart's objects keep distinct names, of at most 63 characters, however long the release's
/// name (Helm allows 53) or `fullnameOverride`: truncating the name of each alike would give
/// the metrics roles, or a kind's admin, editor and viewer roles, one name.
#[test]
fn long_release_names_give_distinct_names_of_at_most_63_characters() {
    let Some(helm) = helm() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    let all_on = "prometheus.enabled=true,networkPolicy.enabled=true,certManager.enabled=true";
    let release = "a".repeat(53);
    let long = "b".repeat(70);
    let mut names = std::collections::BTreeMap::new();
    for args in [
        vec!["template", release.as_str(), "dist/chart", "--set", all_on],
        vec!["template", "r", "dist/chart", "--set", all_on, "--set", &format!("fullnameOverride={long}")],
        vec!["template", &release[..52], "dist/chart", "--set", all_on],
    ] {
        let rendered = run_helm(&helm, &dir, &args).unwrap();
        // `objects` refuses a kind and name twice.
        for (kind, name) in objects(&rendered).into_keys() {
            assert!(name.len() <= 63, "{kind} {name}: {} characters", name.len());
            let release = args[1].to_string();
            if kind.ends_with("Role") || kind.ends_with("RoleBinding") {
                // Cluster-wide: two releases of the chart must not share one.
                assert!(names.insert((kind.clone(), name.clone()), release.clone()).is_none(), "{kind} {name} twice");
            }
        }
    }
}

#[test]
fn the_users_chart_edits_survive_create_api_of_another_kind() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    let project_file = std::fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(project_file.contains("plugins:\n  helm.kubebuilder.io/v2-alpha:\n    output: dist\n"), "{project_file}");
    commit(&dir, "the chart");

    // The user's edits: a changed value, an added one, an edited template, a template of their own.
    let chart = dir.join("dist/chart");
    let edit = |path: &str, from: &str, to: &str| {
        let text = std::fs::read_to_string(chart.join(path)).unwrap();
        assert!(text.contains(from), "{path} has no {from:?}");
        std::fs::write(chart.join(path), text.replacen(from, to, 1)).unwrap();
    };
    edit("values.yaml", "  replicas: 1\n", "  replicas: 3\n");
    edit(
        "values.yaml",
        "\nmanager:\n",
        "\n# The team that runs the operator (the user's value).\nteam: storage\n\nmanager:\n",
    );
    // The schema refuses a key it does not list: the user lists theirs.
    edit("values.schema.json", "  \"properties\": {\n", "  \"properties\": {\n    \"team\": {\"type\": \"string\"},\n");
    let annotation = "        kubectl.kubernetes.io/default-container: manager\n";
    edit(
        "templates/manager/manager.yaml",
        annotation,
        &format!("{annotation}        example.com/team: {{{{ .Values.team }}}}\n"),
    );
    let extra = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-team\ndata:\n  team: {{ .Values.team }}\n";
    std::fs::write(chart.join("templates/team.yaml"), extra).unwrap();
    commit(&dir, "the user's chart");

    let output = common::memop().current_dir(&dir).args(REDIS).assert().success();
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).into_owned();
    assert!(
        stdout.contains("Merged memop's changes with your edits in: dist/chart/templates/manager/manager.yaml"),
        "{stdout}"
    );

    let read = |path: &str| std::fs::read_to_string(chart.join(path)).unwrap();
    let values = read("values.yaml");
    assert!(values.contains("  replicas: 3\n") && values.contains("\nteam: storage\n"), "{values}");
    assert!(values.contains("    REDIS_IMAGE: \"redis:7.4\"\n    # +memop:scaffold:operand-images"), "{values}");
    let manager = read("templates/manager/manager.yaml");
    assert!(manager.contains("example.com/team: {{ .Values.team }}"), "the user's edit is lost:\n{manager}");
    assert!(manager.contains("- name: REDIS_IMAGE"), "memop's change is missing:\n{manager}");
    assert_eq!(read("templates/team.yaml"), extra);
    assert!(read("values.schema.json").contains("\"team\": {\"type\": \"string\"}"));
    assert!(chart.join("templates/crd/cache.example.com_redis.yaml").is_file());
    assert!(read("templates/rbac/manager_role.yaml").contains("- redis"));

    if let Some(helm) = helm() {
        run_helm(&helm, &dir, &["lint", "--strict", "dist/chart"]).unwrap();
        let rendered = run_helm(&helm, &dir, &["template", "memcached-operator", "dist/chart"]).unwrap();
        assert!(rendered.contains("  team: storage") && rendered.contains("example.com/team: storage"), "{rendered}");
        assert!(rendered.contains("replicas: 3") && rendered.contains("value: \"redis:7.4\""), "{rendered}");
    }
}

/// A command whose report cannot be written (a full disk behind stdout) has written its files:
/// the base of the chart file it merged is kept all the same (in `refs/memop/bases`), before the
/// report, so that the next merge of that file has it.
#[test]
fn the_base_of_a_merge_is_kept_when_the_report_cannot_be_written() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    commit(&dir, "the chart");
    let manager = dir.join("dist/chart/templates/manager/manager.yaml");
    let annotation = "        kubectl.kubernetes.io/default-container: manager\n";
    let text = std::fs::read_to_string(&manager).unwrap();
    assert!(text.contains(annotation), "{text}");
    std::fs::write(&manager, text.replacen(annotation, &format!("{annotation}        example.com/team: storage\n"), 1))
        .unwrap();
    commit(&dir, "the user's chart");

    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("memop"))
        .env("SOURCE_DATE_EPOCH", common::SOURCE_DATE_EPOCH)
        .current_dir(&dir)
        .args(REDIS)
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("were written"), "{stderr}");
    let merged = std::fs::read_to_string(&manager).unwrap();
    assert!(merged.contains("example.com/team: storage") && merged.contains("- name: REDIS_IMAGE"), "{merged}");
    let kept = Command::new("git")
        .current_dir(&dir)
        .args(["ls-tree", "-r", "--name-only", "refs/memop/bases"])
        .output()
        .unwrap();
    let kept = String::from_utf8_lossy(&kept.stdout);
    assert!(kept.contains("dist/chart/templates/manager/manager.yaml"), "no base kept: {kept:?}\n{stderr}");
}

#[test]
fn edits_that_touch_the_lines_memop_changes_are_marked_and_fail_the_command() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    commit(&dir, "the chart");
    // The manager role's rules for memcacheds, which a second kind of the group joins.
    let role = dir.join("dist/chart/templates/rbac/manager_role.yaml");
    let text = std::fs::read_to_string(&role).unwrap();
    std::fs::write(&role, text.replacen("  - memcacheds\n", "  - memcacheds # mine\n", 1)).unwrap();
    commit(&dir, "the user's role");
    let output = common::memop().current_dir(&dir).args(REDIS).assert().failure();
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
    assert!(stderr.contains("touch the same lines of dist/chart/templates/rbac/manager_role.yaml"), "{stderr}");
    let merged = std::fs::read_to_string(&role).unwrap();
    assert!(
        merged.contains("<<<<<<< ours") && merged.contains("  - memcacheds # mine") && merged.contains("  - redis"),
        "{merged}"
    );
    // The rest was written: the kind, and its part of the chart.
    assert!(dir.join("dist/chart/templates/crd/cache.example.com_redis.yaml").is_file());
}

#[test]
fn a_deleted_chart_file_stays_deleted_and_a_deleted_chart_is_left_alone() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    let chart = dir.join("dist/chart");
    std::fs::remove_file(chart.join("templates/NOTES.txt")).unwrap();
    std::fs::remove_file(chart.join("values.schema.json")).unwrap();
    common::run(&dir, REDIS);
    assert!(!chart.join("templates/NOTES.txt").exists() && !chart.join("values.schema.json").exists());
    assert!(chart.join("templates/crd/cache.example.com_redis.yaml").is_file());

    // Without values.yaml or _helpers.tpl the chart does not render: each command says so.
    for file in ["values.yaml", "templates/_helpers.tpl"] {
        let text = std::fs::read_to_string(chart.join(file)).unwrap();
        std::fs::remove_file(chart.join(file)).unwrap();
        let output = common::memop().current_dir(&dir).args(["edit", "--plugins=helm/v2-alpha"]).assert().success();
        let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
        assert!(
            stderr.contains(&format!("dist/chart/{file} is gone, and the chart's templates need it")),
            "{file}: {stderr}"
        );
        assert!(!chart.join(file).exists(), "{file} made again");
        std::fs::write(chart.join(file), text).unwrap();
    }

    // Without its Chart.yaml the chart is not made again in parts; --force makes it whole.
    std::fs::remove_dir_all(&chart).unwrap();
    let web = [
        "create",
        "api",
        "--group",
        "web",
        "--kind",
        "Nginx",
        "--image",
        "nginx:1.27",
        "--image-container-port",
        "8080",
    ];
    let output = common::memop().current_dir(&dir).args(web).assert().success();
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
    assert!(stderr.contains("dist/chart/Chart.yaml is gone, so memop left the Helm chart alone"), "{stderr}");
    assert!(!chart.exists());
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha", "--force"]);
    for file in ["Chart.yaml", "values.yaml", "templates/NOTES.txt", "templates/crd/web.example.com_nginxes.yaml"] {
        assert!(chart.join(file).is_file(), "{file}");
    }
    let values = std::fs::read_to_string(chart.join("values.yaml")).unwrap();
    assert!(
        values.contains("REDIS_IMAGE: \"redis:7.4\"") && values.contains("NGINX_IMAGE: \"nginx:1.27\""),
        "{values}"
    );
}

#[test]
fn the_chart_command_refuses_what_it_cannot_do_and_writes_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    let before = common::tree(&dir);
    for (args, says) in [
        (&["edit", "--plugins=helm/v2-alpha", "--output-dir", "../elsewhere"][..], "relative path inside the project"),
        (&["edit", "--plugins=helm/v2-alpha", "--output-dir", "/tmp/chart"][..], "relative path inside the project"),
        (&["edit", "--plugins=helm/v2-alpha", "--output-dir", ".git"][..], "nor git's own .git"),
        // memop's, cargo's and kustomize's directories: update replaces vendor/ whole, cargo clean
        // deletes target/ (which git ignores), and the others hold code and manifests.
        (&["edit", "--plugins=helm/v2-alpha", "--output-dir", "vendor"][..], "vendor/ is memop's"),
        (&["edit", "--plugins=helm/v2-alpha", "--output-dir", "vendor/charts"][..], "vendor/ is memop's"),
        (&["edit", "--plugins=helm/v2-alpha", "--output-dir", "Target"][..], "target/ is cargo's"),
        (&["edit", "--plugins=helm/v2-alpha", "--output-dir", "config"][..], "config/ is kustomize's"),
        (&["edit", "--plugins=helm/v2-alpha", "--output-dir", "src/deploy"][..], "src/ is the crate's"),
        (&["edit", "--plugins=kotlin/v1"][..], "not a plugin memop knows"),
        (&["edit", "--multigroup=true"][..], "always supports several groups"),
        (&["edit"][..], "`memop edit` needs the plugin to add"),
        (&["edit", "--plugins=helm/v3"][..], "memop has helm/v2-alpha, not helm/v3"),
    ] {
        let output = common::memop().current_dir(&dir).args(args).assert().failure();
        let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(common::tree(&dir), before, "{args:?} wrote something");
    }
    // A file where the chart's directory goes: refused by name, with what to do, nothing written.
    for file in ["dist", "dist/chart"] {
        if let Some(parent) = Path::new(file).parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir.join(parent)).unwrap();
        }
        std::fs::write(dir.join(file), "not a chart\n").unwrap();
        let before = common::tree(&dir);
        let output = common::memop().current_dir(&dir).args(["edit", "--plugins=helm/v2-alpha"]).assert().failure();
        let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
        assert!(stderr.contains(&format!("{file} is a regular file, not a directory")), "{file}: {stderr}");
        assert!(stderr.contains("move it away"), "{file}: {stderr}");
        assert_eq!(common::tree(&dir), before, "{file}: something was written");
        std::fs::remove_dir_all(dir.join("dist")).or_else(|_| std::fs::remove_file(dir.join("dist"))).unwrap();
    }
}

/// A chart memop did not write (one kubebuilder left, say) is the user's: memop refuses to mix
/// its templates into it, as `init` refuses an existing project; an interrupted first `edit`,
/// whose files are memop's own text, is completed.
#[test]
fn edit_refuses_a_chart_it_did_not_write_and_completes_one_it_was_writing() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    let templates = dir.join("dist/chart/templates");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(dir.join("dist/chart/Chart.yaml"), "apiVersion: v2\nname: my-chart\nversion: 1.2.3\n").unwrap();
    std::fs::write(dir.join("dist/chart/values.yaml"), "image: mine\n").unwrap();
    std::fs::write(templates.join("_helpers.tpl"), "{{- define \"my.name\" -}}x{{- end }}\n").unwrap();
    let before = common::tree(&dir);
    let output = common::memop().current_dir(&dir).args(["edit", "--plugins=helm/v2-alpha"]).assert().failure();
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
    assert!(stderr.contains("dist/chart already holds a chart memop did not write"), "{stderr}");
    assert!(stderr.contains("--output-dir"), "{stderr}");
    assert_eq!(common::tree(&dir), before, "something was written");

    // memop's own chart, written but not yet recorded (a first edit killed before PROJECT.sum):
    // the rerun finishes it.
    std::fs::remove_dir_all(dir.join("dist")).unwrap();
    let elsewhere = scratch.path().join("copy");
    std::fs::create_dir(&elsewhere).unwrap();
    for entry in ["PROJECT", "PROJECT.sum"] {
        std::fs::copy(dir.join(entry), elsewhere.join(entry)).unwrap();
    }
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    let chart = std::fs::read_to_string(dir.join("dist/chart/Chart.yaml")).unwrap();
    for entry in ["PROJECT", "PROJECT.sum"] {
        std::fs::copy(elsewhere.join(entry), dir.join(entry)).unwrap();
    }
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    assert_eq!(std::fs::read_to_string(dir.join("dist/chart/Chart.yaml")).unwrap(), chart);
    assert!(std::fs::read_to_string(dir.join("PROJECT.sum")).unwrap().contains("dist/chart/Chart.yaml"));
}

/// `values.yaml` is the user's: an operand image they list under any YAML spelling of its key
/// is not added again, and memop never makes the file invalid YAML.
#[test]
fn an_operand_image_in_any_yaml_spelling_is_not_added_twice() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    let path = dir.join("dist/chart/values.yaml");
    let fresh = std::fs::read_to_string(&path).unwrap();
    let line = fresh.lines().find(|l| l.trim_start().starts_with("MEMCACHED_IMAGE:")).unwrap().to_string();
    let indent = &line[..line.len() - line.trim_start().len()];
    let marker = fresh.lines().find(|l| l.contains("+memop:scaffold:operand-images")).unwrap().to_string();
    let header = fresh.lines().find(|l| l.trim() == "operandImages:").unwrap().to_string();
    let cases = [
        // A quoted key, in either quotes.
        fresh.replace(&line, &format!("{indent}\"MEMCACHED_IMAGE\": \"memcached:1.6.30\"")),
        fresh.replace(&line, &format!("{indent}'MEMCACHED_IMAGE': \"memcached:1.6.30\"")),
        // A flow mapping, in CRLF, with the marker kept below it.
        fresh
            .replace(
                &format!("{header}\n{line}\n"),
                &format!("{} {{MEMCACHED_IMAGE: \"1.6.30\"}}\n", header.trim_end()),
            )
            .replace('\n', "\r\n"),
    ];
    for (i, values) in cases.iter().enumerate() {
        let scratch = scratch.path().join(i.to_string());
        std::fs::create_dir(&scratch).unwrap();
        let dir = project(
            &scratch,
            "memcached-operator",
            &[&["init", "--domain", "example.com"], MEMCACHED, &["edit", "--plugins=helm/v2-alpha"]],
        );
        let path = dir.join("dist/chart/values.yaml");
        assert!(values.contains(&marker), "case {i}: {values}");
        assert_ne!(values, &fresh, "case {i}");
        std::fs::write(&path, values).unwrap();
        common::run(&dir, &["create", "api", "--group", "misc", "--kind", "Foo", "--controller=false"]);
        assert_eq!(&std::fs::read_to_string(&path).unwrap(), values, "case {i}: the user's values.yaml changed");
        // A new operand cannot go into a flow mapping as a block line: named in a note instead.
        let web = [
            "create",
            "api",
            "--group",
            "web",
            "--kind",
            "Web",
            "--image",
            "nginx:1.27",
            "--image-container-port",
            "8080",
        ];
        let output = common::memop().current_dir(&dir).args(web).assert().success();
        let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
        let after = std::fs::read_to_string(&path).unwrap();
        let parsed: Result<serde_yaml::Value, _> = serde_yaml::from_str(&after);
        assert!(parsed.is_ok(), "case {i}: values.yaml is no longer YAML: {after}");
        assert!(after.contains("WEB_IMAGE") || stderr.contains("WEB_IMAGE"), "case {i}: {stderr}\n{after}");
        assert_eq!(after.matches("MEMCACHED_IMAGE").count(), 1, "case {i}: {after}");
    }
}

/// A chart file memop wrote and no longer renders (the webhooks' once `delete api` took the
/// last conversion webhook away) goes while unedited, so that the chart renders what
/// config/default does; one the user edited is kept, named.
#[test]
fn chart_files_memop_no_longer_renders_go_unless_edited() {
    let Some(helm) = helm() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(
        scratch.path(),
        "versions-operator",
        &[
            &["init", "--domain", "example.com"],
            MEMCACHED,
            &["create", "api", "--group", "cache", "--version", "v1", "--kind", "Memcached", "--storage-version"],
            &["create", "webhook", "--group", "cache", "--version", "v1", "--kind", "Memcached", "--conversion"],
            &["edit", "--plugins=helm/v2-alpha"],
        ],
    );
    let webhook = dir.join("dist/chart/templates/webhook");
    assert!(webhook.join("service.yaml").is_file());
    let edited = webhook.join("cert_manager.yaml");
    std::fs::write(&edited, format!("{}# mine\n", std::fs::read_to_string(&edited).unwrap())).unwrap();
    commit(&dir, "my edit");
    let output = common::memop()
        .current_dir(&dir)
        .args(["delete", "api", "--group", "cache", "--version", "v1alpha1", "--kind", "Memcached"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
    assert!(!webhook.join("service.yaml").exists() && !webhook.join("manifests.yaml").exists());
    assert!(edited.is_file(), "an edited file was removed");
    assert!(stderr.contains("dist/chart/templates/webhook/cert_manager.yaml"), "{stderr}");
    let sum = std::fs::read_to_string(dir.join("PROJECT.sum")).unwrap();
    assert!(!sum.contains("dist/chart/templates/webhook/service.yaml"), "{sum}");
    std::fs::remove_file(&edited).unwrap();
    assert_renders_what_kustomize_renders(&helm, &dir);
}

/// `--output-dir` elsewhere moves the chart: the old one, which may hold the user's edits, is left
/// as it is, and named.
#[test]
fn a_chart_moved_by_output_dir_names_the_old_one_it_leaves() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = project(scratch.path(), "memcached-operator", &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    let before = std::fs::read_to_string(dir.join("dist/chart/values.yaml")).unwrap();
    let output = common::memop()
        .current_dir(&dir)
        .args(["edit", "--plugins=helm/v2-alpha", "--output-dir", "deploy"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
    assert!(stderr.contains("the chart was in dist/chart, and memop now writes and updates deploy/chart"), "{stderr}");
    assert!(dir.join("deploy/chart/Chart.yaml").is_file());
    assert_eq!(std::fs::read_to_string(dir.join("dist/chart/values.yaml")).unwrap(), before);
    let project_file = std::fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(project_file.contains("    output: deploy\n"), "{project_file}");
}

/// `kubectl args` as the control plane's cluster admin: its stdout, or its output as the error.
fn kubectl(plane: &memop_test::ControlPlane, args: &[&str]) -> Result<String, String> {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(plane.admin_kubeconfig())
        .args(args)
        .output()
        .expect("running kubectl");
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        false => Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))),
    }
}

/// Stops the manager when the test ends, however it ends.
struct Manager(std::process::Child);

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// On the real control plane: `helm install` the chart, run the manager as the chart's
/// ServiceAccount (a token for it, so only the chart's RBAC authorizes it), see a sample
/// reconciled into its Deployment, then `helm uninstall`, which keeps the CRD (`crd.keep`).
#[test]
fn the_chart_installs_and_its_rbac_runs_the_manager_and_uninstall_keeps_the_crds() {
    let Some(helm) = helm() else { return };
    let Some(plane) = memop_test::ControlPlane::shared() else { return };
    let scratch = tempfile::tempdir().unwrap();
    // A name of its own: the projects the tests build share one target directory.
    let name = "helm-install-operator";
    let dir = project(scratch.path(), name, &[&["init", "--domain", "example.com"], MEMCACHED]);
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    let namespace = format!("{name}-system");
    let kubeconfig = plane.admin_kubeconfig();
    let kubeconfig = kubeconfig.to_str().unwrap();
    let install = ["install", name, "dist/chart", "-n", &namespace, "--create-namespace", "--kubeconfig", kubeconfig];
    let installed = run_helm(&helm, &dir, &install).unwrap();
    assert!(installed.contains("STATUS: deployed"), "{installed}");
    // NOTES.txt's way to the CRDs finds them.
    let crds = format!("app.kubernetes.io/instance={name}");
    assert!(installed.contains(&format!("kubectl get crds -l {crds}")), "{installed}");
    assert!(
        kubectl(plane, &["get", "crds", "-l", &crds, "-o", "name"]).unwrap().contains("memcacheds.cache.example.com")
    );

    // The manager the chart deploys, run here (the control plane has no nodes), with the chart's
    // arguments and environment but for the ports, as the chart's ServiceAccount.
    common::check(&dir, "cargo", &["build", "--locked", "--quiet", "--bin", name]);
    let binary = common::generated_target_dir().join("debug").join(name);
    let account = format!("{name}-controller-manager");
    let token = kubectl(plane, &["create", "token", &account, "-n", &namespace]).unwrap();
    let as_account = plane.kubeconfig_for_token(name, token.trim(), &namespace);
    let probes = memop_test::envtest::free_port().unwrap();
    let _manager = Manager(
        Command::new(&binary)
            .args([
                "--leader-elect",
                "--metrics-bind-address=0",
                &format!("--health-probe-bind-address=127.0.0.1:{probes}"),
            ])
            .env("KUBECONFIG", &as_account)
            .env("POD_NAME", "manager-0")
            .env("POD_NAMESPACE", &namespace)
            .env("MEMCACHED_IMAGE", "memcached:1.6.26-alpine3.19")
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.join("manager.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    kubectl(
        plane,
        &["apply", "-n", &namespace, "-f", dir.join("config/samples/cache_v1alpha1_memcached.yaml").to_str().unwrap()],
    )
    .unwrap();
    // The reconcile: the sample's Deployment, created by the manager under the chart's role.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        if let Ok(image) = kubectl(
            plane,
            &[
                "get",
                "deployment",
                "memcached-sample",
                "-n",
                &namespace,
                "-o",
                "jsonpath={.spec.template.spec.containers[0].image}",
            ],
        ) {
            assert_eq!(image, "memcached:1.6.26-alpine3.19");
            break;
        }
        let log = std::fs::read_to_string(dir.join("manager.log")).unwrap_or_default();
        assert!(
            std::time::Instant::now() < deadline,
            "no Deployment for the sample within 2 minutes; the manager's log:\n{log}"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let log = std::fs::read_to_string(dir.join("manager.log")).unwrap_or_default();
    assert!(!log.contains("forbidden"), "the chart's RBAC refused the manager something:\n{log}");
    drop(_manager);

    let uninstalled =
        run_helm(&helm, &dir, &["uninstall", name, "-n", &namespace, "--kubeconfig", kubeconfig]).unwrap();
    assert!(uninstalled.contains("kept due to the resource policy"), "{uninstalled}");
    kubectl(plane, &["get", "crd", "memcacheds.cache.example.com"]).expect("the CRD is kept");
    kubectl(plane, &["get", "memcached", "memcached-sample", "-n", &namespace]).expect("and so the sample");
    let gone = kubectl(plane, &["get", "serviceaccount", &account, "-n", &namespace]).unwrap_err();
    assert!(gone.contains("NotFound"), "{gone}");
}
