//! Rebuild memop when a template or a runtime crate changes: `include_dir!` embeds `templates/`
//! and `crates/`, but cargo only tracks the files it is told about. Also records the git commit
//! memop is built from, and its date, for `memop version` (as kubebuilder's reports them).
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=templates");
    println!("cargo:rerun-if-changed=crates");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .map(|text| text.trim().to_string())
            .filter(|text| !text.is_empty())
    };
    // Outside a git checkout (a packaged memop), there is no commit to name.
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let date = git(&["log", "-1", "--format=%cs"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=MEMOP_COMMIT={commit}");
    println!("cargo:rustc-env=MEMOP_COMMIT_DATE={date}");
}
