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
