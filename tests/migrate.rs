//! `memop update` moves a project made by memop 0.1 (commit 2a6d6ec, layout `memop.rs/rust/v1`:
//! its framework inside `src/manager` and `tests/support`) to the runtime crates, keeping every
//! edit its user made (issue #20, item 5), its webhooks and conversions included (item 4); and a
//! project made by memop 0.2 (commit 5507226, whose controllers drove the operand protocol by
//! hand) to the controller builder of memop-runtime 0.3 (issue #37, item 4).
//!
//! The old memops are built from this repository's history, once each for all tests, in git
//! worktrees inside the shared target directory of the generated projects; where that history is
//! absent (a source archive), the tests say so on stderr and pass.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::commit;

/// The commit of memop 0.1's layout that projects in the wild were made with.
const OLD: &str = "2a6d6ec";
/// The last commit of memop 0.2 (memop-runtime 0.2.0: no controller builder).
const V0_2: &str = "5507226";

/// memop 0.1's binary, built from the repository's history once per run (the tests share it);
/// `None` (and a notice) without that history.
fn old_memop() -> Option<PathBuf> {
    static OLD_MEMOP: OnceLock<Option<PathBuf>> = OnceLock::new();
    OLD_MEMOP.get_or_init(|| build_memop_of(OLD)).clone()
}

/// memop 0.2's binary, as [`old_memop`].
fn memop_0_2() -> Option<PathBuf> {
    static MEMOP_0_2: OnceLock<Option<PathBuf>> = OnceLock::new();
    MEMOP_0_2.get_or_init(|| build_memop_of(V0_2)).clone()
}

/// Builds the memop of `commit` once per target directory, in a git worktree of it there.
fn build_memop_of(commit: &str) -> Option<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let git = |dir: &Path, args: &[&str]| Command::new("git").current_dir(dir).args(args).output();
    let object = format!("{commit}^{{commit}}");
    if !git(repo, &["cat-file", "-e", &object]).is_ok_and(|out| out.status.success()) {
        eprintln!("NOTICE: skipped: git history with commit {commit} is absent, so that memop cannot be built");
        return None;
    }
    let root = common::generated_target_dir().join(format!("memop-{commit}"));
    let source = root.join("source");
    if !source.join("Cargo.toml").is_file() {
        // A worktree whose directory went (a cleaned target) is still registered until pruned.
        common::check(repo, "git", &["worktree", "prune"]);
        common::check(repo, "git", &["worktree", "add", "--detach", "--force", &source.to_string_lossy(), commit]);
    }
    // A target directory of its own: memop 0.1's binary has the same name as this memop's.
    let out = Command::new("cargo")
        .current_dir(&source)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .env("CARGO_INCREMENTAL", "0")
        .args(["build", "--quiet", "--locked", "--bin", "memop"])
        .output()
        .expect("cargo on PATH");
    assert!(out.status.success(), "building memop {commit}: {}", String::from_utf8_lossy(&out.stderr));
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
    let dir = made_by(old, scratch, name, commands);
    assert!(dir.join("src/manager/mod.rs").is_file() && dir.join("tests/support/mod.rs").is_file());
    dir
}

/// The project `name` in `scratch`, made by the memop binary `old` with `commands`, committed.
fn made_by(old: &Path, scratch: &Path, name: &str, commands: &[&[&str]]) -> PathBuf {
    let dir = scratch.join(name);
    std::fs::create_dir(&dir).unwrap();
    for args in commands {
        let out = Command::new(old)
            .current_dir(&dir)
            .env("SOURCE_DATE_EPOCH", common::SOURCE_DATE_EPOCH)
            .args(*args)
            .output();
        let out = out.unwrap();
        assert!(out.status.success(), "memop {} {args:?}: {}", old.display(), String::from_utf8_lossy(&out.stderr));
    }
    common::check(&dir, "git", &["init", "-q"]);
    commit(&dir, "made by an older memop");
    dir
}

