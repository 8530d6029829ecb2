//! `version`, `completion` and the help texts.

use super::*;

#[test]
fn version_prints_the_version() {
    let tmp = scratch();
    let expected = format!("memop {}\n", env!("CARGO_PKG_VERSION"));
    let out = memop(tmp.path(), "version").assert().success().stderr("");
    let report = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(report.starts_with(&expected), "{report}");
    // The minor of the envtest control plane (scripts/envtest/k8s/go.mod: `require
    // k8s.io/kubernetes v1.37.2`), which the projects' k8s-openapi feature follows.
    let go_mod = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/envtest/k8s/go.mod")).unwrap();
    let release = go_mod.lines().find_map(|line| line.strip_prefix("require k8s.io/kubernetes v")).unwrap();
    let minor = release.split('.').nth(1).unwrap();
    let kubernetes = format!("\n  kubernetes:  1.{minor} (k8s-openapi ");
    for line in ["\n  commit:      ", &kubernetes, "\n  kube:        5.", "\n  runtime:     memop-runtime "] {
        assert!(report.contains(line), "{line:?} in {report}");
    }
    memop(tmp.path(), "--version").assert().success().stdout(expected);
    assert!(snapshot(tmp.path()).is_empty());
}

#[test]
fn usage_errors_exit_with_2_and_refusals_with_1_as_cli_md_says() {
    let tmp = scratch();
    let usage = memop(tmp.path(), "init --bogus").assert().code(2);
    let stderr = String::from_utf8(usage.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("unexpected argument '--bogus'") && stderr.contains("Usage: memop init"), "{stderr}");
    memop(tmp.path(), "frobnicate").assert().code(2);
    memop(tmp.path(), "init --domain Example..com").assert().code(1);
    assert!(snapshot(tmp.path()).is_empty());
    let cli = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md")).unwrap();
    assert!(cli.contains("exit with status 1") && cli.contains("exit with status 2"), "docs/cli.md documents both");
}

#[test]
fn completion_prints_a_script_for_each_shell() {
    let tmp = scratch();
    for shell in ["bash", "zsh", "fish"] {
        let out = memop(tmp.path(), &format!("completion {shell}")).assert().success();
        let script = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        assert!(script.contains("memop"), "{shell} script does not mention memop");
        assert!(script.contains("image-container-port"), "{shell} script lacks create api's flags");
    }
    memop(tmp.path(), "completion powershell")
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("invalid value 'powershell' for '<SHELL>'"))
        .stderr(predicate::str::contains("[possible values: bash, zsh, fish]"));
    memop(tmp.path(), "completion").assert().code(2);
    assert!(snapshot(tmp.path()).is_empty());
}

#[test]
fn every_command_help_shows_an_example() {
    let tmp = scratch();
    let cases = [
        ("--help", "\nExample:\n  mkdir memcached-operator && cd memcached-operator\n"),
        ("help", "\nExample:\n"),
        ("init --help", "\nExample:\n  mkdir memcached-operator"),
        ("init --help", "memop -C memcached-operator init --domain example.com"),
        ("create api --help", "\nExamples:\n  # The Memcached operator"),
        (
            "create api --help",
            "memop create api --group web --kind Nginx \\\n      --image nginxinc/nginx-unprivileged:1.27",
        ),
        ("help create api", "\nExamples:\n"),
        ("completion --help", "\nExample:\n  memop completion bash"),
    ];
    for (line, example) in cases {
        memop(tmp.path(), line).assert().success().stdout(predicate::str::contains(example));
    }
    memop(tmp.path(), "").assert().code(2).stderr(predicate::str::contains("Usage: memop"));
}

/// The project points at what it holds: no file memop writes, and no `--help` of the manager
/// (the runtime's flags), sends a reader to a `docs/*.md` the project does not have (AGENTS.md
/// and the sharding patch named memop's own docs), and AGENTS.md's guide to the files is there.
#[test]
fn the_project_points_at_what_it_holds_not_at_memops_docs() {
    let (_tmp, dir) = project(&[MEMCACHED]);
    ok(&dir, "create webhook --group cache --kind Memcached --defaulting --programmatic-validation");
    ok(&dir, "edit --plugins=helm/v2-alpha");
    let help = "vendor/memop-runtime/src/manager/flags.rs";
    let files = snapshot(&dir);
    let read_by_users = files.iter().filter_map(|(path, node)| match node {
        Node::File(bytes) if !path.starts_with("vendor") || path == Path::new(help) => {
            Some((path.display(), String::from_utf8_lossy(bytes).into_owned()))
        }
        _ => None,
    });
    for (path, text) in read_by_users {
        for (at, _) in text.match_indices("docs/") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'))
                .collect();
            let name = name.trim_end_matches('.');
            if name.ends_with(".md") {
                assert!(dir.join(name).is_file(), "{path} names {name}, which the project does not have");
            }
        }
    }
    let agents = read(&dir, "AGENTS.md");
    assert!(agents.contains("`README.md` (\"Project layout\")"), "{agents}");
    assert!(read(&dir, "README.md").contains("\n### Project layout\n"));
}
