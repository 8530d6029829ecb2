//! Generated projects must build, pass clippy with `-D warnings`, `cargo fmt --check` and their
//! own tests, and render with `kubectl kustomize`, straight after generation.
//!
//! These build real projects (kube and k8s-openapi included), all in one shared target
//! directory (see `common::generated_target_dir`), so the dependency tree compiles once and a
//! warm run only rebuilds the projects themselves.

mod common;

use std::path::Path;

use serde_yaml::Value;

#[test]
fn the_memcached_example_builds_lints_and_passes_its_tests() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/memcached-operator");
    common::build_lint_and_test(&example);

    let crd: Value = serde_yaml::from_str(
        &std::fs::read_to_string(example.join("config/crd/bases/cache.example.com_memcacheds.yaml")).unwrap(),
    )
    .unwrap();
    let spec = &crd["spec"];
    assert_eq!(spec["group"], "cache.example.com");
    assert_eq!(spec["names"]["plural"], "memcacheds");
    assert_eq!(spec["scope"], "Namespaced");
    let version = &spec["versions"][0];
    assert!(version["subresources"]["status"].is_mapping());
    let schema = &version["schema"]["openAPIV3Schema"]["properties"];
    let size = &schema["spec"]["properties"]["size"];
    assert_eq!((size["minimum"].as_f64(), size["maximum"].as_f64()), (Some(1.0), Some(3.0)));
    let conditions = &schema["status"]["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-type"], "map");
    assert_eq!(conditions["x-kubernetes-list-map-keys"][0], "type");
}

#[test]
fn a_project_with_several_groups_and_kinds_builds_lints_and_passes_its_tests() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("fleet-operator");
    std::fs::create_dir(&dir).unwrap();
    common::run(&dir, &["init", "--domain", "example.org", "--license", "none"]);
    common::run(&dir, &["create", "api", "--group", "cache", "--kind", "Memcached"]);
    common::run(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--kind",
            "Redis",
            "--image",
            "redis:7.4",
            "--image-container-port",
            "6379",
        ],
    );
    common::run(
        &dir,
        &["create", "api", "--group", "batch", "--version", "v1", "--kind", "CronJob", "--namespaced=false"],
    );
    common::run(
        &dir,
        &[
            "create",
            "api",
            "--group",
            "web-tier",
            "--version",
            "v1beta1",
            "--kind",
            "HealthCheckPolicy",
            "--image",
            "ghcr.io/example/checker:v1.2.3",
            "--image-container-port",
            "9090",
            "--image-container-command",
            "checker,--interval=10s",
            "--run-as-user",
            "65532",
        ],
    );
    // Webhooks: both kinds on an operand kind, validation alone on a cluster-scoped skeleton kind.
    let webhook = ["create", "webhook", "--group", "cache", "--kind", "Memcached", "--defaulting"];
    common::run(&dir, &[&webhook[..], &["--programmatic-validation"]].concat());
    common::run(
        &dir,
        &["create", "webhook", "--group", "batch", "--version", "v1", "--kind", "CronJob", "--programmatic-validation"],
    );
    // Second versions with conversion webhooks: Memcached stored as its new version, the hub;
    // CronJob (cluster-scoped, skeleton types) still stored as v1, the hub, with v2 a spoke.
    let memcached_v1 = ["--group", "cache", "--version", "v1", "--kind", "Memcached"];
    common::run(&dir, &[&["create", "api"][..], &memcached_v1, &["--storage-version"]].concat());
    common::run(&dir, &[&["create", "webhook"][..], &memcached_v1, &["--conversion"]].concat());
    // A version added after the conversion webhook joins it as a spoke.
    common::run(&dir, &["create", "api", "--group", "cache", "--version", "v2", "--kind", "Memcached"]);
    common::run(&dir, &["create", "api", "--group", "batch", "--version", "v2", "--kind", "CronJob"]);
    common::run(
        &dir,
        &[
            "create",
            "webhook",
            "--group",
            "batch",
            "--version",
            "v1",
            "--kind",
            "CronJob",
            "--conversion",
            "--spoke",
            "v2",
        ],
    );
    common::build_lint_and_test(&dir);
    // Without the real control plane, its dozens of real-control-plane tests (scenarios, webhooks,
    // conversions) are one line of `cargo test`, not one "ignored" line each: checked above when
    // this suite runs without it, and here, once more, when it runs with it.
    if common::real_tier() {
        let _cargo = common::cargo_lock();
        let out = common::command(&dir, "cargo")
            .args(["test", "--locked"])
            .env_remove("KUBEBUILDER_ASSETS")
            .env_remove("ENVTEST_REQUIRED")
            .output()
            .unwrap();
        let tests = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{tests}\n{}", String::from_utf8_lossy(&out.stderr));
        common::assert_real_tier_notice(&tests, false);
    }
    for test in ["memcached_webhook.rs", "cron_job_webhook.rs", "memcached_conversion.rs", "cron_job_conversion.rs"] {
        assert!(dir.join("tests").join(test).exists(), "{test}");
    }
    // Every kind has its scenario tests, and the role merged the rules of all controllers.
    for test in ["memcached.rs", "redis.rs", "cron_job.rs", "health_check_policy.rs"] {
        assert!(dir.join("tests").join(test).exists(), "{test}");
    }
    let role = std::fs::read_to_string(dir.join("config/rbac/role.yaml")).unwrap();
    assert!(role.contains("kind: ClusterRole\n"), "{role}");
    assert_eq!(role.matches("- deployments").count(), 1, "{role}");
}

