//! Rebuild memop when a template changes: `include_dir!` embeds `templates/`, but cargo only
//! tracks the files it is told about.
fn main() {
    println!("cargo:rerun-if-changed=templates");
}
