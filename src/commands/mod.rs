//! One module per subcommand. A command validates its input, builds a template context and a
//! [`Plan`](crate::scaffold::Plan); it never writes to disk itself.

pub mod completion;
pub mod context;
mod crd;
pub mod create_api;
pub mod create_webhook;
pub mod init;
pub mod lockfile;
pub mod plugins;
pub mod update;
pub mod version;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use crate::scaffold::Plan;

/// Options every command takes.
#[derive(Debug)]
pub struct Global {
    pub dir: PathBuf,
    pub dry_run: bool,
}

/// The lock file that keeps two memop commands from changing one project at once (each would
/// read PROJECT before the other wrote it, and one API would be lost).
pub const LOCK_FILE: &str = ".memop.lock";

/// Held while a command works on a project; dropping it removes the lock file.
pub struct Lock(PathBuf);

impl Lock {
    /// Takes the lock of the project in `dir`, or says who holds it. `None` when `dir` does not
    /// exist yet (nothing else can be working on it).
    pub fn take(dir: &Path) -> Result<Option<Self>> {
        if !dir.is_dir() {
            return Ok(None);
        }
        let path = dir.join(LOCK_FILE);
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut file) => {
                use std::io::Write as _;
                let _ = writeln!(file, "{}", std::process::id());
                Ok(Some(Self(path)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                bail!(
                    "another memop command is working on this project (it holds {}, process {}); \
                     wait for it to finish and run this one again. If none is running (it was \
                     killed), delete that file",
                    path.display(),
                    holder.trim()
                )
            }
            Err(e) => Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes `text` to standard output; a failure (a closed pipe, a full disk) is an error that says
/// so, not a panic.
pub fn say(text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).context("writing to standard output")
}

/// Prints a dry run, or applies the plan and lists what was written.
///
/// Returns whether anything was written, so the caller can tailor its closing hint.
pub fn finish(global: &Global, mut plan: Plan) -> Result<bool> {
    plan.format_rust()?;
    record(&mut plan)?;
    // The last moment to stop: after it, the plan is written whole.
    if crate::interrupted() {
        bail!("interrupted; nothing was written");
    }
    for note in plan.notes() {
        eprintln!("warning: {note}");
    }
    if global.dry_run {
        say(&plan.render_dry_run())?;
        return Ok(false);
    }
    if plan.is_empty() {
        say("Nothing to do: the project already has everything this command generates.\n")?;
        return Ok(false);
    }
    let root = plan.root().to_path_buf();
    let applied = plan.apply()?;
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
    say(&report)?;
    Ok(true)
}

/// Adds to the plan `PROJECT.sum` with the blob id of every file the plan writes, so that a
/// later update knows what memop wrote (see [`crate::sum`]).
fn record(plan: &mut Plan) -> Result<()> {
    if plan.is_empty() {
        return Ok(());
    }
    let path = Path::new(crate::sum::FILE);
    let mut sum = crate::sum::Sum::parse(plan.read(path)?.as_deref())?;
    for (file, text) in plan.planned().filter(|(p, _)| *p != path) {
        sum.wrote(file, text);
    }
    plan.write(path, sum.render(env!("CARGO_PKG_VERSION")), crate::scaffold::IfExists::Overwrite)
}

/// `vendor/<crate>` for a path inside it.
fn vendored_crate(path: &Path) -> Option<PathBuf> {
    let mut parts = path.components();
    let vendor = parts.next()?;
    let krate = parts.next()?;
    (vendor.as_os_str() == crate::scaffold::VENDOR && parts.next().is_some())
        .then(|| Path::new(vendor.as_os_str()).join(krate.as_os_str()))
}

/// The year for license headers: `SOURCE_DATE_EPOCH` when set (reproducible output), else now.
pub fn current_year() -> i64 {
    let secs = std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.parse::<i64>().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
    });
    civil_year(secs.div_euclid(86_400))
}

/// The Gregorian year of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_year(days: i64) -> i64 {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(month <= 2)
}

#[cfg(test)]
mod tests {
    use super::civil_year;

    #[test]
    fn civil_year_matches_known_dates() {
        assert_eq!(civil_year(0), 1970);
        assert_eq!(civil_year(20_454), 2026); // 2026-01-01
        assert_eq!(civil_year(20_453), 2025); // 2025-12-31
        assert_eq!(civil_year(11_016), 2000); // 2000-02-29
    }
}
