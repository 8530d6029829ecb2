//! Rebuild memop when a template or a runtime crate changes: `include_dir!` embeds `templates/`
//! and `crates/`, but cargo only tracks the files it is told about.
fn main() {
    println!("cargo:rerun-if-changed=templates");
    println!("cargo:rerun-if-changed=crates");
}
