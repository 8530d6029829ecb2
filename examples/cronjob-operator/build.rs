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

//! Tells the tests whether a real control plane is there. With `KUBEBUILDER_ASSETS` set (`make
//! test` sets it once `make setup-envtest` has run), or with `ENVTEST_REQUIRED=1` (which then
//! fails without it), the real-control-plane tests are built to run; without, they are not built
//! as tests (they still compile), so that nothing counts them as passed, and one test,
//! `real_control_plane` in `tests/manifests.rs`, says so in one line, ignored. Only this crate is
//! rebuilt when the variables change, not its dependencies.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(envtest)");
    println!("cargo::rerun-if-env-changed=KUBEBUILDER_ASSETS");
    println!("cargo::rerun-if-env-changed=ENVTEST_REQUIRED");
    let required = std::env::var("ENVTEST_REQUIRED").is_ok_and(|v| v == "1" || v == "true");
    let assets = std::env::var_os("KUBEBUILDER_ASSETS").is_some_and(|v| !v.is_empty());
    if required || assets {
        println!("cargo::rustc-cfg=envtest");
    }
}
