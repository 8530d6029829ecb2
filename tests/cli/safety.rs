//! memop never writes outside the project, whatever the tree holds (symbolic links, `#[path]`
//! attributes), and refuses the input that would give a project that does not compile.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use crate::common::{self, memop, tree};

/// A project with the Memcached API, in `<scratch>/proj`, and an `outside` directory beside it.
fn project() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("proj");
    let outside = scratch.path().join("outside");
    fs::create_dir(&dir).unwrap();
    fs::create_dir(&outside).unwrap();
    common::run(&dir, &["init", "--domain", "example.com"]);
    (scratch, dir, outside)
}

fn create_api(dir: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    memop().current_dir(dir).args(["create", "api"]).args(args).assert()
}

const MEMCACHED: &[&str] = &["--group", "cache", "--kind", "Memcached"];

#[test]
fn a_symlinked_directory_is_refused_and_nothing_is_written_through_it() {
    let (_scratch, dir, outside) = project();
    // config/rbac really lives elsewhere.
    fs::rename(dir.join("config/rbac"), outside.join("rbac")).unwrap();
    symlink(outside.join("rbac"), dir.join("config/rbac")).unwrap();
    let (before, outside_before) = (tree(&dir), tree(&outside));

    let assert = create_api(&dir, MEMCACHED).failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("config/rbac is a symbolic link"), "{stderr}");
    assert!(stderr.contains("does not follow links"), "{stderr}");
    assert_eq!(tree(&outside), outside_before, "nothing written outside");
    assert_eq!(tree(&dir), before, "nothing written inside either");
}

#[test]
fn a_symlinked_file_is_refused() {
    let (_scratch, dir, outside) = project();
    fs::rename(dir.join("src/main.rs"), outside.join("main.rs")).unwrap();
    symlink(outside.join("main.rs"), dir.join("src/main.rs")).unwrap();
    let outside_before = tree(&outside);
    let assert = create_api(&dir, MEMCACHED).failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("src/main.rs is a symbolic link"), "{stderr}");
    assert_eq!(tree(&outside), outside_before);
    assert!(fs::symlink_metadata(dir.join("src/main.rs")).unwrap().file_type().is_symlink());
}

#[test]
fn a_link_planted_at_a_temporary_name_is_never_followed() {
    let (_scratch, dir, outside) = project();
    let victim = outside.join("victim");
    fs::write(&victim, "precious\n").unwrap();
    // The names memop's temporary files used to have.
    for name in ["src/.main.rs.memop-tmp", "PROJECT.memop-tmp", ".PROJECT.memop-tmp"] {
        symlink(&victim, dir.join(name)).unwrap();
    }
    create_api(&dir, MEMCACHED).success();
    assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(!fs::symlink_metadata(dir.join("src/main.rs")).unwrap().file_type().is_symlink());
}

#[test]
fn the_formatting_pass_stays_inside_the_project() {
    let (_scratch, dir, outside) = project();
    // A module of the user's that lives outside the project, badly formatted, and one that
    // does not exist: rustfmt would format the first and memop used to create the second.
    fs::write(outside.join("theirs.rs"), "pub fn   f( ) {}\n").unwrap();
    let mod_rs = dir.join("src/controller/mod.rs");
    let mut text = fs::read_to_string(&mod_rs).unwrap();
    text.push_str(&format!(
        "\n#[path = \"{}\"]\nmod theirs;\n#[path = \"../../../outside/missing.rs\"]\nmod missing;\n",
        outside.join("theirs.rs").display()
    ));
    fs::write(&mod_rs, text).unwrap();
    let outside_before = tree(&outside);

    memop().current_dir(&dir).args(["--dry-run", "create", "api"]).args(MEMCACHED).assert().success();
    assert_eq!(tree(&outside), outside_before, "--dry-run touched nothing outside");
    create_api(&dir, MEMCACHED).success();
    assert_eq!(tree(&outside), outside_before, "nothing outside was formatted or created");
    let text = fs::read_to_string(&mod_rs).unwrap();
    assert!(text.contains(&format!("#[path = \"{}\"]", outside.join("theirs.rs").display())), "{text}");
    assert!(text.contains("pub mod memcached;"), "{text}");
}

#[test]
fn kinds_that_clash_with_generated_names_are_refused() {
    let (_scratch, dir, _outside) = project();
    let before = tree(&dir);
    for kind in [
        "Deployment",
        "Event",
        "Context",
        "Error",
        "Api",
        "Client",
        "Controller",
        "Condition",
        "Default",
        "Rollout",
        "Std",
        "Tokio",
        "Kube",
    ] {
        let assert = create_api(&dir, &["--group", "cache", "--kind", kind]).failure();
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        assert!(stderr.contains(&format!("invalid --kind \"{kind}\"")), "{stderr}");
        assert!(stderr.contains(&format!("{kind}Config")), "suggests a fix: {stderr}");
    }
    assert_eq!(tree(&dir), before);
}

