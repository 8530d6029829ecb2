//! One module per subcommand. A command validates its input, builds a template context and a
//! [`Plan`](crate::scaffold::Plan); it never writes to disk itself.

pub mod autoupdate;
pub mod completion;
pub mod context;
pub mod create_api;
pub mod create_webhook;
pub mod delete_api;
pub mod edit;
pub mod external_types;
pub mod frame;
mod gvk;
pub mod helm;
pub mod init;
pub mod plugins;
pub mod replay;
mod report;
pub mod update;
pub mod version;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use crate::scaffold::{Plan, router};
use report::Line;
pub use report::Report;

/// Options every command takes.
#[derive(Debug)]
pub struct Global {
    pub dir: PathBuf,
    pub dry_run: bool,
}

/// Writes `text` to standard output; a failure (a closed pipe, a full disk) is an error that says
/// so, not a panic.
pub fn say(text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).context("writing to standard output")
}

/// [`say`] for what a command tells once its work is done: a reader that stopped reading
/// (`| head`) wanted no more, and the command did not fail.
pub fn tell(text: &str) -> Result<()> {
    match say(text) {
        Err(err)
            if err
                .root_cause()
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(())
        }
        result => result,
    }
}

/// Prints the answers to flags of `report` that are not printed yet (see [`Report::answer`]):
/// `finish` prints them first, and `main` those of a command that failed before it.
pub fn print_answers(report: &mut Report) {
    for line in report.take_answers() {
        crate::warn_line!("{line}");
    }
}

/// Formats the plan and records it in `PROJECT.sum`, then shows it (a dry run) or writes it and
/// keeps the plan's merge bases at once; only then prints the report's answers to flags, the
/// plan's warnings, the files and the rest of the report, in that order for a dry run as for a
/// real one. Fails, once all is printed, when files are in conflict; a command that stops at
/// conflicts (`update`, see [`Report::stop_at_conflicts`]) writes only the files in them.
pub fn finish(global: &Global, plan: Plan, report: &mut Report) -> Result<()> {
    let mut plan = match report.stopped_at().as_slice() {
        [] => plan,
        conflicts => only_conflicts(global, conflicts)?,
    };
    plan.format_rust()?;
    plan.write_record()?;
    // The last moment to stop: after it, the plan is written whole.
    if crate::interrupted() {
        bail!("interrupted; nothing was written");
    }
    let warnings = plan.notes().to_vec();
    let (files, written) = match (global.dry_run, plan.is_empty()) {
        (true, _) => (plan.render_dry_run(), false),
        (false, true) => ("Nothing to do: the project already has everything this command generates.\n".into(), false),
        (false, false) => {
            let root = plan.root().to_path_buf();
            (written_files(&root, &plan.apply()?), true)
        }
    };
    print_answers(report);
    for warning in warnings {
        crate::warn_line!("warning: {warning}");
    }
    let out = |text: &str| match written {
        true => tell(text).context("the changes were written (`git status` shows them), but not their report"),
        false => tell(text),
    };
    match written {
        true => out(&files)?,
        // A dry run cut short shows less than the real run would do: a failure.
        false => say(&files)?,
    }
    for line in report.lines(written) {
        match line {
            Line::Out(text) => out(&text)?,
            Line::Err(text) => crate::warn_line!("{text}"),
        }
    }
    report.conflicts(global.dry_run)
}

/// The plan of a command stopped at `conflicts`: their files alone, with the markers, and their
/// records (memop's new text, so that the next command finds the resolution merged already).
fn only_conflicts(global: &Global, conflicts: &[&router::Conflict]) -> Result<Plan> {
    let mut marked = Plan::new(&global.dir)?;
    for (path, text, new) in conflicts {
        marked.write_formatted(path, text.clone())?;
        marked.set_base(path, new.clone());
    }
    Ok(marked)
}

/// The files `applied` wrote under `root`, one line each.
fn written_files(root: &Path, applied: &crate::scaffold::Applied) -> String {
    let mut report = String::new();
    // memop's copies of its runtime crates are one line each: they are not files to read.
    let mut vendored: std::collections::BTreeMap<PathBuf, usize> = Default::default();
    for path in &applied.created {
        match vendored_crate(path) {
            Some(krate) => *vendored.entry(krate).or_default() += 1,
            None => report.push_str(&format!("  create  {}\n", root.join(path).display())),
        }
    }
    for (krate, files) in vendored {
        let name = krate.file_name().unwrap_or_default().to_string_lossy();
        report.push_str(&format!(
            "  create  {}/ ({files} files: memop's copy of {name}, not for editing)\n",
            root.join(&krate).display()
        ));
    }
    for path in &applied.updated {
        report.push_str(&format!("  update  {}\n", root.join(path).display()));
    }
    for path in &applied.removed {
        report.push_str(&format!("  remove  {}\n", root.join(path).display()));
    }
    report
}

