//! `--dry-run`: what it shows, and that it writes nothing.

use super::*;

/// Checks a dry run's report, a `create`/`update` line per file and the count of them at the
/// end, and returns the count.
#[track_caller]
fn dry_run_count(stdout: &str) -> usize {
    let files = stdout.lines().filter(|l| l.starts_with("create ") || l.starts_with("update ")).count();
    let summary = format!("\ndry run: {files} file(s) would change; nothing was written\n");
    assert!(files > 0, "{stdout}");
    assert!(stdout.ends_with(&summary), "expected {summary:?} at the end:\n{stdout}");
    files
}

#[test]
fn dry_run_init_writes_nothing() {
    let tmp = scratch();
    let dir = tmp.path().join("memcached-operator");
    fs::create_dir(&dir).unwrap();
    let out = ok(&dir, "--dry-run init --domain example.com");
    assert!(snapshot(&dir).is_empty(), "a dry run wrote {:?}", snapshot(&dir).keys());
    let files = dry_run_count(&out.stdout);
    for line in [
        "create PROJECT (",
        "create Cargo.toml (",
        "create src/main.rs (",
        "create config/rbac/role.yaml (",
        "+name = \"memcached-operator\"\n",
        "+projectName: memcached-operator\n",
    ] {
        assert!(out.stdout.contains(line), "{line:?} missing:\n{}", out.stdout);
    }
    assert!(!out.stdout.contains("Next:"), "a dry run has no next steps:\n{}", out.stdout);

    // With -C to a missing directory, the directory is not created.
    let out = ok(tmp.path(), "-C new-operator --dry-run init --domain example.com");
    assert!(!tmp.path().join("new-operator").exists());
    assert_eq!(dry_run_count(&out.stdout), files);

    // Over an existing project, a changed file shows as a unified diff.
    let (_tmp, dir) = project(&[]);
    append(&dir, "src/main.rs", "// my note\n");
    let before = snapshot(&dir);
    let out = ok(&dir, "--dry-run init --domain example.com --force");
    assert_unchanged(&dir, &before, "--dry-run init --force");
    assert_eq!(dry_run_count(&out.stdout), 1, "only src/main.rs differs:\n{}", out.stdout);
    let diff = "update src/main.rs\n--- a/src/main.rs\n+++ b/src/main.rs\n@@ -";
    assert!(out.stdout.starts_with(diff), "{}", out.stdout);
    assert!(out.stdout.contains("\n-// my note\n"), "{}", out.stdout);
}

#[test]
fn dry_run_create_api_writes_nothing() {
    let (_tmp, dir) = project(&[]);
    let before = snapshot(&dir);
    let out = ok(&dir, &format!("--dry-run create api {MEMCACHED}"));
    assert_unchanged(&dir, &before, "--dry-run create api");
    let stdout = &out.stdout;
    dry_run_count(stdout);
    for line in [
        "create src/api/cache/v1alpha1/memcached.rs (",
        "create src/controller/memcached.rs (",
        "create tests/memcached.rs (",
        "create config/crd/bases/cache.example.com_memcacheds.yaml (",
        "update src/main.rs\n--- a/src/main.rs\n+++ b/src/main.rs\n@@ -",
        "+    proj::controller::memcached::register(&mut manager);\n",
        "update config/rbac/kustomization.yaml\n--- a/config/rbac/kustomization.yaml\n",
        "+- cache_memcached_admin_role.yaml\n",
        "update PROJECT\n",
        "+  kind: Memcached\n",
    ] {
        assert!(stdout.contains(line), "{line:?} missing:\n{stdout}");
    }
    assert!(stdout.starts_with("Memcached: operand controller from the built-in Memcached preset"));
    assert!(!stdout.contains("Next:"), "{stdout}");
    // The dry run did not count as creating the API.
    let out = ok(&dir, &format!("create api {MEMCACHED}"));
    assert!(out.stdout.contains("  create  ./src/controller/memcached.rs\n"), "{}", out.stdout);
}
