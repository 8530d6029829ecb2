//! docs/getting-started.md, followed word for word: every command of its `sh` blocks, in order,
//! as a new user types them, with the outcomes the text promises.
//!
//! - `memop` commands run in a fresh `memcached-operator` directory; each must succeed, and
//!   every line of the `text` block that follows it (the output the tutorial shows, `…` for
//!   what it leaves out) must be in what it printed.
//! - `make local-cluster` runs in the background, as in the tutorial's second terminal: a control
//!   plane from `KUBEBUILDER_ASSETS` on this machine, whose kubeconfig the tutorial's `export
//!   KUBECONFIG=…` gives the later commands. `make manifests`, `make install` and `make run` run in
//!   the project, and `kubectl` commands against that control plane as a cluster admin, as on a
//!   developer's machine; `make run` keeps running in the background too. A `kubectl` command is retried until it succeeds (within a deadline), as
//!   a user waits for the controller. When memop commands have changed the project since
//!   `make run` started, the next `kubectl` command first gets what the tutorial says to do then
//!   (`make install`, a new `make run`): after `create webhook --conversion`, this is the local
//!   loop with the conversion served from this machine.
//! - At the end `make run` is stopped with Ctrl-C (SIGINT), and must have put the CRD's
//!   conversion back and deleted its webhook configurations; then `make local-cluster`, which
//!   must stop and remove its directory.
//! - `git` commands run in the project, as the reader's: the repository that `memop update`
//!   (Upgrading) and the chart's merges (Helm) read their base from.
//! - With `HELM` (`scripts/helm/build.sh`), `make helm-lint` lints the chart and `helm install`
//!   installs it on the control plane.
//!
//! What this machine cannot run is skipped, and listed: kind, docker, `make deploy` and
//! `make undeploy` (no nodes), the metrics port-forward, `cargo install` (the test runs the
//! memop it built), and `make test`, `cargo test`, `make setup-envtest`, `cargo bench` and
//! `make test-e2e` (the generated projects' own tests run in tests/generated.rs).

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tutorial's commands: each `sh` block's lines (continuations joined, comments dropped),
/// with the `text` block that follows the block, if any.
fn commands(markdown: &str) -> Vec<(String, Option<String>)> {
    let mut commands: Vec<(String, Option<String>)> = Vec::new();
    let mut lines = markdown.lines();
    let mut last_block_was_sh = false;
    while let Some(line) = lines.next() {
        let fence = line.trim_start();
        if !fence.starts_with("```") {
            if !line.trim().is_empty() {
                last_block_was_sh = false;
            }
            continue;
        }
        let language = fence.trim_start_matches('`');
        let body: Vec<&str> = lines.by_ref().take_while(|l| !l.trim_start().starts_with("```")).collect();
        match language {
            "sh" => {
                let mut joined = String::new();
                for line in body {
                    let line = match line.find(" #") {
                        Some(at) => &line[..at],
                        None => line,
                    };
                    joined.push_str(line.trim_end().trim_end_matches('\\'));
                    if line.trim_end().ends_with('\\') {
                        joined.push(' ');
                        continue;
                    }
                    let command = joined.split_whitespace().collect::<Vec<_>>().join(" ");
                    if !command.is_empty() {
                        commands.push((command, None));
                    }
                    joined.clear();
                }
                last_block_was_sh = true;
            }
            "text" if last_block_was_sh => {
                if let Some(last) = commands.last_mut() {
                    last.1 = Some(body.join("\n"));
                }
                last_block_was_sh = false;
            }
            _ => last_block_was_sh = false,
        }
    }
    commands
}

