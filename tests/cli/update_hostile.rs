//! `memop update` against a hostile but realistic user (issue #20): what a user does between two
//! updates, or to the files an update reads, never makes it lose an edit, leave a project that
//! looks updated but is not, or say something that is not so.

use super::update::{a_conflicting_edit, as_older_memop_wrote, git, older_project};
use super::*;

use std::path::Path;
use std::process::Command;

/// A conflict the user committed without resolving it is refused by the next update, by name,
/// rather than left in the file of a project the update calls updated.
#[test]
fn conflict_markers_left_from_an_earlier_update_are_refused() {
    let (_tmp, dir) = a_conflicting_edit();
    memop(&dir, "update").assert().code(1);
    assert!(read(&dir, "Makefile").contains("<<<<<<< ours\n"));

    // Without resolving: committed as it is (or not committed, with --allow-dirty).
    refused(&dir, "update --allow-dirty", &["Makefile still holds the conflict markers", "resolve them"]);
    git(&dir, &["commit", "-qam", "the update, conflict and all"]);
    refused(&dir, "update", &["Makefile still holds the conflict markers", "resolve them"]);
    refused(&dir, "--dry-run update", &["Makefile still holds the conflict markers"]);
}

/// Windows line endings are no edit: git with `core.autocrlf` checks every file out with `\r\n`,
/// and the update still replaces the unedited files (vendor/ among them) and merges the edited
/// ones, each in the endings it has.
#[test]
fn a_checkout_with_windows_line_endings_updates_as_the_same_files_would() {
    let (_tmp, dir) = older_project();
    let makefile = as_older_memop_wrote(&dir, "Makefile", "IMG ?= controller:latest", "IMG ?= controller:old");
    let main = as_older_memop_wrote(&dir, "src/main.rs", "memcached::register(", "memcached::register_old(");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop 0.1.9"]);
    append(&dir, "src/main.rs", "// my note\n");
    git(&dir, &["commit", "-qam", "my note"]);
    // The same commit, checked out again with `\r\n`.
    git(&dir, &["config", "core.autocrlf", "true"]);
    git(&dir, &["rm", "-rq", "--cached", "."]);
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        match path.is_dir() {
            true if path.ends_with(".git") => {}
            true => fs::remove_dir_all(path).unwrap(),
            false => fs::remove_file(path).unwrap(),
        }
    }
    git(&dir, &["reset", "-q", "--hard"]);
    assert!(read(&dir, "Makefile").contains("\r\n") && read(&dir, "vendor/memop-runtime/src/lib.rs").contains("\r\n"));

    let out = ok(&dir, "update");
    let crlf = |text: &str| text.replace('\n', "\r\n");
    assert_eq!(read(&dir, "Makefile"), crlf(&makefile), "unedited: replaced");
    assert_eq!(read(&dir, "src/main.rs"), crlf(&format!("{main}// my note\n")), "merged: {}", out.stderr);
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let rbac = fs::read_to_string(crates.join("memop-runtime/src/rbac.rs")).unwrap();
    assert!(read(&dir, "vendor/memop-runtime/src/rbac.rs").ends_with(&crlf(&rbac)), "vendor/ replaced");
    // The pins move, in the lock too (which `cargo build --locked` holds to), in `\r\n` throughout.
    let version = env!("CARGO_PKG_VERSION");
    let (manifest, lock) = (read(&dir, "Cargo.toml"), read(&dir, "Cargo.lock"));
    assert!(manifest.contains(&format!("memop-runtime = \"={version}\"\r\n")), "{manifest}");
    assert!(lock.contains(&format!("name = \"memop-runtime\"\r\nversion = \"{version}\"\r\n")), "{lock}");
    assert_eq!(manifest.matches('\n').count(), manifest.matches("\r\n").count(), "{manifest}");
    // Cargo.toml, whose pins the fixture moved behind PROJECT.sum's back, is the one file kept.
    assert!(!out.stderr.contains("Makefile") && !out.stderr.contains("src/main.rs"), "{}", out.stderr);
    assert!(!out.stderr.contains("are generated from your code"), "{}", out.stderr);
}

