//! memop never writes outside the project, whatever the tree holds (symbolic links, `#[path]`
//! attributes), and refuses the input that would give a project that does not compile.

mod common;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use common::{memop, tree};

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
    for kind in ["Deployment", "Event", "Context", "Error", "Api", "Client", "Controller", "Condition", "Default", "Rollout", "Std", "Tokio", "Kube"] {
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
        &["--group", "web", "--kind", "Site", "--image", "nginx:1.27", "--image-container-port", "80",
          "--image-container-command", "sh,-c,a\u{1}b"],
    )
    .failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(stderr.contains("argument 3 contains a control character"), "{stderr}");
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
