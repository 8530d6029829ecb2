//! Hostile input, round two (`../shared/reference/reviews/hostile-2026-12-01.md`): names that
//! the generated code would not compile with, invisible characters, and Rust that rustfmt
//! cannot parse are refused before anything is written.

use super::*;

#[test]
fn project_names_the_generated_code_uses_or_its_lock_holds_are_refused() {
    let tmp = scratch();
    let dir = tmp.path();
    #[rustfmt::skip]
    let cases: &[(&str, &str)] = &[
        // A binary of the project's own.
        ("manifests", "the generated project already uses \"manifests\" as a name"),
        // Modules the generated tests import under these names.
        ("hub", "the generated project already uses \"hub\" as a name"),
        ("webhook", "the generated project already uses \"webhook\" as a name"),
        ("api", "the generated project already uses \"api\" as a name"),
        // Packages of the Cargo.lock memop ships: `--locked` would not resolve.
        ("log", "\"log\" is a package in the Cargo.lock memop ships"),
        ("tokio-util", "\"tokio-util\" is a package in the Cargo.lock memop ships"),
    ];
    for (name, rule) in cases {
        let line = format!("init --domain example.com --project-name {name}");
        refused(dir, &line, &[&format!("invalid project name \"{name}\""), rule, "pass --project-name"]);
        assert!(snapshot(dir).is_empty(), "{line} left files behind");
    }
}

#[test]
fn groups_named_like_crates_and_kinds_whose_lowercase_is_a_keyword_are_refused() {
    let (_tmp, dir) = project(&[]);
    for group in ["kube", "k8s-openapi", "serde", "std", "tokio"] {
        let module = group.replace('-', "_");
        refused(
            &dir,
            &format!("create api --group {group} --kind Foo"),
            &[&format!("invalid --group \"{group}\""), &format!("{module:?} is the name of a crate")],
        );
    }
    for (kind, lower) in [("TypeOf", "typeof"), ("SelF", "self"), ("AsYnc", "async")] {
        refused(
            &dir,
            &format!("create api --group cache --kind {kind}"),
            &[&format!("invalid --kind \"{kind}\""), &format!("its lowercase spelling \"{lower}\" is a Rust keyword")],
        );
    }
}

#[test]
fn invisible_format_characters_are_refused_where_text_reaches_files() {
    let tmp = scratch();
    let dir = tmp.path();
    // A right-to-left override, a zero-width joiner, a byte order mark, an isolate.
    for hidden in ['\u{202E}', '\u{200D}', '\u{FEFF}', '\u{2066}'] {
        refused(
            dir,
            &format!("init --domain example.com --project-name op --owner ACME{hidden}evil"),
            &["invalid --owner", "invisible formatting characters"],
        );
        assert!(snapshot(dir).is_empty());
    }
    let (_tmp, dir) = project(&[]);
    refused(
        &dir,
        "create api --group web --kind Nginx --image nginx:1.27 --image-container-port 8080 \
         --image-container-command sh,-c,echo\u{202E}txt",
        &["invalid --image-container-command", "argument 3 contains a control or invisible formatting character"],
    );
}

#[test]
fn rust_that_rustfmt_cannot_parse_fails_the_command_and_writes_nothing() {
    let (_tmp, dir) = project(&["--group cache --kind Memcached"]);
    // A user's syntax error in a file the next command inserts into.
    let main = dir.join("src/main.rs");
    let broken = fs::read_to_string(&main).unwrap().replace("async fn main()", "async fn main(");
    fs::write(&main, &broken).unwrap();
    let err = refused(
        &dir,
        "create api --group web --kind Nginx --image nginx:1.27 --image-container-port 8080",
        &["rustfmt cannot parse the Rust this command would write", "src/main.rs", "nothing was written"],
    );
    assert!(!err.contains("memop-fmt-"), "names the scratch copy instead of the project's file: {err}");
    assert!(!dir.join("src/controller/nginx.rs").exists());
}

#[test]
fn a_project_name_whose_object_names_would_not_fit_is_refused_and_the_longest_allowed_fits() {
    let tmp = scratch();
    let longest = "a".repeat(28);
    let too_long = "a".repeat(29);
    refused(
        tmp.path(),
        &format!("init --domain example.com --project-name {too_long}"),
        &["a project name must be at most 28 characters (it has 29)", "controller-manager-metrics-service"],
    );
    assert!(snapshot(tmp.path()).is_empty());
    // With every optional part that derives names (an API, webhooks), all names fit their limits.
    let dir = tmp.path().join(&longest);
    fs::create_dir(&dir).unwrap();
    ok(&dir, "init --domain example.com");
    ok(&dir, "create api --group cache --kind Memcached");
    ok(&dir, "create webhook --group cache --version v1alpha1 --kind Memcached --defaulting --programmatic-validation");
    let rendered = common::check(&dir, "kubectl", &["kustomize", "config/default"]);
    let mut kind = "";
    let mut names = 0;
    for line in rendered.lines() {
        if let Some(k) = line.strip_prefix("kind: ") {
            kind = k;
        } else if let Some(name) = line.strip_prefix("  name: ") {
            names += 1;
            // DNS labels: Services and Namespaces; everything else here is a subdomain.
            let limit = if matches!(kind, "Service" | "Namespace") { 63 } else { 253 };
            assert!(name.len() <= limit, "{kind} {name} is {} characters, over {limit}", name.len());
        }
    }
    assert!(names > 10, "{rendered}");
    assert!(rendered.contains(&format!("name: {longest}-controller-manager-metrics-service")));
}