/// A project a newer memop updated is not moved back by an older one (a teammate's, not
/// upgraded yet): its runtime and memop's files would go back to older text, which the
/// project's code was not written against, under a message that calls it an update.
#[test]
fn an_older_memop_refuses_to_move_a_project_back() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let version = env!("CARGO_PKG_VERSION");
    let project = read(&dir, "PROJECT").replace(&format!("cliVersion: {version}\n"), "cliVersion: 9.1.0\n");
    fs::write(dir.join("PROJECT"), project).unwrap();
    fs::write(dir.join("Cargo.toml"), read(&dir, "Cargo.toml").replace(&format!("\"={version}\""), "\"=9.1.0\""))
        .unwrap();
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "updated by memop 9.1.0"]);
    for line in ["update", "--dry-run update", "update --force"] {
        refused(
            &dir,
            line,
            &[
                &format!("memop 9.1.0 last updated this project, and this memop ({version}) is older"),
                "cargo install memop --version 9.1.0",
            ],
        );
    }
}

/// PROJECT.sum names files of the project only: a path that leads out of it (a hand edit, a
/// hostile commit) is refused, rather than named in the `git rm` the update tells you to run.
#[test]
fn a_record_of_a_path_outside_the_project_is_refused() {
    let (tmp, dir) = older_project();
    let outside = "// a file beside the project\n";
    fs::write(tmp.path().join("outside.rs"), outside).unwrap();
    let sum = read(&dir, "PROJECT.sum");
    for path in ["vendor/../../outside.rs", "/etc/hostname", "vendor/./memop-test/src/lib.rs"] {
        fs::write(dir.join("PROJECT.sum"), format!("{sum}{path} {}\n", common::blob_id(outside))).unwrap();
        git(&dir, &["commit", "-qam", "a hostile record"]);
        refused(
            &dir,
            "update",
            &[
                &format!("PROJECT.sum lists {path}, which is not a path inside the project"),
                "restore it from version control",
            ],
        );
    }
}

/// A project in a directory of a larger repository (a monorepo; two operators in one): memop's
/// text of each merged file is kept in that repository, one per project, so that every later
/// update merges again rather than keep the file with a note that it was never committed.
#[test]
fn projects_in_a_larger_repository_keep_the_base_of_their_next_merge() {
    let (tmp, first) = project(&[MEMCACHED]);
    let second = tmp.path().join("second");
    fs::create_dir(&second).unwrap();
    ok(&second, "init --domain example.com");
    git(tmp.path(), &["init", "-q"]);
    for dir in [&first, &second] {
        as_older_memop_wrote(dir, "Makefile", "IMG ?= controller:latest", "IMG ?= controller:old");
        git(tmp.path(), &["add", "-A"]);
        git(tmp.path(), &["commit", "-qm", "made by an older memop"]);
        append(dir, "Makefile", "\nmine:\n\techo mine\n");
        git(tmp.path(), &["commit", "-qam", "my target"]);
        let out = ok(dir, "update");
        assert!(out.stdout.contains("Merged memop's changes with your edits in: Makefile"), "{}", out.stdout);
        git(tmp.path(), &["add", "-A"]);
        git(tmp.path(), &["commit", "-qm", "memop update"]);
    }
    git(tmp.path(), &["gc", "-q", "--prune=now"]);
    for dir in [&first, &second] {
        let again = ok(dir, "update");
        assert!(again.stdout.starts_with("Nothing to do"), "{}", again.stdout);
        assert!(!again.stderr.contains("kept as it is"), "{}: the base was lost: {}", dir.display(), again.stderr);
    }
}

