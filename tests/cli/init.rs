//! `memop init`: its refusals, and initializing where files already are.

use super::*;

#[test]
fn init_rejects_bad_domains_and_writes_nothing() {
    let tmp = scratch();
    let dir = tmp.path();
    let fix = "(e.g. \"example.com\")";
    let rfc = "must be a lowercase RFC 1123 subdomain";
    let long_label = format!("{}.io", "a".repeat(64));
    let long_domain = vec!["a".repeat(63); 4].join(".");
    #[rustfmt::skip]
    let cases: &[(&str, &[&str])] = &[
        ("Example.com", &["invalid --domain \"Example.com\": a domain", rfc, fix]),
        ("''", &["invalid --domain \"\": a domain cannot be empty", fix]),
        ("example.com.", &["invalid --domain \"example.com.\"", rfc, fix]),
        ("example-", &["invalid --domain \"example-\"", "ending with a letter or digit", fix]),
        ("-example.com", &["invalid --domain \"-example.com\"", rfc, fix]),
        ("my_domain.com", &["invalid --domain \"my_domain.com\"", rfc, fix]),
        (&long_label, &["each '.'-separated label of a domain must be at most 63", "has 64", fix]),
        (&long_domain, &["a domain must be at most 253 characters (it has 255)", fix]),
    ];
    for (domain, expected) in cases {
        refused(dir, &format!("init --project-name op --domain={domain}"), expected);
        assert!(snapshot(dir).is_empty(), "init --domain {domain} left files behind");
    }
}

#[test]
fn init_rejects_bad_project_names_and_writes_nothing() {
    let tmp = scratch();
    let dir = tmp.path();
    let fix = "(e.g. \"memcached-operator\"); pass --project-name to choose another";
    let long = "a".repeat(64);
    #[rustfmt::skip]
    let cases: &[(&str, &str)] = &[
        ("My_Operator", "a project name must be a lowercase RFC 1123 label"),
        ("1op", "starting with a letter"),
        ("op-", "ending with a letter or digit"),
        ("my.op", "a-z, 0-9 and '-'"),
        ("", "a project name cannot be empty"),
        ("type", "its crate name \"type\" is a Rust keyword"),
        ("test", "its crate name \"test\" is reserved by Cargo or the standard library"),
        (&long, "a project name must be at most 28 characters (it has 64)"),
    ];
    for (name, rule) in cases {
        let quoted = format!("invalid project name \"{name}\": ");
        let line = format!("init --domain example.com --project-name '{name}'");
        refused(dir, &line, &[&quoted, rule, fix]);
        assert!(snapshot(dir).is_empty(), "{line} left files behind");
    }
}

#[test]
fn init_rejects_a_directory_name_that_is_no_project_name() {
    let tmp = scratch();
    let bad = tmp.path().join("My_Operator");
    fs::create_dir(&bad).unwrap();
    let named = "invalid project name \"my_operator\" (the lowercased name of directory";
    let fix = "pass --project-name to choose another";
    // Run inside the directory, and pointed at it with -C.
    refused(&bad, "init --domain example.com", &[named, "My_Operator", fix]);
    refused(tmp.path(), "-C My_Operator init", &[named, fix]);
    refused(tmp.path(), "-C My_Operator --dry-run init", &[named, fix]);
    assert!(snapshot(&bad).is_empty());
    // -C to a missing directory: refused before the directory is created.
    refused(tmp.path(), "-C Bad_Name/sub_dir init", &["\"sub_dir\"", fix]);
    refused(tmp.path(), "-C new-op init --domain Bad", &["invalid --domain \"Bad\""]);
    assert!(!tmp.path().join("Bad_Name").exists());
    assert!(!tmp.path().join("new-op").exists());
}

#[test]
fn init_refuses_to_reinitialize_a_project() {
    let (_tmp, dir) = project(&[]);
    let fix = "run `memop create api` to extend it, or pass --force to initialize over it";
    refused(&dir, "init --domain example.com", &["already holds a project (found PROJECT)", fix]);
    refused(&dir, "init --domain other.io --project-name other", &["(found PROJECT)", fix]);
    refused(&dir, "--dry-run init --domain example.com", &["(found PROJECT)", fix]);

    // With APIs, --force would refuse too: the message does not send the user there.
    let (_tmp, with_apis) = project(&[MEMCACHED]);
    let stderr = refused(&with_apis, "init --domain example.com", &["with 1 API(s)", "memop update"]);
    assert!(!stderr.contains("--force"), "{stderr}");

    // Any one of the project's files is enough to refuse.
    let tmp = scratch();
    let cargo = "holds a Cargo project (Cargo.toml) but no memop PROJECT file";
    let main = "already holds a project (found src/main.rs)";
    for (name, marker, message, fix) in
        [("cargo", "Cargo.toml", cargo, "pass --force"), ("main", "src/main.rs", main, fix)]
    {
        let dir = tmp.path().join(name);
        fs::create_dir_all(dir.join(marker).parent().unwrap()).unwrap();
        fs::write(dir.join(marker), "# mine\n").unwrap();
        refused(&dir, "init --domain example.com --project-name op", &[message, fix]);
        refused(tmp.path(), &format!("-C {name} init --project-name op"), &[message, fix]);
    }
}

