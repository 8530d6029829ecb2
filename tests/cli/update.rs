//! `memop update`: the project's copies of the runtime crates, their pins and PROJECT move to
//! this memop; an edit memop did not make is never lost.

use std::path::Path;
use std::process::Command;

pub(crate) use super::common::{blob_id, git};
use super::special_files::{LIMIT, exits_within, spawn};
use super::*;

/// A Memcached project as an older memop (0.1.9) would have left it: other vendored text (which
/// PROJECT.sum records as memop's), older pins, an older cliVersion; committed.
pub(crate) fn older_project() -> (TempDir, PathBuf) {
    let (tmp, dir) = project(&[MEMCACHED]);
    let replace = |path: &str, from: &str, to: &str| {
        let text = read(&dir, path);
        assert!(text.contains(from), "{path} has no {from:?}");
        fs::write(dir.join(path), text.replace(from, to)).unwrap();
    };
    let version = env!("CARGO_PKG_VERSION");
    replace("Cargo.toml", &format!("\"={version}\""), "\"=0.1.9\"");
    replace("PROJECT", &format!("cliVersion: {version}"), "cliVersion: 0.1.9");
    replace(
        "Cargo.lock",
        &format!("name = \"memop-runtime\"\nversion = \"{version}\""),
        "name = \"memop-runtime\"\nversion = \"0.1.9\"",
    );
    let old = format!("{}// as memop 0.1.9 vendored it\n", read(&dir, "vendor/memop-runtime/src/rbac.rs"));
    fs::write(dir.join("vendor/memop-runtime/src/rbac.rs"), &old).unwrap();
    fs::write(dir.join("vendor/memop-test/src/gone.rs"), "// a file memop 0.1.9 vendored\n").unwrap();
    let sum = read(&dir, "PROJECT.sum");
    let line = sum.lines().find(|l| l.starts_with("vendor/memop-runtime/src/rbac.rs ")).unwrap();
    let recorded = format!("vendor/memop-runtime/src/rbac.rs {}", blob_id(&old));
    let gone = format!("\nvendor/memop-test/src/gone.rs {}", blob_id("// a file memop 0.1.9 vendored\n"));
    fs::write(dir.join("PROJECT.sum"), format!("{}{gone}\n", sum.replace(line, &recorded).trim_end())).unwrap();
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop 0.1.9"]);
    (tmp, dir)
}

#[test]
fn a_fresh_project_is_up_to_date() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let before = snapshot(&dir);
    let out = ok(&dir, "update");
    assert!(out.stdout.starts_with("Nothing to do"), "{}", out.stdout);
    assert_unchanged(&dir, &before, "update of a fresh project");
}

/// A file of yours that holds memop's text but that PROJECT.sum does not list (a record that lost
/// its line) is recorded as memop's by an update that writes, as the chart records its
/// `Chart.yaml`: the update and the chart once disagreed, and the next update took an edit of it
/// for memop's text.
#[test]
fn a_file_of_yours_as_memop_writes_it_is_recorded() {
    let (_tmp, dir) = older_project();
    let sum = read(&dir, "PROJECT.sum");
    let line = format!("README.md {}\n", blob_id(&read(&dir, "README.md")));
    assert!(sum.contains(&line), "{sum}");
    fs::write(dir.join("PROJECT.sum"), sum.replace(&line, "")).unwrap();
    git(&dir, &["commit", "-qam", "a record that lost a line"]);
    ok(&dir, "update");
    assert!(read(&dir, "PROJECT.sum").contains(&line), "README.md recorded again");
}

/// Webhooks made in another order than their APIs: the update replays them in the order the
/// webhook server lists them, so it has nothing to change there (it once listed them again in
/// PROJECT's order).
#[test]
fn webhooks_made_in_another_order_than_their_apis_are_up_to_date() {
    let (_tmp, dir) = project(&[MEMCACHED, NGINX]);
    ok(&dir, "create webhook --group web --kind Nginx --programmatic-validation");
    ok(&dir, "create webhook --group cache --kind Memcached --defaulting");
    let before = snapshot(&dir);
    let out = ok(&dir, "update");
    assert!(out.stdout.starts_with("Nothing to do"), "{}", out.stdout);
    assert_unchanged(&dir, &before, "an update with nothing to do");
}

