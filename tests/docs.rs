//! `docs/cli.md` shows each command's `--help` verbatim; this keeps it in step with the code.
//! After changing a flag, run `MEMOP_BLESS=1 cargo test --test docs` and review the diff. The
//! tutorial's memop and git commands run as written, and its transcripts are what memop prints.

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

/// The tutorial's commands, run in order as a reader copies them (`memop`, `git`, `mkdir` and
/// `cd`; `make`, `kubectl` and the rest need a toolchain or a cluster and are skipped), with
/// each transcript (the `text` block next after a `sh` block) checked against what its `memop`
/// commands print. A transcript line `...` or `…` stands for any number of lines.
#[test]
fn tutorial_transcripts_match_the_cli() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/getting-started.md")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut cwd = scratch.path().to_path_buf();
    let blocks = code_blocks(&doc);
    let mut checked = 0;
    for (i, (lang, body)) in blocks.iter().enumerate() {
        if lang != "sh" {
            continue;
        }
        let mut printed = String::new();
        let mut ran_memop = false;
        for line in commands(body) {
            for command in line.split(" && ") {
                let args = words(command);
                let Some((program, args)) = args.split_first() else { continue };
                match program.as_str() {
                    "mkdir" => std::fs::create_dir_all(cwd.join(&args[0])).unwrap(),
                    "cd" => cwd = cwd.join(&args[0]),
                    "memop" => {
                        let out = common::memop().current_dir(&cwd).args(args).output().unwrap();
                        let stdout = String::from_utf8(out.stdout).unwrap();
                        let stderr = String::from_utf8_lossy(&out.stderr);
                        assert!(out.status.success(), "`{command}` failed:\n{stdout}{stderr}");
                        printed.push_str(&stdout);
                        ran_memop = true;
                    }
                    "git" => {
                        let out = std::process::Command::new("git")
                            .current_dir(&cwd)
                            .args(args)
                            .envs([
                                ("GIT_AUTHOR_NAME", "Tutorial"),
                                ("GIT_AUTHOR_EMAIL", "tutorial@example.com"),
                                ("GIT_COMMITTER_NAME", "Tutorial"),
                                ("GIT_COMMITTER_EMAIL", "tutorial@example.com"),
                            ])
                            .output()
                            .unwrap();
                        let stdout = String::from_utf8_lossy(&out.stdout);
                        // A commit with nothing new (the reader had no edits) is no failure.
                        let nothing = stdout.contains("nothing to commit");
                        assert!(out.status.success() || nothing, "`{command}` failed: {out:?}");
                    }
                    _ => {}
                }
            }
        }
        let Some((next, shown)) = blocks.get(i + 1) else { continue };
        if ran_memop && next == "text" {
            assert!(
                transcript_matches(shown, &printed),
                "docs/getting-started.md: the transcript after\n{body}\nis not what memop prints:\n{printed}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 4, "only {checked} transcripts checked");

    // The test counts it gives: each scenario runs in memory; on the real control plane, they and
    // the real-control-plane-only tests are not built until it is set up (one line says so).
    let tests = std::fs::read_to_string(scratch.path().join("memcached-operator/tests/memcached.rs")).unwrap();
    let list = tests.split("memop_test::scenarios!(").nth(1).unwrap().split(");").next().unwrap();
    let scenarios = list.split(',').filter(|name| !name.trim().is_empty()).count();
    let summary = format!("{scenarios} passed; 0 failed; 0 ignored");
    assert!(doc.contains(&format!("`{summary}`")), "docs/getting-started.md should give `{summary}`");
}

/// The fenced blocks of a Markdown text: language and body.
fn code_blocks(doc: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut rest = doc;
    while let Some(open) = rest.find("\n```") {
        let after = &rest[open + 4..];
        let lang_end = after.find('\n').unwrap();
        let lang = after[..lang_end].trim().to_string();
        let body_start = lang_end + 1;
        let close = after[body_start..].find("\n```").map(|c| body_start + c + 1).unwrap_or(body_start);
        let body = after[body_start..close].to_string();
        // Past the closing fence's line.
        let end = close + after[close..].find('\n').unwrap_or(after.len() - close);
        blocks.push((lang, body));
        rest = &after[end..];
    }
    blocks
}

/// The commands of a `sh` block: continued lines joined, comments dropped.
fn commands(body: &str) -> Vec<String> {
    let joined = body.replace("\\\n", " ");
    joined
        .lines()
        .map(|line| match line.find(" #") {
            // Not inside a quoted argument.
            Some(at) if line[..at].matches('\'').count() % 2 == 0 => &line[..at],
            _ => line,
        })
        .map(|line| line.trim().to_string())
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect()
}

/// A command's words: split on whitespace, except inside `'…'`.
fn words(command: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted, mut started) = (Vec::new(), String::new(), false, false);
    for c in command.chars() {
        match c {
            '\'' => (quoted, started) = (!quoted, true),
            c if c.is_whitespace() && !quoted => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// Whether `output` is what `shown` shows, a `...` or `…` line standing for any lines.
fn transcript_matches(shown: &str, output: &str) -> bool {
    fn matches(shown: &[&str], output: &[&str]) -> bool {
        match shown.split_first() {
            None => output.is_empty(),
            Some((line, rest)) if matches!(line.trim(), "..." | "…") => {
                (0..=output.len()).any(|skip| matches(rest, &output[skip..]))
            }
            Some((line, rest)) => {
                output.first().is_some_and(|first| first.trim_end() == line.trim_end()) && matches(rest, &output[1..])
            }
        }
    }
    let shown: Vec<&str> = shown.lines().collect();
    let output: Vec<&str> = output.lines().collect();
    matches(&shown, &output)
}
