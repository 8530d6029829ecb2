// Copyright 2026 The memcached-operator Authors.
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

#[test]
fn config_is_up_to_date_with_the_code() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stale = Vec::new();
    for (path, expected) in memcached_operator::manifests::render().expect("rendering manifests") {
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