#[test]
fn a_kind_named_like_another_kinds_spec_or_status_is_refused() {
    let (_scratch, dir, _outside) = project();
    create_api(&dir, &["--group", "cache", "--kind", "Foo", "--controller=false"]).success();
    let before = tree(&dir);
    for kind in ["FooSpec", "FooStatus"] {
        let assert = create_api(&dir, &["--group", "cache", "--kind", kind, "--controller=false"]).failure();
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        assert!(stderr.contains("Spec or Status type of the other"), "{stderr}");
    }
    assert_eq!(tree(&dir), before);
    // In another version the modules differ: no clash.
    create_api(&dir, &["--group", "cache", "--version", "v1", "--kind", "FooSpec", "--controller=false"]).success();
}

#[test]
fn control_characters_in_a_container_command_are_refused() {
    let (_scratch, dir, _outside) = project();
    let assert = create_api(
        &dir,
        &[
            "--group",
            "web",
            "--kind",
            "Site",
            "--image",
            "nginx:1.27",
            "--image-container-port",
            "80",
            "--image-container-command",
            "sh,-c,a\u{1}b",
        ],
    )
    .failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("argument 3 contains a control or invisible formatting character"), "{stderr}");
}

#[test]
fn a_project_named_like_a_dependency_is_refused() {
    let scratch = tempfile::tempdir().unwrap();
    for name in ["tokio", "kube", "serde-json", "k8s-openapi", "anyhow"] {
        let assert = memop()
            .current_dir(scratch.path())
            .args(["init", "--domain", "example.com", "--project-name", name])
            .assert()
            .failure();
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        assert!(stderr.contains("a crate the generated project depends on"), "{name}: {stderr}");
    }
    assert_eq!(fs::read_dir(scratch.path()).unwrap().count(), 0, "nothing written");
}

#[test]
fn re_running_recognises_insertions_however_they_were_formatted_since() {
    let (_scratch, dir, _outside) = project();
    let api = ["--group", "cache", "--kind", "ClusterBackupSchedule", "--controller=false"];
    create_api(&dir, &api).success();
    let api_mod = dir.join("src/api/cache/v1alpha1/mod.rs");
    let text = fs::read_to_string(&api_mod).unwrap();
    // Wrapped as rustfmt would wrap a longer line, and commented by hand.
    let wrapped = text
        .replace("mod cluster_backup_schedule;", "mod cluster_backup_schedule; // ours")
        .replace("pub use cluster_backup_schedule::{", "pub use cluster_backup_schedule::{\n   ");
    assert_ne!(wrapped, text, "the test edits the file: {text}");
    fs::write(&api_mod, &wrapped).unwrap();
    let mut again = api.to_vec();
    again.push("--force");
    create_api(&dir, &again).success();
    let text = fs::read_to_string(&api_mod).unwrap();
    assert_eq!(text.matches("mod cluster_backup_schedule;").count(), 1, "{text}");
    assert_eq!(text.matches("pub use cluster_backup_schedule::").count(), 1, "{text}");
}

#[test]
fn a_running_command_holds_the_project_lock() {
    let (_scratch, dir, _outside) = project();
    // A live holder: this test's process, holding the lock file's advisory lock as a running
    // memop command does (a lock file whose advisory lock is free is stale, whatever its PID).
    let holder = std::process::id();
    fs::write(dir.join(".memop.lock"), format!("{holder}\n")).unwrap();
    let held = fs::OpenOptions::new().read(true).write(true).open(dir.join(".memop.lock")).unwrap();
    held.lock().unwrap();
    let before = tree(&dir);
    let assert = create_api(&dir, MEMCACHED).failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("another memop command is working on this project"), "{stderr}");
    assert!(stderr.contains(&format!("process {holder}")), "{stderr}");
    assert_eq!(tree(&dir), before);
    drop(held);
    fs::remove_file(dir.join(".memop.lock")).unwrap();
    create_api(&dir, MEMCACHED).success();
    assert!(!dir.join(".memop.lock").exists(), "released when done");
}

#[test]
fn two_commands_at_once_never_lose_an_api() {
    let (_scratch, dir, _outside) = project();
    for round in 0..5 {
        let kinds = [format!("Foo{round}"), format!("Bar{round}")];
        let children: Vec<_> = kinds
            .iter()
            .map(|kind| {
                std::process::Command::new(assert_cmd::cargo::cargo_bin("memop"))
                    .current_dir(&dir)
                    .args(["create", "api", "--group", "cache", "--kind", kind, "--controller=false"])
                    .output()
                    .unwrap()
            })
            .collect();
        let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
        for (kind, out) in kinds.iter().zip(children) {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.success() {
                assert!(project.contains(&format!("kind: {kind}\n")), "{kind} lost:\n{project}");
            } else {
                assert!(stderr.contains("another memop command"), "{stderr}");
            }
        }
    }
}