#[test]
fn a_project_that_deleted_its_first_version_builds_lints_and_passes_its_tests() {
    // v1alpha1 (with admission webhooks), then v1 stored (the hub of a conversion webhook), the
    // objects stored in v1alpha1 migrated by the operator, then v1alpha1 deleted: the controller
    // and the admission webhooks move to v1, the conversion goes with its only spoke, and the CRD
    // serves v1.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("versions-operator");
    std::fs::create_dir(&dir).unwrap();
    common::run(&dir, &["init", "--domain", "example.com"]);
    common::run(&dir, &["create", "api", "--group", "cache", "--kind", "Memcached"]);
    let v1alpha1 = ["--group", "cache", "--version", "v1alpha1", "--kind", "Memcached"];
    common::run(
        &dir,
        &[&["create", "webhook"][..], &v1alpha1, &["--defaulting", "--programmatic-validation"]].concat(),
    );
    let v1 = ["--group", "cache", "--version", "v1", "--kind", "Memcached"];
    common::run(&dir, &[&["create", "api"][..], &v1, &["--storage-version"]].concat());
    common::run(&dir, &[&["create", "webhook"][..], &v1, &["--conversion", "--spoke", "v1alpha1"]].concat());
    // A field added to v1 as a user adds one, mapped in the conversion (the round trip through
    // the hub keeps it empty): the generated tests and benchmark of the kind take it from
    // `Default`, so they build on, in v1alpha1 now and in v1 after the delete, and so does a
    // controller made after the field.
    let types = dir.join("src/api/cache/v1/memcached.rs");
    let size = "    pub size: i32,\n";
    let field = "    /// memoryLimitMb caps each pod's memory.\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub memory_limit_mb: Option<i32>,\n";
    let text = std::fs::read_to_string(&types).unwrap();
    assert!(text.contains(size), "{text}");
    std::fs::write(&types, text.replacen(size, &format!("{size}{field}"), 1)).unwrap();
    let conversion = dir.join("src/api/cache/v1alpha1/memcached_conversion.rs");
    let text = std::fs::read_to_string(&conversion).unwrap();
    let mapped = "                size: spoke.spec.size,\n";
    assert!(text.contains(mapped), "{text}");
    std::fs::write(&conversion, text.replacen(mapped, &format!("{mapped}                memory_limit_mb: None,\n"), 1))
        .unwrap();
    common::run(
        &dir,
        &[
            &["create", "api"][..],
            &v1,
            &["--resource=false", "--controller=true", "--controller-name", "memcached-audit"],
        ]
        .concat(),
    );
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    // The operator's own storage migration, on the real control plane: objects stored in
    // v1alpha1 migrated to v1 and `storedVersions` pruned, after which v1alpha1 can go.
    if common::real_tier() {
        let tests = common::check(&dir, "cargo", &["test", "--locked", "--test", "memcached_conversion"]);
        assert!(tests.contains("test the_operator_migrates_objects_stored_in_an_older_version ... ok"), "{tests}");
    }
    // v1alpha1 deprecated first, as kubebuilder's marker does it: an attribute of its type, which
    // `make manifests` carries into the CRD.
    let types = dir.join("src/api/cache/v1alpha1/memcached.rs");
    let warning = "cache.example.com/v1alpha1 Memcached is deprecated; use cache.example.com/v1";
    let text = std::fs::read_to_string(&types).unwrap();
    assert!(text.contains("\n#[kube(\n"), "{text}");
    std::fs::write(
        &types,
        text.replacen("\n#[kube(\n", &format!("\n#[kube(deprecated = \"{warning}\")]\n#[kube(\n"), 1),
    )
    .unwrap();
    common::check(&dir, "cargo", &["run", "--locked", "--bin", "manifests"]);
    let crd = dir.join("config/crd/bases/cache.example.com_memcacheds.yaml");
    let versions: Value = serde_yaml::from_str(&std::fs::read_to_string(&crd).unwrap()).unwrap();
    let versions = versions["spec"]["versions"].as_sequence().unwrap().clone();
    let old = versions.iter().find(|v| v["name"] == "v1alpha1").unwrap();
    assert_eq!((&old["deprecated"], &old["deprecationWarning"]), (&Value::from(true), &Value::from(warning)));
    assert!(versions.iter().all(|v| v["name"] == "v1alpha1" || v["deprecated"] != true));
    // The deprecation is an edit of the version's types: deleting them takes --force.
    let delete = ["delete", "api", "--group", "cache", "--version", "v1alpha1", "--kind", "Memcached"];
    let refused = common::memop().current_dir(&dir).args(delete).assert().failure();
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(stderr.contains("src/api/cache/v1alpha1/memcached.rs") && stderr.contains("--force"), "{stderr}");
    common::run(&dir, &[&delete[..], &["--force"]].concat());
    // The CRD, which `make manifests` wrote, is its to write again (as the command says).
    common::check(&dir, "cargo", &["run", "--locked", "--bin", "manifests"]);
    // Its own tests include tests/manifests.rs: `make manifests` would change nothing.
    common::build_lint_and_test(&dir);
    let crd: Value = serde_yaml::from_str(
        &std::fs::read_to_string(dir.join("config/crd/bases/cache.example.com_memcacheds.yaml")).unwrap(),
    )
    .unwrap();
    let versions = crd["spec"]["versions"].as_sequence().unwrap();
    assert_eq!(versions.len(), 1, "{versions:?}");
    assert_eq!((&versions[0]["name"], &versions[0]["storage"]), (&Value::from("v1"), &Value::from(true)));
    assert!(!dir.join("src/api/cache/v1alpha1").exists());
    let webhook = std::fs::read_to_string(dir.join("src/webhook/memcached.rs")).unwrap();
    assert!(webhook.contains("use crate::api::cache::v1::Memcached;"), "{webhook}");
    // The chart's CRD is a copy of config/crd's, which `make manifests` wrote after memop last
    // did (the deprecation): refreshed as its header says, it serves v1 alone, and it lints.
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    let chart_crd =
        std::fs::read_to_string(dir.join("dist/chart/templates/crd/cache.example.com_memcacheds.yaml")).unwrap();
    assert!(!chart_crd.contains("v1alpha1"), "{chart_crd}");
    common::helm_lint(&dir);
}

