//! `memop edit --plugins=autoupdate/v1-alpha`: the scheduled workflow that runs `memop update` and
//! opens a pull request, and `memop update --summary`, the body of that pull request. The
//! workflow's logic is tested here without GitHub: what it runs (`memop update --summary`) on a
//! real update, a conflict and a refusal; its syntax and shell with `actionlint` when there is one.

use std::sync::Once;

use super::update::{a_conflicting_edit, git, older_project};
use super::*;

const WORKFLOW: &str = ".github/workflows/auto-update.yml";
const GIT: &str = "https://git.example.com/tools/memop.git";

#[test]
fn the_plugin_adds_the_workflow_records_the_repository_and_update_keeps_it() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    // The repository memop is installed from has no default: memop is on no registry.
    refused(&dir, "edit --plugins=autoupdate/v1-alpha", &["--memop-git URL", "PROJECT records it"]);
    refused(&dir, "edit --plugins=autoupdate/v1-alpha --memop-git 'https://x.example/m;rm -rf ~'", &["--memop-git"]);
    refused(&dir, "edit --plugins=helm/v2-alpha --memop-git https://x.example/m", &["belongs to --plugins=autoupdate"]);
    refused(&dir, "edit --plugins=autoupdate/v1 --memop-git https://x.example/m", &["memop has autoupdate/v1-alpha"]);
    let out = ok(&dir, &format!("edit --plugins=autoupdate.kubebuilder.io/v1-alpha --memop-git {GIT}"));
    assert!(out.stdout.contains(&format!("create  ./{WORKFLOW}")), "{}", out.stdout);
    assert!(out.stdout.contains("allowed to create pull requests"), "{}", out.stdout);
    let project_file = read(&dir, "PROJECT");
    assert!(
        project_file.contains(&format!("plugins:\n  autoupdate.kubebuilder.io/v1-alpha:\n    memopGit: {GIT}\n")),
        "{project_file}"
    );
    let workflow = read(&dir, WORKFLOW);
    for want in [
        "  schedule:\n    - cron: ",
        "  workflow_dispatch:\n",
        "permissions: {}\n",
        "      contents: write\n      pull-requests: write\n",
        &format!("MEMOP_GIT: '{GIT}'"),
        "cargo install --locked --git \"$MEMOP_GIT\" memop",
        "memop update --summary \"$summary\"",
        "gh pr create --head \"$BRANCH\" --title \"$title\" --body-file \"$body\"",
        "::error title=memop update refused::",
    ] {
        assert!(workflow.contains(want), "{want:?} not in the workflow:\n{workflow}");
    }
    check_with_actionlint(&dir);

    // memop's file: an update finds it current, and `init`'s other commands do not take the plugin.
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "with the workflow"]);
    assert!(ok(&dir, "update").stdout.starts_with("Nothing to do"));
    refused(
        &dir,
        "create api --group web --kind Nginx --plugins=autoupdate/v1-alpha",
        &["memop edit --plugins=autoupdate"],
    );
    // Run again, the recorded repository is kept; a new one replaces it in PROJECT and the workflow.
    assert!(ok(&dir, "edit --plugins=autoupdate/v1-alpha").stdout.starts_with("Nothing to do"));
    ok(&dir, "edit --plugins=autoupdate/v1-alpha --memop-git https://git.example.com/fork/memop");
    assert!(read(&dir, WORKFLOW).contains("MEMOP_GIT: 'https://git.example.com/fork/memop'"));
    assert!(read(&dir, "PROJECT").contains("memopGit: https://git.example.com/fork/memop\n"));
}

#[test]
fn an_edit_of_the_workflow_survives_an_update() {
    let (_tmp, dir) = older_project();
    ok(&dir, &format!("edit --plugins=autoupdate/v1-alpha --memop-git {GIT}"));
    let edited = read(&dir, WORKFLOW).replace("    - cron: \"17 5 * * 1\"", "    - cron: \"0 3 * * 3\"");
    fs::write(dir.join(WORKFLOW), &edited).unwrap();
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "the workflow, on Wednesdays"]);
    ok(&dir, "update");
    assert_eq!(read(&dir, WORKFLOW), edited);
}

