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

//! `make local-cluster`: a Kubernetes control plane on this machine, from the envtest binaries
//! (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, which simulates one
//! node), for `make install run` without kind or docker. It prints the kubeconfig to export, and
//! runs until Ctrl-C, which stops it all and removes its directory (the first argument).

use std::path::PathBuf;

fn main() -> Result<(), String> {
    let dir = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from("bin/local-cluster"), PathBuf::from);
    memop_test::envtest::run_local(&dir)
}