/// What this test does with a command of the tutorial.
#[derive(Debug, PartialEq)]
enum Step {
    Memop,
    /// A make target or kubectl command run in the project (needs the control plane unless
    /// `make manifests`).
    Project,
    MakeRun,
    /// `make local-cluster`: started in the background, as in a second terminal.
    LocalCluster,
    /// `export KUBECONFIG=…`: the kubeconfig of the later commands.
    Kubeconfig,
    /// A git command, in the project: the tutorial's repository, which `memop update` and the
    /// chart's merges read their base from.
    Git,
    /// `make helm-lint` or a `helm` command: run with the helm of `HELM` (`scripts/helm/build.sh`).
    Helm,
    /// Not runnable here, with the reason.
    Skipped(&'static str),
}

fn step(command: &str) -> Step {
    let skipped = [
        ("cargo install", "the test runs the memop it built"),
        ("mkdir memcached-operator", "the test makes the directory"),
        ("kind ", "no container engine here"),
        ("make docker-", "no container engine here"),
        ("make deploy", "no nodes here to run the manager's pod"),
        ("make undeploy", "no nodes here to run the manager's pod"),
        ("kubectl -n memcached-operator-system", "the deployed manager: no nodes here"),
        ("kubectl create clusterrolebinding", "the deployed manager's metrics: no nodes here"),
        ("curl ", "the deployed manager's metrics: no nodes here"),
        ("make test-e2e", "a kind cluster"),
        ("make test", "the generated projects' tests run in tests/generated.rs"),
        ("make setup-envtest", "downloads; KUBEBUILDER_ASSETS is given instead"),
        ("cargo bench", "a benchmark, not an outcome"),
        ("cargo test", "the generated projects' tests run in tests/generated.rs"),
    ];
    if let Some((_, why)) = skipped.iter().find(|(prefix, _)| command.starts_with(prefix)) {
        return Step::Skipped(why);
    }
    if command.ends_with(" -w") {
        return Step::Skipped("watches until interrupted");
    }
    if command.starts_with("memop ") {
        Step::Memop
    } else if command.starts_with("git ") {
        Step::Git
    } else if command.starts_with("helm ") || command == "make helm-lint" {
        Step::Helm
    } else if command == "make run" {
        Step::MakeRun
    } else if command == "make local-cluster" {
        Step::LocalCluster
    } else if command.starts_with("export KUBECONFIG=") {
        Step::Kubeconfig
    } else if command.starts_with("make ") || command.starts_with("kubectl ") {
        Step::Project
    } else {
        panic!("the tutorial has a command this test does not know what to do with: {command}")
    }
}

#[test]
fn the_tutorial_s_commands_work_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tutorial = std::fs::read_to_string(root.join("docs/getting-started.md")).unwrap();
    let commands = commands(&tutorial);
    assert!(commands.len() > 20, "{commands:?}");
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("memcached-operator");
    std::fs::create_dir(&dir).unwrap();
    let assets = std::env::var_os(memop_test::envtest::ASSETS_ENV).filter(|assets| !assets.is_empty());
    if assets.is_none() {
        let required = std::env::var(memop_test::envtest::REQUIRED_ENV).is_ok_and(|v| v == "1" || v == "true");
        assert!(!required, "ENVTEST_REQUIRED is set but KUBEBUILDER_ASSETS is not");
        eprintln!(
            "tutorial: its make and kubectl steps skipped: set KUBEBUILDER_ASSETS (scripts/envtest/build.sh prints it)"
        );
    }
    // Whether the local cluster runs pods (kwok's node): then the tutorial's wait for them is kept.
    let pods_run = assets.as_ref().is_some_and(|assets| Path::new(assets).join("kwok").is_file());
    let mut session = Session {
        dir: dir.clone(),
        assets: assets.map(PathBuf::from),
        kubeconfig: None,
        cluster: None,
        run: None,
        changed: false,
    };
    let mut skipped = Vec::new();
    let helm = std::env::var_os("HELM").filter(|helm| !helm.is_empty());
    if helm.is_none() {
        eprintln!("tutorial: its helm steps skipped: set HELM (scripts/helm/build.sh prints it)");
    }
    let (mut gits, mut helms) = (0, 0);
    for (command, shown) in &commands {
        match step(command) {
            Step::Skipped(why) => skipped.push(format!("{command}  ({why})")),
            Step::Git => {
                // A commit with nothing new (the reader had no edits) is no failure.
                let output = session.try_sh(command);
                assert!(
                    output.is_ok() || output.as_ref().is_err_and(|o| o.contains("nothing to commit")),
                    "{output:?}"
                );
                gits += 1;
            }
            Step::Helm if helm.is_none() => skipped.push(format!("{command}  (no HELM)")),
            Step::Helm if command == "make helm-lint" => {
                let output = session.sh(command, None);
                assert!(output.contains("1 chart(s) linted, 0 chart(s) failed"), "{output}");
                helms += 1;
            }
            Step::Helm if session.kubeconfig.is_none() => skipped.push(format!("{command}  (no KUBEBUILDER_ASSETS)")),
            Step::Helm => {
                let command = format!("\"$HELM\" {}", command.trim_start_matches("helm "));
                let output = session.sh(&command, None);
                if command.contains(" install ") {
                    assert!(output.contains("STATUS: deployed"), "{output}");
                    let deployments = session.sh("kubectl -n memcached-operator-system get deployments -o name", None);
                    assert!(deployments.contains("memcached-operator-controller-manager"), "{deployments}");
                }
                helms += 1;
            }
            Step::Memop => {
                let output = session.sh(command, None);
                if let Some(shown) = shown {
                    for line in shown.lines().map(str::trim).filter(|l| !l.is_empty() && *l != "…" && *l != "...") {
                        assert!(
                            output.contains(line),
                            "`{command}` did not print the tutorial's line {line:?}:\n{output}"
                        );
                    }
                }
                session.changed = true;
            }
            Step::Project if command == "make manifests" => {
                let output = session.sh(command, None);
                assert!(!output.contains("wrote "), "`make manifests` right after memop changed config/:\n{output}");
            }
            Step::LocalCluster | Step::Kubeconfig if session.assets.is_none() => {
                skipped.push(format!("{command}  (no KUBEBUILDER_ASSETS)"))
            }
            Step::LocalCluster => session.start_local_cluster(),
            Step::Kubeconfig => {
                let path = command.trim_start_matches("export KUBECONFIG=").replace("$PWD", dir.to_str().unwrap());
                assert!(Path::new(&path).is_file(), "{command}: no kubeconfig at {path}");
                session.kubeconfig = Some(PathBuf::from(path));
            }
            Step::Project | Step::MakeRun if session.kubeconfig.is_none() => {
                skipped.push(format!("{command}  (no KUBEBUILDER_ASSETS)"))
            }
            Step::Project if command.starts_with("kubectl wait ") && !pods_run => {
                skipped.push(format!("{command}  (no kwok in KUBEBUILDER_ASSETS: pods do not run)"))
            }
            Step::Project if command == "make install" => {
                session.sh(command, None);
            }
            Step::MakeRun => session.start_make_run(),
            Step::Project => {
                if session.changed && session.run.is_some() {
                    // The tutorial's "after make install and make run" at this step.
                    let output = session.sh("make install", None);
                    if dir.join("config/crd/patches").exists() {
                        assert!(output.contains("make run points them at this machine"), "{output}");
                    }
                    session.start_make_run();
                }
                session.sh(command, Some(Duration::from_secs(120)));
            }
        }
    }
    assert!(session.run.is_some(), "the tutorial never ran `make run`");
    session.stop_make_run_and_check_its_cleanup();
    session.stop_local_cluster();
    // The tutorial's repository: made after `memop init`, committed at each step, so that
    // `memop update` and the chart's merges had their base.
    assert!(gits >= 4, "only {gits} git steps");
    let log = session.sh("git log --oneline", None);
    assert!(log.contains("memop init") && log.contains("memop edit --plugins=helm/v2-alpha"), "{log}");
    if helm.is_some() {
        assert!(helms >= 2, "only {helms} helm steps ran");
    }
    eprintln!("tutorial: skipped, as this machine cannot run them:\n  {}", skipped.join("\n  "));
}

