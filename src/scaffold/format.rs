//! rustfmt over the Rust files of a plan, as kubebuilder runs goimports over Go files.
//!
//! Templates are written formatted for typical names, but where rustfmt breaks a line depends
//! on how long the names in it are; formatting the rendered files is the only way every
//! generated project passes `cargo fmt --check`. All files go through one rustfmt process, in a
//! scratch directory: rustfmt also formats the files of out-of-line modules (`mod x;`), so each
//! `#[path = "…"]` is pointed at a stand-in inside the scratch directory while it runs, and
//! nothing outside it is ever read, created or formatted.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

/// rustfmt could not parse a file the plan writes: the project would not compile.
#[derive(Debug)]
pub struct Unparsable(pub String);

impl std::fmt::Display for Unparsable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rustfmt cannot parse the Rust this command would write:\n{}", self.0)
    }
}

impl std::error::Error for Unparsable {}

/// Formats `files` (path, contents) in place. Errors when rustfmt is missing, and with
/// [`Unparsable`] when it cannot parse one of them.
pub fn rustfmt(files: &mut [(PathBuf, String)], project: &Path) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let scratch = tempdir()?;
    let result = format_in(&scratch, files, project);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn format_in(scratch: &Path, files: &mut [(PathBuf, String)], project: &Path) -> Result<()> {
    let mut paths = Vec::with_capacity(files.len());
    let mut redirected = Vec::new();
    for (relative, contents) in files.iter_mut() {
        let path = scratch.join(relative);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        *contents = redirect_paths(contents, &mut redirected);
        std::fs::write(&path, &*contents)?;
        paths.push(path);
    }
    // rustfmt follows `mod x;` into x.rs and fails when it is missing; modules outside the plan
    // get an empty stand-in (their own formatting is not our business).
    for ((_, contents), path) in files.iter().zip(&paths) {
        for child in child_modules(path, contents) {
            if !child.exists() && !child.with_extension("").join("mod.rs").exists() {
                std::fs::create_dir_all(child.parent().unwrap_or(scratch))?;
                std::fs::write(&child, "")?;
            }
        }
    }
    let mut cmd = Command::new(std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into()));
    cmd.args(["--edition", "2024", "--quiet"]);
    // A project's own rustfmt settings win, as with `cargo fmt`.
    for name in ["rustfmt.toml", ".rustfmt.toml"] {
        let config = project.join(name);
        if config.is_file() {
            cmd.arg("--config-path").arg(config);
            break;
        }
    }
    let output = cmd.args(&paths).output();
    let result = match output {
        Ok(out) if out.status.success() => {
            for ((_, contents), path) in files.iter_mut().zip(&paths) {
                *contents = std::fs::read_to_string(path)?;
            }
            Ok(())
        }
        Ok(out) => {
            // rustfmt names the scratch copies: name the project's files instead.
            let scratch_prefix = format!("{}/", scratch.display());
            let stderr = String::from_utf8_lossy(&out.stderr).replace(&scratch_prefix, "");
            Err(Unparsable(stderr.trim().to_string()).into())
        }
        Err(e) => Err(e).context("running rustfmt"),
    };
    // Put the real paths back, formatted or not.
    for (_, contents) in files.iter_mut() {
        for (stand_in, original) in &redirected {
            *contents = contents.replace(stand_in.as_str(), original);
        }
    }
    result
}

/// `contents` with the path of every `#[path = "…"]` attribute replaced by a stand-in file name
/// beside the file (recorded in `redirected` with the original, to put back afterwards).
fn redirect_paths(contents: &str, redirected: &mut Vec<(String, String)>) -> String {
    let mut out = String::with_capacity(contents.len());
    for line in contents.split_inclusive('\n') {
        let attribute = line.trim_start();
        let quoted = attribute
            .strip_prefix("#[path")
            .and_then(|rest| rest.trim_start().strip_prefix('='))
            .and_then(|rest| rest.trim_start().strip_prefix('"'))
            .and_then(|rest| rest.split_once('"'));
        match quoted {
            Some((original, _)) => {
                let stand_in = format!("memop_path_stand_in_{}.rs", redirected.len());
                out.push_str(&line.replacen(&format!("\"{original}\""), &format!("\"{stand_in}\""), 1));
                redirected.push((stand_in, original.to_string()));
            }
            None => out.push_str(line),
        }
    }
    out
}

/// Where the out-of-line modules that `file` declares live: `dir/x.rs` beside a `mod.rs`,
/// `lib.rs` or `main.rs` (and any test crate root), `dir/file/x.rs` otherwise.
fn child_modules(file: &Path, contents: &str) -> Vec<PathBuf> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let crate_root = matches!(stem, "mod" | "lib" | "main") || dir.ends_with("tests") || dir.ends_with("bin");
    let base = if crate_root { dir.to_path_buf() } else { dir.join(stem) };
    let mut children = Vec::new();
    // `#[path = "…"]` on the line before names the file itself, relative to this one.
    let mut explicit: Option<PathBuf> = None;
    for line in contents.lines().map(str::trim) {
        if let Some(path) = line.strip_prefix("#[path = \"").and_then(|p| p.strip_suffix("\"]")) {
            explicit = Some(dir.join(path));
            continue;
        }
        let declared = line.strip_prefix("pub mod ").or_else(|| line.strip_prefix("mod "));
        let name = declared.and_then(|rest| rest.strip_suffix(';')).map(str::trim);
        if let Some(name) = name.filter(|n| n.chars().all(|c| c.is_alphanumeric() || c == '_')) {
            children.push(explicit.take().unwrap_or_else(|| base.join(format!("{name}.rs"))));
        }
        explicit = None;
    }
    children
}

fn tempdir() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let dir = base.join(format!("memop-fmt-{}-{attempt}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).context("creating a scratch directory for rustfmt"),
        }
    }
    bail!("could not create a scratch directory for rustfmt in {}", base.display())
}
