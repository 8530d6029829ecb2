//! `create api --controller-name NAME` (kubebuilder v4.14's flag): another controller of a kind
//! the project has, in its own module, named NAME in logs and metrics, recorded in PROJECT's
//! `controllers`, replayed by `memop update`.

use super::*;

const MEMCACHED: &str = "--group cache --version v1alpha1 --kind Memcached --resource=false --controller=true";
const DEPLOYMENT: &str = "--group apps --version v1 --kind Deployment --resource=false --controller=true";

#[test]
fn a_named_controller_gets_its_own_module_test_name_and_project_entry() {
    let (_tmp, dir) = project(&["--group cache --kind Memcached", DEPLOYMENT]);
    let (role, before) = (read(&dir, "config/rbac/role.yaml"), snapshot(&dir));
    let out = ok(&dir, &format!("create api {MEMCACHED} --controller-name memcached-audit")).stdout;
    assert!(out.contains("another controller, memcached-audit (src/controller/memcached_audit.rs)"), "{out}");
    ok(&dir, &format!("create api {DEPLOYMENT} --controller-name deploy-watch"));

    let written: Vec<String> = changed(&before, &snapshot(&dir)).iter().map(|p| p.display().to_string()).collect();
    let expected = [
        "PROJECT",
        "PROJECT.sum",
        "src/controller/deploy_watch.rs",
        "src/controller/memcached_audit.rs",
        "src/controller/mod.rs",
        "src/main.rs",
        "src/manifests.rs",
        "tests/deploy_watch.rs",
        "tests/memcached_audit.rs",
    ];
    assert_eq!(written, expected);
    // Its rules (list, watch) are within the kinds' first controllers': the role is as it was.
    assert_eq!(read(&dir, "config/rbac/role.yaml"), role);

    let audit = read(&dir, "src/controller/memcached_audit.rs");
    for line in [
        "pub const NAME: &str = \"memcached-audit\";",
        "use crate::api::cache::v1alpha1::Memcached;",
        "Builder::new(NAME, shared)",
        "size = object.spec.size",
    ] {
        assert!(audit.contains(line), "{line} in\n{audit}");
    }
    let watch = read(&dir, "src/controller/deploy_watch.rs");
    assert!(watch.contains("pub const NAME: &str = \"deploy-watch\";") && watch.contains("type Object = Deployment;"));
    assert!(read(&dir, "tests/memcached_audit.rs").contains("controller::memcached_audit::{Context, NAME, RESYNC"));
    // The module list is sorted, whatever order the controllers were made in.
    let modules = read(&dir, "src/controller/mod.rs");
    assert!(
        modules.contains(
            "pub mod deploy_watch;\n\npub mod deployment;\n\npub mod memcached;\n\npub mod memcached_audit;\n"
        ),
        "{modules}"
    );
    let main = read(&dir, "src/main.rs");
    assert!(main.contains("controller::memcached_audit::register(&mut manager);"), "{main}");
    assert!(read(&dir, "src/manifests.rs").contains("crate::controller::deploy_watch::RULES),"));
    // The kinds' first controllers are untouched.
    assert!(read(&dir, "src/controller/memcached.rs").contains("pub const NAME: &str = \"memcached\";"));

    // PROJECT records them as kubebuilder does, beside the kind's first controller.
    let project = read(&dir, "PROJECT");
    assert!(project.contains("  controller: true\n  controllers:\n  - name: memcached-audit\n  domain: example.com\n"));
    assert!(
        project.contains("- controller: true\n  controllers:\n  - name: deploy-watch\n  core: true\n"),
        "{project}"
    );

    // `memop update` replays them, and has nothing to do right after.
    assert!(ok(&dir, "update --allow-dirty").stdout.starts_with("Nothing to do"));
    // Also when a kind came after a named controller (the order src/controller/mod.rs keeps).
    ok(&dir, "create api --group cache --version v1 --kind Redis");
    ok(
        &dir,
        "create api --group cache --version v1 --kind Redis --resource=false --controller=true --controller-name redis-audit",
    );
    ok(&dir, &format!("create api {MEMCACHED} --controller-name memcached-second"));
    assert!(ok(&dir, "update --allow-dirty").stdout.starts_with("Nothing to do"));
}

#[test]
fn controller_names_are_refused_with_the_fix() {
    let (_tmp, dir) = project(&["--group cache --kind Memcached", DEPLOYMENT]);
    ok(&dir, &format!("create api {MEMCACHED} --controller-name memcached-audit"));
    let cases: &[(&str, &str)] = &[
        ("--controller-name memcached-audit", "a controller named \"memcached-audit\" already exists"),
        ("--controller-name memcached_audit", "must be a lowercase RFC 1035 label"),
        ("--controller-name Audit", "must be a lowercase RFC 1035 label"),
        ("--controller-name 1audit", "must be a lowercase RFC 1035 label"),
        ("--controller-name audit-", "must be a lowercase RFC 1035 label"),
        ("--controller-name self", "its module self would be a Rust keyword"),
        ("--controller-name memcached", "the controller of cache/v1alpha1, Kind=Memcached is named memcached"),
        ("--controller-name deployment", "the controller of apps/v1, Kind=Deployment is named deployment"),
        ("--controller-name e2e", "would clash with a file every project has (tests/e2e.rs)"),
        ("--controller-name x --image nginx", "--image: a controller added with --controller-name is a skeleton"),
        ("--controller-name x --storage-version", "--storage-version: --controller-name adds a controller"),
    ];
    for (flags, message) in cases {
        refused(&dir, &format!("create api {MEMCACHED} {flags}"), &[message]);
    }
    let long = "a".repeat(64);
    refused(&dir, &format!("create api {MEMCACHED} --controller-name {long}"), &["at most 63 characters"]);
    // Only for a kind the project has, without types.
    refused(
        &dir,
        "create api --group cache --version v1alpha1 --kind Memcached --controller-name x",
        &["pass --resource=false --controller=true"],
    );
    refused(
        &dir,
        "create api --group cache --version v1 --kind Redis --resource=false --controller=true --controller-name x",
        &["cache/v1, Kind=Redis is not a kind of this project's; create it first"],
    );
    refused(
        &dir,
        "create api --group core --version v1 --kind Pod --resource=false --controller=true --controller-name x",
        &["Kind=Pod is not a kind of this project's; create it first", "--resource=false --controller=true"],
    );
    // A later kind whose controller module would be a named controller's.
    refused(&dir, "create api --group cache --kind MemcachedAudit", &["is the controller memcached-audit's"]);
    // A name a PROJECT holds is held to the flag's rule.
    let project = read(&dir, "PROJECT").replace("- name: memcached-audit", "- name: Bad_Name");
    fs::write(dir.join("PROJECT"), project).unwrap();
    refused(&dir, &format!("create api {MEMCACHED} --controller-name y"), &["invalid --controller-name \"Bad_Name\""]);
}

