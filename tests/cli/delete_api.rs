//! `memop delete api`: one version of a kind served in several removed, with everything that
//! names it, and the refusals of what it cannot do.

use super::*;

const CRD: &str = "config/crd/bases/cache.example.com_memcacheds.yaml";
const DELETE: &str = "delete api --group cache --version v1alpha1 --kind Memcached";

/// Memcached in v1alpha1 (with the controller), then v1, stored, the hub of a conversion webhook
/// whose spoke is v1alpha1.
fn two_versions() -> (TempDir, PathBuf) {
    let (tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, "create api --group cache --version v1 --kind Memcached --storage-version");
    ok(&dir, "create webhook --group cache --version v1 --kind Memcached --conversion --spoke v1alpha1");
    (tmp, dir)
}

/// The Rust and YAML files of the project (vendor/ aside) that name `needle`.
fn naming(dir: &Path, needle: &str) -> Vec<PathBuf> {
    snapshot(dir)
        .into_iter()
        .filter(|(path, _)| !path.starts_with("vendor") && path != Path::new("PROJECT.sum"))
        .filter(|(_, node)| matches!(node, Node::File(bytes) if String::from_utf8_lossy(bytes).contains(needle)))
        .map(|(path, _)| path)
        .collect()
}

#[test]
fn a_deleted_version_leaves_no_trace_and_the_controller_moves_to_the_storage_version() {
    let (_tmp, dir) = two_versions();
    // The dry run shows the plan and writes nothing.
    let before = snapshot(&dir);
    let out = memop(&dir, &format!("--dry-run {DELETE}")).assert().success().get_output().clone();
    let shown = String::from_utf8(out.stdout).unwrap();
    assert!(shown.contains("remove src/api/cache/v1alpha1/memcached.rs"), "{shown}");
    assert!(shown.contains("Would delete cache/v1alpha1 Memcached"), "{shown}");
    assert_unchanged(&dir, &before, "a dry run");

    let out = ok(&dir, DELETE);
    for gone in [
        "src/api/cache/v1alpha1/memcached.rs",
        "src/api/cache/v1alpha1/memcached_conversion.rs",
        "src/api/cache/v1alpha1/mod.rs",
        "config/samples/cache_v1alpha1_memcached.yaml",
        // The conversion webhook had v1alpha1 alone to convert.
        "tests/memcached_conversion.rs",
        "src/webhook/mod.rs",
    ] {
        assert!(out.stdout.contains(&format!("  remove  ./{gone}\n")), "{gone}: {}", out.stdout);
        assert!(!dir.join(gone).exists(), "{gone} is still there");
    }
    assert!(out.stderr.contains("its conversion webhook went with v1alpha1"), "{}", out.stderr);
    assert_eq!(naming(&dir, "v1alpha1"), Vec::<PathBuf>::new());
    assert!(read(&dir, CRD).contains("    name: v1\n"));
    assert_eq!(count(&read(&dir, CRD), "    served: true\n"), 1);
    // The controller, its tests and benchmark use v1 now; PROJECT records it there.
    once(&dir, "src/controller/memcached.rs", "use crate::api::cache::v1::Memcached;");
    once(&dir, "tests/memcached.rs", "api::cache::v1::{Memcached, MemcachedSpec};");
    let project = read(&dir, "PROJECT");
    assert_eq!(count(&project, "kind: Memcached"), 1, "{project}");
    assert!(project.contains("controller: true"), "{project}");
    assert!(!project.contains("webhooks:"), "{project}");
    assert!(!project.contains("storageVersion"), "served in one version: {project}");
    let sum = read(&dir, "PROJECT.sum");
    assert!(!sum.contains("v1alpha1"), "{sum}");
    // PROJECT says what the project is: memop's replay of it changes nothing.
    assert!(ok(&dir, "update --allow-dirty").stdout.starts_with("Nothing to do"));
}

#[test]
fn a_third_version_keeps_the_conversion_and_an_edited_controller_keeps_its_edits() {
    let (_tmp, dir) = two_versions();
    ok(&dir, "create api --group cache --version v1beta1 --kind Memcached");
    append(&dir, "src/controller/memcached.rs", "\n// Tuned by hand.\n");
    ok(&dir, DELETE);
    let project = read(&dir, "PROJECT");
    assert!(project.contains("  webhooks:\n    conversion: true\n    spoke:\n    - v1beta1\n"), "{project}");
    assert_eq!(count(&project, "  storageVersion: v1\n"), 2, "{project}");
    once(&dir, "src/webhook/mod.rs", "crate::api::cache::v1beta1::Memcached,");
    assert!(!read(&dir, "src/webhook/mod.rs").contains("v1alpha1"));
    let controller = read(&dir, "src/controller/memcached.rs");
    assert!(
        controller.contains("use crate::api::cache::v1::Memcached;") && controller.ends_with("// Tuned by hand.\n")
    );
    assert_eq!(naming(&dir, "v1alpha1"), Vec::<PathBuf>::new());
    assert!(ok(&dir, "update --allow-dirty").stdout.starts_with("Nothing to do"));
}