#[test]
fn an_update_moves_the_runtime_and_keeps_every_other_file() {
    let (_tmp, dir) = older_project();
    append(&dir, "src/controller/memcached.rs", "// my edit\n");
    append(&dir, "Makefile", "\nmine:\n\techo mine\n");
    git(&dir, &["commit", "-qam", "my edits"]);
    let before = snapshot(&dir);

    let out = ok(&dir, "update");
    let version = env!("CARGO_PKG_VERSION");
    assert!(out.stdout.contains(&format!("Updated from memop 0.1.9 to memop {version}")), "{}", out.stdout);
    // The file the runtime no longer has, as memop wrote it, goes with the update.
    assert!(!out.stdout.contains("git rm"), "{}", out.stdout);
    let touched = changed(&before, &snapshot(&dir));
    let expected = [
        "Cargo.lock",
        "Cargo.toml",
        "PROJECT",
        "PROJECT.sum",
        "vendor/memop-runtime/src/rbac.rs",
        "vendor/memop-test/src/gone.rs",
    ];
    assert_eq!(touched, expected.map(PathBuf::from), "the old vendored files, and their pins and records");
    assert!(!dir.join("vendor/memop-test/src/gone.rs").exists());
    assert!(!read(&dir, "PROJECT.sum").contains("gone.rs"));
    assert!(read(&dir, "Cargo.toml").contains(&format!("memop-runtime = \"={version}\"\n")));
    assert!(read(&dir, "Cargo.toml").contains(&format!("memop-test = \"={version}\"\n")));
    assert!(read(&dir, "Cargo.lock").contains(&format!("name = \"memop-runtime\"\nversion = \"{version}\"")));
    assert!(read(&dir, "PROJECT").contains(&format!("cliVersion: {version}\n")));
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let rbac = read(&dir, "vendor/memop-runtime/src/rbac.rs");
    assert_eq!(rbac.split_once('\n').unwrap().1, fs::read_to_string(crates.join("memop-runtime/src/rbac.rs")).unwrap());
    assert!(read(&dir, "src/controller/memcached.rs").ends_with("// my edit\n"));
    assert!(read(&dir, "Makefile").ends_with("\techo mine\n"));
    assert!(read(&dir, "PROJECT.sum").contains(&format!("vendor/memop-runtime/src/rbac.rs {}\n", blob_id(&rbac))));

    // Once committed, a second update has nothing to do.
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "memop update"]);
    assert!(ok(&dir, "update").stdout.starts_with("Nothing to do"));
}

/// A module of the runtime that became a directory (`operand.rs` to `operand/mod.rs`, in 0.3):
/// the old file, left beside the new, would make the crate's module found twice (E0761), and
/// the project would not build. The update removes a file the runtime no longer has while it
/// is as memop wrote it, and names one you edited with the `git rm` to run.
#[test]
fn files_the_runtime_no_longer_has_go_unless_you_edited_them() {
    let (_tmp, dir) = older_project();
    fs::write(dir.join("vendor/memop-runtime/src/operand.rs"), "// the module before it was a directory\n").unwrap();
    let sum = read(&dir, "PROJECT.sum");
    let operand = blob_id("// the module before it was a directory\n");
    fs::write(dir.join("PROJECT.sum"), format!("{sum}vendor/memop-runtime/src/operand.rs {operand}\n")).unwrap();
    append(&dir, "vendor/memop-test/src/gone.rs", "// mine\n");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "an old module, and an edit of a file the runtime drops"]);

    let out = ok(&dir, "update");
    assert!(!dir.join("vendor/memop-runtime/src/operand.rs").exists(), "the unedited old module is removed");
    assert!(dir.join("vendor/memop-runtime/src/operand/mod.rs").is_file());
    assert!(dir.join("vendor/memop-test/src/gone.rs").is_file(), "your edit is kept");
    assert!(
        out.stdout.contains("which you edited; delete them:\n  $ git rm vendor/memop-test/src/gone.rs"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("remove  ./vendor/memop-runtime/src/operand.rs"), "{}", out.stdout);
    assert!(!out.stdout.contains("git rm vendor/memop-runtime/src/operand.rs"), "{}", out.stdout);
}