#[test]
fn init_refuses_a_regular_file_as_its_directory() {
    let tmp = scratch();
    fs::write(tmp.path().join("notes.txt"), "mine\n").unwrap();
    let expected = ["notes.txt is not a directory", "pass -C with a directory"];
    refused(tmp.path(), "-C notes.txt init --project-name op", &expected);
    refused(tmp.path(), "-C notes.txt --dry-run init --project-name op", &expected);
    assert_eq!(read(tmp.path(), "notes.txt"), "mine\n");
}

#[test]
fn init_keeps_the_users_files_and_says_so() {
    let tmp = scratch();
    let dir = tmp.path().join("memcached-operator");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("README.md"), "# My operator\n").unwrap();
    fs::write(dir.join("notes.txt"), "mine\n").unwrap();
    let out = ok(&dir, "init --domain example.com");
    let warnings = "warning: the directory is not empty (README.md, notes.txt); memop keeps files \
                    it would otherwise write, but initializing in an empty directory is safer\n\
                    warning: kept your README.md; memop's version was not written\n";
    assert_eq!(out.stderr, warnings);
    assert_eq!(read(&dir, "README.md"), "# My operator\n");
    assert_eq!(read(&dir, "notes.txt"), "mine\n");
    assert!(out.stdout.contains("  create  ./PROJECT\n"), "{}", out.stdout);
    assert!(!out.stdout.contains("./README.md"), "{}", out.stdout);
    let next = "Next: define a resource with:\n  $ memop create api --group cache --kind Memcached\n";
    assert!(out.stdout.ends_with(next), "{}", out.stdout);
    assert!(read(&dir, "PROJECT").contains("projectName: memcached-operator\n"));
    assert!(read(&dir, "Cargo.toml").contains("name = \"memcached-operator\""));
}

#[test]
fn init_force_reinitializes_a_project() {
    let (_tmp, dir) = project(&[]);
    let pristine = snapshot(&dir);
    fs::write(dir.join("notes.txt"), "mine\n").unwrap();
    append(&dir, "src/main.rs", "// my note\n");
    let out = ok(&dir, "init --domain example.com --force");
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert!(out.stdout.starts_with("  update  ./src/main.rs\n"), "{}", out.stdout);
    assert_eq!(read(&dir, "notes.txt"), "mine\n");
    let mut after = snapshot(&dir);
    after.remove(Path::new("notes.txt"));
    assert_eq!(changed(&pristine, &after), Vec::<PathBuf>::new());
    // Again, with nothing left to change.
    let out = ok(&dir, "init --domain example.com --force");
    assert!(out.stdout.starts_with("Nothing to do: "), "{}", out.stdout);
}

#[test]
fn init_creates_the_directory_given_with_c() {
    let tmp = scratch();
    let out = ok(tmp.path(), "-C a/new-op init --domain example.com --owner 'The Ops'");
    assert!(out.stdout.contains("  create  a/new-op/PROJECT\n"), "{}", out.stdout);
    let dir = tmp.path().join("a/new-op");
    let project = read(&dir, "PROJECT");
    assert!(project.contains("projectName: new-op\n"), "{project}");
    assert!(project.contains("crateName: new_op\n"), "{project}");
    assert!(project.contains("owner: The Ops\n"), "{project}");
    // SOURCE_DATE_EPOCH sets the license year.
    assert!(read(&dir, "src/main.rs").starts_with("// Copyright 2026 The Ops.\n"));
}

#[test]
fn repo_goes_into_cargo_toml_and_project() {
    let tmp = scratch();
    let dir = tmp.path().join("memcached-operator");
    fs::create_dir(&dir).unwrap();
    ok(&dir, "init --domain example.com --repo github.com/example/memcached-operator");
    let manifest = read(&dir, "Cargo.toml");
    assert!(manifest.contains("\nrepository = \"https://github.com/example/memcached-operator\"\n"), "{manifest}");
    assert!(read(&dir, "PROJECT").contains("\nrepo: https://github.com/example/memcached-operator\n"));
    // PROJECT is read back with the same rule.
    ok(&dir, "create api --group cache --kind Memcached");

    let other = tmp.path().join("other");
    fs::create_dir(&other).unwrap();
    refused(&other, "init --domain example.com --repo 'github.com/a\"b'", &["invalid --repo", "a repository is a URL"]);
    assert!(fs::read_dir(&other).unwrap().next().is_none(), "a refusal wrote something");
}