#[test]
fn what_delete_api_cannot_do_is_refused_with_the_fix() {
    let (_tmp, single) = project(&[MEMCACHED]);
    refused(&single, DELETE, &["the only version of Memcached", "does not do yet", "kubectl delete crd"]);
    refused(&single, "delete api --group cache --version v2 --kind Memcached", &["no version v2", "v1alpha1"]);
    refused(&single, "delete api --group web --version v1 --kind Nginx", &["no API web/v1 Nginx"]);

    let (_tmp, dir) = two_versions();
    refused(
        &dir,
        "delete api --group cache --version v1 --kind Memcached",
        &[
            "v1 is the storage version",
            "STORAGE_VERSIONS",
            r#"("memcacheds.cache.example.com", "v1alpha1")"#,
            "`storageVersion` in PROJECT to v1alpha1;",
            "storedVersions",
        ],
    );
    // The code stores v1alpha1 now (your edit), while PROJECT still records v1: which one is right
    // is yours to say.
    let table = read(&dir, "src/api/mod.rs")
        .replace(r#"("memcacheds.cache.example.com", "v1"),"#, r#"("memcacheds.cache.example.com", "v1alpha1"),"#);
    fs::write(dir.join("src/api/mod.rs"), table).unwrap();
    let v1 = "delete api --group cache --version v1 --kind Memcached";
    refused(&dir, v1, &["storageVersion v1", "stores it as v1alpha1", "set `storageVersion: v1alpha1`"]);
    refused(&dir, DELETE, &["storageVersion v1", "stores it as v1alpha1"]);
    let table = read(&dir, "src/api/mod.rs")
        .replace(r#"("memcacheds.cache.example.com", "v1alpha1"),"#, r#"("memcacheds.cache.example.com", "v1"),"#);
    fs::write(dir.join("src/api/mod.rs"), table).unwrap();
    // Your edit of a file that goes with the version: named, and deleted with --force only.
    append(&dir, "src/api/cache/v1alpha1/memcached.rs", "\n// Mine.\n");
    refused(&dir, DELETE, &["src/api/cache/v1alpha1/memcached.rs", "--force"]);
    // Your code that still names the version: named, with the version to move it to.
    fs::write(dir.join("tests/mine.rs"), "use proj::api::cache::v1alpha1::Memcached;\n").unwrap();
    refused(&dir, &format!("{DELETE} --force"), &["tests/mine.rs", "change them to v1"]);
    fs::write(dir.join("tests/mine.rs"), "use proj::api::cache::v1::Memcached;\n").unwrap();
    ok(&dir, &format!("{DELETE} --force"));
    assert!(!dir.join("src/api/cache/v1alpha1").exists());
}

#[test]
fn the_hub_of_a_conversion_cannot_go_before_its_spokes() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, "create api --group cache --version v1 --kind Memcached");
    ok(&dir, "create webhook --group cache --version v1 --kind Memcached --conversion --spoke v1alpha1");
    refused(
        &dir,
        "delete api --group cache --version v1 --kind Memcached",
        &["hub of Memcached's conversion", "v1alpha1"],
    );
}

#[test]
fn admission_webhooks_move_to_the_storage_version_with_your_edits() {
    let (_tmp, dir) = two_versions();
    ok(&dir, "create webhook --group cache --version v1alpha1 --kind Memcached --defaulting --programmatic-validation");
    let webhook = "src/webhook/memcached.rs";
    let edited = read(&dir, webhook).replace(
        "        tracing::debug!(name = %memcached.name_any(), ?operation, \"defaulting Memcached\");\n",
        "        tracing::debug!(name = %memcached.name_any(), ?operation, \"defaulting Memcached\");\n        \
         // Mine: defaults.\n",
    );
    fs::write(dir.join(webhook), &edited).unwrap();

    let out = ok(&dir, DELETE);
    assert!(out.stderr.contains("Memcached's admission webhooks moved to v1"), "{}", out.stderr);
    // The module takes v1's types, with the edit kept; the paths, configurations and tests follow.
    once(&dir, webhook, "use crate::api::cache::v1::Memcached;");
    once(&dir, webhook, "        // Mine: defaults.\n");
    once(&dir, webhook, "\"/mutate-cache-example-com-v1-memcached\"");
    once(&dir, "config/webhook/manifests.yaml", "path: /validate-cache-example-com-v1-memcached");
    assert!(dir.join("tests/memcached_webhook.rs").exists());
    assert_eq!(naming(&dir, "v1alpha1"), Vec::<PathBuf>::new());
    let project = read(&dir, "PROJECT");
    assert_eq!(count(&project, "defaulting: true"), 1, "{project}");
    assert_eq!(count(&project, "validation: true"), 1, "{project}");
    assert!(ok(&dir, "update --allow-dirty").stdout.starts_with("Nothing to do"));
}