#[test]
fn an_edited_vendored_file_is_refused_unless_forced() {
    let (_tmp, dir) = older_project();
    append(&dir, "vendor/memop-runtime/src/lib.rs", "// patched by hand\n");
    git(&dir, &["commit", "-qam", "a patch of the runtime"]);
    let before = snapshot(&dir);
    let stderr = refused(
        &dir,
        "update",
        &["vendor/memop-runtime/src/lib.rs changed since memop wrote it", "`memop update --force`"],
    );
    // The edit is committed (update refuses a dirty tree): a checkout from the index restores
    // nothing, and is not what to run.
    assert!(!stderr.contains("git checkout"), "{stderr}");
    assert_unchanged(&dir, &before, "a refused update");
    ok(&dir, "update --force");
    assert!(!read(&dir, "vendor/memop-runtime/src/lib.rs").contains("patched by hand"));
}

#[test]
fn uncommitted_changes_are_refused_unless_allowed_and_a_dry_run_writes_nothing() {
    let (_tmp, dir) = older_project();
    append(&dir, "src/lib.rs", "// not committed\n");
    let before = snapshot(&dir);
    refused(&dir, "update", &["uncommitted changes (src/lib.rs)", "--allow-dirty"]);
    let out = ok(&dir, "--dry-run update");
    assert!(out.stdout.contains("-memop-runtime = \"=0.1.9\""), "{}", out.stdout);
    assert_unchanged(&dir, &before, "a dry run");
    ok(&dir, "update --allow-dirty");
    assert!(read(&dir, "src/lib.rs").ends_with("// not committed\n"));
}

/// Every command refuses a project of memop 0.1 and names memop 0.2's `update`, which migrates
/// it (`update` itself: tests/migrate.rs).
#[test]
fn a_project_of_memop_0_1_is_refused_with_the_way_out() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let project = read(&dir, "PROJECT").replace("memop.rs/rust/v2", "memop.rs/rust/v1");
    fs::write(dir.join("PROJECT"), project).unwrap();
    let before = snapshot(&dir);
    refused(&dir, &format!("create api {NGINX}"), &["made by memop 0.1", "run its `memop update`"]);
    assert_unchanged(&dir, &before, "a refused command");
}

/// Makes `path` hold what an older memop wrote there: its current text with `from` replaced by
/// `to`, recorded in PROJECT.sum as memop's. Returns memop's current text of it.
pub(crate) fn as_older_memop_wrote(dir: &Path, path: &str, from: &str, to: &str) -> String {
    let now = read(dir, path);
    assert!(now.contains(from), "{path} has no {from:?}");
    let old = now.replacen(from, to, 1);
    fs::write(dir.join(path), &old).unwrap();
    let sum = read(dir, "PROJECT.sum");
    let line =
        sum.lines().find(|l| l.starts_with(&format!("{path} "))).unwrap_or_else(|| panic!("{path} not in PROJECT.sum"));
    fs::write(dir.join("PROJECT.sum"), sum.replace(line, &format!("{path} {}", blob_id(&old)))).unwrap();
    now
}

#[test]
fn memops_files_are_replaced_when_unedited_and_merged_with_your_edits() {
    let (_tmp, dir) = older_project();
    // What memop 0.1.9 wrote: another default IMG in the Makefile, another comment in the
    // Dockerfile, another tag in config/manager.
    let makefile = as_older_memop_wrote(&dir, "Makefile", "IMG ?= controller:latest", "IMG ?= controller:old");
    let dockerfile = as_older_memop_wrote(&dir, "Dockerfile", "FROM rust:", "# memop 0.1.9\nFROM rust:");
    as_older_memop_wrote(&dir, "config/manager/kustomization.yaml", "newTag: latest", "newTag: old");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop 0.1.9"]);
    // Your edits: a target of your own at the end of the Makefile; nothing else.
    append(&dir, "Makefile", "\nmine:\n\techo mine\n");
    git(&dir, &["commit", "-qam", "my target"]);

    let out = ok(&dir, "update");
    assert!(out.stdout.contains("Merged memop's changes with your edits in: Makefile"), "{}", out.stdout);
    assert_eq!(read(&dir, "Makefile"), format!("{makefile}\nmine:\n\techo mine\n"), "memop's change and yours");
    assert_eq!(read(&dir, "Dockerfile"), dockerfile, "unedited: replaced");
    assert!(read(&dir, "config/manager/kustomization.yaml").contains("newTag: latest\n"));
    // PROJECT.sum records memop's text, the base of the next merge, not the merged one.
    let sum = read(&dir, "PROJECT.sum");
    assert!(sum.contains(&format!("Makefile {}\n", blob_id(&makefile))), "{sum}");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "memop update"]);
    // memop's text of the merged Makefile is kept under refs/memop/bases, safe from git's
    // pruning, so the next update has its base even where it was never committed.
    let kept = Command::new("git").current_dir(&dir).args(["cat-file", "blob", "refs/memop/bases:Makefile"]).output();
    assert_eq!(String::from_utf8(kept.unwrap().stdout).unwrap(), makefile);
    git(&dir, &["gc", "-q", "--prune=now"]);
    let before = snapshot(&dir);
    let again = ok(&dir, "update");
    assert!(again.stdout.starts_with("Nothing to do"), "a second update is a no-op: {}", again.stdout);
    assert!(!again.stderr.contains("kept as it is"), "the base was found: {}", again.stderr);
    assert_unchanged(&dir, &before, "a second update");
}

