//! Controllers over Kubernetes' own kinds (k8s-openapi's types), as kubebuilder's
//! `create api --group apps --version v1 --kind Deployment --resource=false --controller=true`.

use super::*;

const DEPLOYMENT: &str = "--group apps --version v1 --kind Deployment --resource=false --controller=true";
const POD: &str = "--group core --version v1 --kind Pod --resource=false --controller=true";

#[test]
fn a_controller_over_deployments_and_one_over_pods_get_no_types_nor_crd() {
    let (_tmp, dir) = project(&[]);
    let before = snapshot(&dir);
    let out = ok(&dir, &format!("create api {DEPLOYMENT}")).stdout;
    assert!(out.contains("Deployment: a controller over Kubernetes' own apps/v1, Kind=Deployment"), "{out}");
    assert!(out.contains("Next: implement the controller in src/controller/deployment.rs"), "{out}");
    ok(&dir, &format!("create api {POD}"));

    // Its controller and tests, registered; no types, CRD, sample nor helper roles.
    let mut written: Vec<String> = changed(&before, &snapshot(&dir)).iter().map(|p| p.display().to_string()).collect();
    written.sort();
    let expected = [
        "PROJECT",
        "PROJECT.sum",
        "config/rbac/role.yaml",
        "src/controller/deployment.rs",
        "src/controller/mod.rs",
        "src/controller/pod.rs",
        "src/main.rs",
        "src/manifests.rs",
        "tests/deployment.rs",
        "tests/pod.rs",
    ];
    assert_eq!(written, expected);
    let controller = read(&dir, "src/controller/deployment.rs");
    for line in [
        "use k8s_openapi::api::apps::v1::Deployment;",
        "type Object = Deployment;",
        "Rules::reconciles::<Deployment>()",
        "Builder::new(NAME, shared)",
    ] {
        assert!(controller.contains(line), "{line} in\n{controller}");
    }
    let pod = read(&dir, "src/controller/pod.rs");
    assert!(
        pod.contains("use k8s_openapi::api::core::v1::Pod;") && pod.contains("Rules::reconciles::<Pod>()"),
        "{pod}"
    );
    // The role memop writes holds what the runtime derives from those declarations.
    let role = read(&dir, "config/rbac/role.yaml");
    assert!(role.contains("- apps\n  resources:\n  - deployments\n"), "{role}");
    assert!(role.contains("  resources:\n  - pods\n"), "{role}");

    // PROJECT records them as kubebuilder does: core, no api, no domain for these groups.
    let project = read(&dir, "PROJECT");
    let deployment = "- controller: true\n  core: true\n  group: apps\n  kind: Deployment\n  version: v1\n";
    let pod = "- controller: true\n  core: true\n  group: core\n  kind: Pod\n  version: v1\n";
    assert!(project.contains(deployment) && project.contains(pod), "{project}");

    // The role: list and watch, in the kinds' API groups (core is "").
    let role = read(&dir, "config/rbac/role.yaml");
    let pods = "- apiGroups:\n  - \"\"\n  resources:\n  - pods\n  verbs:\n  - list\n  - watch\n";
    let deployments = "- apiGroups:\n  - apps\n  resources:\n  - deployments\n  verbs:\n  - list\n  - watch\n";
    assert!(role.contains(pods) && role.contains(deployments), "{role}");

    // A second run is refused, --force regenerates; a project's own kinds still come next.
    refused(&dir, &format!("create api {DEPLOYMENT}"), &["a controller for apps/v1, Kind=Deployment already exists"]);
    ok(&dir, &format!("create api {DEPLOYMENT} --force"));
    ok(&dir, "create api --group cache --kind Memcached");
    assert_eq!(count(&read(&dir, "config/rbac/role.yaml"), "  - deployments\n"), 1);
}

#[test]
fn groups_are_spelled_as_kubebuilder_or_kubernetes_spell_them() {
    let (_tmp, dir) = project(&[]);
    ok(&dir, "create api --group networking.k8s.io --version v1 --kind Ingress --resource=false --controller=true");
    ok(&dir, "create api --group rbac.authorization --version v1 --kind Role --resource=false --controller=true");
    let project = read(&dir, "PROJECT");
    // kubebuilder's spelling: the group's first part, and k8s.io as its domain.
    let ingress = "- controller: true\n  core: true\n  domain: k8s.io\n  group: networking\n  kind: Ingress\n";
    assert!(project.contains(ingress), "{project}");
    assert!(read(&dir, "config/rbac/role.yaml").contains("  - networking.k8s.io\n  resources:\n  - ingresses\n"));
    assert!(read(&dir, "src/controller/role.rs").contains("use k8s_openapi::api::rbac::v1::Role;"));
    // A group of the project's own named like a Kubernetes group stays the project's.
    ok(&dir, "create api --group apps --version v1 --kind Frigate");
    ok(&dir, "create api --group batch --version v1 --kind CronJob");
    assert!(read(&dir, "src/api/batch/v1/cron_job.rs").contains("group = \"batch.example.com\""));
}