/// A repository the project merely lies in (a home directory kept in git), which does not track
/// it, gets nothing from memop.
#[test]
fn a_repository_that_does_not_track_the_project_gets_no_bases() {
    let (tmp, dir) = project(&[MEMCACHED]);
    git(tmp.path(), &["init", "-q"]);
    as_older_memop_wrote(&dir, "Makefile", "IMG ?= controller:latest", "IMG ?= controller:old");
    // memop's older text is in the repository's objects, so the update merges.
    git(&dir, &["hash-object", "-w", "Makefile"]);
    append(&dir, "Makefile", "\nmine:\n\techo mine\n");
    let out = ok(&dir, "update --allow-dirty");
    assert!(out.stdout.contains("Merged memop's changes with your edits in: Makefile"), "{}", out.stdout);
    let refs = Command::new("git").current_dir(tmp.path()).args(["for-each-ref", "refs/memop"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&refs.stdout), "", "memop wrote into a repository not the project's");
}

/// A file saved in another encoding than UTF-8 (an editor's Latin-1) is refused by name, saying
/// what to do, not with the bare error of the read.
#[test]
fn a_file_that_is_not_utf8_is_refused_with_the_fix() {
    let (_tmp, dir) = older_project();
    let sample = "config/samples/cache_v1alpha1_memcached.yaml";
    let mut bytes = fs::read(dir.join(sample)).unwrap();
    bytes.extend_from_slice(b"# caf\xe9\n");
    fs::write(dir.join(sample), bytes).unwrap();
    git(&dir, &["commit", "-qam", "a comment in Latin-1"]);
    refused(&dir, "update", &[&format!("{sample} is not UTF-8 text"), "save it as UTF-8"]);
}

/// Without PROJECT.sum (deleted, or kept out of git as if it were a build's), memop cannot tell
/// your edits from its own text: the update says that, not that you edited vendor/; with --force
/// it goes on, keeping every file that differs from memop's text, and says why.
#[test]
fn a_missing_record_is_named_and_forced_updates_keep_what_differs() {
    let (_tmp, dir) = older_project();
    as_older_memop_wrote(&dir, "Makefile", "IMG ?= controller:latest", "IMG ?= controller:old");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop 0.1.9"]);
    git(&dir, &["rm", "-q", "PROJECT.sum"]);
    git(&dir, &["commit", "-qm", "a build artifact, surely"]);
    refused(&dir, "update", &["PROJECT.sum is missing", "git checkout -- PROJECT.sum", "--force"]);
    refused(&dir, "--dry-run update", &["PROJECT.sum is missing"]);

    let out = ok(&dir, "update --force");
    let stderr = out.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        stderr.contains("note: Makefile is not as memop writes it, and memop has no record of writing it"),
        "{stderr}"
    );
    assert!(!stderr.contains("never committed"), "{stderr}");
    assert!(read(&dir, "Makefile").contains("IMG ?= controller:old"), "kept");
    assert!(read(&dir, "PROJECT.sum").contains("vendor/memop-runtime/src/rbac.rs "), "recorded again");
}

/// A file of yours that this memop writes and the one that made the project did not (a kind's
/// benchmark, which `Cargo.toml` names) is made, once, as `create api` makes it: without it the
/// updated `Cargo.toml` names a file that is not there, and cargo builds nothing. One memop wrote
/// and you deleted stays deleted.
#[test]
fn a_file_of_yours_that_memop_writes_now_is_made() {
    let (_tmp, dir) = older_project();
    let bench = read(&dir, "benches/memcached.rs");
    fs::remove_file(dir.join("benches/memcached.rs")).unwrap();
    let sum = read(&dir, "PROJECT.sum");
    let line = sum.lines().find(|l| l.starts_with("benches/memcached.rs ")).unwrap();
    fs::write(dir.join("PROJECT.sum"), sum.replace(&format!("{line}\n"), "")).unwrap();
    let block = "[[bench]]\nname = \"memcached\"\npath = \"benches/memcached.rs\"\nharness = false\n";
    as_older_memop_wrote(&dir, "Cargo.toml", block, "");
    // Yours, deleted: the kind's tests.
    fs::remove_file(dir.join("tests/memcached.rs")).unwrap();
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by a memop without benchmarks"]);

    let out = ok(&dir, "update");
    assert!(read(&dir, "Cargo.toml").contains(block), "{}", out.stdout);
    assert_eq!(read(&dir, "benches/memcached.rs"), bench, "the file Cargo.toml names");
    assert!(read(&dir, "PROJECT.sum").contains("benches/memcached.rs "), "recorded: yours from now on");
    assert!(!dir.join("tests/memcached.rs").exists(), "deleted by you: stays deleted");
}