#[test]
fn every_controller_of_the_kind_moves_to_the_storage_version_with_your_edits() {
    let (_tmp, dir) = two_versions();
    let named = "--resource=false --controller=true --controller-name";
    ok(&dir, &format!("create api --group cache --version v1alpha1 --kind Memcached {named} memcached-report"));
    ok(&dir, &format!("create api --group cache --version v1alpha1 --kind Memcached {named} memcached-audit"));
    ok(&dir, &format!("create api --group cache --version v1 --kind Memcached {named} memcached-stats"));
    append(&dir, "src/controller/memcached_audit.rs", "\n// Audited by hand.\n");

    // The dry run shows no controller removed.
    let out = memop(&dir, &format!("--dry-run {DELETE}")).assert().success().get_output().clone();
    let shown = String::from_utf8(out.stdout).unwrap();
    for module in ["memcached_report", "memcached_audit", "memcached_stats"] {
        for file in [format!("src/controller/{module}.rs"), format!("tests/{module}.rs")] {
            assert!(!shown.contains(&format!("remove {file}")), "{file}:\n{shown}");
        }
    }

    let out = ok(&dir, DELETE);
    assert!(out.stderr.contains("memcached-report, memcached-audit moved to v1"), "{}", out.stderr);
    for (module, name) in [("memcached_report", "memcached-report"), ("memcached_audit", "memcached-audit")] {
        let controller = read(&dir, &format!("src/controller/{module}.rs"));
        assert!(controller.contains("use crate::api::cache::v1::Memcached;"), "{controller}");
        assert!(controller.contains(&format!("pub const NAME: &str = \"{name}\";")), "{controller}");
        assert!(dir.join(format!("tests/{module}.rs")).exists(), "tests/{module}.rs");
        once(&dir, "src/main.rs", &format!("controller::{module}::register(&mut manager);"));
        once(&dir, "src/controller/mod.rs", &format!("pub mod {module};"));
    }
    assert!(read(&dir, "src/controller/memcached_audit.rs").ends_with("// Audited by hand.\n"));
    let project = read(&dir, "PROJECT");
    for name in ["memcached-report", "memcached-audit", "memcached-stats"] {
        assert_eq!(count(&project, &format!("- name: {name}\n")), 1, "{project}");
    }
    assert_eq!(naming(&dir, "v1alpha1"), Vec::<PathBuf>::new());
    assert!(ok(&dir, "update --allow-dirty").stdout.starts_with("Nothing to do"));
}

/// Copies the files of `from` into `to`, the same tree.
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for (path, node) in snapshot(from) {
        match node {
            Node::Dir => fs::create_dir_all(to.join(path)).unwrap(),
            Node::File(bytes) => fs::write(to.join(path), bytes).unwrap(),
        }
    }
}

#[test]
fn a_deletion_killed_before_project_is_written_completes_on_the_rerun_with_no_stale_record() {
    // A SIGKILL among the renames of `delete api`: the files removed and changed are, PROJECT and
    // PROJECT.sum (renamed last) are not. Run again, it leaves what the uninterrupted run leaves.
    let (_tmp, whole) = two_versions();
    let killed_tmp = scratch();
    let killed = killed_tmp.path().join("proj");
    copy_tree(&whole, &killed);
    let before = snapshot(&whole);
    ok(&whole, DELETE);
    let after = snapshot(&whole);
    for path in changed(&before, &after) {
        if path == Path::new("PROJECT") || path == Path::new("PROJECT.sum") {
            continue;
        }
        match after.get(&path) {
            Some(Node::File(bytes)) => fs::write(killed.join(&path), bytes).unwrap(),
            Some(Node::Dir) => fs::create_dir_all(killed.join(&path)).unwrap(),
            None if killed.join(&path).is_dir() => fs::remove_dir_all(killed.join(&path)).unwrap(),
            None => fs::remove_file(killed.join(&path)).unwrap_or(()),
        }
    }
    let gone = "config/certmanager/certificate-webhook.yaml";
    assert!(!killed.join(gone).exists() && read(&killed, "PROJECT.sum").contains(gone));
    ok(&killed, DELETE);
    assert!(!read(&killed, "PROJECT.sum").contains(gone), "{}", read(&killed, "PROJECT.sum"));
    assert_eq!(read(&killed, "PROJECT.sum"), read(&whole, "PROJECT.sum"));
    assert_eq!(changed(&after, &snapshot(&killed)), Vec::<PathBuf>::new(), "the rerun's tree is the whole run's");
}