#[test]
fn apis_that_would_share_files_are_refused_up_front() {
    let (_scratch, dir, _outside) = project();
    create_api(&dir, &["--group", "a-b", "--kind", "Foo", "--controller=false"]).success();
    create_api(&dir, &["--group", "foo", "--kind", "BarBaz", "--controller=false"]).success();
    let before = tree(&dir);
    let clashes: [(&[&str], &str); 2] = [
        (&["--group", "a.b", "--kind", "Foo", "--controller=false"], "share the Rust module src/api/a_b/"),
        (&["--group", "foo-bar", "--kind", "Baz", "--controller=false"], "config/rbac/foo_bar_baz_*_role.yaml"),
    ];
    for (args, expected) in clashes {
        for force in [false, true] {
            let mut args = args.to_vec();
            if force {
                args.push("--force");
            }
            let assert = create_api(&dir, &args).failure();
            let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
            assert!(stderr.contains(expected), "{stderr}");
            assert!(!stderr.contains("pass --force"), "{stderr}");
        }
    }
    assert_eq!(tree(&dir), before);
}

#[test]
fn short_names_stay_unique_within_a_group() {
    let (_scratch, dir, _outside) = project();
    create_api(&dir, &["--group", "cache", "--kind", "Backup", "--controller=false"]).success();
    let assert = create_api(&dir, &["--group", "cache", "--kind", "Bucket", "--controller=false"]).success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("Bucket gets no CRD short name: bc is another kind's"), "{stderr}");
    let backup = fs::read_to_string(dir.join("src/api/cache/v1alpha1/backup.rs")).unwrap();
    let bucket = fs::read_to_string(dir.join("src/api/cache/v1alpha1/bucket.rs")).unwrap();
    assert!(backup.contains("shortname = \"bc\""), "{backup}");
    assert!(!bucket.contains("shortname"), "{bucket}");
}

#[test]
fn force_with_a_new_image_keeps_the_rest_of_the_operand() {
    let (_scratch, dir, _outside) = project();
    create_api(&dir, MEMCACHED).success();
    let mut again = MEMCACHED.to_vec();
    again.extend(["--image", "memcached:1.6.30-alpine3.20", "--force"]);
    create_api(&dir, &again).success();
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    assert!(project.contains("image: memcached:1.6.30-alpine3.20"), "{project}");
    assert!(project.contains("runAsUser: 1001"), "{project}");
    assert!(project.contains("--memory-limit=64"), "{project}");
    assert!(project.contains("containerPort: 11211"), "{project}");
}

#[test]
fn init_force_refuses_when_project_does_not_load() {
    let (_scratch, dir, _outside) = project();
    create_api(&dir, MEMCACHED).success();
    let project = fs::read_to_string(dir.join("PROJECT")).unwrap();
    fs::write(dir.join("PROJECT"), format!("{project}futureField: 1\n")).unwrap();
    let before = tree(&dir);
    let assert = memop().current_dir(&dir).args(["init", "--domain", "example.com", "--force"]).assert().failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("cannot tell which APIs"), "{stderr}");
    assert_eq!(tree(&dir), before);
}

#[test]
fn create_api_keeps_the_rules_of_the_role_and_a_role_that_is_not_memops() {
    let (_scratch, dir, _outside) = project();
    create_api(&dir, MEMCACHED).success();
    // A rule of the user's RULES, written by `make manifests`.
    let role = dir.join("config/rbac/role.yaml");
    let mut text = fs::read_to_string(&role).unwrap();
    text.push_str("- apiGroups:\n  - \"\"\n  resources:\n  - configmaps\n  verbs:\n  - '*'\n");
    fs::write(&role, text).unwrap();
    create_api(&dir, &["--group", "cache", "--kind", "Backup"]).success();
    let text = fs::read_to_string(&role).unwrap();
    assert!(text.contains("- configmaps\n  verbs:\n  - '*'\n"), "{text}");
    assert!(text.contains("- backups\n"), "{text}");

    // A role of the user's own (init kept it): left alone, and said so.
    let theirs =
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: manager-role\nrules: []\n";
    fs::write(&role, theirs).unwrap();
    let assert = create_api(&dir, &["--group", "cache", "--kind", "Bucket"]).success();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("kept your config/rbac/role.yaml"), "{stderr}");
    assert_eq!(fs::read_to_string(&role).unwrap(), theirs);
}

#[test]
fn an_interrupted_command_writes_nothing_and_leaves_nothing_behind() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("proj");
    let tmp = scratch.path().join("tmp");
    fs::create_dir_all(&dir).unwrap();
    fs::create_dir_all(&tmp).unwrap();
    // A slow "rustfmt", so that the signal arrives while memop formats.
    let slow = scratch.path().join("slow-rustfmt");
    fs::write(&slow, "#!/bin/sh\nsleep 2\n").unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("memop"))
        .args(["init", "--domain", "example.com"])
        .current_dir(&dir)
        .env("RUSTFMT", &slow)
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted; nothing was written"), "{stderr}");
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 0, "nothing written");
    assert_eq!(fs::read_dir(&tmp).unwrap().count(), 0, "rustfmt's scratch directory removed");
}