#[test]
fn a_named_controller_with_a_kinds_webhook_file_names_is_refused_whether_or_not_the_kind_has_webhooks() {
    // No webhooks yet: `create webhook` would write tests/<kind>_webhook.rs and
    // tests/<kind>_conversion.rs over the controller's tests later.
    let (_tmp, dir) = project(&["--group cache --kind Memcached", DEPLOYMENT]);
    for name in ["memcached-webhook", "memcached-conversion", "deployment-webhook"] {
        refused(
            &dir,
            &format!("create api {MEMCACHED} --controller-name {name}"),
            &[&format!("invalid --controller-name \"{name}\""), "webhook files of the kind", "choose another"],
        );
    }
    // A named controller an earlier memop accepted: `create webhook` refuses to write its files
    // over it, naming the controller, rather than overwriting its tests.
    ok(&dir, &format!("create api {MEMCACHED} --controller-name memcached-audit"));
    ok(&dir, "create api --group cache --version v1 --kind Memcached");
    for (name, flags) in [("memcached-conversion", "--conversion"), ("memcached-webhook", "--defaulting")] {
        let module = name.replace('-', "_");
        let project = read(&dir, "PROJECT").replace("memcached-audit", name).replace("memcached_audit", &module);
        fs::write(dir.join("PROJECT"), project).unwrap();
        for file in ["src/controller", "tests"] {
            fs::rename(dir.join(format!("{file}/memcached_audit.rs")), dir.join(format!("{file}/{module}.rs")))
                .unwrap();
        }
        refused(
            &dir,
            &format!("create webhook --group cache --version v1 --kind Memcached {flags}"),
            &[&format!("as the files of the controller {name} of"), "rename that controller"],
        );
        for file in ["src/controller", "tests"] {
            fs::rename(dir.join(format!("{file}/{module}.rs")), dir.join(format!("{file}/memcached_audit.rs")))
                .unwrap();
        }
        let project = read(&dir, "PROJECT").replace(name, "memcached-audit").replace(&module, "memcached_audit");
        fs::write(dir.join("PROJECT"), project).unwrap();
    }
}

#[test]
fn projects_named_controllers_are_held_to_every_rule_of_the_flag() {
    let (_tmp, dir) = project(&["--group cache --kind Memcached"]);
    ok(&dir, "create webhook --group cache --version v1alpha1 --kind Memcached --defaulting");
    ok(&dir, &format!("create api {MEMCACHED} --controller-name memcached-audit"));
    ok(&dir, "create api --group toys --kind Widget");
    let good = read(&dir, "PROJECT");
    assert!(!good.contains("controllerOrder"), "{good}");
    let cases: &[(&str, &str)] = &[
        // memop's test of the webhook certificates, tests/webhook_certs.rs.
        ("webhook-certs", "would clash with a file every project has (tests/webhook_certs.rs)"),
        ("e2e", "would clash with a file every project has (tests/e2e.rs)"),
        ("manifests", "would clash with a file every project has"),
        // A kind's own controller, its module or its webhook files.
        ("memcached", "the controller of cache/v1alpha1, Kind=Memcached is named memcached"),
        ("widget", "the controller of toys/v1alpha1, Kind=Widget is named widget"),
        ("memcached-webhook", "as the webhook files of the kind Memcached already are"),
    ];
    for (name, reason) in cases {
        fs::write(dir.join("PROJECT"), good.replace("- name: memcached-audit", &format!("- name: {name}"))).unwrap();
        for line in ["update --allow-dirty", "--dry-run update --allow-dirty", "external-types"] {
            refused(&dir, line, &["PROJECT", &format!("its controller \"{name}\" (controllers"), reason]);
        }
    }
    // Two kinds listing one controller name.
    let twice = good.replace(
        "  controller: true\n  domain: example.com\n  group: toys\n",
        "  controller: true\n  controllers:\n  - name: memcached-audit\n  domain: example.com\n  group: toys\n",
    );
    assert_ne!(twice, good, "{good}");
    fs::write(dir.join("PROJECT"), twice).unwrap();
    refused(&dir, "update --allow-dirty", &["both list the controller \"memcached-audit\""]);
    fs::write(dir.join("PROJECT"), good).unwrap();
    assert!(ok(&dir, "update --allow-dirty").stdout.starts_with("Nothing to do"));
}
