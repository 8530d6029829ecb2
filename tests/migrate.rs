//! `memop update` moves a project made by memop 0.1 (commit 2a6d6ec, layout `memop.rs/rust/v1`:
//! its framework inside `src/manager` and `tests/support`) to the runtime crates, keeping every
//! edit its user made (issue #20, item 5), its webhooks and conversions included (item 4).
//!
//! memop 0.1 is built from this repository's history, once for both tests, in a git worktree
//! inside the shared target directory of the generated projects; where that history is absent (a
//! source archive), the tests say so on stderr and pass.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The commit of memop 0.1's layout that projects in the wild were made with.
const OLD: &str = "2a6d6ec";

/// memop 0.1's binary, built from the repository's history once per run (the tests share it);
/// `None` (and a notice) without that history.
fn old_memop() -> Option<PathBuf> {
    static OLD_MEMOP: OnceLock<Option<PathBuf>> = OnceLock::new();
    OLD_MEMOP.get_or_init(build_old_memop).clone()
}

/// Builds memop 0.1 once per target directory, in a git worktree of [`OLD`] there.
fn build_old_memop() -> Option<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let git = |dir: &Path, args: &[&str]| Command::new("git").current_dir(dir).args(args).output();
    let commit = format!("{OLD}^{{commit}}");
    if !git(repo, &["cat-file", "-e", &commit]).is_ok_and(|out| out.status.success()) {
        eprintln!("NOTICE: skipped: git history with commit {OLD} (memop 0.1) is absent, so memop 0.1 cannot be built");
        return None;
    }
    let root = common::generated_target_dir().join(format!("memop-{OLD}"));
    let source = root.join("source");
    if !source.join("Cargo.toml").is_file() {
        // A worktree whose directory went (a cleaned target) is still registered until pruned.
        common::check(repo, "git", &["worktree", "prune"]);
        common::check(repo, "git", &["worktree", "add", "--detach", "--force", &source.to_string_lossy(), OLD]);
    }
    // A target directory of its own: memop 0.1's binary has the same name as this memop's.
    let out = Command::new("cargo")
        .current_dir(&source)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .env("CARGO_INCREMENTAL", "0")
        .args(["build", "--quiet", "--locked", "--bin", "memop"])
        .output()
        .expect("cargo on PATH");
    assert!(out.status.success(), "building memop {OLD}: {}", String::from_utf8_lossy(&out.stderr));
    Some(root.join("target/debug/memop"))
}