#[test]
fn kubebuilders_plugins_are_answered_with_what_memop_does() {
    let tmp = scratch();
    let dir = tmp.path().join("memcached-operator");
    fs::create_dir(&dir).unwrap();
    let out = ok(&dir, "init --domain example.com --plugins go/v4,grafana.kubebuilder.io/v1-alpha");
    assert!(out.stderr.contains("note: --plugins go/v4: memop always scaffolds its one layout"), "{}", out.stderr);
    assert!(out.stderr.contains("grafana/ dashboards"), "{}", out.stderr);
    let before = snapshot(&dir);
    refused(
        &dir,
        "create api --group cache --kind Memcached --plugins helm/v2-alpha",
        &["memop edit --plugins=helm/v2-alpha"],
    );
    refused(&dir, "create api --group cache --kind Memcached --plugins deploy-image/v1-alpha", &["--image"]);
    assert_unchanged(&dir, &before, "refused plugins");
    let out = ok(
        &dir,
        "create api --group cache --kind Memcached --image memcached:1.6 --image-container-port 11211 --plugins deploy-image/v1-alpha",
    );
    assert!(out.stderr.contains("memop's operand controller"), "{}", out.stderr);
}

/// A plugin key is taken only in a version memop answers for: `helm/v3` and `helm/v1-alpha` were
/// taken as helm/v2-alpha (a chart written, PROJECT recording helm/v2-alpha).
#[test]
fn plugin_versions_memop_lacks_are_refused_by_name() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    let supported =
        "go/v4, kustomize/v2, deploy-image/v1-alpha, grafana/v1-alpha, helm/v2-alpha and autoupdate/v1-alpha";
    for (line, says) in [
        ("edit --plugins=helm/v3", "memop has helm/v2-alpha, not helm/v3"),
        ("edit --plugins=helm/v1-alpha", "memop has helm/v2-alpha, not helm/v1-alpha"),
        ("edit --plugins=helm.kubebuilder.io/v1-alpha", "not helm/v1-alpha"),
        ("edit --plugins=grafana/v2", "memop has grafana/v1-alpha, not grafana/v2"),
        ("create api --group web --kind Web --plugins go/v3", "memop has go/v4, not go/v3"),
    ] {
        refused(&dir, line, &[says, supported]);
    }
    refused(&dir, "edit --plugins=helmfile/v1", &["not a plugin memop knows", supported]);
}

/// A bare `memop edit` says what `edit` needs (it answered about --multigroup); a plugin whose
/// parts every project has is nothing to do, not an error.
#[test]
fn edit_says_what_it_needs() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    refused(&dir, "edit", &["`memop edit` needs the plugin to add", "memop edit --plugins=helm/v2-alpha"]);
    let before = snapshot(&dir);
    let out = ok(&dir, "edit --plugins=grafana/v1-alpha");
    assert!(out.stdout.starts_with("Nothing to do"), "{}", out.stdout);
    assert!(out.stderr.contains("grafana/ dashboards"), "{}", out.stderr);
    assert!(!out.stderr.contains("error"), "{}", out.stderr);
    assert_unchanged(&dir, &before, "edit --plugins=grafana/v1-alpha");
    refused(&dir, "edit --multigroup", &["always supports several groups"]);
}

/// Every project carries AGENTS.md (kubebuilder v4.11's habit), memop's file: it names every
/// scaffold marker the project has, and `memop update` brings it to a project that lacks it
/// and keeps one of the user's own.
#[test]
fn agents_md_is_memops_and_names_every_marker() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, "create api --group cache --version v1 --kind Memcached");
    ok(&dir, "create webhook --group cache --version v1alpha1 --kind Memcached --defaulting");
    ok(&dir, "create webhook --group cache --version v1 --kind Memcached --conversion");
    ok(&dir, "edit --plugins=helm/v2-alpha");
    let agents = read(&dir, "AGENTS.md");
    for want in ["`vendor/`", "`make manifests`", "`memop update`", "config/rbac/role.yaml", "make test"] {
        assert!(agents.contains(want), "AGENTS.md lacks {want}:\n{agents}");
    }
    assert!(read(&dir, "PROJECT.sum").contains("AGENTS.md"), "memop records what it wrote there");
    let mut markers = 0;
    for (path, node) in snapshot(&dir) {
        let Node::File(bytes) = node else { continue };
        let text = String::from_utf8_lossy(&bytes);
        let kustomization = path.ends_with("kustomization.yaml");
        for line in text.lines().filter(|_| !path.starts_with("AGENTS.md")) {
            let Some(name) = line.trim().split("+memop:scaffold:").nth(1) else { continue };
            if !line.trim_start().starts_with("//") && !line.trim_start().starts_with('#') {
                continue;
            }
            markers += 1;
            let named = match kustomization {
                true => agents.contains("every `kustomization.yaml`"),
                false => agents.contains(&format!("`{}`", name.trim())),
            };
            assert!(named, "AGENTS.md does not name the marker {name} of {}", path.display());
        }
    }
    assert!(markers > 20, "only {markers} markers");
}