/// An [`older_project`] whose Makefile the user edited, committed, on the line memop changed
/// since (its default image): the next update conflicts there.
pub(crate) fn a_conflicting_edit() -> (TempDir, PathBuf) {
    let (tmp, dir) = older_project();
    as_older_memop_wrote(&dir, "Makefile", "IMG ?= controller:latest", "IMG ?= controller:old");
    as_older_memop_wrote(&dir, "Dockerfile", "FROM rust:", "# memop 0.1.9\nFROM rust:");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop 0.1.9"]);
    let makefile = read(&dir, "Makefile").replace("IMG ?= controller:old", "IMG ?= registry.example.com/mine:v1");
    fs::write(dir.join("Makefile"), makefile).unwrap();
    git(&dir, &["commit", "-qam", "my image"]);
    (tmp, dir)
}

#[test]
fn an_edit_on_the_lines_memop_changed_leaves_conflict_markers_and_fails() {
    let (_tmp, dir) = a_conflicting_edit();
    let before = snapshot(&dir);

    // The dry run shows what the real run writes and fails as it does (it said "would change",
    // exit 0).
    let dry = memop(&dir, "--dry-run update").assert().code(1).get_output().clone();
    let (stdout, stderr) = (String::from_utf8(dry.stdout).unwrap(), String::from_utf8(dry.stderr).unwrap());
    assert!(stdout.contains("<<<<<<< ours"), "the dry run shows the conflict: {stdout}");
    assert!(stdout.contains("update Makefile\n") && stdout.contains("update PROJECT.sum\n"), "{stdout}");
    assert!(!stdout.contains("update Dockerfile"), "the real run writes only the conflict: {stdout}");
    assert!(stdout.contains("dry run: 2 file(s) would change; nothing was written"), "{stdout}");
    for want in [
        "error: memop's changes and your edits touch the same lines of Makefile",
        "`memop update` would write it with conflict markers",
        "This dry run wrote nothing",
    ] {
        assert!(stderr.contains(want), "{want:?} not in:\n{stderr}");
    }
    assert_unchanged(&dir, &before, "a dry run");

    // Exit 1, saying which file to resolve and what to do; only the file in conflict is written
    // (and its record).
    let out = memop(&dir, "update").assert().code(1).get_output().clone();
    let stderr = String::from_utf8(out.stderr).unwrap();
    for want in [
        "error: memop's changes and your edits touch the same lines of Makefile",
        "<<<<<<< ours (yours)",
        "commit, and run `memop update` again",
    ] {
        assert!(stderr.contains(want), "{want:?} not in:\n{stderr}");
    }
    let merged = read(&dir, "Makefile");
    for line in
        ["<<<<<<< ours", "IMG ?= registry.example.com/mine:v1", "=======", "IMG ?= controller:latest", ">>>>>>> theirs"]
    {
        assert!(merged.contains(line), "{line:?} not in the conflicted Makefile:\n{merged}");
    }
    let touched: Vec<PathBuf> =
        changed(&before, &snapshot(&dir)).into_iter().filter(|p| !p.starts_with(".git")).collect();
    assert_eq!(touched, ["Makefile", "PROJECT.sum"].map(PathBuf::from), "nothing else");

    // Resolved and committed, the update goes on with the rest, and leaves the resolution alone.
    let resolved = format!("{}IMG ?= registry.example.com/mine:v1\n{}", &merged[..merged.find("<<<<<<<").unwrap()], {
        let after = &merged[merged.find(">>>>>>> theirs").unwrap()..];
        &after[after.find('\n').unwrap() + 1..]
    });
    fs::write(dir.join("Makefile"), &resolved).unwrap();
    git(&dir, &["commit", "-qam", "resolved"]);
    ok(&dir, "update");
    assert_eq!(read(&dir, "Makefile"), resolved);
    assert!(!read(&dir, "Dockerfile").contains("# memop 0.1.9"), "the rest of the update is written");
    assert!(read(&dir, "PROJECT").contains(&format!("cliVersion: {}\n", env!("CARGO_PKG_VERSION"))));
}