/// The pins move, and only the versions in them: a comment of yours on a pin's line stays.
#[test]
fn a_comment_on_a_pin_line_survives_the_update() {
    let (_tmp, dir) = older_project();
    let manifest = read(&dir, "Cargo.toml").replace(
        "memop-runtime = \"=0.1.9\"\n",
        "memop-runtime = \"=0.1.9\" # in step with vendor/, see docs/upgrading.md\n",
    );
    fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    git(&dir, &["commit", "-qam", "a note on the pin"]);
    ok(&dir, "update");
    let version = env!("CARGO_PKG_VERSION");
    let manifest = read(&dir, "Cargo.toml");
    assert!(
        manifest.contains(&format!("memop-runtime = \"={version}\" # in step with vendor/, see docs/upgrading.md\n")),
        "{manifest}"
    );
    assert!(manifest.contains(&format!("memop-test = \"={version}\"\n")), "{manifest}");
}

/// A conflict in the Helm chart stops the update as one in any other file does: only the files
/// in conflict are written, so that the update stays one diff of its own once they are resolved.
#[test]
fn a_conflict_in_the_chart_writes_nothing_else() {
    let (_tmp, dir) = older_project();
    ok(&dir, "edit --plugins=helm/v2-alpha");
    let manager = "dist/chart/templates/manager/manager.yaml";
    let (memops, old) = ("          initialDelaySeconds: 15\n", "          initialDelaySeconds: 30\n");
    as_older_memop_wrote(&dir, manager, memops, old);
    as_older_memop_wrote(&dir, "Dockerfile", "FROM rust:", "# memop 0.1.9\nFROM rust:");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "the chart of memop 0.1.9"]);
    fs::write(dir.join(manager), read(&dir, manager).replacen(old, "          initialDelaySeconds: 45\n", 1)).unwrap();
    git(&dir, &["commit", "-qam", "my delay"]);
    let before = snapshot(&dir);

    let out = memop(&dir, "update").assert().code(1).get_output().clone();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains(&format!("touch the same lines of {manager}")), "{stderr}");
    assert!(stderr.contains("commit, and run `memop update` again"), "{stderr}");
    let touched: Vec<PathBuf> =
        changed(&before, &snapshot(&dir)).into_iter().filter(|p| !p.starts_with(".git")).collect();
    assert_eq!(touched, [PathBuf::from("PROJECT.sum"), PathBuf::from(manager)], "nothing else");

    let resolved = read(&dir, manager);
    let (head, rest) = resolved.split_once("<<<<<<< ours\n").unwrap();
    let tail = &rest[rest.find(">>>>>>> theirs\n").unwrap() + ">>>>>>> theirs\n".len()..];
    fs::write(dir.join(manager), format!("{head}          initialDelaySeconds: 45\n{tail}")).unwrap();
    git(&dir, &["commit", "-qam", "resolved"]);
    ok(&dir, "update");
    assert!(!read(&dir, "Dockerfile").contains("# memop 0.1.9"), "the rest of the update, once resolved");
    assert!(read(&dir, manager).contains("initialDelaySeconds: 45\n"));
}