#[test]
fn an_init_only_namespaced_project_builds_lints_and_passes_its_tests() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("empty-operator");
    std::fs::create_dir(&dir).unwrap();
    common::run(&dir, &["init", "--domain", "example.com", "--namespaced"]);
    common::build_lint_and_test(&dir);
    let role = std::fs::read_to_string(dir.join("config/rbac/role.yaml")).unwrap();
    assert!(role.contains("kind: Role\n") && role.contains("rules: []"), "{role}");
}

/// The role comes from the kinds a controller declares (`Context::rules`): a kind its builder
/// owns but `rules` forgets fails the project's own test at once, and on the real control plane
/// the controller, running as its ServiceAccount with `config/rbac` applied, is refused the
/// Deployments' list and watch: its cache of them never fills.
#[test]
fn a_kind_missing_from_rules_fails_the_projects_tests() {
    if std::env::var_os("KUBEBUILDER_ASSETS").is_none() {
        eprintln!("skipped: needs KUBEBUILDER_ASSETS (scripts/envtest/build.sh)");
        return;
    }
    // A project of its own name: two packages of one name and version in the shared target
    // directory would overwrite each other's artifacts.
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("rbac-check-operator");
    std::fs::create_dir(&dir).unwrap();
    common::run(&dir, &["init", "--domain", "example.com"]);
    common::run(&dir, &["create", "api", "--group", "cache", "--kind", "Memcached"]);
    let controller = dir.join("src/controller/memcached.rs");
    let code = std::fs::read_to_string(&controller).unwrap();
    let owns = "            .owns::<Deployment>()\n";
    assert!(code.contains(owns), "the controller's rules changed; update this test");
    std::fs::write(&controller, code.replace(owns, "")).unwrap();
    common::check(&dir, "cargo", &["run", "--quiet", "--locked", "--bin", "manifests"]);
    let role: Value =
        serde_yaml::from_str(&std::fs::read_to_string(dir.join("config/rbac/role.yaml")).unwrap()).unwrap();
    let rules = role["rules"].as_sequence().unwrap();
    assert!(!rules.iter().any(|r| r["resources"][0] == "deployments"), "{rules:?}");

    let _cargo = common::cargo_lock();
    let test = |name: &str| {
        let output = common::command(&dir, "cargo")
            .args(["test", "--locked", "--test", "memcached", name])
            .env("ENVTEST_REQUIRED", "1")
            .output()
            .unwrap();
        assert!(!output.status.success(), "{name} passed without the Deployments' rules");
        String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
    };
    let stdout = test("in_memory::the_role_grants_what_the_controller_does");
    assert!(stdout.contains("\"deployments\""), "expected the Deployments' rules missing:\n{stdout}");
    let stdout = test("real_control_plane::create_makes_the_deployment_exactly_right");
    // Refused a list of Deployments, the controller's cache of them never holds the one it
    // applied (its create is refused too, but the cache is what the test waits for first).
    assert!(
        stdout.contains("timed out waiting for the cache to hold the Deployment")
            || (stdout.contains("forbidden") && stdout.contains("deployments")),
        "expected the Deployments refused:\n{stdout}"
    );
}

