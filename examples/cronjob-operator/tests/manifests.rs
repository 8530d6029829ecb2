// Copyright 2026 The cronjob-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! `config/` must match the code: the CRDs and the manager role are generated from the Rust
//! types and RBAC rules, and a forgotten `make manifests` is caught here, not in a cluster.
//!
//! And whether the real-control-plane tests run: without `KUBEBUILDER_ASSETS` (see `build.rs`)
//! they are not built, and `real_control_plane` is the one line of `cargo test` that says so.

#[test]
fn config_is_up_to_date_with_the_code() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stale = Vec::new();
    for (path, expected) in cronjob_operator::manifests::render().expect("rendering manifests") {
        let actual = std::fs::read_to_string(root.join(&path)).unwrap_or_default();
        if actual != expected {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files: {}\nrun `make manifests` (cargo run --bin manifests) and commit the result",
        stale.join(", ")
    );
}

/// The real-control-plane tests (`real_control_plane::*` and the tests marked
/// `cfg_attr(envtest, tokio::test)`) are built only with `KUBEBUILDER_ASSETS` set, or with
/// `ENVTEST_REQUIRED=1`: without, this is the one line of `cargo test` that says they did not run.
/// With, it checks that the assets are there.
#[test]
#[cfg_attr(
    not(envtest),
    ignore = "the real-control-plane tests are not built without KUBEBUILDER_ASSETS: run `make setup-envtest` and `make test` (ENVTEST_REQUIRED=1 makes this a failure)"
)]
fn real_control_plane() {
    let assets = std::env::var_os("KUBEBUILDER_ASSETS")
        .filter(|dir| !dir.is_empty())
        .expect("ENVTEST_REQUIRED=1 needs KUBEBUILDER_ASSETS: run `make setup-envtest`");
    for binary in ["kube-apiserver", "etcd"] {
        let path = std::path::Path::new(&assets).join(binary);
        assert!(
            path.is_file(),
            "{} not found: run `make setup-envtest`",
            path.display()
        );
    }
}