/// `\r\n` is no edit for `create api` either: a kind's conversion test, memop's while it is as
/// memop wrote it, is written again when a version joins, in a checkout with `core.autocrlf`.
#[test]
fn a_conversion_test_in_windows_line_endings_is_still_memops() {
    let (_tmp, dir) = project(&[MEMCACHED, "--group cache --version v1 --kind Memcached --storage-version"]);
    ok(&dir, "create webhook --group cache --version v1 --kind Memcached --conversion");
    git(&dir, &["init", "-q"]);
    git(&dir, &["config", "core.autocrlf", "true"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop"]);
    let test = "tests/memcached_conversion.rs";
    fs::remove_file(dir.join(test)).unwrap();
    git(&dir, &["checkout", "--", test]);
    assert!(read(&dir, test).contains("\r\n"));
    let out = ok(&dir, "create api --group cache --version v2 --kind Memcached");
    assert!(!out.stderr.contains(&format!("kept your {test}")), "{}", out.stderr);
    assert!(read(&dir, test).contains("v2"), "written again with the new version");
}

/// Without rustfmt, update cannot compare memop's files with the project's (which rustfmt
/// formatted): it refuses, by name, rather than rewrite an up-to-date project unformatted and
/// say "Updated".
#[test]
fn update_without_rustfmt_is_refused_and_changes_nothing() {
    for project in [older_project, || {
        let (tmp, dir) = project(&[MEMCACHED]);
        git(&dir, &["init", "-q"]);
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-qm", "made by memop"]);
        (tmp, dir)
    }] {
        let (_tmp, dir) = project();
        let before = snapshot(&dir);
        let out = memop(&dir, "update").env("RUSTFMT", "/nonexistent/rustfmt").assert().code(1).get_output().clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("needs rustfmt") && stderr.contains("rustup component add rustfmt"), "{stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("Updated"), "{stderr}");
        assert_unchanged(&dir, &before, "update without rustfmt");
    }
}

/// An update whose report cannot be written (stdout on a full disk) has written the project:
/// it says so, and the merge bases of the next update are kept as after any update.
#[test]
fn an_update_that_cannot_report_says_it_was_written_and_keeps_its_bases() {
    let Ok(full) = fs::OpenOptions::new().write(true).open("/dev/full") else { return };
    let (_tmp, dir) = older_project();
    // A merge, whose base the next update needs: memop's Makefile changed, and so did yours.
    let makefile = as_older_memop_wrote(&dir, "Makefile", "IMG ?= controller:latest", "IMG ?= controller:old");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop 0.1.9"]);
    append(&dir, "Makefile", "\nmine:\n\techo mine\n");
    git(&dir, &["commit", "-qam", "my target"]);
    let out = Command::new(env!("CARGO_BIN_EXE_memop"))
        .current_dir(&dir)
        .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
        .arg("update")
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the changes were written") && stderr.contains("writing to standard output"), "{stderr}");
    assert!(read(&dir, "PROJECT").contains(&format!("cliVersion: {}", env!("CARGO_PKG_VERSION"))));
    let kept = Command::new("git").current_dir(&dir).args(["cat-file", "blob", "refs/memop/bases:Makefile"]).output();
    assert_eq!(String::from_utf8(kept.unwrap().stdout).unwrap(), makefile, "the merge base is kept: {stderr}");
}

/// A repository git refuses is not a project outside git: the check for uncommitted changes
/// fails with git's message instead of being skipped.
#[test]
fn update_in_a_repository_git_refuses_is_refused_with_gits_message() {
    let (_tmp, dir) = older_project();
    append(&dir, "README.md", "\nmy uncommitted note\n");
    fs::write(dir.join(".git/index"), "garbage").unwrap();
    refused(
        &dir,
        "update",
        &["git cannot tell whether the work tree has uncommitted changes", "index", "--allow-dirty"],
    );
}

/// A kill at any moment of an update's renames (a CI timeout, the OOM killer) leaves a project
/// the next run completes: the same project as an update that was never killed. Needs strace,
/// to kill memop at its Nth rename.
#[test]
fn an_update_killed_at_any_of_its_renames_is_completed_by_the_next_run() {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("skipped: no strace on PATH to kill memop at a rename");
        return;
    }
    let (clean, clean_sum) = {
        let (_tmp, dir) = older_project();
        ok(&dir, "update");
        (without_git(snapshot(&dir)), read(&dir, "PROJECT.sum"))
    };
    let mut killed = 0;
    for n in 1.. {
        let (_tmp, dir) = older_project();
        let out = Command::new("strace")
            .current_dir(&dir)
            .env("SOURCE_DATE_EPOCH", SOURCE_DATE_EPOCH)
            .args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=rename,renameat,renameat2"])
            .args(["-e", &format!("inject=rename,renameat,renameat2:signal=SIGKILL:when={n}")])
            .args([env!("CARGO_BIN_EXE_memop"), "update"])
            .output()
            .unwrap();
        if out.status.success() {
            break; // fewer than n renames: every kill point was tried
        }
        killed += 1;
        // Killed: the tree is half-written, so not clean for git; the rerun completes it.
        let out = memop(&dir, "update --allow-dirty").output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "killed at rename {n}, the rerun failed:\n{stderr}");
        let after = without_git(snapshot(&dir));
        let sum = read(&dir, "PROJECT.sum");
        let differs: Vec<_> = sum.lines().filter(|l| !clean_sum.lines().any(|c| c == *l)).collect();
        assert_eq!(changed(&clean, &after), Vec::<PathBuf>::new(), "killed at rename {n}:\n{stderr}\n{differs:?}");
    }
    assert!(killed >= 4, "memop was killed at only {killed} renames");
}