#[test]
fn update_brings_agents_md_and_keeps_the_users_own() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    fs::remove_file(dir.join("AGENTS.md")).unwrap();
    let sum: String =
        read(&dir, "PROJECT.sum").lines().filter(|l| !l.contains("AGENTS.md")).map(|l| format!("{l}\n")).collect();
    fs::write(dir.join("PROJECT.sum"), sum).unwrap();
    let out = ok(&dir, "update");
    assert!(out.stdout.contains("  create  ./AGENTS.md\n"), "{}", out.stdout);

    // One of the user's own, which memop never wrote: kept, with a note.
    fs::write(dir.join("AGENTS.md"), "# Ours\n").unwrap();
    let sum: String =
        read(&dir, "PROJECT.sum").lines().filter(|l| !l.contains("AGENTS.md")).map(|l| format!("{l}\n")).collect();
    fs::write(dir.join("PROJECT.sum"), sum).unwrap();
    let out = ok(&dir, "update");
    assert!(out.stderr.contains("note: AGENTS.md is not as memop writes it"), "{}", out.stderr);
    assert_eq!(read(&dir, "AGENTS.md"), "# Ours\n");
}

/// An answer to a flag (kubebuilder's `--plugins` and `--make`, `init` in a directory that is
/// not empty) is part of the command's report: shown once, first on standard error, whether the
/// command is refused, is a dry run, or writes.
#[test]
fn a_flags_answer_shows_once_first_on_a_refusal_and_in_a_dry_run() {
    /// Runs `line` in `dir`, expecting `code`; returns stderr, and asserts the run changed nothing
    /// when it was to fail or only show.
    fn stderr(dir: &Path, line: &str, code: i32, writes: bool) -> String {
        let before = snapshot(dir);
        let out = memop(dir, line).assert().code(code).get_output().clone();
        if !writes {
            assert_unchanged(dir, &before, line);
        }
        String::from_utf8(out.stderr).unwrap()
    }
    let make = "note: --make is kubebuilder's; memop never runs make after scaffolding (run `make manifests` \
                yourself)\n";
    let (_tmp, dir) = project(&[]);
    let refusal = stderr(&dir, "create api --group cache --kind memcached --make", 1, false);
    assert!(refusal.starts_with(make), "{refusal}");
    assert!(refusal[make.len()..].starts_with("error: ") && count(&refusal, "--make") == 1, "{refusal}");
    assert_eq!(stderr(&dir, "--dry-run create api --group cache --kind Memcached --make", 0, false), make);
    assert_eq!(stderr(&dir, "create api --group cache --kind Memcached --make", 0, true), make);

    let go = "note: --plugins go/v4: memop always scaffolds its one layout (Rust, with kustomize's config/), which \
              follows go/v4's\n";
    let refusal = stderr(&dir, "edit --plugins=go/v4 --memop-git https://git.example.com/memop", 1, false);
    assert!(refusal.starts_with(go) && refusal[go.len()..].starts_with("error: --memop-git belongs"), "{refusal}");
    assert_eq!(stderr(&dir, "edit --plugins=go/v4", 0, false), go, "nothing to do");

    let tmp = scratch();
    let cargo = tmp.path().join("cargo");
    fs::create_dir(&cargo).unwrap();
    fs::write(cargo.join("Cargo.toml"), "[package]\n").unwrap();
    let refusal = stderr(&cargo, "init --domain example.com --plugins go/v4", 1, false);
    assert!(refusal.starts_with(go) && refusal[go.len()..].starts_with("error: "), "{refusal}");
    let mine = tmp.path().join("mine");
    fs::create_dir(&mine).unwrap();
    fs::write(mine.join("notes.txt"), "mine\n").unwrap();
    let answers = format!(
        "{go}warning: the directory is not empty (notes.txt); memop keeps files it would otherwise write, but \
         initializing in an empty directory is safer\n"
    );
    assert_eq!(stderr(&mine, "--dry-run init --domain example.com --plugins go/v4", 0, false), answers);
    assert_eq!(stderr(&mine, "init --domain example.com --plugins go/v4", 0, true), answers);
}