/// Windows line endings are no edit, in a 0.1 migration too: checked out with
/// `core.autocrlf=true`, memop 0.1's unedited framework files are removed, not kept as edited.
#[test]
fn a_project_of_memop_0_1_checked_out_with_crlf_migrates_as_with_lf() {
    let Some(old) = old_memop() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let init = ["init", "--domain", "example.com"];
    let dir = made_by_memop_0_1(
        &old,
        scratch.path(),
        "crlf-operator",
        &[&init, &["create", "api", "--group", "cache", "--kind", "Memcached"]],
    );
    // The same commit, checked out again with `\r\n`.
    common::check(&dir, "git", &["config", "core.autocrlf", "true"]);
    common::check(&dir, "git", &["rm", "-rq", "--cached", "."]);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|name| name != ".git") {
            if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) }.unwrap();
        }
    }
    common::check(&dir, "git", &["checkout", "-q", "HEAD", "--", "."]);
    assert!(read(&dir, "src/manager/mod.rs").contains("\r\n"), "checked out with \\r\\n");

    let out = common::memop().current_dir(&dir).arg("update").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(!stdout.contains("you edited it") && !stderr.contains("you edited it"), "{stdout}{stderr}");
    assert!(!dir.join("src/manager").exists() && !dir.join("tests/support").exists(), "{stdout}{stderr}");
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
    // A changed Deployment (its pods always pull their image):
    let pull = "image_pull_policy: Some(\"Always\".into()),";
    edit(&dir, "src/controller/memcached.rs", "image_pull_policy: Some(\"IfNotPresent\".into()),", pull);
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
    assert!(stdout.contains("Updated from memop 0.1"), "{stdout}");
    // Two generations of tests apart (0.1's, today's), the kind's tests and benchmark changed the
    // very lines of the user's spec edits: today's build their specs with `..Default::default()`,
    // which the user's new field no longer breaks. The update stops at those two conflicts, the
    // rest written; taking memop's side resolves them.
    assert!(!out.status.success(), "memop update:\n{stdout}\n{stderr}");
    let conflicts = "touch the same lines of benches/memcached.rs, tests/memcached.rs:";
    assert!(stderr.contains(conflicts), "{stderr}");
    for path in ["tests/memcached.rs", "benches/memcached.rs"] {
        resolve_taking_memops(&dir, path);
        assert!(read(&dir, path).contains("..Default::default()"), "{path}");
    }
    common::check(&dir, "cargo", &["fmt"]);

    // Every edit is there.
    assert!(read(&dir, "src/api/cache/v1alpha1/memcached.rs").contains(field));
    let controller = read(&dir, "src/controller/memcached.rs");
    assert!(controller.contains(controller_edit) && controller.contains(pull), "{controller}");
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

/// Resolves each conflict of `path` as its user would: memop's side, whose spec literals take
/// the field the user added (`memory_limit_mb`) from `Default`.
fn resolve_taking_memops(dir: &Path, path: &str) {
    let mut text = read(dir, path);
    while let Some(start) = text.find("<<<<<<< ours\n") {
        let theirs = start + text[start..].find("=======\n").unwrap() + "=======\n".len();
        let end = theirs + text[theirs..].find(">>>>>>> theirs\n").unwrap();
        let resolved = &text[theirs..end];
        text = format!("{}{resolved}{}", &text[..start], &text[end + ">>>>>>> theirs\n".len()..]);
    }
    std::fs::write(dir.join(path), text).unwrap();
}

/// Every check of a project passes on the updated project, and, committed, a second update has
/// nothing to do.
fn passes_and_is_up_to_date(dir: &Path) {
    // One project's build and tests at a time: they share a target directory, where two cargo
    // processes building the same vendored crates at once were seen to lose an rlib.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
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

/// The commands of a project of memop 0.2 with both kinds of controller: the operand one
/// (Memcached) and the skeleton (Backup, no image).
const OPERAND_AND_SKELETON: [&[&str]; 3] = [
    &["init", "--domain", "example.com"],
    &["create", "api", "--group", "cache", "--kind", "Memcached"],
    &["create", "api", "--group", "cache", "--kind", "Backup", "--resource", "--controller"],
];

/// A project of memop 0.2 whose controllers are as memop wrote them: `memop update` moves them
/// (and their tests and benchmark) to the controller builder of memop-runtime 0.3, and the
/// project passes every check.
#[test]
fn a_project_of_memop_0_2_moves_its_unedited_controllers_to_the_builder() {
    let Some(old) = memop_0_2() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let dir = made_by(&old, scratch.path(), "builder-operator", &OPERAND_AND_SKELETON);
    assert!(read(&dir, "src/controller/memcached.rs").contains("fn reconcile_with_finalizer("));

    let out = common::memop().current_dir(&dir).arg("update").output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "memop update:\n{stdout}\n{stderr}");
    assert!(stdout.contains("Updated from memop 0.2.0"), "{stdout}");
    assert!(!stderr.contains("src/controller/") && !stderr.contains("tests/memcached.rs"), "{stderr}");

    for controller in ["src/controller/memcached.rs", "src/controller/backup.rs"] {
        let text = read(&dir, controller);
        assert!(text.contains("impl Reconciler for Context"), "{controller}:\n{text}");
    }
    let memcached = read(&dir, "src/controller/memcached.rs");
    assert!(memcached.contains(".ensure(object, desired)") && !memcached.contains("fingerprint_patch"));
    // The kind's tests of today: the runtime's scenarios are memop-runtime's own.
    let tests = read(&dir, "tests/memcached.rs");
    assert!(tests.contains("crates/memop-runtime/tests/workloads.rs"), "{tests}");
    passes_and_is_up_to_date(&dir);
}