#[test]
fn groups_of_the_kubernetes_project_and_kinds_that_differ_only_in_case_are_refused() {
    let tmp = scratch();
    for domain in ["k8s.io", "x.kubernetes.io"] {
        refused(
            tmp.path(),
            &format!("init --project-name op --domain {domain}"),
            &[&format!("invalid --domain \"{domain}\""), "belong to the Kubernetes project", "api-approved"],
        );
    }
    let (_tmp, dir) = scratch_project("io");
    refused(
        &dir,
        "create api --group k8s --kind Foo",
        &["invalid --group \"k8s\"", "belong to the Kubernetes project"],
    );
    ok(&dir, "create api --group x-k8s --kind Foo --controller=false");

    let (_tmp, dir) = project(&["--group cache --kind FooBar --controller=false"]);
    for line in [
        "create api --group cache --kind Foobar --controller=false",
        "create api --group cache --kind Foobar --plural foobarz --force --controller=false",
    ] {
        refused(&dir, line, &["Foobar and the existing kind FooBar of group cache differ only in case", "foobar"]);
    }
}

/// A project initialized with `--domain domain` in `proj/` of a scratch directory.
fn scratch_project(domain: &str) -> (TempDir, PathBuf) {
    let tmp = scratch();
    let dir = tmp.path().join("proj");
    fs::create_dir(&dir).unwrap();
    ok(&dir, &format!("init --domain {domain}"));
    (tmp, dir)
}

#[test]
fn a_version_added_after_a_conversion_webhook_becomes_one_of_its_spokes() {
    let (_tmp, dir) = project(&[
        "--group cache --kind Memcached",
        "--group cache --version v1 --kind Memcached --storage-version --controller=false",
    ]);
    ok(&dir, "create webhook --group cache --version v1 --kind Memcached --conversion");
    let out = ok(&dir, "create api --group cache --version v2 --kind Memcached");
    assert!(out.stderr.contains("Memcached v2 is a spoke of the hub v1"), "{}", out.stderr);
    let project = read(&dir, "PROJECT");
    assert!(project.contains("    spoke:\n    - v1alpha1\n    - v2\n"), "{project}");
    let webhook = read(&dir, "src/webhook/mod.rs");
    assert!(webhook.contains("crate::api::cache::v2::Memcached>()"), "{webhook}");
    assert!(read(&dir, "src/api/cache/v2/mod.rs").contains("mod memcached_conversion;"));
    // The conversion test was as memop wrote it: it now round-trips v2 too.
    assert!(read(&dir, "tests/memcached_conversion.rs").contains("objects::<v2::Memcached>"));

    // An edited conversion test is kept, and the note says what to add.
    append(&dir, "tests/memcached_conversion.rs", "// mine\n");
    let edited = read(&dir, "tests/memcached_conversion.rs");
    let out = ok(&dir, "create api --group cache --version v3 --kind Memcached");
    assert!(
        out.stderr.contains("tests/memcached_conversion.rs is not as memop wrote it, so it was kept"),
        "{}",
        out.stderr
    );
    assert_eq!(read(&dir, "tests/memcached_conversion.rs"), edited);
    assert!(read(&dir, "PROJECT").contains("    - v2\n    - v3\n"));
}

#[test]
fn init_inside_another_project_is_refused() {
    let (_tmp, dir) = project(&[]);
    let inner = dir.join("src/nested-operator");
    fs::create_dir(&inner).unwrap();
    let before = snapshot(&dir);
    refused(&inner, "init --domain example.com", &["is inside the memop project", "make a new project outside it"]);
    refused(&dir, "-C deeper/still init --domain example.com", &["is inside the memop project"]);
    assert_eq!(snapshot(&dir), before, "nothing written");
}

#[test]
fn project_fields_memop_reads_back_are_held_to_the_rules_of_their_flags() {
    let (_tmp, dir) = project(&["--group cache --kind Memcached"]);
    let original = read(&dir, "PROJECT");
    #[rustfmt::skip]
    let cases: &[(&str, &str, &str)] = &[
        ("image: memcached:1.6.26-alpine3.19", "image: 'memcached:1\"; compile_error!(\"pwned\"); //'", "invalid --image"),
        ("containerPort: 11211", "containerPort: 0", "invalid --image-container-port"),
        ("- memcached\n", "- \"mem\\x01cached\"\n", "invalid --image-container-command"),
        ("license: apache2", "license: mit", "license \"mit\" is not one memop writes"),
        ("  domain: example.com\n  group: cache", "  domain: example.org\n  group: cache", "is not the project's"),
        ("  kind: Memcached", "  kind: memcached", "invalid --kind"),
    ];
    for (from, to, expected) in cases {
        assert!(original.contains(from), "{from:?} not in PROJECT:\n{original}");
        fs::write(dir.join("PROJECT"), original.replacen(from, to, 1)).unwrap();
        refused(&dir, "create api --group cache --kind Memcached --force", &["PROJECT", expected]);
    }
    // A resource listed twice.
    let resources = original.split_once("resources:\n").unwrap().1;
    let first = resources.split_once("version: v1alpha1\n").unwrap().0;
    let doubled = original.replacen("resources:\n", &format!("resources:\n{first}version: v1alpha1\n"), 1);
    fs::write(dir.join("PROJECT"), doubled).unwrap();
    refused(&dir, "create api --group web --kind Nginx --image nginx:1 --image-container-port 80", &["twice"]);
}
