//! A kind served in several versions: `create api` for a new version of an existing kind, the
//! storage version, and `create webhook --conversion` between the versions.

use super::*;
use crate::common::git;

const V1: &str = "create api --group cache --version v1 --kind Memcached";
const CRD: &str = "config/crd/bases/cache.example.com_memcacheds.yaml";

/// The versions a CRD file lists, with the stored one marked `*`.
fn versions(crd: &str) -> Vec<String> {
    let mut versions = Vec::new();
    for line in crd.lines() {
        if let Some(name) = line.strip_prefix("    name: ") {
            versions.push(name.to_string());
        }
        if line == "    storage: true" {
            versions.last_mut().unwrap().push('*');
        }
    }
    versions
}

#[test]
fn a_new_version_joins_the_kinds_crd_and_keeps_its_storage_version() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let out = ok(&dir, V1);
    assert!(out.stdout.contains("  create  ./src/api/cache/v1/memcached.rs\n"), "{}", out.stdout);
    assert!(out.stdout.contains("  create  ./config/samples/cache_v1_memcached.yaml\n"), "{}", out.stdout);
    // No second controller, and the kind's RBAC helper roles stay as they were.
    assert!(!out.stdout.contains("src/controller"), "{}", out.stdout);
    assert!(!out.stdout.contains("config/rbac/cache_memcached"), "{}", out.stdout);
    assert_eq!(versions(&read(&dir, CRD)), ["v1", "v1alpha1*"]);
    // The new version's types are a copy of the kind's: spec.size, so conversions lose nothing.
    assert!(read(&dir, "src/api/cache/v1/memcached.rs").contains("pub size: i32,"));
    once(&dir, "src/api/mod.rs", r#"("memcacheds.cache.example.com", "v1alpha1"),"#);
    once(&dir, "src/api/mod.rs", "<cache::v1::Memcached as kube::CustomResourceExt>::crd(),");
    let project = read(&dir, "PROJECT");
    assert_eq!(count(&project, "kind: Memcached"), 2, "{project}");
    assert_eq!(count(&project, "controller: true"), 1, "{project}");

    // A third version, stored from now on: the table's entry changes in place.
    ok(&dir, "create api --group cache --version v2 --kind Memcached --storage-version");
    assert_eq!(versions(&read(&dir, CRD)), ["v1", "v1alpha1", "v2*"]);
    once(&dir, "src/api/mod.rs", r#"("memcacheds.cache.example.com", "v2"),"#);
    assert!(!read(&dir, "src/api/mod.rs").contains(r#""v1alpha1"),"#));
}

#[test]
fn the_crd_keeps_the_users_fields_when_a_version_is_added() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    // As `make manifests` would write it after the user added a field to v1alpha1.
    let crd = read(&dir, CRD)
        .replace("              size:\n", "              port:\n                type: integer\n              size:\n");
    fs::write(dir.join(CRD), &crd).unwrap();
    ok(&dir, &format!("{V1} --storage-version"));
    let merged = read(&dir, CRD);
    assert_eq!(count(&merged, "              port:\n"), 1, "{merged}");
    assert_eq!(versions(&merged), ["v1*", "v1alpha1"]);
}

#[test]
fn what_a_new_version_cannot_change_is_refused() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let before = snapshot(&dir);
    refused(
        &dir,
        &format!("{V1} --controller"),
        &["already has a controller, for version v1alpha1", "--controller=false"],
    );
    refused(&dir, &format!("{V1} --namespaced=false"), &["share one CRD, so one scope", "drop --namespaced=false"]);
    refused(&dir, &format!("{V1} --plural memcacheds2"), &["the plural memcacheds", "drop --plural"]);
    refused(&dir, &format!("{V1} --image nginx:1.27"), &["--image", "gets no controller"]);
    let storage_alone = "create api --group cache --kind Memcached --resource=false --storage-version";
    refused(&dir, storage_alone, &["--storage-version", "--resource=false"]);
    assert!(snapshot(&dir) == before, "a refusal wrote something");
}

#[test]
fn a_conversion_webhook_converts_through_the_hub() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, V1);
    let out = ok(&dir, "create webhook --group cache --version v1 --kind Memcached --conversion");
    for file in [
        "src/api/cache/v1alpha1/memcached_conversion.rs",
        "tests/memcached_conversion.rs",
        "config/crd/patches/webhook_in_cache.example.com_memcacheds.yaml",
        "config/crd/kustomizeconfig.yaml",
        "src/webhook/mod.rs",
    ] {
        assert!(out.stdout.contains(&format!("  create  ./{file}\n")), "{file}: {}", out.stdout);
    }
    // No admission webhook was asked for: no module for them.
    assert!(!dir.join("src/webhook/memcached.rs").exists());
    once(&dir, "src/api/cache/v1alpha1/mod.rs", "mod memcached_conversion;");
    once(&dir, "config/crd/kustomization.yaml", "- path: patches/webhook_in_cache.example.com_memcacheds.yaml");
    once(&dir, "config/crd/kustomization.yaml", "configurations:\n- kustomizeconfig.yaml");
    // cert-manager injects its CA into the CRD: the namespace and the name of its Certificate.
    let default = read(&dir, "config/default/kustomization.yaml");
    assert_eq!(count(&default, "name: memcacheds.cache.example.com\n"), 2, "{default}");
    let project = read(&dir, "PROJECT");
    assert!(project.contains("  webhooks:\n    conversion: true\n    spoke:\n    - v1alpha1\n"), "{project}");

    // Admission webhooks of the other version come beside it.
    ok(&dir, "create webhook --group cache --version v1alpha1 --kind Memcached --defaulting");
    assert!(dir.join("src/webhook/memcached.rs").exists());
    once(&dir, "src/webhook/mod.rs", "crate::api::cache::v1alpha1::Memcached,");
}

