//! `create webhook`: what it writes and registers, its refusals, and re-running it.

use super::*;

const WEBHOOK: &str = "create webhook --group cache --version v1alpha1 --kind Memcached";

#[test]
fn writes_the_kinds_webhooks_and_registers_them_once() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let out = ok(&dir, &format!("{WEBHOOK} --defaulting --programmatic-validation"));
    for file in [
        "src/webhook/mod.rs",
        "src/webhook/memcached.rs",
        "tests/memcached_webhook.rs",
        "config/webhook/manifests.yaml",
    ] {
        assert!(out.stdout.contains(&format!("  create  ./{file}\n")), "{file}: {}", out.stdout);
    }
    assert!(out.stdout.contains("Deploying needs cert-manager"), "{}", out.stdout);
    let project = read(&dir, "PROJECT");
    assert!(
        project.contains("  webhooks:\n    defaulting: true\n    validation: true\n    webhookVersion: v1\n"),
        "{project}"
    );

    once(&dir, "src/main.rs", "proj::webhook::serve(&cli.webhook, cli.manager.enable_http2, manager.shared()).await?;");
    once(&dir, "src/lib.rs", "pub mod webhook;");
    once(&dir, "src/main.rs", "webhook: memop_runtime::webhook::Flags,");
    once(&dir, "src/webhook/mod.rs", "pub mod memcached;");
    once(&dir, "src/webhook/mod.rs", "        memcached::routes,\n");
    once(&dir, "config/default/kustomization.yaml", "- ../webhook\n");
    once(&dir, "config/default/kustomization.yaml", "- path: manager_webhook_patch.yaml");
    once(&dir, "config/certmanager/kustomization.yaml", "- certificate-webhook.yaml");
    once(&dir, "config/network-policy/kustomization.yaml", "- allow-webhook-traffic.yaml");
    let manifests = read(&dir, "config/webhook/manifests.yaml");
    assert!(manifests.contains("name: mmemcached-v1alpha1.cache.example.com\n"), "{manifests}");
    assert!(manifests.contains("path: /validate-cache-example-com-v1alpha1-memcached\n"), "{manifests}");

    // A second kind's webhook: registered beside the first, in the same configurations.
    ok(&dir, &format!("create api {NGINX}"));
    ok(&dir, "create webhook --group web --kind Nginx --programmatic-validation");
    once(&dir, "src/main.rs", "proj::webhook::serve(");
    once(&dir, "src/webhook/mod.rs", "pub mod nginx;");
    once(&dir, "config/default/kustomization.yaml", "- ../webhook\n");
    let manifests = read(&dir, "config/webhook/manifests.yaml");
    assert_eq!(count(&manifests, "kind: ValidatingWebhookConfiguration"), 1, "{manifests}");
    assert!(manifests.contains("name: vnginx-v1alpha1.web.example.com\n"), "{manifests}");
    assert!(!read(&dir, "src/webhook/nginx.rs").contains("MUTATE_PATH"), "validation only");
}

#[test]
fn refuses_what_it_cannot_scaffold_and_writes_nothing() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    refused(
        &dir,
        "create webhook --group cache --kind Redis --defaulting",
        &["cache/v1alpha1, Kind=Redis has no API", "memop create api --group cache --version v1alpha1 --kind Redis"],
    );
    refused(&dir, WEBHOOK, &["no webhook to scaffold", "--defaulting, --programmatic-validation, --conversion"]);
    refused(
        &dir,
        &format!("{WEBHOOK} --conversion"),
        &["served in one version (v1alpha1)", "memop create api --group cache --version V --kind Memcached"],
    );
    refused(&dir, "create webhook --group cache --kind 'Bad Kind' --defaulting", &["Bad Kind"]);

    ok(&dir, &format!("{WEBHOOK} --defaulting"));
    refused(&dir, &format!("{WEBHOOK} --programmatic-validation"), &["already has webhooks (defaulting)", "--force"]);
    // Webhook modules are named after kinds: another group's Memcached cannot have any.
    ok(&dir, "create api --group other --kind Memcached --controller=false");
    refused(
        &dir,
        "create webhook --group other --kind Memcached --defaulting",
        &["src/webhook/memcached.rs", "only one of them"],
    );
}

#[test]
fn force_regenerates_the_webhook_module_with_the_types_it_had() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, &format!("{WEBHOOK} --defaulting"));
    append(&dir, "src/webhook/mod.rs", "// my note\n");
    append(&dir, "src/webhook/memcached.rs", "// an edit --force replaces\n");
    let before = snapshot(&dir);

    ok(&dir, &format!("{WEBHOOK} --programmatic-validation --force"));
    let touched = changed(&before, &snapshot(&dir));
    let expected =
        // (tests/memcached_webhook.rs is rewritten the same: it tests whichever webhooks there are.)
        ["PROJECT", "PROJECT.sum", "config/webhook/manifests.yaml", "src/webhook/memcached.rs"];
    assert_eq!(touched, expected.map(PathBuf::from));
    let module = read(&dir, "src/webhook/memcached.rs");
    let both = ["impl super::Defaulter<Memcached> for", "impl super::Validator<Memcached> for"];
    assert!(both.iter().all(|line| module.contains(line)), "both types:\n{module}");
    assert!(read(&dir, "src/webhook/mod.rs").ends_with("// my note\n"));
    once(&dir, "src/webhook/mod.rs", "pub mod memcached;");
    let manifests = read(&dir, "config/webhook/manifests.yaml");
    assert!(
        manifests.contains("kind: MutatingWebhookConfiguration")
            && manifests.contains("kind: ValidatingWebhookConfiguration")
    );
}

#[test]
fn a_dry_run_writes_nothing() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let before = snapshot(&dir);
    let out = ok(&dir, &format!("--dry-run {WEBHOOK} --defaulting"));
    assert!(out.stdout.contains("src/webhook/memcached.rs"), "{}", out.stdout);
    assert_unchanged(&dir, &before, "--dry-run create webhook");
}

#[test]
fn a_webhook_on_a_kind_of_kubernetes_memop_does_not_know_says_what_it_knows() {
    let (_tmp, dir) = project(&[]);
    refused(
        &dir,
        "create webhook --group core --version v1 --kind Event --defaulting",
        &["core/v1 Event is not a Kubernetes type memop knows", "Pod"],
    );
}
