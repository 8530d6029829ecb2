//! `--dry-run`: what it shows, and that it writes nothing.

use super::*;

/// Checks a dry run's report, a `create`/`update` line per file and the count of them after
/// the last (then only what the command says of itself, as after a real run's list of files),
/// and returns the count.
#[track_caller]
fn dry_run_count(stdout: &str) -> usize {
    let files = stdout.lines().filter(|l| l.starts_with("create ") || l.starts_with("update ")).count();
    let summary = format!("\ndry run: {files} file(s) would change; nothing was written\n");
    assert!(files > 0, "{stdout}");
    let (_, after) = stdout.split_once(&summary).unwrap_or_else(|| panic!("expected {summary:?}:\n{stdout}"));
    assert!(!after.contains("\n+++ ") && !after.starts_with("create "), "files after the count:\n{stdout}");
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
    assert!(!stdout.contains("Next:"), "{stdout}");
    // The dry run did not count as creating the API.
    let real = ok(&dir, &format!("create api {MEMCACHED}")).stdout;
    assert!(real.contains("  create  ./src/controller/memcached.rs\n"), "{real}");
    // Both say what the command made in the same place: after the files.
    let said = "\nMemcached: operand controller from the built-in Memcached preset";
    for (run, out) in [("dry", stdout), ("real", &real)] {
        let (files, _) =
            out.split_once(said).unwrap_or_else(|| panic!("{run} run: no {said:?} after the files:\n{out}"));
        assert!(files.contains("src/controller/memcached.rs"), "{run} run: the summary before the files:\n{out}");
    }
}
