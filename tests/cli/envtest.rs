//! The generated Makefile's long or outside-facing steps, run with stand-ins (no build, no
//! network): `make setup-envtest` finds the envtest binaries in setup-envtest's store, preferring
//! a release with the rollout machinery, and says what it found; without any, and without the
//! network, it fails saying what to do and leaves no empty directory; the first `make manifests`
//! says that it builds the project's dependencies and for about how long.

use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;

use super::*;

/// `make` in `dir` with `args`, or `None` (said once) when there is no `make`.
fn make(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Option<std::process::Output> {
    let mut command = Command::new("make");
    command.current_dir(dir).args(args).env_remove("KUBEBUILDER_ASSETS").env_remove("ENVTEST_DIR");
    for (key, value) in env {
        command.env(key, value);
    }
    match command.output() {
        Ok(out) => Some(out),
        Err(_) => {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| eprintln!("make not found: the generated Makefile's targets were not run"));
            None
        }
    }
}

/// Executable stand-ins named `binaries` in `dir`.
fn stand_ins(dir: &Path, binaries: &[&str]) {
    fs::create_dir_all(dir).unwrap();
    for binary in binaries {
        fs::write(dir.join(binary), "#!/bin/sh\necho \"$0 $*\"\n").unwrap();
        fs::set_permissions(dir.join(binary), fs::Permissions::from_mode(0o755)).unwrap();
    }
}

const PLATFORM: [&str; 2] = ["ENVTEST_OS=linux", "ENVTEST_ARCH=amd64"];

#[test]
fn setup_envtest_uses_setup_envtests_store_and_prefers_the_rollout_machinery() {
    let (tmp, dir) = project(&[]);
    let data = tmp.path().join("data");
    let store = data.join("kubebuilder-envtest/k8s");
    let three = ["kube-apiserver", "etcd", "kubectl"];
    stand_ins(&store.join("1.37.1-linux-amd64"), &three);
    stand_ins(&store.join("1.37.4-linux-amd64"), &three);
    // Another minor is not the project's Kubernetes, however complete.
    stand_ins(&store.join("1.38.0-linux-amd64"), &three);
    stand_ins(&store.join("1.38.0-linux-amd64"), &["kube-controller-manager", "kube-scheduler", "kwok"]);
    let setup = |what: &str| {
        let out = make(&dir, &[&["-s", "setup-envtest"][..], &PLATFORM].concat(), &[("XDG_DATA_HOME", &data)])?;
        let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
        assert!(out.status.success(), "{what}: {stdout}{stderr}");
        Some((stdout, stderr))
    };
    let Some((stdout, stderr)) = setup("three binaries") else { return };
    // The newest patch, in place: nothing downloaded into bin/.
    let newest = store.join("1.37.4-linux-amd64");
    assert_eq!(stdout, format!("export KUBEBUILDER_ASSETS={}\n", newest.display()), "{stderr}");
    assert!(stderr.contains("has kube-apiserver and etcd only"), "{stderr}");
    assert!(stderr.contains("scripts/envtest/build.sh builds the rest"), "{stderr}");
    assert!(!dir.join("bin/k8s").exists());

    // A release with kube-controller-manager, kube-scheduler and kwok wins, though older.
    stand_ins(&store.join("1.37.1-linux-amd64"), &["kube-controller-manager", "kube-scheduler", "kwok"]);
    let (stdout, stderr) = setup("the rollout machinery").unwrap();
    let rollouts = store.join("1.37.1-linux-amd64");
    assert_eq!(stdout, format!("export KUBEBUILDER_ASSETS={}\n", rollouts.display()), "{stderr}");
    assert!(stderr.contains("roll Deployments out for real"), "{stderr}");

    // `make test` gives cargo the same directory (a stand-in cargo prints what it got).
    let bin = tmp.path().join("bin");
    stand_ins(&bin, &[]);
    fs::write(bin.join("cargo"), "#!/bin/sh\necho \"cargo $* KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS\"\n").unwrap();
    fs::set_permissions(bin.join("cargo"), fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = make(
        &dir,
        &[&["-s", "test"][..], &PLATFORM].concat(),
        &[("XDG_DATA_HOME", &data), ("PATH", Path::new(&path)), ("CARGO_TARGET_DIR", &tmp.path().join("target"))],
    )
    .unwrap();
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains(&format!("cargo test KUBEBUILDER_ASSETS={}\n", rollouts.display())), "{stdout}");
    // The first `make manifests` says what it builds and for about how long, once.
    assert!(stdout.contains("cargo run --bin manifests"), "{stdout}");
    assert_eq!(count(&stderr, "make manifests: first build of the project and its dependencies"), 1, "{stderr}");
    assert!(stderr.contains("several minutes on 2 cores, once"), "{stderr}");
    stand_ins(&tmp.path().join("target/debug"), &["manifests"]);
    let out = make(
        &dir,
        &["-s", "manifests"],
        &[("PATH", Path::new(&path)), ("CARGO_TARGET_DIR", &tmp.path().join("target"))],
    )
    .unwrap();
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "", "built already: no notice");
}

#[test]
fn setup_envtest_without_the_store_or_the_network_says_what_to_do() {
    let (tmp, dir) = project(&[]);
    let data = tmp.path().join("empty");
    let url = format!("ENVTEST_URL=file://{}/missing.tar.gz", tmp.path().display());
    let Some(out) = make(&dir, &[&["-s", "setup-envtest", &url][..], &PLATFORM].concat(), &[("XDG_DATA_HOME", &data)])
    else {
        return;
    };
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("envtest: downloading kube-apiserver, etcd and kubectl 1.37.0"), "{stderr}");
    assert!(stderr.contains("no binaries of 1.37 in"), "{stderr}");
    assert!(stderr.contains("scripts/envtest/build.sh"), "{stderr}");
    // It left no empty directory that a later `make test` would take for the binaries.
    assert!(!dir.join("bin/k8s/1.37.0-linux-amd64").exists());
}