/// Replaces `from` (which must be there) with `to` in the project's file `path`.
fn edit(dir: &Path, path: &str, from: &str, to: &str) {
    let text = std::fs::read_to_string(dir.join(path)).unwrap();
    assert!(text.contains(from), "{path} has no {from:?}:\n{text}");
    std::fs::write(dir.join(path), text.replacen(from, to, 1)).unwrap();
}

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The project `name` in `scratch`, made by memop 0.1 (`old`) with `commands` and committed.
/// Projects built at once need names of their own: the shared target directory tells apart
/// the crates of two projects by name alone.
fn made_by_memop_0_1(old: &Path, scratch: &Path, name: &str, commands: &[&[&str]]) -> PathBuf {
    let dir = scratch.join(name);
    std::fs::create_dir(&dir).unwrap();
    for args in commands {
        let out = Command::new(old)
            .current_dir(&dir)
            .env("SOURCE_DATE_EPOCH", common::SOURCE_DATE_EPOCH)
            .args(*args)
            .output();
        let out = out.unwrap();
        assert!(out.status.success(), "memop {OLD} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(dir.join("src/manager/mod.rs").is_file() && dir.join("tests/support/mod.rs").is_file());
    common::check(&dir, "git", &["init", "-q"]);
    commit(&dir, "made by memop 0.1");
    dir
}

fn commit(dir: &Path, message: &str) {
    common::check(dir, "git", &["add", "-A"]);
    common::check(dir, "git", &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message]);
}

#[test]
fn a_project_of_memop_0_1_updates_to_the_runtime_crates_keeping_every_edit() {
    let Some(old) = old_memop() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let init = ["init", "--domain", "example.com"];
    let dir = made_by_memop_0_1(
        &old,
        scratch.path(),
        "memcached-operator",
        &[&init, &["create", "api", "--group", "cache", "--kind", "Memcached"]],
    );

    // The edits a user makes. A new spec field, used by the controller (and given where the
    // kind's tests and benchmark build a spec):
    let field = "    /// memoryLimitMb is the memory limit of each Memcached, in megabytes (default 64).\n    \
                 #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    \
                 pub memory_limit_mb: Option<i32>,\n";
    edit(&dir, "src/api/cache/v1alpha1/memcached.rs", "    pub size: i32,\n", &format!("    pub size: i32,\n{field}"));
    let limit = "format!(\"--memory-limit={}\", object.spec.memory_limit_mb.unwrap_or(64)),";
    edit(&dir, "src/controller/memcached.rs", "\"--memory-limit=64\".into(),", limit);
    edit(&dir, "tests/memcached.rs", "MemcachedSpec { size }", "MemcachedSpec { size, memory_limit_mb: None }");
    edit(&dir, "tests/memcached.rs", "MemcachedSpec { size: 1 }", "MemcachedSpec { size: 1, memory_limit_mb: None }");
    edit(&dir, "benches/memcached.rs", "MemcachedSpec { size: 2 }", "MemcachedSpec { size: 2, memory_limit_mb: None }");
    // A changed reconcile step (the message of the Available condition):
    let message = "Deployment {name} serves all {size} replicas";
    edit(&dir, "src/controller/memcached.rs", "Deployment {name} has all {size} replicas available", message);
    // An extra Makefile target, an extra env var and other resource limits for the manager, a
    // comment in the Dockerfile:
    let target = "\n.PHONY: hello\nhello: ## Says hello.\n\t@echo hello\n";
    std::fs::write(dir.join("Makefile"), format!("{}{target}", read(&dir, "Makefile"))).unwrap();
    let env = "        - name: RUST_LOG\n          value: info\n";
    edit(
        &dir,
        "config/manager/manager.yaml",
        env,
        &format!("{env}        - name: CACHE_TTL\n          value: \"300\"\n"),
    );
    edit(
        &dir,
        "config/manager/manager.yaml",
        "cpu: 500m\n            memory: 128Mi",
        "cpu: \"1\"\n            memory: 256Mi",
    );
    let comment = "# Built by the platform team's pipeline.\n";
    std::fs::write(dir.join("Dockerfile"), format!("{comment}{}", read(&dir, "Dockerfile"))).unwrap();
    // A new test:
    let test = "use memcached_operator::api::cache::v1alpha1::MemcachedSpec;\n\n#[test]\nfn the_memory_limit_is_optional() \
                {\n    let spec: MemcachedSpec = serde_json::from_str(r#\"{\"size\": 2}\"#).unwrap();\n    \
                assert_eq!(spec.memory_limit_mb, None);\n}\n";
    std::fs::write(dir.join("tests/memory_limit.rs"), test).unwrap();
    // Formatted, as a user's edits are before a commit.
    common::check(&dir, "cargo", &["fmt"]);
    let controller_edit = "object.spec.memory_limit_mb.unwrap_or(64)";
    assert!(read(&dir, "src/controller/memcached.rs").contains(controller_edit));
    commit(&dir, "my edits");

    let out = common::memop().current_dir(&dir).arg("update").output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "memop update:\n{stdout}\n{stderr}");
    assert!(stdout.contains("Updated from memop 0.1"), "{stdout}");

    // Every edit is there.
    assert!(read(&dir, "src/api/cache/v1alpha1/memcached.rs").contains(field));
    let controller = read(&dir, "src/controller/memcached.rs");
    assert!(controller.contains(controller_edit) && controller.contains(message), "{controller}");
    for (path, literals) in [("tests/memcached.rs", 2), ("benches/memcached.rs", 1)] {
        let text = read(&dir, path);
        assert_eq!(text.matches("memory_limit_mb: None,").count(), literals, "{path}:\n{text}");
    }
    assert!(read(&dir, "Makefile").ends_with(target));
    let manager = read(&dir, "config/manager/manager.yaml");
    assert!(manager.contains("- name: CACHE_TTL\n          value: \"300\"\n"), "{manager}");
    assert!(manager.contains("cpu: \"1\"\n            memory: 256Mi"), "{manager}");
    assert!(read(&dir, "Dockerfile").starts_with(comment));
    assert_eq!(read(&dir, "tests/memory_limit.rs"), test);
    // The runtime is the crates': the framework's files are gone, the controller uses them.
    for gone in ["src/manager", "tests/support", "src/rbac.rs", "tests/apiserver.rs", "tests/manager.rs"] {
        assert!(!dir.join(gone).exists(), "{gone} is still there");
    }
    assert!(
        dir.join("vendor/memop-runtime/src/lib.rs").is_file() && dir.join("vendor/memop-test/src/lib.rs").is_file()
    );
    let version = env!("CARGO_PKG_VERSION");
    assert!(read(&dir, "Cargo.toml").contains(&format!("memop-runtime = \"={version}\"")));
    assert!(controller.contains("memop_runtime::") && !controller.contains("crate::manager::"), "{controller}");
    assert!(read(&dir, "PROJECT").contains("- memop.rs/rust/v2\n"));

    // As the update says: the CRD from the code (the new field), then every check of a project.
    common::check(&dir, "make", &["manifests"]);
    assert!(read(&dir, "config/crd/bases/cache.example.com_memcacheds.yaml").contains("memoryLimitMb:"));
    passes_and_is_up_to_date(&dir);
}