fn without_git(tree: Tree) -> Tree {
    tree.into_iter().filter(|(path, _)| !path.starts_with(".git")).collect()
}

/// A chart an earlier memop let the user write under `vendor/` (today's `edit` refuses it) is the
/// user's chart, not files of the runtime that memop no longer ships: the update neither removes
/// it nor tells the user to `git rm` it (while it removes the runtime's file that is gone).
#[test]
fn a_chart_under_vendor_is_not_named_as_runtime_files_to_delete() {
    let (_tmp, dir) = older_project();
    ok(&dir, "edit --plugins=helm/v2-alpha");
    fs::rename(dir.join("dist"), dir.join("vendor/dist")).unwrap();
    fs::write(dir.join("PROJECT"), read(&dir, "PROJECT").replace("output: dist", "output: vendor/dist")).unwrap();
    fs::write(dir.join("PROJECT.sum"), read(&dir, "PROJECT.sum").replace("\ndist/chart/", "\nvendor/dist/chart/"))
        .unwrap();
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "the chart under vendor/"]);
    let out = ok(&dir, "update");
    assert!(!dir.join("vendor/memop-test/src/gone.rs").exists());
    assert!(!out.stdout.contains("vendor/dist"), "{}", out.stdout);
    assert!(dir.join("vendor/dist/chart/Chart.yaml").is_file());
}

/// A `cliVersion` that is no memop version (`v9.9.9`, `"9.1"`) cannot pass for an older one: the
/// update refuses it by name instead of moving a project that a newer memop may have made back.
#[test]
fn a_cli_version_that_is_no_version_is_refused() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let version = env!("CARGO_PKG_VERSION");
    for bad in ["v9.9.9", "\"9.1\""] {
        fs::write(
            dir.join("PROJECT"),
            read(&dir, "PROJECT").replace(&format!("cliVersion: {version}"), &format!("cliVersion: {bad}")),
        )
        .unwrap();
        refused(&dir, "update --allow-dirty", &["is not a memop version", "restore PROJECT"]);
        fs::write(
            dir.join("PROJECT"),
            read(&dir, "PROJECT").replace(&format!("cliVersion: {bad}"), &format!("cliVersion: {version}")),
        )
        .unwrap();
    }
}

/// A malformed `SOURCE_DATE_EPOCH` is refused, as reproducible-builds.org asks, rather than
/// dating the license headers `Copyright -1199`.
#[test]
fn a_malformed_source_date_epoch_is_refused() {
    let tmp = scratch();
    for bad in ["-99999999999", "yesterday", "99999999999999"] {
        let out = memop(tmp.path(), "init --domain example.com").env("SOURCE_DATE_EPOCH", bad).assert().code(1);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(stderr.contains(&format!("SOURCE_DATE_EPOCH={bad:?} is not a time")), "{stderr}");
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0, "{bad}: something was written");
    }
}