#[test]
fn what_memop_cannot_control_is_refused_with_what_to_do() {
    let (_tmp, dir) = project(&["--group cache --kind Memcached"]);
    let cases: &[(&str, &[&str])] = &[
        // Not a kind memop knows of the group: what to do instead.
        (
            "--group apps --version v1 --kind Frigate --resource=false",
            &["apps/v1 Frigate is not a Kubernetes type memop knows", "Deployment", "--external-api-crd", "kopium"],
        ),
        // Another group or version: the right flags.
        ("--group core --kind Pod --resource=false", &["not core/v1alpha1: pass --group core --version v1"]),
        ("--group apps --version v1 --kind Pod --resource=false", &["pass --group core --version v1"]),
        // The project's own kind of that name: the hint to control Kubernetes'.
        (
            "--group apps --version v1 --kind Deployment",
            &["generated code already uses that name", "--resource=false --controller=true"],
        ),
        (
            "--group cache --version v1 --kind Pod --resource=false",
            &["has no API in this project", "--group core --version v1"],
        ),
        // What only a kind of the project's own has.
        (
            "--group apps --version v1 --kind Deployment --resource=false --image nginx:1",
            &["--image: Deployment is Kubernetes' own"],
        ),
        ("--group apps --version v1 --kind Deployment --resource=false --plural deploys", &["served as deployments"]),
        (
            "--group apps --version v1 --kind Deployment --resource=false --controller=false",
            &["leave nothing to scaffold"],
        ),
    ];
    for (args, expected) in cases {
        refused(&dir, &format!("create api {args}"), expected);
    }
    // One controller module per kind name.
    ok(&dir, &format!("create api {POD}"));
    refused(
        &dir,
        "create api --group web --kind Pod",
        &["a controller for kind Pod already exists (Kubernetes' core/v1, Kind=Pod)"],
    );
    refused(
        &dir,
        "create webhook --group core --version v1 --kind Pod --conversion",
        &["--conversion: v1 Pod is Kubernetes' own", "converts between its versions itself"],
    );
    let cached = "create api --group cache --version v1 --kind Memcached --resource=false --controller=true";
    refused(&dir, cached, &["has no API in this project"]);
}

#[test]
fn a_namespaced_project_refuses_cluster_scoped_kinds() {
    let tmp = scratch();
    let dir = tmp.path().join("proj");
    fs::create_dir(&dir).unwrap();
    ok(&dir, "init --domain example.com --namespaced");
    refused(
        &dir,
        "create api --group core --version v1 --kind Namespace --resource=false --controller=true",
        &["cluster-scoped", "--namespaced"],
    );
    ok(&dir, &format!("create api {POD}"));
    assert!(read(&dir, "config/rbac/role.yaml").contains("kind: Role\n"));
}

#[test]
fn update_replays_a_controller_over_a_kubernetes_kind_as_it_was() {
    let (_tmp, dir) = project(&[DEPLOYMENT, "--group networking --version v1 --kind Ingress --resource=false"]);
    let before = snapshot(&dir);
    ok(&dir, "update");
    assert_unchanged(&dir, &before, "memop update");
}

/// Webhooks on a kind of Kubernetes' own without a controller for it: `create webhook` alone
/// made them, and the update replays only that (it replayed a `create api` with neither a
/// resource nor a controller, and refused).
#[test]
fn update_replays_webhooks_on_a_kubernetes_kind_without_a_controller() {
    let (_tmp, dir) = project(&["--group cache --kind Memcached"]);
    ok(&dir, POD_WEBHOOKS);
    let before = snapshot(&dir);
    ok(&dir, "update");
    assert_unchanged(&dir, &before, "memop update");
}

const POD_WEBHOOKS: &str = "create webhook --group core --version v1 --kind Pod --defaulting --programmatic-validation";

/// The webhook configurations of `rendered` (kustomize's or Helm's output) that name
/// `namespace` in a namespace selector, by webhook name.
fn webhooks_skipping(rendered: &str, namespace: &str) -> Vec<String> {
    let documents = rendered.split("\n---\n").filter(|d| d.contains("WebhookConfiguration"));
    let mut names = Vec::new();
    for document in documents {
        let yaml: serde_yaml::Value = serde_yaml::from_str(document).unwrap();
        for webhook in yaml["webhooks"].as_sequence().into_iter().flatten() {
            let expression = &webhook["namespaceSelector"]["matchExpressions"][0];
            if expression["key"].as_str() == Some("kubernetes.io/metadata.name")
                && expression["operator"].as_str() == Some("NotIn")
                && expression["values"][0].as_str() == Some(namespace)
            {
                names.push(webhook["name"].as_str().unwrap().to_string());
            }
        }
    }
    names.sort();
    names
}

