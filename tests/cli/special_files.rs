//! Hostile input, round two, items 5 and 6 (`../shared/reference/reviews/hostile-2026-12-01.md`):
//! rustfmt never opens a file memop did not render, whatever `#[path]` says; a FIFO or socket on
//! a planned path is refused by name at once; a stale lock is taken over; a second signal stops
//! memop at once.

use std::process::{Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::*;

/// Longer than any of these commands takes, shorter than a hang worth waiting for.
pub(crate) const LIMIT: Duration = Duration::from_secs(10);

/// Starts `memop <line>` in `dir`, with `envs` set.
pub(crate) fn spawn(dir: &Path, line: &str, envs: &[(&str, &Path)]) -> std::process::Child {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("memop"));
    cmd.env("SOURCE_DATE_EPOCH", common::SOURCE_DATE_EPOCH).current_dir(dir).args(argv(line));
    for (name, value) in envs {
        cmd.env(name, value);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Waits for `child` at most `limit`, asserting it exited by itself (else it is killed, and the
/// test fails rather than hangs).
#[track_caller]
pub(crate) fn exits_within(child: std::process::Child, limit: Duration, what: &str) -> Output {
    let pid = child.id();
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || send.send(child.wait_with_output()));
    match receive.recv_timeout(limit) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            panic!("`memop {what}` did not exit by itself within {limit:?}");
        }
    }
}

