//! Helpers shared by memop's integration tests.

#![allow(dead_code)] // each test crate uses part of this module

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fixed time for reproducible output (license years): 2026-11-18.
pub const SOURCE_DATE_EPOCH: &str = "1795000000";

/// The memop binary under test, with a reproducible clock.
pub fn memop() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("memop").expect("memop binary");
    cmd.env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH);
    cmd
}

/// The git blob id of a text, as `git hash-object` computes it (and `PROJECT.sum` records it).
#[allow(unused_imports)] // not every test crate compares records
pub use memop::sum::blob_id;

/// Runs git in `dir` with a test identity (commits need one), asserting success.
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("git on PATH");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Commits everything in the work tree of `dir` (`git add -A`), as `message`.
#[track_caller]
pub fn commit(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", message]);
}

/// Runs memop with `args` in `dir`, asserting success.
pub fn run(dir: &Path, args: &[&str]) {
    memop().current_dir(dir).args(args).assert().success();
}

/// Every file under `dir` (except `target/`, and `vendor/`: memop's copies of its runtime
/// crates, which [`vendor_tree`] reads), as relative path → contents.
pub fn tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out.retain(|path, _| !path.starts_with("vendor"));
    out
}

/// The files of `dir/vendor/`, as paths relative to `dir` → contents.
pub fn vendor_tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    walk(dir, &dir.join("vendor"), &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        if path.is_dir() {
            walk(root, &path, out);
        } else {
            let contents = std::fs::read_to_string(&path).unwrap_or_else(|_| "<binary>".into());
            out.insert(path.strip_prefix(root).unwrap().to_path_buf(), contents);
        }
    }
}

/// The target directory shared by every generated project the tests build, so that the
/// kube dependency tree compiles once (`MEMOP_GENERATED_TARGET_DIR` overrides it).
pub fn generated_target_dir() -> PathBuf {
    std::env::var_os("MEMOP_GENERATED_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/generated"))
}

/// `program` run in `dir` the way the tests build generated projects: in the shared target
/// directory, without incremental compilation and with line tables as the only debug info. The
/// projects are built once per run, so incremental caches and full debug info would only fill
/// the disk (several GB between them; a CI run once died of `No space left on device`), while
/// line tables keep panics' backtraces readable.
pub fn command(dir: &Path, program: &str) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", generated_target_dir())
        .env("CARGO_INCREMENTAL", "0")
        .env("CARGO_PROFILE_DEV_DEBUG", "line-tables-only");
    command
}

/// Held by each cargo command a test runs in a generated project, from its build to its last
/// test. cargo hashes a path dependency by its path relative to the project, so every project's
/// `vendor/memop-runtime` is one unit in the shared target directory: a project building it (from
/// its own copy) rewrote the library while another project's doc tests were linking against it
/// ("extern location for memop_runtime does not exist"). cargo's own lock covers builds only.
pub fn cargo_lock() -> std::sync::MutexGuard<'static, ()> {
    static CARGO: std::sync::Mutex<()> = std::sync::Mutex::new(());
    CARGO.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `program args` in `dir`; panics with its output when it fails.
pub fn check(dir: &Path, program: &str, args: &[&str]) -> String {
    let _cargo = (program == "cargo").then(cargo_lock);
    let output = command(dir, program).args(args).output().unwrap_or_else(|e| panic!("running {program}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "`{program} {}` failed in {}:\n{stdout}\n{stderr}", args.join(" "), dir.display());
    stdout
}

/// The four checks every generated project must pass straight after generation.
pub fn build_lint_and_test(dir: &Path) {
    check(dir, "cargo", &["fmt", "--check"]);
    check(dir, "cargo", &["clippy", "--locked", "--all-targets", "--", "-D", "warnings"]);
    let tests = check(dir, "cargo", &["test", "--locked"]);
    assert!(!tests.contains("FAILED"), "{tests}");
    assert_real_tier_notice(&tests, real_tier());
    check(dir, "kubectl", &["kustomize", "config/default"]);
}

/// Whether a generated project's real-control-plane tests are built: with `KUBEBUILDER_ASSETS`,
/// or with `ENVTEST_REQUIRED=1`, which makes them fail without it (the project's `build.rs`).
pub fn real_tier() -> bool {
    std::env::var_os("KUBEBUILDER_ASSETS").is_some_and(|v| !v.is_empty())
        || std::env::var("ENVTEST_REQUIRED").is_ok_and(|v| v == "1" || v == "true")
}

/// The line a generated project's `cargo test` prints when its real-control-plane tests are not
/// built (no `KUBEBUILDER_ASSETS`).
pub const REAL_TIER_NOTICE: &str =
    "test real_control_plane ... ignored, the real-control-plane tests are not built without KUBEBUILDER_ASSETS";

/// Without the real control plane (`real` false), a generated project's `cargo test` output says
/// so in one line, and lists no real-control-plane test, ignored or passed; with it, it has no
/// such line. e2e's test and doc examples marked `ignore` are the only others ignored.
pub fn assert_real_tier_notice(tests: &str, real: bool) {
    let notices = tests.lines().filter(|line| line.starts_with(REAL_TIER_NOTICE)).count();
    assert_eq!(notices, usize::from(!real), "the real tier's notice, with the real tier {real}:\n{tests}");
    if !real {
        let ignored: Vec<&str> = tests
            .lines()
            .filter(|line| line.contains(" ... ignored"))
            .filter(|line| !line.starts_with(REAL_TIER_NOTICE) && !line.contains("needs a Kubernetes cluster"))
            // Doc examples marked `ignore` (the webhooks' sketches) are no tests of the real tier.
            .filter(|line| !line.starts_with("test src/"))
            .collect();
        assert!(ignored.is_empty(), "ignored beside the one notice: {ignored:#?}");
        assert!(!tests.contains("test real_control_plane::"), "real-control-plane tests ran without it:\n{tests}");
    }
}

/// `helm lint --strict` of the project's chart in `dist/chart`, with the `helm` of `HELM`
/// (`scripts/helm/build.sh` builds it); skipped without it, unless `ENVTEST_REQUIRED=1`.
pub fn helm_lint(dir: &Path) {
    match std::env::var_os("HELM") {
        Some(helm) => {
            let lint = Command::new(helm).current_dir(dir).args(["lint", "--strict", "dist/chart"]).output();
            let lint = lint.expect("running helm");
            assert!(
                lint.status.success(),
                "helm lint: {}{}",
                String::from_utf8_lossy(&lint.stdout),
                String::from_utf8_lossy(&lint.stderr)
            );
        }
        None if std::env::var("ENVTEST_REQUIRED").is_ok_and(|v| v == "1") => {
            panic!("HELM is not set, and ENVTEST_REQUIRED=1: run HELM=\"$(scripts/helm/build.sh)\" cargo test")
        }
        None => eprintln!("skipped: helm lint needs HELM (HELM=\"$(scripts/helm/build.sh)\")"),
    }
}
