//! Running `create api` again, with `--force`.

use super::*;

#[test]
fn force_regenerates_only_the_apis_own_files() {
    let (_tmp, dir) = project(&[MEMCACHED, NGINX]);
    let controller = read(&dir, "src/controller/memcached.rs");
    let types = read(&dir, "src/api/cache/v1alpha1/memcached.rs");
    append(&dir, "src/main.rs", "// my note in main\n");
    append(&dir, "src/controller/nginx.rs", "// my nginx edit\n");
    append(&dir, "README.md", "My own notes.\n");
    append(&dir, "config/rbac/kustomization.yaml", "# my rbac note\n");
    append(&dir, "src/controller/memcached.rs", "// an edit --force replaces\n");
    append(&dir, "src/api/cache/v1alpha1/memcached.rs", "// another edit --force replaces\n");
    let before = snapshot(&dir);

    let out = ok(&dir, &format!("create api {MEMCACHED} --force"));
    assert!(out.stdout.contains("  update  ./src/controller/memcached.rs\n"), "{}", out.stdout);

    // Only the forced API's own files changed, back to what memop generates.
    let touched = changed(&before, &snapshot(&dir));
    let own = ["src/api/cache/v1alpha1/memcached.rs", "src/controller/memcached.rs"];
    assert_eq!(touched, own.map(PathBuf::from), "{}", out.stdout);
    assert_eq!(read(&dir, "src/controller/memcached.rs"), controller);
    assert_eq!(read(&dir, "src/api/cache/v1alpha1/memcached.rs"), types);
    assert!(read(&dir, "src/main.rs").ends_with("// my note in main\n"));
    assert!(read(&dir, "src/controller/nginx.rs").ends_with("// my nginx edit\n"));
    assert!(read(&dir, "README.md").ends_with("My own notes.\n"));

    // What was inserted at the markers is there once.
    once(&dir, "src/main.rs", "proj::controller::memcached::register(&mut manager);");
    once(&dir, "src/main.rs", "proj::controller::nginx::register(&mut manager);");
    once(&dir, "src/controller/mod.rs", "pub mod memcached;");
    once(&dir, "src/api/mod.rs", "pub mod cache;");
    once(&dir, "src/api/mod.rs", "<cache::v1alpha1::Memcached as kube::CustomResourceExt>");
    once(&dir, "src/api/cache/mod.rs", "pub mod v1alpha1;");
    once(&dir, "src/api/cache/v1alpha1/mod.rs", "mod memcached;");
    for role in ["admin", "editor", "viewer"] {
        let line = format!("- cache_memcached_{role}_role.yaml");
        once(&dir, "config/rbac/kustomization.yaml", &line);
    }
    once(&dir, "config/crd/kustomization.yaml", "- bases/cache.example.com_memcacheds.yaml");
    once(&dir, "config/samples/kustomization.yaml", "- cache_v1alpha1_memcached.yaml");
    once(&dir, "config/default/kustomization.yaml", "\n- ../crd\n");
    once(&dir, "PROJECT", "kind: Memcached");
    once(&dir, "config/rbac/role.yaml", "- deployments");

    // Forcing again changes nothing at all.
    let again = snapshot(&dir);
    let out = ok(&dir, &format!("create api {MEMCACHED} --force"));
    assert!(out.stdout.starts_with("Nothing to do: "), "{}", out.stdout);
    assert!(!out.stdout.contains("Next:"), "{}", out.stdout);
    assert_unchanged(&dir, &again, "a second --force");
}

#[test]
fn force_turns_a_skeleton_into_an_operand_controller() {
    let (_tmp, dir) = project(&["--group batch --version v1 --kind CronJob"]);
    assert!(!read(&dir, "config/rbac/role.yaml").contains("deployments"));
    append(&dir, "src/main.rs", "// my note\n");
    let out = ok(
        &dir,
        "create api --group batch --version v1 --kind CronJob --force \
         --image busybox:1.36 --image-container-port 8080",
    );
    let message = "CronJob: operand controller deploying busybox:1.36 (from --image).";
    assert!(out.stdout.contains(message), "{}", out.stdout);
    let project = read(&dir, "PROJECT");
    assert!(project.contains("image: busybox:1.36\n"), "{project}");
    assert!(project.contains("containerPort: 8080\n"), "{project}");
    assert_eq!(count(&project, "kind: CronJob"), 1, "{project}");
    assert!(read(&dir, "tests/cron_job.rs").contains("busybox:1.36"));
    assert!(read(&dir, "config/manager/manager.yaml").contains("busybox:1.36"));
    once(&dir, "config/rbac/role.yaml", "- deployments");
    once(&dir, "src/main.rs", "proj::controller::cron_job::register(&mut manager);");
    assert!(read(&dir, "src/main.rs").ends_with("// my note\n"));
}