/// Names that are valid but close to what the generated code uses (a kind whose plural is a
/// keyword, a plural with a dash, kinds named like Kubernetes or Rust things) all go into one
/// project, which must still compile: memop either makes such a clash impossible or refuses it.
/// The project is named like one of its kinds, as kubebuilder's guestbook quickstart is.
#[test]
fn adversarial_but_valid_names_compile() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("edge-case");
    std::fs::create_dir(&dir).unwrap();
    common::run(&dir, &["init", "--domain", "example.com", "--license", "none"]);
    let apis: &[&[&str]] = &[
        &["--group", "cache", "--kind", "A"], // plural "as", a keyword
        &["--group", "cache", "--kind", "Foo", "--plural", "my-foos"],
        &["--group", "cache", "--kind", "Deployments"],
        &["--group", "cache", "--kind", "Pod"],
        &["--group", "cache", "--kind", "Test"],
        &["--group", "cache", "--kind", "Stdlib"],
        &["--group", "cache", "--kind", "Core2"],
        &["--group", "a-b", "--version", "v1", "--kind", "Item"],
        &["--group", "cache", "--kind", "EdgeCase", "--image", "nginx:1.27", "--image-container-port", "8080"],
        &[
            "--group",
            "web",
            "--kind",
            "ContextConfig",
            "--image",
            "example.com/app:_1.0",
            "--image-container-port",
            "8080",
            "--image-container-command",
            "sh,-c,echo \"hi\" \\ $HOME",
        ],
    ];
    for api in apis {
        let mut args = vec!["create", "api"];
        args.extend_from_slice(api);
        common::run(&dir, &args);
    }
    common::check(&dir, "cargo", &["check", "--locked", "--all-targets"]);
}