#[test]
fn an_edited_file_without_memops_text_in_git_is_kept() {
    let (_tmp, dir) = older_project();
    // memop 0.1.9's text was never committed: only the edited one was.
    as_older_memop_wrote(&dir, "Makefile", "IMG ?= controller:latest", "IMG ?= controller:old");
    append(&dir, "Makefile", "\nmine:\n\techo mine\n");
    let edited = read(&dir, "Makefile");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop 0.1.9, and edited"]);
    let out = ok(&dir, "update");
    assert!(out.stderr.contains("note: Makefile changed since memop wrote it"), "{}", out.stderr);
    assert_eq!(read(&dir, "Makefile"), edited);
}

/// Makes `path` hold what an older memop wrote there, as [`as_older_memop_wrote`], and commits it.
pub(crate) fn older(dir: &Path, path: &str, from: &str, to: &str) -> String {
    let now = as_older_memop_wrote(dir, path, from, to);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", &format!("{path} as an older memop wrote it")]);
    now
}

#[test]
fn per_api_and_shared_files_are_updated_and_yours_are_not() {
    let (_tmp, dir) = older_project();
    // An API's own file of memop's (a helper role), unedited: replaced.
    let role = older(&dir, "config/rbac/cache_memcached_admin_role.yaml", "- '*'", "- '*' # old");
    // A file memop inserts into (the API's registration in src/main.rs), which you edited too:
    // memop's change and yours.
    let main = older(&dir, "src/main.rs", "memcached::register(", "memcached::register_old(");
    // Your files (the types, samples): never rewritten.
    let types = "src/api/cache/v1alpha1/memcached.rs";
    older(&dir, types, "//! The Memcached API", "//! An older Memcached API");
    let mine = read(&dir, types);
    // The controller and the kind's tests are yours once you edit them: as an older memop wrote
    // them, memop's to replace.
    let controller = "src/controller/memcached.rs";
    let current = older(&dir, controller, "//! The Memcached controller", "//! An older Memcached controller");
    // Generated from your code: left to `make manifests`.
    let crd = "config/crd/bases/cache.example.com_memcacheds.yaml";
    older(&dir, crd, "scope: Namespaced", "scope: Namespaced # old");
    let generated = read(&dir, crd);
    append(&dir, "src/main.rs", "// my note\n");
    git(&dir, &["commit", "-qam", "my note"]);

    let out = ok(&dir, "update");
    assert!(out.stdout.contains("Merged memop's changes with your edits in: src/main.rs"), "{}", out.stdout);
    assert_eq!(read(&dir, "config/rbac/cache_memcached_admin_role.yaml"), role);
    assert_eq!(read(&dir, "src/main.rs"), format!("{main}// my note\n"));
    assert_eq!(read(&dir, types), mine);
    assert_eq!(read(&dir, controller), current);
    assert_eq!(read(&dir, crd), generated);
    assert!(
        out.stderr.contains(&format!("note: {crd} are generated from your code"))
            && out.stderr.contains("make manifests"),
        "{}",
        out.stderr
    );

    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "memop update"]);
    let before = snapshot(&dir);
    assert!(ok(&dir, "update").stdout.starts_with("Nothing to do"), "a second update is a no-op");
    assert_unchanged(&dir, &before, "a second update");
}