#[test]
fn reserved_kind_error_quotes_the_kind_like_every_other_error() {
    let (_tmp, dir) = project(&[]);
    let stderr = refused(&dir, "create api --group cache --kind E2e", &[]);
    assert!(stderr.starts_with("error: invalid --kind \"E2e\": "), "{stderr}");
    assert!(stderr.contains("(e.g. \"E2eConfig\")"), "{stderr}");
}

#[test]
fn force_does_not_silently_ignore_image_flags() {
    let (_tmp, dir) = project(&[NGINX]);
    let line = "create api --group web --kind Nginx --force --image-container-port 9090";
    let out = memop(&dir, line).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    if out.status.success() {
        // Either the port applies to the image the API already has ...
        assert!(read(&dir, "PROJECT").contains("containerPort: 9090"), "ignored:\n{stdout}");
        assert!(!stdout.contains("(from --image)"), "there was no --image:\n{stdout}");
    } else {
        // ... or the command is refused, as it is for a kind without an image.
        assert_eq!(out.status.code(), Some(1));
        assert!(read(&dir, "PROJECT").contains("containerPort: 8080"));
    }
}

#[test]
fn operand_controller_is_refused_for_an_existing_cluster_scoped_kind() {
    let (_tmp, dir) = project(&[&format!("{MEMCACHED} --namespaced=false --controller=false")]);
    let line = format!("create api {MEMCACHED} --resource=false");
    refused(&dir, &line, &["must be namespaced"]);
}

#[test]
fn a_kind_that_collides_with_another_is_refused_without_suggesting_force() {
    let routes = "--group net --kind HTTPRoute";
    let (_tmp, dir) = project(&[routes, "--group net --kind Foo --plural bars"]);
    // HttpRoute has HTTPRoute's plural (httproutes) and module (http_route); Bar has Foo's plural.
    for (kind, existing) in [("HttpRoute", "HTTPRoute"), ("Bar", "Foo")] {
        let line = format!("create api --group net --kind {kind}");
        let stderr = refused(&dir, &line, &[existing]);
        assert!(!stderr.contains("--force"), "--force would overwrite {existing}'s files:\n{stderr}");
    }
}

#[test]
fn init_force_refuses_to_unregister_existing_apis() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    refused(
        &dir,
        "init --domain example.com --force",
        &["already has APIs (cache/v1alpha1 Memcached)", "init --force would unregister them"],
    );
}

#[test]
fn a_namespaced_project_refuses_cluster_scoped_kinds() {
    let tmp = scratch();
    let dir = tmp.path().join("proj");
    fs::create_dir(&dir).unwrap();
    ok(&dir, "init --domain example.com --namespaced");
    refused(
        &dir,
        "create api --group batch --kind CronJob --namespaced=false",
        &["initialized with --namespaced", "cannot grant access to cluster-scoped kinds"],
    );
}

#[test]
fn force_with_another_image_updates_the_image_env_in_place() {
    let (_tmp, dir) = project(&[NGINX]);
    once(&dir, "config/manager/manager.yaml", "value: \"nginx:1.27\"");
    ok(&dir, "create api --group web --kind Nginx --image nginx:1.28 --image-container-port 8080 --force");
    let manager = read(&dir, "config/manager/manager.yaml");
    assert_eq!(count(&manager, "- name: NGINX_IMAGE"), 1, "{manager}");
    assert_eq!(count(&manager, "value: \"nginx:1.28\""), 1, "{manager}");
    assert_eq!(count(&manager, "nginx:1.27"), 0, "{manager}");
    assert!(read(&dir, "PROJECT").contains("image: nginx:1.28"));
}

#[test]
fn an_operand_controller_needs_operand_types() {
    let (_tmp, dir) = project(&["--group web --kind Foo --controller=false"]);
    refused(
        &dir,
        "create api --group web --kind Foo --resource=false --image nginx:1.27 --image-container-port 80",
        &["the existing Foo types have no spec.size", "--kind Foo --image IMG --force"],
    );
}

#[test]
fn force_with_another_plural_is_refused_rather_than_a_second_crd() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let before = snapshot(&dir);
    refused(
        &dir,
        &format!("create api {MEMCACHED} --plural mcs --force"),
        &["--plural mcs", "served as memcacheds", "memcacheds.cache.example.com", "Drop --plural"],
    );
    assert_unchanged(&dir, &before, "a refused --force");
    ok(&dir, &format!("create api {MEMCACHED} --plural memcacheds --force"));
    assert!(!dir.join("config/crd/bases/cache.example.com_mcs.yaml").exists());
}