/// A `make run` in the background.
struct MakeRun {
    child: Child,
    /// Where its output goes.
    log: PathBuf,
    /// Whether the project had webhooks when it started.
    webhooks: bool,
}

/// The user's shell in the project: its environment, and the `make local-cluster` and `make run`
/// of its other terminals.
struct Session {
    dir: PathBuf,
    /// `KUBEBUILDER_ASSETS`, when the control plane's binaries are there.
    assets: Option<PathBuf>,
    /// The cluster admin's kubeconfig, once the tutorial exported it.
    kubeconfig: Option<PathBuf>,
    /// `make local-cluster`, while it runs, and where its output goes.
    cluster: Option<(Child, PathBuf)>,
    /// `make run`, while it runs.
    run: Option<MakeRun>,
    /// Whether memop changed the project since `make run` started.
    changed: bool,
}

impl Session {
    fn command(&self, command: &str) -> Command {
        let mut sh = common::command(&self.dir, "sh");
        sh.args(["-c", command]);
        let memop = assert_cmd::cargo::cargo_bin("memop");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![memop.parent().unwrap().to_path_buf()];
        paths.extend(std::env::split_paths(&path));
        sh.env("PATH", std::env::join_paths(paths).unwrap());
        for (key, value) in [
            ("GIT_AUTHOR_NAME", "Tutorial"),
            ("GIT_AUTHOR_EMAIL", "tutorial@example.com"),
            ("GIT_COMMITTER_NAME", "Tutorial"),
            ("GIT_COMMITTER_EMAIL", "tutorial@example.com"),
        ] {
            sh.env(key, value);
        }
        if let Some(kubeconfig) = &self.kubeconfig {
            sh.env("KUBECONFIG", kubeconfig);
        }
        if let Some(assets) = &self.assets {
            sh.env("KUBEBUILDER_ASSETS", assets);
        }
        sh
    }