/// A project of memop 0.2 whose user edited the controller: `memop update` keeps the file and
/// names the change to make, with the git objects to merge it from; merged so, the project
/// keeps the edit and passes every check.
#[test]
fn a_project_of_memop_0_2_with_an_edited_controller_is_told_the_change_to_make() {
    let Some(old) = memop_0_2() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let dir = made_by(&old, scratch.path(), "edited-operator", &OPERAND_AND_SKELETON[..2]);
    // The user's edit: the pods always pull their image.
    let pull = "image_pull_policy: Some(\"Always\".into()),";
    edit(&dir, "src/controller/memcached.rs", "image_pull_policy: Some(\"IfNotPresent\".into()),", pull);
    commit(&dir, "my edit");

    let out = common::memop().current_dir(&dir).arg("update").output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "memop update:\n{stdout}\n{stderr}");
    let note = stderr
        .lines()
        .find(|line| line.contains("src/controller/memcached.rs is yours"))
        .unwrap_or_else(|| panic!("no note on the controller:\n{stderr}"));
    // The note's merge command, as the user runs it.
    let merge = note.split('`').find(|part| part.starts_with("git merge-file")).expect(note);
    let script = format!("set -e; {merge}");
    common::check(&dir, "bash", &["-c", &script]);
    let controller = read(&dir, "src/controller/memcached.rs");
    assert!(controller.contains(pull) && controller.contains("impl Reconciler for Context"), "{controller}");
    // The kind's tests were as memop wrote them: moved with the controller.
    assert!(read(&dir, "tests/memcached.rs").contains("controller(&shared, ctx)"));
    passes_and_is_up_to_date(&dir);
}

/// The most common team edit, a module added at the end of `src/lib.rs`, and memop's own
/// additions there: both kept, as both only add `mod` lines, whose order does not matter (the
/// update stopped at a conflict in `src/lib.rs`).
#[test]
fn a_module_added_at_the_end_of_lib_rs_does_not_conflict_with_memops() {
    let Some(old) = old_memop() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let init = ["init", "--domain", "example.com"];
    let memcached = ["create", "api", "--group", "cache", "--kind", "Memcached"];
    let dir = made_by_memop_0_1(&old, scratch.path(), "lib-module", &[&init, &memcached]);
    let lib = read(&dir, "src/lib.rs");
    std::fs::write(dir.join("src/lib.rs"), format!("{lib}pub mod mine;\n")).unwrap();
    std::fs::write(dir.join("src/mine.rs"), "//! The team's own module.\n").unwrap();
    commit(&dir, "my module");

    let out = common::memop().current_dir(&dir).arg("update").output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "memop update:\n{stdout}\n{stderr}");
    let lib = read(&dir, "src/lib.rs");
    assert!(!lib.contains("<<<<<<<"), "{lib}");
    assert_eq!(lib.matches("pub mod mine;\n").count(), 1, "{lib}");
    let memops =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/memcached-operator/src/lib.rs"))
            .unwrap();
    for line in memops.lines().filter(|line| line.starts_with("pub mod ")) {
        assert!(lib.lines().any(|l| l == line), "{line:?} is missing:\n{lib}");
    }
}