/// kubebuilder's "Using external resources": a controller over Deployments, beside a kind of
/// the project's own (their rules merged in one role), with webhooks on Pods and Namespaces; and
/// a controller over Pods in a namespaced project.
#[test]
fn controllers_over_kubernetes_kinds_build_lint_and_pass_their_tests() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("deployment-operator");
    std::fs::create_dir(&dir).unwrap();
    common::run(&dir, &["init", "--domain", "example.com"]);
    let deployment = ["--group", "apps", "--version", "v1", "--kind", "Deployment"];
    common::run(&dir, &[&["create", "api"], &deployment[..], &["--resource=false", "--controller=true"]].concat());
    common::run(&dir, &["create", "api", "--group", "cache", "--kind", "Memcached"]);
    // Webhooks on Pods (whose real-tier test shows the manager's namespace taking Pods while
    // the webhook server is down) and on a cluster-scoped kind of Kubernetes' own.
    let pod = ["--group", "core", "--version", "v1", "--kind", "Pod"];
    common::run(&dir, &[&["create", "webhook"], &pod[..], &["--defaulting", "--programmatic-validation"]].concat());
    let namespace = ["--group", "core", "--version", "v1", "--kind", "Namespace"];
    common::run(&dir, &[&["create", "webhook"], &namespace[..], &["--programmatic-validation"]].concat());
    // A second controller of each kind (`--controller-name`), beside the first: each its own
    // module and test, named so in the metrics its test reads, its rules merged in the role.
    let named = ["--resource=false", "--controller=true", "--controller-name"];
    common::run(&dir, &[&["create", "api"], &deployment[..], &named[..], &["deployment-audit"]].concat());
    let memcached = ["--group", "cache", "--version", "v1alpha1", "--kind", "Memcached"];
    common::run(&dir, &[&["create", "api"], &memcached[..], &named[..], &["memcached-audit"]].concat());
    common::build_lint_and_test(&dir);
    assert!(!dir.join("config/crd/bases/apps_deployments.yaml").exists());
    for module in ["deployment_audit", "memcached_audit"] {
        assert!(dir.join(format!("src/controller/{module}.rs")).is_file());
        assert!(dir.join(format!("tests/{module}.rs")).is_file());
    }

    let dir = scratch.path().join("pod-operator");
    std::fs::create_dir(&dir).unwrap();
    common::run(&dir, &["init", "--domain", "example.com", "--namespaced"]);
    let pod = ["create", "api", "--group", "core", "--version", "v1", "--kind", "Pod", "--resource=false"];
    common::run(&dir, &[&pod[..], &["--controller=true"]].concat());
    common::build_lint_and_test(&dir);
    assert!(!dir.join("config/crd").exists());
}

/// Every kind of Kubernetes' own that memop scaffolds controllers for, in one project: each
/// controller compiles, and its tests (which create the kind's sample) pass on both back ends.
#[test]
fn a_controller_over_every_kubernetes_kind_memop_knows_builds_and_passes_its_tests() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("builtin-operator");
    std::fs::create_dir(&dir).unwrap();
    common::run(&dir, &["init", "--domain", "example.com"]);
    for kind in memop::names::builtin::KINDS {
        let args = ["create", "api", "--group", kind.group, "--version", kind.version, "--kind", kind.kind];
        common::run(&dir, &[&args[..], &["--resource=false"]].concat());
    }
    common::build_lint_and_test(&dir);
}

/// The cert-manager release whose Certificate CRD the external-kind test scaffolds a controller
/// over: a CRD no one here wrote, as its project publishes it (a Helm template's comments and
/// labels included).
const CERT_MANAGER: &str = "github.com/cert-manager/cert-manager@v1.17.2";

