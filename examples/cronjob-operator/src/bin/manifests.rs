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

//! `make manifests`: writes the CRDs and the manager role into `config/` from the code.
//! With `--check`, writes nothing and fails when a file is stale (for CI).

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    memop_runtime::manifests::main(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        cronjob_operator::manifests::render,
    )
}
