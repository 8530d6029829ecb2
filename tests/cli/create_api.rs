//! `memop create api`: its refusals.

use super::*;

#[test]
fn create_api_needs_a_project() {
    let tmp = scratch();
    let dir = tmp.path();
    let fix = "run `memop init --domain example.com` there first";
    refused(dir, "create api --group cache --kind Foo", &["has no PROJECT file", fix]);
    let missing = "-C missing create api --group cache --kind Foo";
    refused(dir, missing, &["directory missing does not exist", "pass -C with your project's directory"]);
    assert!(!dir.join("missing").exists());
    // A project's other files without PROJECT are not a project either.
    fs::write(dir.join("Cargo.toml"), "[package]\n").unwrap();
    refused(dir, "--dry-run create api --group cache --kind Foo", &["has no PROJECT file", fix]);
}

#[test]
fn create_api_refuses_a_corrupt_project_file() {
    let (_tmp, dir) = project(&[]);
    let good = read(&dir, "PROJECT");
    let fix = "PROJECT is not a valid memop PROJECT file; restore it from version control";
    #[rustfmt::skip]
    let cases: Vec<(String, &[&str])> = vec![
        ("not: [yaml\n".into(), &["caused by: "]),
        (format!("{good}bogus: 1\n"), &["caused by: unknown field `bogus`"]),
        (good.replace("version: '3'", "version: '2'"), &["PROJECT version \"2\" is not supported"]),
        (good.replace("memop.rs/rust/v2", "go.kubebuilder.io/v4"), &["go.kubebuilder.io/v4"]),
        (good.replace("memop.rs/rust/v2", "memop.rs/rust/v1"), &["made by memop 0.1", "git checkout 3318b9f && cargo install --locked --path ."]),
        (good.replace("domain: example.com\n", ""), &["missing field `domain`"]),
        (String::new(), &[]),
    ];
    for (text, expected) in cases {
        fs::write(dir.join("PROJECT"), &text).unwrap();
        let stderr = refused(&dir, "create api --group cache --kind Memcached", expected);
        assert!(stderr.contains(fix), "{stderr}");
        assert_eq!(read(&dir, "PROJECT"), text);
    }
}

#[test]
fn create_api_rejects_bad_groups_versions_and_kinds() {
    let (_tmp, dir) = project(&[]);
    let group_fix = "(e.g. --group cache)";
    let version_rule = "a version must look like v1, v1alpha1 or v2beta3";
    let kind_fix = "(e.g. \"Memcached\")";
    let pascal = "a kind must be PascalCase";
    let long_group = "g".repeat(64);
    #[rustfmt::skip]
    let cases: &[(&str, &str, &str, &[&str])] = &[
        ("Cache", "v1", "Foo", &["invalid --group \"Cache\"", "RFC 1123 subdomain", group_fix]),
        ("type", "v1", "Foo", &["invalid --group \"type\"", "\"type\" is a keyword", group_fix]),
        ("1cache", "v1", "Foo", &["invalid --group \"1cache\"", "start with a letter", group_fix]),
        ("ca_che", "v1", "Foo", &["invalid --group \"ca_che\"", group_fix]),
        ("cache-", "v1", "Foo", &["invalid --group \"cache-\"", group_fix]),
        (&long_group, "v1", "Foo", &["must be at most 63 characters", group_fix]),
        ("''", "v1", "Foo", &["invalid --group \"\": a group cannot be empty", group_fix]),
        ("cache", "v1alpha", "Foo", &["invalid --version \"v1alpha\"", version_rule]),
        ("cache", "1", "Foo", &["invalid --version \"1\"", version_rule]),
        ("cache", "v0", "Foo", &["invalid --version \"v0\"", version_rule]),
        ("cache", "V1", "Foo", &["invalid --version \"V1\"", version_rule]),
        ("cache", "v1beta01", "Foo", &["invalid --version \"v1beta01\"", version_rule]),
        ("cache", "''", "Foo", &["invalid --version \"\"", "(e.g. \"v1alpha1\")"]),
        ("cache", "v1", "memcached", &["invalid --kind \"memcached\"", pascal, kind_fix]),
        ("cache", "v1", "1Foo", &["invalid --kind \"1Foo\"", pascal, kind_fix]),
        ("cache", "v1", "Mem_cached", &["invalid --kind \"Mem_cached\"", pascal, kind_fix]),
        ("cache", "v1", "''", &["invalid --kind \"\": a kind cannot be empty", kind_fix]),
        ("cache", "v1", "Self", &["invalid --kind \"Self\"", "Self or a Rust prelude name"]),
        ("cache", "v1", "Self", &["(e.g. \"SelfConfig\")"]),
        ("cache", "v1", "Option", &["invalid --kind \"Option\"", "(e.g. \"OptionConfig\")"]),
        ("cache", "v1", "Type", &["invalid --kind \"Type\"", "\"type\" is a keyword"]),
        ("cache", "v1", "Type", &["(e.g. \"TypeConfig\")"]),
        // Kinds whose files would clash with the tests/ of every project (the message quotes
        // the kind oddly, see reserved_kind_error_quotes_the_kind_like_every_other_error).
        ("cache", "v1", "WebhookCerts", &["invalid --kind", "WebhookCerts", "(tests/webhook_certs.rs)"]),
        ("cache", "v1", "WebhookCerts", &["choose another kind (e.g. \"WebhookCertsConfig\")"]),
        ("cache", "v1", "E2e", &["invalid --kind", "E2e", "(tests/e2e.rs)", "E2eConfig"]),
        ("cache", "v1", "Manifests", &["(tests/manifests.rs)", "ManifestsConfig"]),
        // flect's acronym quirk gives an invalid default plural: the fix is --plural.
        ("cache", "v1", "Dns", &["invalid --kind \"Dns\"", "\"dnsDNSes\"", "--plural dnses"]),
    ];
    for (group, version, kind, expected) in cases {
        let line = format!("create api --group {group} --version {version} --kind {kind}");
        refused(&dir, &line, expected);
    }
    let plural_fix = "(e.g. \"memcacheds\")";
    let long = "a".repeat(64);
    #[rustfmt::skip]
    let cases: &[(&str, &str)] = &[
        ("Foos", "a plural must be a lowercase RFC 1035 label"),
        ("1foos", "starting with a letter"),
        ("foos-", "ending with a letter or digit"),
        ("fo_os", "a-z, 0-9 and '-'"),
        ("", "a plural cannot be empty"),
        (&long, "a plural must be at most 63 characters (it has 64)"),
    ];
    for (plural, rule) in cases {
        let quoted = format!("invalid --plural \"{plural}\": ");
        let line = format!("create api --group cache --kind Foo --plural '{plural}'");
        refused(&dir, &line, &[&quoted, rule, plural_fix]);
    }
}

