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
fn groups_named_like_crates_src_api_uses_and_kinds_whose_lowercase_is_a_keyword_are_refused() {
    let (_tmp, dir) = project(&[]);
    for group in ["kube", "k8s-openapi", "k8s.openapi", "memop-runtime"] {
        let module = group.replace(['-', '.'], "_");
        refused(
            &dir,
            &format!("create api --group {group} --kind Foo"),
            &[&format!("invalid --group \"{group}\""), &format!("{module:?} is a name src/api/mod.rs already uses")],
        );
    }
    // Crates src/api/mod.rs does not name: the group's module shadows nothing (a project with
    // these groups passes `cargo check --all-targets`).
    for group in ["core", "std", "alloc", "proc-macro", "tokio", "serde", "schemars", "axum"] {
        ok(&dir, &format!("--dry-run create api --group {group} --kind Foo"));
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
fn domains_and_groups_too_long_for_a_file_name_are_refused_at_their_flag() {
    let tmp = scratch();
    let dir = tmp.path();
    // 194 characters: with a one-letter group and plural, webhook_in_<group>.<domain>_<plural>.yaml
    // would be 214 bytes.
    let d194 = format!("{}.{}.{}.io", "d".repeat(63), "d".repeat(63), "d".repeat(63));
    refused(
        dir,
        &format!("init --domain {d194} --project-name op"),
        &[&format!("invalid --domain \"{d194}\": a domain must be at most 193 characters (it has 194)"), "213 bytes"],
    );
    assert!(snapshot(dir).is_empty());
    let (_tmp, dir) = project(&[]);
    // The review's 241 characters.
    let g241 = format!("{}.{}.{}.{}", "g".repeat(60), "g".repeat(60), "g".repeat(60), "g".repeat(58));
    refused(
        &dir,
        &format!("create api --group {g241} --kind Foo"),
        &[
            &format!("invalid --group \"{g241}\": a group must be at most 183 characters with --domain example.com"),
            "213 bytes",
        ],
    );
    // The longest group: every file written, temporary ones included.
    let g183 = format!("{}.{}.{}", "g".repeat(63), "g".repeat(63), "g".repeat(55));
    ok(&dir, &format!("create api --group {g183} --kind A --plural a --controller=false"));
}

#[test]
fn refused_names_are_shown_escaped() {
    let (_tmp, dir) = project(&[]);
    // A Cyrillic М, which looks like a Latin M.
    let out = common::memop()
        .current_dir(&dir)
        .args(["create", "api", "--group", "cache", "--kind", "\u{41c}emcached"])
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.starts_with("error: invalid --kind \"\\u{41c}emcached\": a kind must be PascalCase"), "{stderr}");
}

#[test]
fn invisible_format_characters_are_refused_where_text_reaches_files() {
    let tmp = scratch();
    let dir = tmp.path();
    // A right-to-left override, a zero-width joiner, a byte order mark, an isolate.
    for hidden in ['\u{202E}', '\u{200D}', '\u{FEFF}', '\u{2066}', '\u{3164}', '\u{FE0F}'] {
        refused(
            dir,
            &format!("init --domain example.com --project-name op --owner ACME{hidden}evil"),
            &["invalid --owner", "invisible formatting characters"],
        );
        assert!(snapshot(dir).is_empty());
    }
    // A line separator: whitespace to the test's line splitter, so passed as one argument.
    let out = common::memop()
        .current_dir(dir)
        .args(["init", "--domain", "example.com", "--project-name", "op", "--owner", "ACME\u{2028}evil"])
        .assert()
        .code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("invisible formatting characters"), "{stderr}");
    assert!(snapshot(dir).is_empty());
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
    for said in [
        "kept your tests/memcached_conversion.rs, which is not as memop wrote it",
        "tests/memcached_conversion.rs round-trips it (add that yourself if memop kept your edited copy)",
    ] {
        assert!(out.stderr.contains(said), "{}", out.stderr);
    }
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
        ("image: memcached:1.6.26-alpine3.19", "image: 'memcached:1\"; compile_error!(\"pwned\"); //'",
         "invalid operand.image \"memcached:1\\\"; compile_error!"),
        ("containerPort: 11211", "containerPort: 0", "invalid operand.containerPort \"0\""),
        ("- memcached\n", "- \"mem\\x01cached\"\n", "invalid operand.containerCommand \"mem\\u{1}cached,"),
        ("license: apache2", "license: mit", "license \"mit\" is not one memop writes"),
        ("  domain: example.com\n  group: cache", "  domain: example.org\n  group: cache", "is not the project's"),
        ("  kind: Memcached", "  kind: memcached", "invalid kind \"memcached\""),
        // The review's: a NUL in the project's domain is the PROJECT field's, not --domain's.
        ("domain: example.com\n", "domain: \"example.com\\0\"\n", "invalid domain \"example.com\\0\""),
    ];
    for (from, to, expected) in cases {
        assert!(original.contains(from), "{from:?} not in PROJECT:\n{original}");
        fs::write(dir.join("PROJECT"), original.replacen(from, to, 1)).unwrap();
        let stderr = refused(&dir, "create api --group cache --kind Memcached --force", &["PROJECT", expected]);
        // Messages name the PROJECT field, not a flag the user did not pass.
        assert!(!stderr.contains("invalid --"), "{stderr}");
    }
    // A resource listed twice.
    let resources = original.split_once("resources:\n").unwrap().1;
    let first = resources.split_once("version: v1alpha1\n").unwrap().0;
    let doubled = original.replacen("resources:\n", &format!("resources:\n{first}version: v1alpha1\n"), 1);
    fs::write(dir.join("PROJECT"), doubled).unwrap();
    refused(&dir, "create api --group web --kind Nginx --image nginx:1 --image-container-port 80", &["twice"]);
}