#[test]
fn conversion_refusals_write_nothing() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, V1);
    let hub = "create webhook --group cache --version v1 --kind Memcached --conversion";
    let before = snapshot(&dir);
    refused(&dir, &format!("{hub} --spoke v2"), &["invalid spoke version \"v2\"", "memop create api"]);
    refused(&dir, &format!("{hub} --spoke v1"), &["invalid spoke version \"v1\"", "it is the hub"]);
    // A usage error, as clap reports them (exit code 2).
    let spoke_alone = "create webhook --group cache --version v1 --kind Memcached --spoke v1alpha1";
    memop(&dir, spoke_alone).assert().code(2).stderr(predicate::str::contains("--conversion"));
    assert!(snapshot(&dir) == before, "a refusal wrote something");

    ok(&dir, hub);
    refused(&dir, hub, &["already has a conversion webhook (spokes v1alpha1)", "--force"]);
    refused(
        &dir,
        "create webhook --group cache --version v1alpha1 --kind Memcached --conversion",
        &["already converts through the hub version v1", "a kind has one hub"],
    );
}

#[test]
fn kinds_named_like_webhook_files_are_refused() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, V1);
    ok(&dir, "create webhook --group cache --version v1 --kind Memcached --conversion");
    ok(&dir, "create webhook --group cache --version v1alpha1 --kind Memcached --defaulting");
    let before = snapshot(&dir);
    for kind in ["MemcachedConversion", "MemcachedWebhook"] {
        refused(&dir, &format!("create api --group other --kind {kind}"), &[kind, "choose another kind"]);
    }
    refused(&dir, "create api --group other --kind WebhookCerts", &["WebhookCerts", "would clash"]);
    assert!(snapshot(&dir) == before, "a refusal wrote something");

    // And the other way round: webhooks whose files another kind's already are.
    ok(&dir, "create api --group store --kind Redis --controller=false");
    ok(&dir, "create api --group store --kind RedisWebhook --controller=false");
    let before = snapshot(&dir);
    refused(&dir, "create webhook --group store --kind Redis --defaulting", &["redis_webhook", "RedisWebhook"]);
    assert!(snapshot(&dir) == before, "a refusal wrote something");
}

/// `create api --force` regenerates a version that is a spoke of a conversion webhook, its
/// conversion included: it was refused, with an error telling to pass the `--force` it had.
#[test]
fn force_regenerates_a_spoke_version_and_its_conversion() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, V1);
    ok(&dir, "create webhook --group cache --version v1 --kind Memcached --conversion");
    let conversion = "src/api/cache/v1alpha1/memcached_conversion.rs";
    let memops = read(&dir, conversion);
    ok(&dir, "--dry-run create api --group cache --kind Memcached --force");
    let out = ok(&dir, "create api --group cache --kind Memcached --force");
    assert!(out.stdout.starts_with("Nothing to do"), "{}", out.stdout);
    // An edited version and its conversion are regenerated, as --force says (the edits are lost).
    append(&dir, conversion, "// mine\n");
    append(&dir, "src/api/cache/v1alpha1/memcached.rs", "// mine\n");
    let out = ok(&dir, "create api --group cache --version v1alpha1 --kind Memcached --force");
    assert!(out.stdout.contains(&format!("  update  ./{conversion}\n")), "{}", out.stdout);
    assert_eq!(read(&dir, conversion), memops);
    assert!(!read(&dir, "src/api/cache/v1alpha1/memcached.rs").contains("// mine"));
    once(&dir, "src/api/cache/v1alpha1/mod.rs", "mod memcached_conversion;");
    let project = read(&dir, "PROJECT");
    assert!(project.contains("    spoke:\n    - v1alpha1\n"), "{project}");
}