/// Runs `memop <line>` in `dir` within [`LIMIT`] and asserts it is refused: exit code 1, nothing on
/// stdout, and stderr holding `expected`. Returns stderr.
#[track_caller]
fn refused_within(dir: &Path, line: &str, expected: &str) -> String {
    let out = exits_within(spawn(dir, line, &[]), LIMIT, line);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "memop {line}:\n{stderr}");
    assert!(out.stdout.is_empty(), "memop {line} printed to stdout:\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains(expected), "memop {line}: stderr lacks {expected:?}:\n{stderr}");
    stderr
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn a_fifo_at_a_planned_path_is_refused_by_name_at_once() {
    let (_tmp, dir) = project(&[]);
    let fifo = dir.join("config/rbac/role.yaml");
    fs::remove_file(&fifo).unwrap();
    let before = snapshot(&dir);
    mkfifo(&fifo);
    let message = "error: config/rbac/role.yaml is a FIFO, not a regular file: memop reads and writes regular files \
                   only; remove it or move it away\n";
    for line in ["create api --group cache --kind Foo", "--dry-run create api --group cache --kind Foo"] {
        let stderr = refused_within(&dir, line, message);
        assert_eq!(stderr, message, "one line");
    }
    // (A snapshot would read the FIFO.)
    fs::remove_file(&fifo).unwrap();
    assert_unchanged(&dir, &before, "create api over a FIFO");
}

#[test]
fn init_over_a_fifo_is_refused_by_name_at_once() {
    let tmp = scratch();
    let dir = tmp.path();
    mkfifo(&dir.join("README.md"));
    for line in ["init --domain example.com --project-name f2", "--dry-run init --domain example.com --project-name f2"]
    {
        refused_within(dir, line, "error: README.md is a FIFO, not a regular file");
    }
    fs::remove_file(dir.join("README.md")).unwrap();
    assert!(snapshot(dir).is_empty(), "init left {:?}", snapshot(dir).keys());
}

#[test]
fn a_socket_at_a_planned_path_is_refused_by_name() {
    let (_tmp, dir) = project(&[]);
    fs::remove_file(dir.join("src/main.rs")).unwrap();
    let before = snapshot(&dir);
    let _socket = std::os::unix::net::UnixListener::bind(dir.join("src/main.rs")).unwrap();
    refused_within(&dir, "create api --group cache --kind Foo", "error: src/main.rs is a socket, not a regular file");
    fs::remove_file(dir.join("src/main.rs")).unwrap();
    assert_unchanged(&dir, &before, "create api over a socket");
}

#[test]
fn rustfmt_never_opens_a_module_file_outside_the_project() {
    let (tmp, dir) = project(&[]);
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let victim = outside.join("outside.rs");
    let unformatted = "fn   victim( ) {let x=1;}\n";
    fs::write(&victim, unformatted).unwrap();
    let v = victim.display();
    // Spellings a text match on `#[path = "` misses; rustfmt would follow every one of them.
    let attributes = format!(
        "\n#[path = r\"{v}\"]\nmod raw;\n#[cfg_attr(all(), path = \"{v}\")] mod evil;\n\
         #[allow(unused)] #[path = \"{v}\"] mod second;\n#[path\n= \"{v}\"]\nmod split;\n"
    );
    append(&dir, "src/main.rs", &attributes);
    let before = snapshot(&outside);

    ok(&dir, "--dry-run create api --group cache --kind Foo");
    assert_eq!(fs::read(&victim).unwrap(), unformatted.as_bytes(), "--dry-run formatted the outside file");
    ok(&dir, "create api --group cache --kind Foo");
    assert_eq!(fs::read(&victim).unwrap(), unformatted.as_bytes(), "create api formatted the outside file");
    assert_unchanged(&outside, &before, "create api");
    let main = read(&dir, "src/main.rs");
    assert!(main.contains(&format!("#[path = r\"{v}\"]\nmod raw;\n")), "{main}");
    assert!(main.contains(&format!("#[cfg_attr(all(), path = \"{v}\")]\nmod evil;\n")), "formatted:\n{main}");
}

#[test]
fn a_lock_whose_process_is_gone_is_taken_over_and_said_so() {
    let (_tmp, dir) = project(&[]);
    // Above Linux's highest possible PID (PID_MAX_LIMIT, 2^22), so never running.
    fs::write(dir.join(".memop.lock"), "4194304\n").unwrap();
    let out = ok(&dir, "create api --group cache --kind Foo");
    assert_eq!(
        out.stderr, "warning: took over ./.memop.lock from process 4194304, which is no longer running\n",
        "one line"
    );
    assert!(!dir.join(".memop.lock").exists(), "released when done");
    assert!(read(&dir, "PROJECT").contains("kind: Foo\n"));
}

#[test]
fn a_lock_a_running_command_holds_is_refused() {
    let (_tmp, dir) = project(&[]);
    // A running command holds the advisory lock on the file that names it.
    let pid = std::process::id();
    let lock = fs::File::create(dir.join(".memop.lock")).unwrap();
    lock.lock().unwrap();
    fs::write(dir.join(".memop.lock"), format!("{pid}\n")).unwrap();
    refused(
        &dir,
        "create api --group cache --kind Foo",
        &["another memop command is working on this project", &format!("process {pid})")],
    );
    drop(lock);
}

#[test]
fn a_lock_naming_a_running_process_that_holds_no_lock_is_taken_over() {
    let (_tmp, dir) = project(&[]);
    // PID 1 (init), and this test's own process: running, but no memop command, so no one
    // holds the lock (a memop killed before a reboot, or its PID reused since).
    for (pid, kind) in [(1, "Foo"), (std::process::id(), "Bar")] {
        fs::write(dir.join(".memop.lock"), format!("{pid}\n")).unwrap();
        let out = ok(&dir, &format!("create api --group cache --kind {kind}"));
        assert_eq!(
            out.stderr,
            format!(
                "warning: took over ./.memop.lock from process {pid}, which no longer holds it (that PID is another \
                 program's now)\n"
            ),
            "one line"
        );
        assert!(!dir.join(".memop.lock").exists(), "released when done");
        assert!(read(&dir, "PROJECT").contains(&format!("kind: {kind}\n")));
    }
}

#[test]
fn of_two_commands_that_find_one_stale_lock_one_takes_it_over() {
    let (_tmp, dir) = project(&[]);
    for trial in 0..4 {
        fs::write(dir.join(".memop.lock"), "1\n").unwrap();
        let kinds = [format!("First{trial}"), format!("Second{trial}")];
        let children: Vec<_> = kinds
            .iter()
            .map(|kind| spawn(&dir, &format!("create api --group cache --kind {kind} --controller=false"), &[]))
            .collect();
        let outputs: Vec<Output> = children.into_iter().map(|c| exits_within(c, LIMIT, "create api")).collect();
        let stderrs: Vec<String> = outputs.iter().map(|o| String::from_utf8_lossy(&o.stderr).into_owned()).collect();
        let took_over = stderrs.iter().filter(|e| e.contains("took over ./.memop.lock from process 1")).count();
        assert_eq!(took_over, 1, "trial {trial}: {stderrs:#?}");
        let project = read(&dir, "PROJECT");
        for (kind, (out, stderr)) in kinds.iter().zip(outputs.iter().zip(&stderrs)) {
            match out.status.code() {
                // Ran while the other held the lock.
                Some(1) => assert!(stderr.contains("another memop command is working on this project"), "{stderr}"),
                Some(0) => assert!(project.contains(&format!("kind: {kind}\n")), "{kind} lost:\n{project}"),
                other => panic!("trial {trial}: exit {other:?}: {stderr}"),
            }
        }
        assert!(!dir.join(".memop.lock").exists(), "trial {trial}: lock left behind");
    }
}

#[test]
fn a_lock_that_is_a_symbolic_link_is_refused_and_not_followed() {
    let (tmp, dir) = project(&[]);
    let secret = tmp.path().join("secret");
    fs::write(&secret, "secret-token-123\n").unwrap();
    std::os::unix::fs::symlink(&secret, dir.join(".memop.lock")).unwrap();
    let stderr = refused(&dir, "create api --group cache --kind Foo", &["./.memop.lock is a symbolic link"]);
    assert!(!stderr.contains("secret-token"), "read through the link: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(read(tmp.path(), "secret"), "secret-token-123\n");
    fs::remove_file(dir.join(".memop.lock")).unwrap();
    fs::create_dir(dir.join(".memop.lock")).unwrap();
    refused(&dir, "create api --group cache --kind Foo", &["./.memop.lock is a directory, not a regular file"]);
}

#[test]
fn a_signal_while_rustfmt_runs_stops_memop_at_once() {
    let (tmp, dir) = project(&[]);
    // A "rustfmt" that says when it starts, then takes far longer than the test waits.
    let slow = tmp.path().join("slow-rustfmt");
    let started = tmp.path().join("slow-rustfmt.started");
    fs::write(&slow, "#!/bin/sh\ntouch \"$0.started\"\nsleep 10\n").unwrap();
    fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let before = snapshot(&dir);
    let child = spawn(&dir, "create api --group cache --kind Foo", &[("RUSTFMT", &slow)]);
    let pid = child.id().to_string();
    let deadline = Instant::now() + LIMIT;
    while !started.exists() {
        assert!(Instant::now() < deadline, "memop never ran rustfmt");
        std::thread::sleep(Duration::from_millis(20));
    }
    // memop stops the formatter and itself, before it writes anything.
    let sent = Instant::now();
    std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let out = exits_within(child, LIMIT, "create api");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(sent.elapsed() < Duration::from_secs(3), "took {:?} to stop", sent.elapsed());
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted; nothing was written"), "{stderr}");
    assert_unchanged(&dir, &before, "an interrupted create api");
}

#[test]
fn a_fifo_as_project_is_refused_by_name_at_once() {
    let (_tmp, dir) = project(&[]);
    fs::remove_file(dir.join("PROJECT")).unwrap();
    mkfifo(&dir.join("PROJECT"));
    refused_within(&dir, "create api --group cache --kind Memcached", "PROJECT is a FIFO, not a regular file");
}

#[test]
fn a_special_file_as_external_api_crd_is_refused_at_once() {
    let (tmp, dir) = project(&[]);
    let fifo = tmp.path().join("crd.fifo");
    mkfifo(&fifo);
    // (A snapshot would read the FIFO through the link.)
    let before = snapshot(&dir);
    std::os::unix::fs::symlink(&fifo, dir.join("link.yaml")).unwrap();
    let flags = "--group toys.example.org --version v1 --kind Widget --resource=false --controller=true";
    let cases = [
        (fifo.display().to_string(), "is a FIFO, not a regular file"),
        ("link.yaml".to_string(), "--external-api-crd link.yaml is a FIFO, not a regular file"),
        ("/dev/zero".to_string(), "--external-api-crd /dev/zero is a character device, not a regular file"),
        (".".to_string(), "--external-api-crd . is a directory, not a regular file"),
    ];
    for (file, message) in &cases {
        for dry in ["", "--dry-run "] {
            let line = format!("{dry}create api {flags} --external-api-crd {file}");
            let stderr = refused_within(&dir, &line, message);
            assert!(stderr.contains("pass the path of a regular file"), "{stderr}");
        }
    }
    fs::remove_file(dir.join("link.yaml")).unwrap();
    fs::remove_file(&fifo).unwrap();
    assert_unchanged(&dir, &before, "create api --external-api-crd over special files");
}

#[test]
fn a_fifo_as_the_projects_rustfmt_settings_is_refused_not_taken_for_none() {
    let (_tmp, dir) = project(&[]);
    let before = snapshot(&dir);
    mkfifo(&dir.join("rustfmt.toml"));
    for line in ["create api --group cache --kind Foo", "--dry-run create api --group cache --kind Foo"] {
        refused_within(&dir, line, "error: rustfmt.toml is a FIFO, not a regular file");
    }
    fs::remove_file(dir.join("rustfmt.toml")).unwrap();
    assert_unchanged(&dir, &before, "create api with a FIFO as rustfmt.toml");
}