#[test]
fn a_deleted_shared_file_that_lists_other_apis_is_refused_not_recreated_with_one() {
    let (_tmp, dir) = project(&["--group cache --kind Memcached"]);
    for path in [
        "src/api/cache/v1alpha1/mod.rs",
        "src/api/cache/mod.rs",
        "config/crd/kustomization.yaml",
        "config/samples/kustomization.yaml",
    ] {
        let kept = read(&dir, path);
        fs::remove_file(dir.join(path)).unwrap();
        refused(
            &dir,
            "create api --group cache --kind Redis --image redis:7 --image-container-port 6379",
            &[&format!("{path} is missing, but it lists cache v1alpha1 Memcached too"), "git checkout --"],
        );
        fs::write(dir.join(path), kept).unwrap();
    }
    // A new group gets its own module files; the shared kustomizations are there.
    ok(&dir, "create api --group web --kind Nginx --image nginx:1.27 --image-container-port 8080");

    ok(&dir, "create webhook --group cache --version v1alpha1 --kind Memcached --defaulting");
    fs::remove_file(dir.join("src/webhook/mod.rs")).unwrap();
    refused(
        &dir,
        "create webhook --group web --version v1alpha1 --kind Nginx --defaulting",
        &["src/webhook/mod.rs is missing, but it lists cache v1alpha1 Memcached too"],
    );
}

#[test]
fn a_missing_or_non_directory_dash_c_is_refused_not_taken_for_the_enclosing_project() {
    // As git -C and make -C: a typo in a script's -C must not change the project around it.
    let (_tmp, dir) = project(&[]);
    for (arg, why) in [("does-not-exist", "does not exist"), ("Makefile", "is not a directory")] {
        refused(&dir, &format!("-C {arg} create api --group web --kind Foo --controller=false"), &[why, arg]);
        refused(&dir, &format!("-C {arg} update"), &[why]);
        refused(&dir, &format!("-C {arg} edit --plugins=helm/v2-alpha"), &[why]);
    }
}