/// `create webhook --conversion --force` regenerates the conversion without listing it twice in
/// `conversions()` (rustfmt wraps the entry into a generic list, which hid the one there).
#[test]
fn force_regenerates_a_conversion_webhook_without_a_second_entry() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, V1);
    let hub = "create webhook --group cache --version v1 --kind Memcached --conversion";
    ok(&dir, hub);
    ok(&dir, &format!("{hub} --spoke v1alpha1 --force"));
    ok(&dir, &format!("{hub} --force"));
    let text = read(&dir, "src/webhook/mod.rs");
    assert_eq!(count(&text, "Conversion::between::<"), 1, "{text}");
}

/// PROJECT records which version a kind served in several is stored in, in each version's
/// entry: `create api` of a new version and `--storage-version` write it.
#[test]
fn project_records_the_storage_version() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    assert!(!read(&dir, "PROJECT").contains("storageVersion"), "one version stores itself");
    ok(&dir, V1);
    let project = read(&dir, "PROJECT");
    assert_eq!(count(&project, "  storageVersion: v1alpha1\n"), 2, "{project}");
    ok(&dir, "create api --group cache --version v2 --kind Memcached --storage-version");
    let project = read(&dir, "PROJECT");
    assert_eq!(count(&project, "  storageVersion: v2\n"), 3, "{project}");
}

/// Where the code's `STORAGE_VERSIONS` (yours) stores a kind in another version than PROJECT
/// records, a new version is refused with both values and the fix.
#[test]
fn a_new_version_is_refused_where_the_code_stores_another_version_than_project() {
    let (_tmp, dir) = project(&[MEMCACHED, "--group cache --version v1 --kind Memcached"]);
    let table = read(&dir, "src/api/mod.rs")
        .replace(r#"("memcacheds.cache.example.com", "v1alpha1"),"#, r#"("memcacheds.cache.example.com", "v1"),"#);
    fs::write(dir.join("src/api/mod.rs"), table).unwrap();
    refused(
        &dir,
        "create api --group cache --version v2 --kind Memcached",
        &["storageVersion v1alpha1", "stores it as v1", "set `storageVersion: v1`", "PROJECT"],
    );
    // Once PROJECT says what the code stores, the new version keeps it.
    let project = read(&dir, "PROJECT").replace("storageVersion: v1alpha1", "storageVersion: v1");
    fs::write(dir.join("PROJECT"), project).unwrap();
    ok(&dir, "create api --group cache --version v2 --kind Memcached");
    assert_eq!(versions(&read(&dir, CRD)), ["v1*", "v1alpha1", "v2"]);
    assert_eq!(count(&read(&dir, "PROJECT"), "  storageVersion: v1\n"), 3);
}

/// A PROJECT of an older memop, without `storageVersion`: `memop update` reads it once from
/// `STORAGE_VERSIONS` and records it, and changes nothing else.
#[test]
fn an_update_records_the_storage_version_an_older_project_lacks() {
    let (_tmp, dir) = project(&[MEMCACHED, "--group cache --version v1 --kind Memcached --storage-version"]);
    let recorded = read(&dir, "PROJECT");
    let older: String = recorded.lines().filter(|l| !l.contains("storageVersion")).map(|l| format!("{l}\n")).collect();
    fs::write(dir.join("PROJECT"), &older).unwrap();
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by an older memop"]);
    let before = snapshot(&dir);
    let out = ok(&dir, "update");
    assert!(!out.stdout.contains("conflict") && !out.stderr.contains("conflict"), "{}{}", out.stdout, out.stderr);
    assert_eq!(changed(&before, &snapshot(&dir)), [PathBuf::from("PROJECT")]);
    assert_eq!(read(&dir, "PROJECT"), recorded);
}

/// Replay reads the storage version from PROJECT: your change of `STORAGE_VERSIONS` stays yours
/// (an update keeps it), and memop's record of its own text still stores the kind as PROJECT says.
#[test]
fn an_update_keeps_your_storage_version_edit_as_yours() {
    let (_tmp, dir) = project(&[MEMCACHED, "--group cache --version v1 --kind Memcached"]);
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "made by memop"]);
    let table = read(&dir, "src/api/mod.rs")
        .replace(r#"("memcacheds.cache.example.com", "v1alpha1"),"#, r#"("memcacheds.cache.example.com", "v1"),"#);
    fs::write(dir.join("src/api/mod.rs"), &table).unwrap();
    git(&dir, &["commit", "-qam", "store v1"]);
    let before = snapshot(&dir);
    let out = ok(&dir, "update");
    assert!(out.stdout.starts_with("Nothing to do"), "{}{}", out.stdout, out.stderr);
    assert_unchanged(&dir, &before, "an update over your storage version");
}
