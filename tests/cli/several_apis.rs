//! Several APIs in one project.

use super::*;

#[test]
fn apis_of_two_groups_share_one_project() {
    let (_tmp, dir) = project(&[]);
    let create = |api: &str| ok(&dir, &format!("create api {api}")).stdout;
    // The preset kind, a skeleton, an image of our own, and a cluster-scoped skeleton in v1.
    let memcached = create(MEMCACHED);
    let backup = create("--group cache --kind Backup");
    let nginx = create(
        "--group web --kind Nginx --image nginx:1.27 --image-container-port 8080 \
         --image-container-command 'nginx,-g,daemon off;' --run-as-user 101",
    );
    let site = create("--group web --version v1 --kind Site --namespaced=false");

    // Each says which kind of controller it got.
    let preset = "Memcached: operand controller from the built-in Memcached preset \
                  (image memcached:1.6.26-alpine3.19, port 11211); pass --image";
    // Said after the files, so that no success line comes before a failure.
    assert!(memcached.contains(&format!("\n{preset}")), "{memcached}");
    let skeleton = "Backup: skeleton controller (no --image, and memop has no preset for Backup)";
    assert!(backup.contains(skeleton), "{backup}");
    assert!(backup.contains("rerun with --force --image IMG --image-container-port PORT"), "{backup}");
    let image = "Nginx: operand controller deploying nginx:1.27 (from --image).";
    assert!(nginx.contains(image), "{nginx}");
    assert!(site.contains("\nSite: skeleton controller"), "{site}");
    for out in [&memcached, &backup, &nginx, &site] {
        assert!(out.contains("\nNext: implement your API in src/api/"), "{out}");
    }

    let project = read(&dir, "PROJECT");
    assert_eq!(count(&project, "\n- api:\n"), 4, "{project}");
    for kind in ["Memcached", "Backup", "Nginx", "Site"] {
        assert_eq!(count(&project, &format!("  kind: {kind}\n")), 1, "{project}");
    }
    for operand in ["image: nginx:1.27", "containerPort: 8080", "- daemon off;", "runAsUser: 101"] {
        assert!(project.contains(operand), "{operand:?} missing:\n{project}");
    }

    // The manager's role merges the rules of all four controllers.
    let role = read(&dir, "config/rbac/role.yaml");
    assert!(role.contains("kind: ClusterRole\n"), "{role}");
    for resource in [
        "deployments",
        "events",
        "memcacheds",
        "memcacheds/status",
        "backups",
        "nginxes",
        "nginxes/finalizers",
        "sites",
    ] {
        assert_eq!(count(&role, &format!("  - {resource}\n")), 1, "{resource} in\n{role}");
    }
    assert_eq!(count(&role, "  - apps\n"), 1, "{role}");
    let backups = "  - cache.example.com\n  resources:\n  - backups\n  verbs:\n  - list\n  - watch\n";
    assert!(role.contains(backups), "{role}");

    for crd in [
        "cache.example.com_memcacheds.yaml",
        "cache.example.com_backups.yaml",
        "web.example.com_nginxes.yaml",
        "web.example.com_sites.yaml",
    ] {
        once(&dir, "config/crd/kustomization.yaml", &format!("- bases/{crd}\n"));
        assert!(dir.join("config/crd/bases").join(crd).is_file(), "{crd}");
    }
    let sites = read(&dir, "config/crd/bases/web.example.com_sites.yaml");
    assert!(sites.contains("scope: Cluster\n"), "{sites}");
    let nginxes = read(&dir, "config/crd/bases/web.example.com_nginxes.yaml");
    assert!(nginxes.contains("scope: Namespaced\n"), "{nginxes}");

    once(&dir, "src/api/mod.rs", "pub mod cache;");
    once(&dir, "src/api/mod.rs", "pub mod web;");
    once(&dir, "src/api/cache/mod.rs", "pub mod v1alpha1;");
    once(&dir, "src/api/web/mod.rs", "pub mod v1alpha1;");
    once(&dir, "src/api/web/mod.rs", "pub mod v1;");
    for (module, kind) in [
        ("memcached", "cache::v1alpha1::Memcached"),
        ("backup", "cache::v1alpha1::Backup"),
        ("nginx", "web::v1alpha1::Nginx"),
        ("site", "web::v1::Site"),
    ] {
        let register = format!("proj::controller::{module}::register(&mut manager);");
        once(&dir, "src/main.rs", &register);
        once(&dir, "src/controller/mod.rs", &format!("pub mod {module};\n"));
        once(&dir, "src/api/mod.rs", &format!("<{kind} as kube::CustomResourceExt>::crd()"));
        assert!(dir.join(format!("tests/{module}.rs")).is_file(), "tests/{module}.rs");
    }
    for prefix in ["cache_memcached", "cache_backup", "web_nginx", "web_site"] {
        let line = format!("- {prefix}_viewer_role.yaml\n");
        once(&dir, "config/rbac/kustomization.yaml", &line);
    }

    // The same kind, without a controller, in a third group: no rules, no controller.
    let before = snapshot(&dir);
    let ops = create("--group ops --kind Nginx --controller=false");
    assert!(!ops.contains("controller deploying") && !ops.contains("skeleton"), "{ops}");
    assert_eq!(read(&dir, "config/rbac/role.yaml"), role);
    let touched = changed(&before, &snapshot(&dir));
    let controllers = |p: &&PathBuf| p.starts_with("src/controller") || p.starts_with("tests");
    assert_eq!(touched.iter().filter(controllers).count(), 0, "{touched:?}");
    once(&dir, "src/api/mod.rs", "pub mod ops;");
    assert_eq!(count(&read(&dir, "PROJECT"), "\n- api:\n"), 5);
}
