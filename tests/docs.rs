//! `docs/cli.md` shows each command's `--help` verbatim; this keeps it in step with the code.
//! After changing a flag, run `MEMOP_BLESS=1 cargo test --test docs` and review the diff.

mod common;

use std::path::Path;

const MARKER: &str = "<!-- help: ";

#[test]
fn cli_reference_matches_help_output() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/cli.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let mut rebuilt = String::new();
    let mut stale = Vec::new();
    let mut rest = doc.as_str();
    let mut blocks = 0;
    while let Some(at) = rest.find(MARKER) {
        let after = &rest[at + MARKER.len()..];
        let end = after.find(" -->").expect("a closed help marker");
        // `<!-- help: memop create api -->`: the words after `memop`.
        let args: Vec<&str> = after[..end].split_whitespace().skip(1).collect();
        let open = after.find("```text\n").expect("a ```text block after the marker") + "```text\n".len();
        let close = open + after[open..].find("```").expect("a closed block");
        let shown = &after[open..close];
        let output = common::memop().args(&args).arg("--help").env("COLUMNS", "100").output().unwrap();
        let help = String::from_utf8(output.stdout).unwrap();
        if shown.trim_end() != help.trim_end() {
            stale.push(args.join(" "));
        }
        rebuilt.push_str(&rest[..at + MARKER.len()]);
        rebuilt.push_str(&after[..open]);
        rebuilt.push_str(help.trim_end());
        rebuilt.push('\n');
        rest = &after[close..];
        blocks += 1;
    }
    rebuilt.push_str(rest);
    assert!(blocks >= 4, "docs/cli.md shows the help of memop, init, create api and completion");
    if std::env::var_os("MEMOP_BLESS").is_some() {
        std::fs::write(&path, rebuilt).unwrap();
        return;
    }
    assert!(
        stale.is_empty(),
        "docs/cli.md is stale for: {}; run `MEMOP_BLESS=1 cargo test --test docs`",
        stale.join(", ")
    );
}