#[test]
fn completion_into_a_closed_or_full_output_fails_or_stops_without_a_panic() {
    // A reader that stops reading (`| head -1`) wanted no more: no error, and no panic.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_memop"))
        .args(["completion", "bash"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // A full disk is a failure, said as for every command.
    if let Ok(full) = fs::OpenOptions::new().write(true).open("/dev/full") {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_memop"))
            .args(["completion", "bash"])
            .stdout(full)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("writing to standard output") && !stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_command_run_inside_a_project_works_on_the_project() {
    let (_tmp, dir) = project(&[]);
    let out = ok(&dir.join("src/api"), "create api --group cache --kind Memcached");
    assert!(out.stderr.contains("note: working on the project in"), "{}", out.stderr);
    assert!(dir.join("src/controller/memcached.rs").exists());
    assert!(!dir.join("src/api/src").exists() && !dir.join("src/api/PROJECT").exists());
    ok(&dir, "-C config/rbac create api --group web --kind Nginx --image nginx:1.27 --image-container-port 8080");
    assert!(read(&dir, "PROJECT").contains("kind: Nginx"));
}

#[test]
fn crlf_files_keep_their_line_endings_and_only_the_inserted_lines_change() {
    let (_tmp, dir) = project(&["--group cache --kind Memcached"]);
    for path in ["config/samples/kustomization.yaml", "config/crd/kustomization.yaml", "src/api/cache/mod.rs"] {
        fs::write(dir.join(path), read(&dir, path).replace('\n', "\r\n")).unwrap();
    }
    let before = read(&dir, "config/samples/kustomization.yaml");
    ok(&dir, "create api --group cache --kind Redis --image redis:7 --image-container-port 6379");
    for path in ["config/samples/kustomization.yaml", "config/crd/kustomization.yaml", "src/api/cache/mod.rs"] {
        let after = read(&dir, path);
        assert_eq!(after.matches('\n').count(), after.matches("\r\n").count(), "{path} lost its CRLF:\n{after:?}");
    }
    let after = read(&dir, "config/samples/kustomization.yaml");
    let old: Vec<&str> = before.split("\r\n").collect();
    let new: Vec<&str> = after.split("\r\n").collect();
    assert_eq!(new.len(), old.len() + 1, "one line added:\n{after:?}");
    assert!(old.iter().all(|line| new.contains(line)), "{after:?}");
}

#[test]
fn an_image_env_var_switched_to_value_from_is_kept_and_not_added_twice() {
    let (_tmp, dir) = project(&["--group cache --kind Memcached"]);
    let manager = read(&dir, "config/manager/manager.yaml");
    let value_line = manager.lines().find(|l| l.trim_start().starts_with("value: \"memcached:")).unwrap();
    let indent: String = value_line.chars().take_while(|c| c.is_whitespace()).collect();
    let from =
        format!("{indent}valueFrom:\n{indent}  configMapKeyRef:\n{indent}    name: images\n{indent}    key: memcached");
    fs::write(dir.join("config/manager/manager.yaml"), manager.replacen(value_line, &from, 1)).unwrap();
    let out = ok(&dir, "create api --group cache --kind Memcached --force --image memcached:1.6.29");
    assert!(out.stderr.contains("MEMCACHED_IMAGE in config/manager/manager.yaml is yours"), "{}", out.stderr);
    let after = read(&dir, "config/manager/manager.yaml");
    assert_eq!(after.matches("- name: MEMCACHED_IMAGE").count(), 1, "{after}");
    assert!(after.contains("configMapKeyRef"), "{after}");
}

#[test]
fn of_two_concurrent_inits_into_a_new_directory_one_succeeds() {
    let tmp = scratch();
    for round in 0..4 {
        let target = format!("race-{round}/new-operator");
        let spawn = || {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("memop"))
                .args(["-C", &target, "init", "--domain", "example.com"])
                .current_dir(tmp.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (first, second) = (spawn(), spawn());
        let outcomes = [first.wait_with_output().unwrap(), second.wait_with_output().unwrap()];
        let succeeded = outcomes.iter().filter(|o| o.status.success()).count();
        let why: Vec<String> = outcomes.iter().map(|o| String::from_utf8_lossy(&o.stderr).into_owned()).collect();
        assert_eq!(succeeded, 1, "round {round}: {why:?}");
        assert!(tmp.path().join(&target).join("PROJECT").is_file());
    }
    // A refused init leaves no directory behind.
    refused(tmp.path(), "-C fresh/dir init --domain Bad", &["invalid --domain"]);
    assert!(!tmp.path().join("fresh/dir").exists());
}

#[test]
fn a_projects_rustfmt_toml_is_honoured_and_crlf_rust_files_keep_their_line_endings() {
    let (_tmp, dir) = project(&[]);
    fs::write(dir.join("rustfmt.toml"), "max_width = 100\n").unwrap();
    let main = read(&dir, "src/main.rs").replace('\n', "\r\n");
    fs::write(dir.join("src/main.rs"), &main).unwrap();
    let out = ok(&dir, "create api --group cache --kind Memcached");
    assert!(!out.stderr.contains("rustfmt"), "{}", out.stderr);
    let after = read(&dir, "src/main.rs");
    assert_eq!(after.matches('\n').count(), after.matches("\r\n").count(), "{after:?}");
    let (old, new): (Vec<&str>, Vec<&str>) = (main.split("\r\n").collect(), after.split("\r\n").collect());
    assert_eq!(new.len(), old.len() + 1, "one line added:\n{after}");
    // The project named like its kind, as kubebuilder's guestbook quickstart: accepted.
    let tmp = scratch();
    let guestbook = tmp.path().join("guestbook");
    fs::create_dir(&guestbook).unwrap();
    ok(&guestbook, "init --domain example.com");
    ok(&guestbook, "create api --group webapp --kind Guestbook");
    assert!(!read(&guestbook, "tests/guestbook.rs").contains("guestbook::{self"));
}

#[test]
fn a_reader_that_stops_reading_after_the_work_is_done_is_no_failure() {
    let tmp = scratch();
    let memop = assert_cmd::cargo::cargo_bin("memop");
    // Standard output and error both closed early, as `memop … 2>&1 | head -1`.
    let script = format!("set -o pipefail; '{}' -C proj init --domain example.com 2>&1 | head -c 1", memop.display());
    let out = std::process::Command::new("bash").args(["-c", &script]).current_dir(tmp.path()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(tmp.path().join("proj/PROJECT").is_file());
}

#[test]
fn names_the_api_server_serves_once_per_group_are_refused_when_two_kinds_would_share_them() {
    let (_tmp, dir) = project(&["--group cache --kind FooBar --controller=false"]);
    for (line, expected) in [
        ("create api --group cache --kind Bar --plural foobar --controller=false", "the plural foobar"),
        ("create api --group cache --kind Fb --controller=false", "the singular name fb"),
        ("create api --group cache --kind Baz --plural fb --controller=false", "the plural fb"),
        ("create api --group cache --kind FooBarList --controller=false", "(FooBarList)"),
    ] {
        refused(&dir, line, &[expected, "FooBar of group cache"]);
    }
    // Another group has names of its own.
    ok(&dir, "create api --group web --kind Fb --controller=false");
}

/// The `<KIND>_IMAGE` entry of the manager, in any spelling, is rewritten in place and never
/// added a second time (server-side apply refuses a duplicate name in `env`).
#[test]
fn an_image_env_entry_in_any_spelling_is_updated_not_added_twice() {
    let spellings: &[(&str, &str)] = &[
        ("- name: MEMCACHED_IMAGE", "- name: \"MEMCACHED_IMAGE\""),
        ("- name: MEMCACHED_IMAGE\n          value:", "-   name:   'MEMCACHED_IMAGE'\n            value:  "),
    ];
    for (from, to) in spellings {
        let (_tmp, dir) = project(&["--group cache --kind Memcached"]);
        let manager = read(&dir, "config/manager/manager.yaml");
        fs::write(dir.join("config/manager/manager.yaml"), manager.replacen(from, to, 1)).unwrap();
        ok(&dir, "create api --group cache --kind Memcached --force --image memcached:1.6.30");
        let manager = read(&dir, "config/manager/manager.yaml");
        assert_eq!(count(&manager, "MEMCACHED_IMAGE"), 1, "{to}:\n{manager}");
        assert!(manager.contains("\"memcached:1.6.30\"\n"), "{to}:\n{manager}");
        assert!(manager.contains(to.split(':').next().unwrap()), "{to}: respelled\n{manager}");
    }
    // A flow mapping, and `value:` before `name:`.
    for entry in ["- {name: MEMCACHED_IMAGE, value: foo}\n", "- value: foo\n          name: MEMCACHED_IMAGE\n"] {
        let (_tmp, dir) = project(&["--group cache --kind Memcached"]);
        let manager = read(&dir, "config/manager/manager.yaml");
        let start = manager.find("- name: MEMCACHED_IMAGE").unwrap();
        let end = start + manager[start..].find("\"\n").unwrap() + 2;
        fs::write(dir.join("config/manager/manager.yaml"), format!("{}{entry}{}", &manager[..start], &manager[end..]))
            .unwrap();
        ok(&dir, "create api --group cache --kind Memcached --force --image memcached:1.6.30");
        let manager = read(&dir, "config/manager/manager.yaml");
        assert_eq!(count(&manager, "MEMCACHED_IMAGE"), 1, "{entry}:\n{manager}");
        assert!(manager.contains("\"memcached:1.6.30\""), "{entry}:\n{manager}");
    }
}
