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

//! `make manifests`: writes the CRDs and the manager role into `config/` from the code.
//! With `--check`, writes nothing and fails when a file is stale (for CI).

use std::path::Path;
use std::process::ExitCode;

fn main() -> anyhow::Result<ExitCode> {
    let check = std::env::args().any(|a| a == "--check");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stale = 0;
    for (path, contents) in memcached_operator::manifests::render()? {
        let target = root.join(&path);
        if std::fs::read_to_string(&target).ok().as_deref() == Some(contents.as_str()) {
            continue;
        }
        stale += 1;
        if check {
            eprintln!("stale: {}", path.display());
        } else {
            if let Some(dir) = target.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&target, contents)?;
            println!("wrote {}", path.display());
        }
    }
    if check && stale > 0 {
        eprintln!("{stale} file(s) in config/ are stale: run `make manifests`");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