/// A CRD that `make manifests` wrote from your types, which memop generates as it did when it
/// wrote it: no note asks for a `make manifests` that would change nothing (one did, on every
/// update after an edit of the types).
#[test]
fn a_crd_make_manifests_wrote_from_your_types_is_no_news() {
    let (_tmp, dir) = older_project();
    let types = "src/api/cache/v1alpha1/memcached.rs";
    let size = "    pub size: i32,\n";
    assert!(read(&dir, types).contains(size));
    fs::write(dir.join(types), read(&dir, types).replacen(size, &format!("{size}    pub note: Option<String>,\n"), 1))
        .unwrap();
    // What `make manifests` then writes: the CRD with the new property.
    let crd = "config/crd/bases/cache.example.com_memcacheds.yaml";
    let property = "              size:\n";
    assert!(read(&dir, crd).contains(property), "{}", read(&dir, crd));
    let note = "              note:\n                nullable: true\n                type: string\n";
    fs::write(dir.join(crd), read(&dir, crd).replacen(property, &format!("{note}{property}"), 1)).unwrap();
    git(&dir, &["commit", "-qam", "a field, and make manifests"]);
    let out = ok(&dir, "update");
    assert!(!out.stderr.contains(crd), "{}", out.stderr);
    assert!(read(&dir, crd).contains(note), "the CRD as make manifests wrote it");
}

/// Several APIs, versions of one kind (one stored as v1), admission and conversion webhooks:
/// replaying PROJECT gives every file as the commands wrote it, so an update has nothing to do.
#[test]
fn a_project_of_many_commands_is_up_to_date() {
    let (_tmp, dir) = project(&[MEMCACHED, NGINX, "--group batch --version v1 --kind CronJob"]);
    for line in [
        "create webhook --group cache --kind Memcached --defaulting --programmatic-validation",
        "create api --group cache --version v1 --kind Memcached --storage-version",
        "create webhook --group cache --version v1 --kind Memcached --conversion",
        "create api --group cache --version v2 --kind Memcached",
        "create webhook --group batch --version v1 --kind CronJob --programmatic-validation",
    ] {
        ok(&dir, line);
    }
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop"]);
    let before = snapshot(&dir);
    let out = ok(&dir, "update");
    assert!(out.stdout.starts_with("Nothing to do"), "{}{}", out.stdout, out.stderr);
    assert_unchanged(&dir, &before, "an update of an up-to-date project");
}

/// memop inserting into a file you edited does not take your edits for its own: the record keeps
/// memop's text from before them, so an update merges instead of replacing the file.
#[test]
fn your_edit_of_a_file_memop_inserts_into_later_survives_an_update() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop"]);
    append(&dir, "src/main.rs", "// my note\n");
    git(&dir, &["commit", "-qam", "my note"]);
    ok(&dir, &format!("create api {NGINX}"));
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "nginx"]);
    let main = read(&dir, "src/main.rs");
    assert!(main.contains("nginx::register(") && main.ends_with("// my note\n"), "{main}");
    ok(&dir, "update");
    assert_eq!(read(&dir, "src/main.rs"), main);
}

/// A signal while the update formats memop's text stops it before it writes anything.
#[test]
fn an_interrupted_update_changes_nothing() {
    let (tmp, dir) = older_project();
    older(&dir, "src/main.rs", "memcached::register(", "memcached::register_old(");
    // A "rustfmt" that says when it starts, then takes far longer than the test waits.
    let slow = tmp.path().join("slow-rustfmt");
    fs::write(&slow, "#!/bin/sh\ntouch \"$0.started\"\nsleep 10\n").unwrap();
    fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let before = snapshot(&dir);
    let child = spawn(&dir, "update", &[("RUSTFMT", &slow)]);
    let deadline = std::time::Instant::now() + LIMIT;
    while !tmp.path().join("slow-rustfmt.started").exists() {
        assert!(std::time::Instant::now() < deadline, "memop never ran rustfmt");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let out = exits_within(child, LIMIT, "update");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted; nothing was written"), "{stderr}");
    assert_unchanged(&dir, &before, "an interrupted update");
}

/// A project with a Helm chart gets memop's chart templates too: replaced where unedited, merged
/// where the user edited them, as memop's other files.
#[test]
fn the_helm_chart_is_updated_with_memops_other_files() {
    let (_tmp, dir) = older_project();
    ok(&dir, "edit --plugins=helm/v2-alpha");
    let helpers = "dist/chart/templates/_helpers.tpl";
    let manager = "dist/chart/templates/manager/manager.yaml";
    let helpers_now = as_older_memop_wrote(&dir, helpers, "{{/* The chart label. */}}", "{{/* memop 0.1.9 */}}");
    let manager_now =
        as_older_memop_wrote(&dir, manager, "          initialDelaySeconds: 15", "          initialDelaySeconds: 30");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "the chart of memop 0.1.9"]);
    // The user's edit of the manager's template, away from memop's change.
    let mine = "        kubectl.kubernetes.io/default-container: manager\n";
    fs::write(
        dir.join(manager),
        read(&dir, manager).replacen(mine, &format!("{mine}        example.com/mine: \"yes\"\n"), 1),
    )
    .unwrap();
    git(&dir, &["commit", "-qam", "my annotation"]);

    let out = ok(&dir, "update");
    assert!(out.stdout.contains(&format!("Merged memop's changes with your edits in: {manager}")), "{}", out.stdout);
    assert_eq!(read(&dir, helpers), helpers_now, "unedited: replaced");
    assert_eq!(
        read(&dir, manager),
        manager_now.replacen(mine, &format!("{mine}        example.com/mine: \"yes\"\n"), 1)
    );
}