#[test]
fn create_api_rejects_bad_image_flags() {
    let (_tmp, dir) = project(&[]);
    let image_fix = "(e.g. \"memcached:1.6.26-alpine3.19\")";
    let port_rule = "a container port must be a whole number from 1 to 65535 (e.g. \"11211\")";
    let uid_rule = "a user ID must be a whole number from 1 to 2147483647";
    let command_fix = "(e.g. \"memcached,--memory-limit=64,-o,modern,-v\")";
    let command = "invalid --image-container-command";
    #[rustfmt::skip]
    let cases: &[(&str, &[&str])] = &[
        ("--image 'ngi nx'", &["invalid --image \"ngi nx\"", "contain whitespace", image_fix]),
        ("--image 'nginx\t:1'", &["invalid --image \"nginx\\t:1\"", "whitespace", image_fix]),
        ("--image ' nginx'", &["invalid --image \" nginx\"", "whitespace", image_fix]),
        ("--image Nginx:1", &["invalid --image \"Nginx:1\"", "[registry/]name[:tag]", image_fix]),
        ("--image nginx:", &["invalid --image \"nginx:\"", "a tag must be", image_fix]),
        ("--image ''", &["invalid --image \"\": an image cannot be empty", image_fix]),
        ("--image nginx --image-container-port 0", &["--image-container-port \"0\"", port_rule]),
        ("--image nginx --image-container-port 70000", &["port \"70000\"", port_rule]),
        ("--image nginx --image-container-port abc", &["port \"abc\"", port_rule]),
        ("--image nginx --image-container-port=-80", &["port \"-80\"", port_rule]),
        (
            "--image nginx --image-container-port 80 --image-container-command nginx,,-g",
            &[command, "\"nginx,,-g\"", "argument 2 is empty", command_fix],
        ),
        (
            "--image nginx --image-container-port 80 --image-container-command nginx,",
            &[command, "\"nginx,\"", "argument 2 is empty", command_fix],
        ),
        (
            "--image nginx --image-container-port 80 --image-container-command ' '",
            &[command, "\" \": a command cannot be empty", command_fix],
        ),
        (
            "--image nginx --image-container-port 80 --run-as-user 0",
            &["invalid --run-as-user \"0\"", uid_rule, "(0, root, cannot run", "(e.g. \"1001\")"],
        ),
        (
            "--image nginx --image-container-port 80 --run-as-user=-1",
            &["invalid --run-as-user \"-1\"", uid_rule, "(e.g. \"1001\")"],
        ),
        (
            "--image nginx --image-container-port 80 --run-as-user root",
            &["invalid --run-as-user \"root\"", uid_rule, "(e.g. \"1001\")"],
        ),
    ];
    for (flags, expected) in cases {
        refused(&dir, &format!("create api --group web --kind Nginx {flags}"), expected);
    }
    // The preset kind, whose --image is optional, checks the same flags.
    let line = "create api --group cache --kind Memcached --image-container-port 0";
    refused(&dir, line, &["invalid --image-container-port \"0\"", port_rule]);
    let line = "create api --group cache --kind Memcached --run-as-user 0";
    refused(&dir, line, &["invalid --run-as-user \"0\"", uid_rule]);
}

