//! `memop update` moves a project made by memop 0.2 (commit 5507226, whose controllers drove the
//! operand protocol by hand) to the controller builder of memop-runtime 0.3 (issue #37, item 4),
//! and refuses one made by memop 0.1 (layout `memop.rs/rust/v1`), naming memop 0.2's update as
//! the way through (issue #50, item 4).
//!
//! memop 0.2 is built from this repository's history, once for all tests, in a git worktree
//! inside the shared target directory of the generated projects; where that history is absent (a
//! source archive), the tests that need it say so on stderr and pass.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::commit;

/// The last commit of memop 0.2 (memop-runtime 0.2.0: no controller builder).
const V0_2: &str = "5507226";

/// memop 0.2's binary, built from the repository's history once per run (the tests share it);
/// `None` (and a notice) without that history.
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
    // A target directory of its own: the old binary has the same name as this memop's.
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

/// A project of memop 0.1 (layout `memop.rs/rust/v1`, its framework in `src/manager` and
/// `tests/support`) is refused by `memop update`, which says how to get through: memop 0.2's
/// update first, then this memop's. It fails, and writes nothing.
#[test]
fn a_project_of_memop_0_1_is_refused_by_update_with_the_way_through_memop_0_2() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("old-operator");
    std::fs::create_dir(&dir).unwrap();
    for args in
        [&["init", "--domain", "example.com"][..], &["create", "api", "--group", "cache", "--kind", "Memcached"]]
    {
        common::memop().current_dir(&dir).args(args).assert().success();
    }
    // memop 0.1's PROJECT names its layout; its framework files are not needed to be refused.
    let project = read(&dir, "PROJECT").replace("- memop.rs/rust/v2\n", "- memop.rs/rust/v1\n");
    assert!(project.contains("memop.rs/rust/v1"), "{project}");
    std::fs::write(dir.join("PROJECT"), project).unwrap();
    common::check(&dir, "git", &["init", "-q"]);
    commit(&dir, "made by memop 0.1");
    let before = common::tree(&dir);

    for dry_run in [false, true] {
        let mut update = common::memop();
        update.current_dir(&dir).arg("update");
        if dry_run {
            update.arg("--dry-run");
        }
        let out = update.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "memop update --dry-run={dry_run} succeeded:\n{stderr}");
        for says in [
            "made by memop 0.1",
            "`git checkout 3318b9f && cargo install --locked --path .`",
            "run its `memop update`",
            "then run this memop's `memop update`",
        ] {
            assert!(stderr.contains(says), "no {says:?} in:\n{stderr}");
        }
        assert_eq!(common::tree(&dir), before, "memop update wrote into the project");
        let status = common::check(&dir, "git", &["status", "--porcelain", "--ignored"]);
        assert_eq!(status, "", "memop update left files behind");
    }
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
    // The runtime derives the skeleton's rules now (its status and events, which the 0.2 role
    // lacked): the role is the code's, and the update says to write it again, as the user does.
    assert!(stderr.contains("config/rbac/role.yaml are generated from your code"), "{stderr}");
    common::check(&dir, "cargo", &["run", "--quiet", "--bin", "manifests"]);
    let role = read(&dir, "config/rbac/role.yaml");
    assert!(role.contains("  - backups/status\n"), "{role}");
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
    let Some(old) = memop_0_2() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let dir = made_by(&old, scratch.path(), "lib-module", &OPERAND_AND_SKELETON[..2]);
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