/// kubebuilder's `create webhook --group core --version v1 --kind Pod`, with its "webhook
/// bootstrap problem" designed out: the configurations skip the manager's namespace, whatever
/// kustomize names it.
#[test]
fn webhooks_on_kubernetes_kinds_skip_the_managers_namespace() {
    let (_tmp, dir) = project(&["--group cache --kind Memcached"]);
    // No `create api` first, as in kubebuilder; a project kind's webhooks beside them.
    ok(&dir, POD_WEBHOOKS);
    ok(&dir, "create webhook --group cache --version v1alpha1 --kind Memcached --defaulting");
    let module = read(&dir, "src/webhook/pod.rs");
    for line in [
        "use k8s_openapi::api::core::v1::Pod;",
        "pub const MUTATE_PATH: &str = \"/mutate--v1-pod\";",
        "pub const VALIDATE_PATH: &str = \"/validate--v1-pod\";",
        "name: \"mpod-v1.core.example.com\",",
        "group: \"\",",
        "impl super::Defaulter<Pod> for PodWebhook {",
        "impl super::Validator<Pod> for PodWebhook {",
    ] {
        assert!(module.contains(line), "{line} in\n{module}");
    }
    // That the API server then takes Pods in the manager's namespace with no webhook server up
    // is memop-runtime's test (src/tests/webhook_conditions.rs); the project's own is about its
    // webhooks.
    let test = read(&dir, "tests/pod_webhook.rs");
    assert!(test.contains("fn the_api_server_calls_the_generated_webhooks()"), "{test}");
    assert!(!test.contains("manager_namespace"), "{test}");
    let project = read(&dir, "PROJECT");
    let pod = "- core: true\n  group: core\n  kind: Pod\n  version: v1\n  webhooks:\n    defaulting: true\n    \
               validation: true\n    webhookVersion: v1\n";
    assert!(project.contains(pod), "{project}");

    // make manifests' placeholder, the manager's namespace once kustomized, and still after
    // the user moves the project to another namespace; the project's own kind keeps no selector.
    let manifests = read(&dir, "config/webhook/manifests.yaml");
    assert_eq!(webhooks_skipping(&manifests, "system"), ["mpod-v1.core.example.com", "vpod-v1.core.example.com"]);
    assert!(manifests.contains("  - apiGroups:\n    - \"\"\n"), "{manifests}");
    let rendered = common::check(&dir, "kubectl", &["kustomize", "config/default"]);
    assert_eq!(webhooks_skipping(&rendered, "proj-system"), ["mpod-v1.core.example.com", "vpod-v1.core.example.com"]);
    let kustomization = read(&dir, "config/default/kustomization.yaml");
    fs::write(
        dir.join("config/default/kustomization.yaml"),
        kustomization.replace("namespace: proj-system", "namespace: operators"),
    )
    .unwrap();
    let rendered = common::check(&dir, "kubectl", &["kustomize", "config/default"]);
    assert_eq!(webhooks_skipping(&rendered, "operators").len(), 2, "{rendered}");
    fs::write(dir.join("config/default/kustomization.yaml"), kustomization).unwrap();

    // A controller over Pods joins the webhooks' entry; memop update changes nothing.
    ok(&dir, &format!("create api {POD}"));
    assert!(read(&dir, "PROJECT").contains("- controller: true\n  core: true\n  group: core\n  kind: Pod\n"));
    let before = snapshot(&dir);
    ok(&dir, "update");
    assert_unchanged(&dir, &before, "memop update");

    // The chart: the release's namespace.
    ok(&dir, "edit --plugins=helm/v2-alpha");
    let chart = read(&dir, "dist/chart/templates/webhook/manifests.yaml");
    assert_eq!(chart.matches("      values:\n      - {{ include \"proj.namespace\" . }}\n").count(), 2, "{chart}");
}

#[test]
fn webhooks_on_kubernetes_kinds_are_refused_with_what_to_do() {
    let (_tmp, dir) = project(&[]);
    let cases: &[(&str, &[&str])] = &[
        ("--group apps --version v1 --kind Pod --defaulting", &["pass --group core --version v1"]),
        ("--group core --version v1 --kind Pod", &["no webhook to scaffold"]),
        ("--group core --version v1 --kind Pod --conversion", &["--conversion: v1 Pod is Kubernetes' own"]),
        ("--group networking.k8s.io --version v1 --kind Ingress --conversion", &["networking.k8s.io/v1 Ingress"]),
    ];
    for (args, expected) in cases {
        refused(&dir, &format!("create webhook {args}"), expected);
    }
    ok(&dir, "create webhook --group networking.k8s.io --version v1 --kind Ingress --programmatic-validation");
    assert!(read(&dir, "src/webhook/ingress.rs").contains("use k8s_openapi::api::networking::v1::Ingress;"));
    refused(
        &dir,
        "create webhook --group networking --version v1 --kind Ingress --programmatic-validation",
        &["already has webhooks (validation); pass --force"],
    );
    // A project kind named like it cannot have webhooks too: webhook modules are named after kinds.
    ok(&dir, "create api --group web --kind Ingress");
    refused(
        &dir,
        "create webhook --group web --kind Ingress --defaulting",
        &["Ingress in group networking already has webhooks in src/webhook/ingress.rs"],
    );
}