/// Your files are never rewritten; where memop now writes one otherwise than when it made your
/// copy, the update says so, once, with memop's change to read in git.
#[test]
fn your_files_are_kept_and_memops_change_to_them_is_named() {
    let (_tmp, dir) = older_project();
    let controller = "src/controller/memcached.rs";
    as_older_memop_wrote(&dir, controller, "pub const RESYNC", "// as memop 0.1.9 wrote it\npub const RESYNC");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop 0.1.9"]);
    append(&dir, controller, "\n// mine\n");
    git(&dir, &["commit", "-qam", "my comment"]);
    let yours = read(&dir, controller);
    let merge_file = |stderr: &str| {
        let stderr = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        stderr.split("`git merge-file ").nth(1).and_then(|rest| rest.split('`').next()).map(str::to_string)
    };
    // The dry run, where you plan, names the same merge as the real run (it gave only the diff).
    let planned = merge_file(&ok(&dir, "--dry-run update").stderr).expect("the dry run names the merge");

    let out = ok(&dir, "update");
    assert_eq!(read(&dir, controller), yours, "your file, never rewritten");
    assert_eq!(merge_file(&out.stderr), Some(planned));
    let stderr = out.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(stderr.contains(&format!("note: {controller} is yours, so it was left as it is")), "{stderr}");
    let diff = stderr.split("`git diff ").nth(1).and_then(|rest| rest.split('`').next()).expect("a git diff to run");
    let shown = Command::new("git").current_dir(&dir).arg("diff").args(diff.split(' ')).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("-// as memop 0.1.9 wrote it"), "memop's change, in git: {shown}");
    assert!(!shown.contains("mine"), "memop's texts, not yours: {shown}");

    git(&dir, &["commit", "-qam", "memop update"]);
    let again = ok(&dir, "update");
    assert!(!again.stderr.contains(controller), "said once: {}", again.stderr);
    assert_eq!(read(&dir, controller), yours);
}

/// A kind's conversion test is memop's while you leave it as memop wrote it (an update renders it
/// again, as `create api` does when a spoke joins), and yours once you edit it.
#[test]
fn a_conversion_test_is_memops_until_you_edit_it() {
    let (_tmp, dir) = project(&[MEMCACHED, "--group cache --version v1 --kind Memcached --storage-version"]);
    ok(&dir, "create webhook --group cache --version v1 --kind Memcached --conversion");
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop"]);
    let test = "tests/memcached_conversion.rs";
    let (from, to) = ("//! The conversion webhook of Memcached", "//! An older conversion test of Memcached");
    let memops = older(&dir, test, from, to);
    ok(&dir, "update");
    assert_eq!(read(&dir, test), memops, "unedited: memop's, replaced");
    git(&dir, &["commit", "-qam", "memop update"]);

    older(&dir, test, from, to);
    append(&dir, test, "// mine\n");
    git(&dir, &["commit", "-qam", "my edit"]);
    let yours = read(&dir, test);
    let out = ok(&dir, "update");
    assert_eq!(read(&dir, test), yours, "edited: yours, never rewritten");
    let stderr = out.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(stderr.contains(&format!("note: {test} is yours, so it was left as it is")), "{stderr}");
}

/// A project made in an earlier year is up to date in a later one: its license headers keep
/// the year they were written in (memop writes the current year only into the files it makes).
#[test]
fn a_later_year_is_not_a_change_of_memops() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop"]);
    let before = snapshot(&dir);
    // Two years after the project's (SOURCE_DATE_EPOCH of the other tests is in 2026).
    let out = memop(&dir, "update").env("SOURCE_DATE_EPOCH", "1860000000").assert().success().get_output().clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("Nothing to do"), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert_unchanged(&dir, &before, "an update in a later year");
}