#[test]
fn create_api_rejects_flag_combinations_that_make_no_sense() {
    let (_tmp, dir) = project(&[]);
    let nginx = "create api --group web --kind Nginx";
    let needs_image = "so it needs --image IMG (e.g. --image nginx:1.27)";
    for flag in ["--image-container-port 8080", "--image-container-command nginx", "--run-as-user 1"] {
        let name = flag.split(' ').next().unwrap();
        let named = format!("error: {name} describes the image a controller deploys");
        refused(&dir, &format!("{nginx} {flag}"), &[&named, needs_image]);
    }
    refused(
        &dir,
        &format!("{nginx} --image nginx:1.27"),
        &["--image nginx:1.27 needs --image-container-port PORT", "--image-container-port 8080)"],
    );
    refused(
        &dir,
        &format!("{nginx} --resource=false --controller=false"),
        &["--resource=false and --controller=false leave nothing to scaffold; drop one of them"],
    );
    refused(
        &dir,
        &format!("{nginx} --resource=false"),
        &[
            "web/v1alpha1, Kind=Nginx has no API in this project",
            "run `memop create api --group web --version v1alpha1 --kind Nginx` first",
        ],
    );
    // An operand's Deployment runs in the namespace of its custom resource.
    let fix = "must be namespaced; drop --namespaced=false (or --image)";
    let line = format!("create api {MEMCACHED} --namespaced=false");
    refused(&dir, &line, &["error: Memcached is cluster-scoped", "each Memcached, so Memcached", fix]);
    let line = format!("create api {NGINX} --namespaced=false");
    refused(&dir, &line, &["each Nginx, so Nginx", fix]);
    refused(&dir, &format!("create api {NGINX} --namespaced false"), &[fix]);

    // Clap's own parsing errors are usage errors (exit code 2), and write nothing either.
    let before = snapshot(&dir);
    let bad_bool = format!("{nginx} --namespaced=maybe");
    let maybe = predicate::str::contains("invalid value 'maybe' for '--namespaced");
    memop(&dir, &bad_bool).assert().code(2).stderr(maybe);
    let no_group = predicate::str::contains("--group <GROUP>");
    memop(&dir, "create api --kind Nginx").assert().code(2).stderr(no_group);
    memop(&dir, "create api --group web --kind Nginx --bogus").assert().code(2);
    assert_unchanged(&dir, &before, "usage errors");
}

#[test]
fn create_api_refuses_conflicts_with_existing_apis() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    refused(
        &dir,
        "create api --group store --kind Memcached",
        &[
            "a controller for kind Memcached already exists (group cache)",
            "use another kind name, or pass --controller=false",
        ],
    );
    let exists = "API resource cache/v1alpha1, Kind=Memcached already exists; pass --force";
    refused(&dir, "create api --group cache --kind Memcached", &[exists]);
    refused(&dir, "--dry-run create api --group cache --kind Memcached", &[exists]);
    refused(&dir, "create api --group cache --kind Memcached --controller=false", &[exists]);
    refused(
        &dir,
        "create api --group cache --kind Memcached --resource=false",
        &["a controller for cache/v1alpha1, Kind=Memcached already exists; pass --force"],
    );
    // A file of the new API that the user wrote by hand is theirs.
    fs::write(dir.join("src/controller/redis.rs"), "// mine\n").unwrap();
    refused(
        &dir,
        "create api --group cache --kind Redis",
        &["src/controller/redis.rs already exists and memop would change it; pass --force"],
    );
}