    /// Runs `command` once: its output, as `Err` when it failed.
    fn try_sh(&self, command: &str) -> Result<String, String> {
        let output = self.command(command).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        if output.status.success() { Ok(text) } else { Err(text) }
    }

    /// Runs `command` until it succeeds (once, without `retry_for`); returns its output.
    fn sh(&self, command: &str, retry_for: Option<Duration>) -> String {
        let deadline = Instant::now() + retry_for.unwrap_or_default();
        loop {
            let output = self.command(command).output().unwrap();
            let text =
                format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
            if output.status.success() {
                return text;
            }
            if Instant::now() >= deadline {
                panic!("`{command}` failed in {}:\n{text}\n{}", self.dir.display(), self.make_run_log());
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// Starts `make run` (stopping one that runs), on free ports, and waits until it is ready.
    fn start_make_run(&mut self) {
        if self.run.is_some() {
            self.stop_make_run_and_check_its_cleanup();
        }
        let free = || memop_test::envtest::free_port().unwrap();
        let probes = free();
        let mut args = format!("--health-probe-bind-address=127.0.0.1:{probes}");
        let mut command = "exec make run".to_string();
        let webhooks = self.dir.join("src/webhook").exists();
        if webhooks {
            let webhooks = free();
            // What the Makefile gives it: no kind network here, so an API server on this machine.
            let dry_run = self.sh("make -n run", None);
            assert!(dry_run.contains("WEBHOOK_URL=https://127.0.0.1:9443"), "{dry_run}");
            args.push_str(&format!(" --webhook-bind-address=127.0.0.1:{webhooks}"));
            command.push_str(&format!(" WEBHOOK_URL=https://127.0.0.1:{webhooks}"));
        }
        // Beside the project, not in it: the tutorial's `git add -A` would commit it.
        let log = self.dir.with_file_name("make-run.log");
        let file = std::fs::File::create(&log).unwrap();
        let mut make = self.command(&format!("{command} RUN_ARGS='{args}'"));
        make.stdout(file.try_clone().unwrap()).stderr(file).stdin(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut make, 0);
        let child = make.spawn().unwrap();
        self.run = Some(MakeRun { child, log, webhooks });
        self.changed = false;
        // Its first build compiles the project: minutes on a cold target directory.
        let deadline = Instant::now() + Duration::from_secs(1200);
        loop {
            if let Some(run) = &mut self.run
                && let Some(status) = run.child.try_wait().unwrap()
            {
                panic!("`make run` exited with {status}:\n{}", self.make_run_log());
            }
            if memop_test::envtest::http_get(probes, "/readyz").is_some_and(|(status, _)| status == 200) {
                return;
            }
            assert!(Instant::now() < deadline, "`make run` never became ready:\n{}", self.make_run_log());
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Stops `make run` with Ctrl-C, as the tutorial does, and checks that it put back what it
    /// changed in the cluster for its webhooks.
    fn stop_make_run_and_check_its_cleanup(&mut self) {
        let mut run = self.run.take().expect("make run runs");
        let group = format!("-{}", run.child.id());
        Command::new("kill").args(["-INT", "--", &group]).status().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while run.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "`make run` did not stop on Ctrl-C");
            std::thread::sleep(Duration::from_millis(200));
        }
        let log = std::fs::read_to_string(&run.log).unwrap();
        if !run.webhooks {
            return;
        }
        assert!(log.contains("serving the webhooks on this machine"), "{log}");
        let conversion = self.sh(
            "kubectl get crd memcacheds.cache.example.com -o jsonpath='{.spec.conversion.webhook.clientConfig}'",
            None,
        );
        if self.dir.join("config/crd/patches").exists() {
            assert!(conversion.contains("\"service\"") && !conversion.contains("\"url\""), "{conversion}");
        }
        let left = self.sh("kubectl get mutatingwebhookconfigurations,validatingwebhookconfigurations -o name", None);
        assert!(!left.contains("-local-"), "make run left its webhook configurations: {left}");
    }

    /// Starts `make local-cluster` in its own process group (a terminal of its own), and waits
    /// until it says how to use it.
    fn start_local_cluster(&mut self) {
        let log = self.dir.with_file_name("local-cluster.log");
        let file = std::fs::File::create(&log).unwrap();
        let mut make = self.command("exec make local-cluster");
        make.stdout(file.try_clone().unwrap()).stderr(file).stdin(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut make, 0);
        let mut child = make.spawn().unwrap();
        // Its first build compiles the project's dev-dependencies: minutes on a cold target.
        let deadline = Instant::now() + Duration::from_secs(1200);
        loop {
            let output = std::fs::read_to_string(&log).unwrap_or_default();
            if output.contains("In another terminal:") {
                break;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("`make local-cluster` exited with {status}:\n{output}");
            }
            assert!(Instant::now() < deadline, "`make local-cluster` never came up:\n{output}");
            std::thread::sleep(Duration::from_millis(500));
        }
        self.cluster = Some((child, log));
    }

    /// Stops `make local-cluster` with Ctrl-C, as a user does: it stops every process it started
    /// and removes its directory.
    fn stop_local_cluster(&mut self) {
        let Some((mut child, log)) = self.cluster.take() else { return };
        let group = format!("-{}", child.id());
        Command::new("kill").args(["-INT", "--", &group]).status().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "`make local-cluster` did not stop on Ctrl-C");
            std::thread::sleep(Duration::from_millis(200));
        }
        let output = std::fs::read_to_string(&log).unwrap();
        assert!(output.contains("local-cluster: stopping"), "{output}");
        assert!(!self.dir.join("bin/local-cluster").exists(), "its directory is left:\n{output}");
        let port: u16 = output
            .split("kube-apiserver at https://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no kube-apiserver address in:\n{output}"));
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "kube-apiserver still listens");
    }

    fn make_run_log(&self) -> String {
        let mut log = String::new();
        if let Some(run) = &self.run
            && let Ok(mut file) = std::fs::File::open(&run.log)
        {
            let _ = file.read_to_string(&mut log);
        }
        format!("make run's output:\n{log}")
    }
}

#[test]
fn the_tutorial_s_commands_are_read_as_a_user_types_them() {
    let markdown = "Run:\n\n```sh\nmemop create webhook --group cache \\\n  --defaulting   # a comment\nmake run\n```\n\n```text\n  create  ./a\n…\n```\n\n```rust\nfn main() {}\n```\n";
    assert_eq!(
        commands(markdown),
        [
            ("memop create webhook --group cache --defaulting".to_string(), None),
            ("make run".to_string(), Some("  create  ./a\n…".to_string())),
        ]
    );
    assert_eq!(step("kubectl get deployment memcached-sample -w"), Step::Skipped("watches until interrupted"));
    assert_eq!(step("make run"), Step::MakeRun);
    assert_eq!(step("memop init --domain example.com"), Step::Memop);
}