/// Every check of a project passes on the updated project, and, committed, a second update has
/// nothing to do.
fn passes_and_is_up_to_date(dir: &Path) {
    common::build_lint_and_test(dir);
    commit(dir, "memop update");
    let again = common::memop().current_dir(dir).arg("update").output().unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).starts_with("Nothing to do"), "{again:?}");
}

/// A project of memop 0.1 with webhooks (issue #20, item 4): defaulting and validation of
/// Memcached v1alpha1, a second version v1 that is the hub of a conversion webhook, and the
/// validation of a second kind made before Memcached's webhooks (so the server lists them in
/// another order than PROJECT). Its webhook server moves to the runtime crates, the user's
/// webhook logic and memop's config keep their edits.
#[test]
fn a_project_of_memop_0_1_with_webhooks_updates_keeping_their_edits() {
    let Some(old) = old_memop() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let commands = [
        "init --domain example.com",
        "create api --group cache --kind Memcached",
        // A second kind, whose webhook is made before Memcached's although its API came after.
        "create api --group batch --version v1 --kind CronJob --controller=false",
        "create webhook --group batch --version v1 --kind CronJob --programmatic-validation",
        "create webhook --group cache --kind Memcached --defaulting --programmatic-validation",
        "create api --group cache --version v1 --kind Memcached --storage-version",
        "create webhook --group cache --version v1 --kind Memcached --conversion --spoke v1alpha1",
    ]
    .map(|command| command.split(' ').collect::<Vec<_>>());
    let commands: Vec<&[&str]> = commands.iter().map(Vec::as_slice).collect();
    let dir = made_by_memop_0_1(&old, scratch.path(), "webhook-operator", &commands);
    for made in ["src/webhook/certs.rs", "src/webhook/mod.rs", "src/api/cache/v1alpha1/memcached_conversion.rs"] {
        assert!(dir.join(made).is_file(), "memop {OLD} made no {made}");
    }

    // The edits: a defaulting rule in the webhook logic, a comment in memop's webhook config.
    let rule = "    memcached\n        .labels_mut()\n        .entry(\"app.kubernetes.io/managed-by\".into())\n        \
                .or_insert_with(|| \"webhook-operator\".into());\n";
    let debug = "    tracing::debug!(name = %memcached.name_any(), \"defaulting Memcached\");\n";
    edit(&dir, "src/webhook/memcached.rs", debug, &format!("{debug}{rule}"));
    let comment = "# Reviewed by the platform team.\n";
    let kustomization = format!("{comment}{}", read(&dir, "config/webhook/kustomization.yaml"));
    std::fs::write(dir.join("config/webhook/kustomization.yaml"), kustomization).unwrap();
    commit(&dir, "my edits");

    let out = common::memop().current_dir(&dir).arg("update").output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "memop update:\n{stdout}\n{stderr}");
    assert!(stdout.contains("Updated from memop 0.1"), "{stdout}");
    // Only the edited files were merged: the replay of memop 0.1's webhooks is what it wrote.
    assert!(!stderr.contains("you edited it, so it was kept"), "{stderr}");

    assert!(read(&dir, "src/webhook/memcached.rs").contains(rule));
    assert!(read(&dir, "config/webhook/kustomization.yaml").starts_with(comment));
    // The webhook server is the runtime's: memop 0.1's (and its certificates) are gone, and no
    // file of the project reaches for the framework it had.
    for gone in ["src/manager", "tests/support", "src/webhook/certs.rs", "tests/apiserver.rs"] {
        assert!(!dir.join(gone).exists(), "{gone} is still there");
    }
    assert!(read(&dir, "src/webhook/mod.rs").contains("memop_runtime::webhook::"));
    for (path, text) in common::tree(&dir) {
        let rust = path.extension().is_some_and(|e| e == "rs");
        assert!(
            !rust || !(text.contains("crate::manager::") || text.contains("support::")),
            "{}:\n{text}",
            path.display()
        );
    }

    common::check(&dir, "make", &["manifests"]);
    assert!(read(&dir, "config/webhook/manifests.yaml").contains("/mutate-cache-example-com-v1alpha1-memcached"));
    passes_and_is_up_to_date(&dir);
}