/// What the pull request of the workflow says, from a real update that stops at a conflict, then
/// goes on once it is resolved.
#[test]
fn the_summary_lists_the_conflicts_then_the_files_changed_and_the_notes() {
    let (tmp, dir) = a_conflicting_edit();
    // An edit of another of memop's files, away from the lines memop changes: it merges cleanly,
    // but is not written while the update stops at the Makefile.
    append(&dir, "Dockerfile", "# mine\n");
    git(&dir, &["commit", "-qam", "my note"]);
    let summary = tmp.path().join("summary.md");
    let line = format!("update --summary '{}'", summary.display());
    let out = memop(&dir, &line).assert().code(1).get_output().clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("touch the same lines of Makefile"));
    let text = fs::read_to_string(&summary).unwrap();
    for want in [
        &format!("## memop update: memop 0.1.9 to memop {}\n", env!("CARGO_PKG_VERSION")),
        "**Stopped at conflicts.**",
        "run `memop update` again for the rest of the update",
        "### Conflicts (1)\n\n- `Makefile`\n",
    ] {
        assert!(text.contains(want), "{want:?} not in the summary:\n{text}");
    }
    assert!(!text.contains("Dockerfile"), "the rest is not written, nor said to be merged, yet:\n{text}");

    // Resolved (theirs) and committed: the rest of the update, with memop's note on a file of yours.
    let makefile = read(&dir, "Makefile");
    // Each conflict resolved as memop's side (after `=======`, up to `>>>>>>>`).
    let mut resolved = String::new();
    let mut side = "";
    for line in makefile.lines() {
        match line {
            _ if line.starts_with("<<<<<<<") => side = "ours",
            _ if line.starts_with("|||||||") => side = "base",
            "=======" => side = "theirs",
            _ if line.starts_with(">>>>>>>") => side = "",
            _ if side.is_empty() || side == "theirs" => resolved.push_str(&format!("{line}\n")),
            _ => {}
        }
    }
    fs::write(dir.join("Makefile"), resolved).unwrap();
    git(&dir, &["commit", "-qam", "resolved"]);
    ok(&dir, &line);
    let text = fs::read_to_string(&summary).unwrap();
    for want in [
        "Updated. Next: `make manifests`",
        "### Files changed (",
        "- `Dockerfile`\n",
        "### Merged with your edits (1)\n\n- `Dockerfile`\n",
        "- `vendor/memop-runtime/` (",
        "1 file: memop's copy of its runtime)",
        "### Notes for your files\n\n- Cargo.toml changed since memop wrote it",
    ] {
        assert!(text.contains(want), "{want:?} not in the summary:\n{text}");
    }
    assert!(!text.contains("Conflicts"), "{text}");
}

#[test]
fn the_summary_of_a_refusal_says_why_and_that_nothing_changed() {
    let (tmp, dir) = older_project();
    append(&dir, "vendor/memop-runtime/src/lib.rs", "// mine\n");
    git(&dir, &["commit", "-qam", "an edit of vendor/"]);
    let summary = tmp.path().join("summary.md");
    memop(&dir, &format!("update --summary '{}'", summary.display())).assert().code(1);
    let text = fs::read_to_string(&summary).unwrap();
    assert!(text.contains("**memop update refused, and changed nothing:**"), "{text}");
    assert!(text.contains("vendor/memop-runtime/src/lib.rs changed since memop wrote it"), "{text}");

    // A project already up to date says so.
    let (tmp, dir) = project(&[MEMCACHED]);
    let summary = tmp.path().join("summary.md");
    ok(&dir, &format!("update --summary '{}'", summary.display()));
    let text = fs::read_to_string(&summary).unwrap();
    assert!(text.contains("Nothing to do: the project is up to date with this memop."), "{text}");
}

/// Runs `actionlint` (syntax, expressions, permissions, and shellcheck on the `run:` scripts when
/// shellcheck is installed) on the project's workflows, when there is one: `ACTIONLINT`, on
/// `PATH`, or where the README's `go install` puts it (`~/.cache/memop-tools`). Says once when
/// there is none.
fn check_with_actionlint(dir: &Path) {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let candidates = [
        std::env::var_os("ACTIONLINT").map(PathBuf::from),
        Some(home.join(".cache/memop-tools/actionlint")),
        Some(PathBuf::from("actionlint")),
    ];
    let found = candidates
        .into_iter()
        .flatten()
        .find(|bin| std::process::Command::new(bin).arg("-version").output().is_ok_and(|out| out.status.success()));
    let Some(actionlint) = found else {
        static SAID: Once = Once::new();
        SAID.call_once(|| {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "actionlint not found: the workflows were not linted (GOBIN=~/.cache/memop-tools go install \
                 github.com/rhysd/actionlint/cmd/actionlint@latest)"
            );
        });
        return;
    };
    let out = std::process::Command::new(&actionlint)
        .current_dir(dir)
        .args([
            "-no-color",
            ".github/workflows/auto-update.yml",
            ".github/workflows/test.yml",
            ".github/workflows/lint.yml",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "actionlint:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_memop_git_host_git_would_take_for_an_option_or_a_url_with_credentials_is_refused() {
    let (_tmp, dir) = project(&[]);
    for (url, expected) in [
        ("ssh://-oProxyCommand/x", "starts with -"),
        ("https://-oProxyCommand/x", "starts with -"),
        ("ssh://git@-oProxyCommand/x", "starts with -"),
        ("https://user:ghp_secret@github.com/tools/memop", "credentials"),
        ("https://ghp_secret@github.com/tools/memop", "credentials"),
        ("ssh://git:secret@github.com/tools/memop", "credentials"),
    ] {
        let stderr = refused(&dir, &format!("edit --plugins=autoupdate/v1-alpha --memop-git {url}"), &[expected]);
        assert!(
            !stderr.contains("ghp_secret") && !stderr.contains(":secret"),
            "the message repeats a secret: {stderr}"
        );
    }
    // An ssh user is no credential.
    ok(&dir, "edit --plugins=autoupdate/v1-alpha --memop-git ssh://git@github.com/tools/memop");
    // Nor is PROJECT's memopGit read back with one.
    let project = read(&dir, "PROJECT").replace("ssh://git@github.com", "https://user:pw@github.com");
    fs::write(dir.join("PROJECT"), project).unwrap();
    refused(&dir, "update --allow-dirty", &["memopGit", "credentials"]);
}