/// `vendor/<crate>` for a path inside it.
fn vendored_crate(path: &Path) -> Option<PathBuf> {
    let mut parts = path.components();
    let vendor = parts.next()?;
    let krate = parts.next()?;
    (vendor.as_os_str() == crate::scaffold::VENDOR && parts.next().is_some())
        .then(|| Path::new(vendor.as_os_str()).join(krate.as_os_str()))
}

#[cfg(test)]
mod tests {
    type Imports = std::collections::BTreeMap<String, std::collections::BTreeSet<String>>;

    /// The modules of `src/<parent>/` (of the crate, for `""`) that each one uses outside its
    /// tests and comments: `crate::<parent>::x`, and from its own files `super::x` (from a file
    /// of its directory, `super::super::x`).
    fn imports(parent: &str) -> Imports {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(parent);
        let modules: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_dir() || path.extension().is_some_and(|e| e == "rs"))
            .filter_map(|path| Some(path.file_stem()?.to_str()?.to_string()))
            .filter(|name| !matches!(name.as_str(), "mod" | "lib" | "main"))
            .collect();
        let absolute = match parent {
            "" => "crate::".to_string(),
            parent => format!("crate::{parent}::"),
        };
        let mut imports = Imports::new();
        for module in &modules {
            let files: Vec<(std::path::PathBuf, &str)> = match root.join(module).is_dir() {
                true => std::fs::read_dir(root.join(module))
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .filter(|path| path.extension().is_some_and(|e| e == "rs"))
                    .map(|path| {
                        let parent = if path.ends_with("mod.rs") { "super::" } else { "super::super::" };
                        (path, parent)
                    })
                    .collect(),
                false => vec![(root.join(format!("{module}.rs")), "super::")],
            };
            let used = imports.entry(module.clone()).or_default();
            for (file, relative) in files {
                let text = std::fs::read_to_string(&file).unwrap();
                let code: String = text
                    .split("#[cfg(test)]")
                    .next()
                    .unwrap()
                    .lines()
                    .filter(|line| !line.trim_start().starts_with("//"))
                    .collect::<Vec<_>>()
                    .join("\n");
                let prefixes = if parent.is_empty() { vec![absolute.as_str()] } else { vec![&absolute, relative] };
                for prefix in prefixes {
                    for (at, _) in code.match_indices(prefix) {
                        let rest = &code[at + prefix.len()..];
                        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                        if modules.contains(&name) && name != *module {
                            used.insert(name);
                        }
                    }
                }
            }
        }
        imports
    }

    /// Panics naming the first circle of `imports`.
    fn assert_no_circle(imports: &Imports) {
        fn reach(from: &str, imports: &Imports, path: &mut Vec<String>) {
            for next in &imports[from] {
                assert!(!path.contains(next), "an import circle: {} → {next}", path.join(" → "));
                path.push(next.clone());
                reach(next, imports, path);
                path.pop();
            }
        }
        for module in imports.keys() {
            reach(module, imports, &mut vec![module.clone()]);
        }
    }

    /// No module of `src/`, `src/commands/` or `src/scaffold/` reaches itself through the
    /// modules it uses. There were two circles: `create_api → helm → update → create_api` (the
    /// merge engine lived in a command) and `names → scaffold → plan → merge/sum → project →
    /// scaffold` (the names memop reserves were read from the engine, and PROJECT through a plan).
    #[test]
    fn src_has_no_import_circle() {
        let crate_root = imports("");
        assert!(crate_root["names"].contains("embedded") && crate_root["scaffold"].contains("sum"), "{crate_root:?}");
        assert_no_circle(&crate_root);
        let commands = imports("commands");
        assert!(commands["edit"].contains("autoupdate") && commands["update"].contains("replay"), "{commands:?}");
        assert_no_circle(&commands);
        let scaffold = imports("scaffold");
        assert!(scaffold["reconcile"].contains("merge"), "{scaffold:?}");
        assert_no_circle(&scaffold);
    }
}