/// cert-manager's Certificate CRD, from its Go module, which `go mod download` puts in Go's module
/// cache (outside the repository: no third-party file is committed). `None`, with a line saying
/// why, when Go or its module proxy is missing, unless `ENVTEST_REQUIRED` says the full suite must
/// run (then it fails).
fn cert_manager_certificate_crd() -> Option<std::path::PathBuf> {
    let required = std::env::var("ENVTEST_REQUIRED").is_ok_and(|v| v == "1" || v == "true");
    let skip = |why: String| {
        assert!(!required, "ENVTEST_REQUIRED is set, and cert-manager's CRD is not available: {why}");
        eprintln!("skipped: needs cert-manager's CRD from its Go module ({CERT_MANAGER}): {why}");
        None
    };
    // In a directory of no Go module: the download is of the module alone.
    let scratch = tempfile::tempdir().unwrap();
    let output = match std::process::Command::new("go")
        .args(["mod", "download", "-json", CERT_MANAGER])
        .current_dir(scratch.path())
        .env("GOFLAGS", "-mod=mod")
        .output()
    {
        Ok(output) => output,
        Err(err) => return skip(format!("cannot run go: {err}")),
    };
    if !output.status.success() {
        let why = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
        return skip(format!("go mod download failed: {why}"));
    }
    let module: serde_json::Value = serde_json::from_slice(&output.stdout).expect("go mod download -json");
    let dir = module["Dir"].as_str().expect("the module's directory");
    Some(Path::new(dir).join("deploy/crds/crd-certificates.yaml"))
}

/// Every kind of operator over types the project does not define, in one project (issue #33):
/// a controller over Deployments (Kubernetes' own), a defaulting webhook on Pods (whose real-tier
/// test shows the manager's namespace taking Pods while the webhook server is down), a controller
/// over cert-manager's Certificates (kopium's types from its CRD, kept in config/external-crds/,
/// spelled as kubebuilder's documentation spells it) and admission webhooks on them, beside a kind of the project's own with a
/// second, named controller, and the Helm chart of it all. Its tests run on both back ends (the real one with the CRD installed,
/// whose schema checks the sample); `helm lint` passes; `external-types` and `update` change
/// nothing.
#[test]
fn a_project_over_types_it_does_not_define_builds_lints_and_passes_its_tests() {
    let Some(crd) = cert_manager_certificate_crd() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("certificate-operator");
    std::fs::create_dir(&dir).unwrap();
    common::run(&dir, &["init", "--domain", "example.com"]);
    let deployment = ["--group", "apps", "--version", "v1", "--kind", "Deployment"];
    common::run(&dir, &[&["create", "api"], &deployment[..], &["--resource=false", "--controller=true"]].concat());
    let certificate =
        ["--group", "cert-manager", "--external-api-domain", "io", "--version", "v1", "--kind", "Certificate"];
    let crd = crd.to_str().unwrap();
    let flags = ["--external-api-crd", crd, "--resource=false", "--controller=true"];
    common::run(&dir, &[&["create", "api"], &certificate[..], &flags[..]].concat());
    common::run(&dir, &["create", "api", "--group", "cache", "--kind", "Memcached"]);
    let second = ["--resource=false", "--controller=true", "--controller-name", "memcached-audit"];
    common::run(&dir, &[&["create", "api", "--group", "cache", "--kind", "Memcached"][..], &second].concat());
    common::run(&dir, &["create", "webhook", "--group", "core", "--version", "v1", "--kind", "Pod", "--defaulting"]);
    // Admission webhooks on the external kind, on kopium's type: the real API server calls them
    // for a Certificate made from the CRD's schema.
    let admission = ["--group", "cert-manager.io", "--version", "v1", "--kind", "Certificate", "--defaulting"];
    common::run(&dir, &[&["create", "webhook"], &admission[..], &["--programmatic-validation"]].concat());
    common::run(&dir, &["edit", "--plugins=helm/v2-alpha"]);
    let types = std::fs::read_to_string(dir.join("src/external/certificate.rs")).unwrap();
    assert!(types.contains("pub struct CertificateSpec") && types.contains("pub secret_name: String"), "{types}");
    common::build_lint_and_test(&dir);
    common::helm_lint(&dir);
    // Again from the kept CRD: the same types, the same project.
    let before = common::tree(&dir);
    common::run(&dir, &["external-types"]);
    common::run(&dir, &["update"]);
    assert!(common::tree(&dir) == before, "external-types and update changed the project");
}
