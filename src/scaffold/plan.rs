//! A plan: every file operation of a command, computed in memory before anything is written.
//!
//! The plan is a view of the target directory: reading a path gives the planned contents if an
//! earlier operation touched it, else what is on disk. So a command can create a file and insert
//! into it in one plan. Nothing touches the disk until [`Plan::apply`], which writes every file to
//! a temporary sibling first and renames them into place only when all were written.
//!
//! Line endings are handled here alone: a file is read with `\n` endings (git checks files out
//! with `\r\n` where `core.autocrlf` says so, which is no edit), and a file that had `\r\n` on
//! disk is written back with them, so only the lines that changed differ.
//!
//! memop never writes outside the project: a path whose file or any directory on the way, below
//! the project's own directory, is a symbolic link is refused before anything is written (the
//! link could lead anywhere), and temporary files get unpredictable names and are created
//! exclusively, so a link planted at such a name is never followed.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use super::Declared;
use super::router::Base;
use crate::sum::{self, Sum};

/// A planned change; `old` is the file as on disk, in its own line endings (which an update
/// keeps, and a failed apply restores).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    Create { contents: String },
    Update { old: String, new: String },
    Remove { old: String },
}

/// The planned changes, keyed by path relative to the plan's root.
#[derive(Debug)]
pub struct Plan {
    root: PathBuf,
    changes: BTreeMap<PathBuf, Change>,
    /// Files written verbatim from templates that are already formatted.
    formatted: BTreeSet<PathBuf>,
    notes: Vec<String>,
    /// `PROJECT.sum` as the command found it, loaded once ([`Plan::new`]): what memop last wrote
    /// into each file, the base of every merge; and whether the plan forgot files of it.
    record: Sum,
    forgot: bool,
    /// The merge bases, the one place they are held: what memop's templates gave for a file
    /// whose text holds more (the user's edits, merged in; or a file of the user's that memop
    /// left). `PROJECT.sum` records this, and git keeps it, the base of the next merge.
    bases: BTreeMap<PathBuf, String>,
    /// Files the plan leaves as they are that hold memop's text, for `PROJECT.sum`.
    unchanged: BTreeMap<PathBuf, String>,
    /// Files a fragment was inserted into: their planned text holds what was there before.
    inserted: BTreeSet<PathBuf>,
    /// What the template of each file it rendered declares (see [`Declared`]).
    declared: BTreeMap<PathBuf, Declared>,
    /// A scratch plan sees no disk: see [`Plan::scratch`].
    scratch: bool,
}

/// Whether `text`, the file at `path`, is not what `sum` records memop wrote there.
fn edited(sum: &Sum, path: &Path, text: Option<&str>) -> bool {
    let recorded = sum.get(&path.to_string_lossy());
    matches!((recorded, text), (Some(_), Some(text)) if !sum::as_recorded(text, recorded))
}

/// What [`Plan::apply`] did, for the command's report.
#[derive(Debug, Default)]
pub struct Applied {
    pub created: Vec<PathBuf>,
    pub updated: Vec<PathBuf>,
    pub removed: Vec<PathBuf>,
}

impl Plan {
    /// The plan of a command on the project at `root`, with its `PROJECT.sum` loaded.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self> {
        let mut plan = Self::unrecorded(root);
        plan.record = Sum::parse(plan.read_disk(Path::new(sum::FILE))?.as_deref())?;
        Ok(plan)
    }

    /// A plan of the project at `root` that knows no `PROJECT.sum` (see [`Plan::new`]).
    fn unrecorded(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            record: Sum::default(),
            forgot: false,
            changes: BTreeMap::new(),
            formatted: BTreeSet::new(),
            notes: Vec::new(),
            bases: BTreeMap::new(),
            unchanged: BTreeMap::new(),
            inserted: BTreeSet::new(),
            declared: BTreeMap::new(),
            scratch: false,
        }
    }

    /// A plan of the project at `root` as if its directory were empty: it reads only what it
    /// planned, so the commands' scaffolds replayed into it give the text memop writes for the
    /// project from PROJECT alone (what `memop update` compares your files with). Formatting
    /// follows the project's `rustfmt.toml`; it is never applied.
    pub fn scratch(root: impl Into<PathBuf>) -> Self {
        Self { scratch: true, ..Self::unrecorded(root) }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Adds a warning for the user to the plan's (printed before the plan is applied).
    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// Warnings gathered while planning (files kept, for instance).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The contents of `path` as the plan sees it, or `None` when it does not exist.
    pub fn read(&self, path: &Path) -> Result<Option<String>> {
        self.check_inside(path)?;
        match self.changes.get(path) {
            Some(Change::Create { contents }) => Ok(Some(contents.clone())),
            Some(Change::Update { new, .. }) => Ok(Some(new.clone())),
            Some(Change::Remove { .. }) => Ok(None),
            None => self.read_disk(path),
        }
    }

    /// What is on disk at `path`, in `\n` line endings: nothing, for a scratch plan.
    pub fn read_disk(&self, path: &Path) -> Result<Option<String>> {
        Ok(self.read_raw(path)?.map(|text| unix_endings(&text).into_owned()))
    }

    /// What is on disk at `path`, in its own line endings.
    fn read_raw(&self, path: &Path) -> Result<Option<String>> {
        if self.scratch { Ok(None) } else { crate::fs::read_regular(&self.root, path) }
    }

    /// What memop last wrote into each file, as the command found `PROJECT.sum`.
    pub fn record(&self) -> &Sum {
        &self.record
    }

    /// Where the base of a merge of the plan's files comes from: its record, and `replay`'s
    /// text where given (see [`Base`]).
    pub(crate) fn base<'a>(&'a self, replay: Option<&'a Plan>) -> Base<'a> {
        Base { record: &self.record, dir: &self.root, replay }
    }

    /// Forgets the record of `path`, a file gone already (a command killed as it removed it):
    /// `PROJECT.sum` is written without it.
    pub fn forget(&mut self, path: &Path) {
        self.record.forget(path);
        self.forgot = true;
    }

    /// Adds to the plan `PROJECT.sum` with the blob id of every file the plan writes (after
    /// formatting: exactly the text written), so that a later update knows what memop wrote (see
    /// [`crate::sum`]); and without the files it removes, or forgot.
    pub fn write_record(&mut self) -> Result<()> {
        let mut sum = std::mem::take(&mut self.record);
        if self.is_empty() && !self.forgot {
            return Ok(());
        }
        let path = Path::new(sum::FILE);
        for (file, text) in self.written_by_memop().filter(|(p, _)| *p != path) {
            // A file you edited that memop inserted a fragment into holds your edits too: its record
            // stays memop's text from before them, the base over which `memop update` merges (your
            // edits would otherwise count as memop's, and an update replace them).
            if self.was_inserted_into(file) && edited(&sum, file, self.read_disk(file)?.as_deref()) {
                continue;
            }
            sum.wrote(file, text);
        }
        for file in self.removed() {
            sum.forget(file);
        }
        self.write(path, sum.render(env!("CARGO_PKG_VERSION")))
    }

    /// Records whose the file at `path` is, as its template declares (or a command, for a file
    /// it writes itself: an [`Owner`](super::Owner)).
    pub fn set_owner(&mut self, path: impl AsRef<Path>, declared: impl Into<Declared>) {
        self.declared.insert(path.as_ref().to_path_buf(), declared.into());
    }

    /// Whose the file at `path` is, when a template of this plan rendered it.
    pub fn declared(&self, path: &Path) -> Option<Declared> {
        self.declared.get(path).copied()
    }

    /// Whether a fragment was inserted into the file at `path`.
    pub fn was_inserted_into(&self, path: &Path) -> bool {
        self.inserted.contains(path)
    }

    /// Plans writing `contents` to `path` as [`Plan::write`] does, as text that needs no
    /// formatting pass: formatted once in memop's repository (a plain template, a vendored
    /// crate), or the user's own formatting (a merge; one with conflict markers would not parse).
    pub fn write_formatted(&mut self, path: impl AsRef<Path>, contents: String) -> Result<()> {
        let path = path.as_ref();
        self.write(path, contents)?;
        self.formatted.insert(path.to_path_buf());
        Ok(())
    }

    /// Plans writing `contents` (in `\n` line endings) to `path`, whatever is there (what becomes
    /// of an existing file is [`super::reconcile::reconcile`]'s to say).
    pub fn write(&mut self, path: impl AsRef<Path>, contents: String) -> Result<()> {
        let path = path.as_ref();
        self.check_inside(path)?;
        self.formatted.remove(path);
        let change = match self.read_raw(path)? {
            Some(old) if unix_endings(&old) == contents => {
                self.changes.remove(path);
                return Ok(());
            }
            Some(old) => Change::Update { old, new: contents },
            None => Change::Create { contents },
        };
        self.changes.insert(path.to_path_buf(), change);
        Ok(())
    }

    /// Plans removing the file at `path` (a file memop wrote that this memop no longer has); a
    /// missing file is nothing to remove.
    pub fn remove(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        self.check_inside(path)?;
        match self.read_raw(path)? {
            Some(old) => self.changes.insert(path.to_path_buf(), Change::Remove { old }),
            None => self.changes.remove(path),
        };
        Ok(())
    }

    /// The files the plan removes.
    pub fn removed(&self) -> impl Iterator<Item = &Path> {
        self.changes.iter().filter(|(_, c)| matches!(c, Change::Remove { .. })).map(|(p, _)| p.as_path())
    }

    /// Refuses a path that could lead outside the project (see [`crate::fs::check_inside`]).
    fn check_inside(&self, path: &Path) -> Result<()> {
        crate::fs::check_inside(&self.root, path)
    }

    /// Plans inserting `fragment` just before the `+memop:scaffold:<marker>` line of `path`.
    ///
    /// Indentation follows the marker line. A fragment whose lines already appear, in order and
    /// one after the other, anywhere in the file is not inserted again, so re-running a command
    /// never duplicates code and never minds the indentation a formatter chose.
    pub fn insert(&mut self, path: impl AsRef<Path>, marker: &str, fragment: &str) -> Result<()> {
        self.insert_in(path.as_ref(), marker, fragment, false)
    }

    /// Plans a fragment of a sorted list (`{# key: sorted #}`): as [`Plan::insert`], but before
    /// the first entry of the marker's list that sorts after it, so that the list is in the same
    /// order whatever order the commands that made it ran in. The list's entries are the
    /// places, between the marker and the marker above it (or the top of the file), that start a
    /// line and have the fragment's shape: the same tokens but for names (wrapped or not).
    pub fn insert_sorted(&mut self, path: impl AsRef<Path>, marker: &str, fragment: &str) -> Result<()> {
        self.insert_in(path.as_ref(), marker, fragment, true)
    }

    fn insert_in(&mut self, path: &Path, marker: &str, fragment: &str, sorted: bool) -> Result<()> {
        let Some(current) = self.read(path)? else {
            bail!(
                "{} is missing, so memop cannot register the new code in it; restore it from a \
                 fresh `memop init` (or version control) and run the command again",
                path.display()
            );
        };
        let wanted: Vec<&str> = fragment.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        if wanted.is_empty() || contains_lines(&current, &wanted) {
            return Ok(());
        }
        let tag = format!("+memop:scaffold:{marker}");
        let lines: Vec<&str> = current.lines().collect();
        let Some(at) = lines.iter().position(|l| is_marker(l, &tag)) else {
            bail!(
                "{} has no `{tag}` marker line, so memop does not know where to add code; put the \
                 line back (as a comment) where new entries belong and run the command again",
                path.display()
            );
        };
        let indent: String = lines[at].chars().take_while(|c| c.is_whitespace()).collect();
        let at = match sorted {
            true => sorted_place(&lines, at, fragment),
            false => at,
        };
        let mut out = String::with_capacity(current.len() + fragment.len());
        for line in &lines[..at] {
            out.push_str(line);
            out.push('\n');
        }
        for line in fragment.lines() {
            if !line.trim().is_empty() {
                out.push_str(&indent);
                out.push_str(line);
            }
            out.push('\n');
        }
        for line in &lines[at..] {
            out.push_str(line);
            out.push('\n');
        }
        if !current.ends_with('\n') {
            out.pop();
        }
        self.write(path, out)?;
        self.inserted.insert(path.to_path_buf());
        Ok(())
    }

    /// Plans a keyed fragment: one line, keyed by its first token. The line of `path` with the
    /// same first token is replaced by it (keeping that line's indentation); without one, it is
    /// inserted before `marker` as [`Plan::insert`] does. A fragment that renders to nothing is
    /// not there for this context.
    pub fn upsert(&mut self, path: impl AsRef<Path>, marker: &str, fragment: &str) -> Result<()> {
        let path = path.as_ref();
        let mut lines = fragment.lines().map(str::trim).filter(|l| !l.is_empty());
        let (Some(wanted), None) = (lines.next(), lines.next()) else {
            if fragment.trim().is_empty() {
                return Ok(());
            }
            bail!("memop's keyed fragment for {} has several lines", path.display());
        };
        let key = wanted.split_whitespace().next().unwrap_or_default();
        let current = self.read(path)?.unwrap_or_default();
        let Some(old) = current.lines().find(|line| line.split_whitespace().next() == Some(key)) else {
            return self.insert(path, marker, wanted);
        };
        if old.trim() != wanted {
            let indent = &old[..old.len() - old.trim_start().len()];
            let updated = current.replacen(old, &format!("{indent}{wanted}"), 1);
            self.write(path, updated)?;
        }
        Ok(())
    }

    /// Runs rustfmt over every Rust file the plan writes, but those marked formatted. Without rustfmt the files stay
    /// as rendered and a note says so. A file rustfmt cannot parse fails the command, before anything is written: the
    /// project would not compile.
    pub fn format_rust(&mut self) -> anyhow::Result<()> {
        self.format_rust_with(false)
    }

    /// [`Self::format_rust`], failing when rustfmt cannot run instead of noting it: for text
    /// that is compared with formatted files (`memop update`'s replay), where unformatted text
    /// would differ from every one of them.
    pub fn format_rust_required(&mut self) -> anyhow::Result<()> {
        self.format_rust_with(true)
    }

    fn format_rust_with(&mut self, required: bool) -> anyhow::Result<()> {
        let mut files: Vec<(PathBuf, String)> = self
            .changes
            .iter()
            .filter(|(path, _)| path.extension().is_some_and(|e| e == "rs") && !self.formatted.contains(*path))
            .filter_map(|(path, change)| match change {
                Change::Create { contents } => Some((path.clone(), contents.clone())),
                Change::Update { new, .. } => Some((path.clone(), new.clone())),
                Change::Remove { .. } => None,
            })
            .collect();
        if !files.is_empty() {
            super::format::refuse_special_config(&self.root)?;
        }
        let result = super::format::rustfmt(&mut files, &self.root);
        // rustfmt stops early when interrupted: what it did not format must not be written.
        if crate::interrupted() {
            anyhow::bail!("interrupted; nothing was written");
        }
        if let Err(err) = result {
            if let Some(unparsable) = err.downcast_ref::<super::format::Unparsable>() {
                anyhow::bail!(
                    "{unparsable}\nnothing was written. If the file it names is one you edited, fix it and rerun; \
                     otherwise memop generated invalid Rust from a name you gave (a group, kind or project name that \
                     is Rust syntax where it lands): choose another, and please report it"
                );
            }
            if required {
                anyhow::bail!(
                    "{err:#}: memop update compares memop's files with yours as rustfmt formats them, so it needs \
                     rustfmt (install it with `rustup component add rustfmt`, or set RUSTFMT to one); nothing was \
                     written"
                );
            }
            self.notes.push(format!("{err:#}; run `cargo fmt` in the project"));
            return Ok(());
        }
        for (path, formatted) in files {
            let unchanged = match self.changes.get_mut(&path) {
                Some(Change::Create { contents }) => {
                    *contents = formatted;
                    false
                }
                Some(Change::Update { old, new }) => {
                    *new = formatted;
                    unix_endings(old) == *new
                }
                Some(Change::Remove { .. }) | None => false,
            };
            if unchanged {
                self.changes.remove(&path);
            }
        }
        Ok(())
    }

    /// Every file the plan creates or changes, with the contents it will have.
    /// Says that memop's own text of `path` is `base`, though the plan writes it merged with the
    /// user's edits (or leaves the user's text there): what memop wrote, for `PROJECT.sum`, and
    /// the base of the next merge, which git keeps.
    pub fn set_base(&mut self, path: impl AsRef<Path>, base: String) {
        self.bases.insert(path.as_ref().to_path_buf(), base);
    }

    /// Says that `path`, which the plan does not change, holds memop's text `text`: for
    /// `PROJECT.sum`, where a project made before it lacks the record.
    pub fn set_unchanged(&mut self, path: impl AsRef<Path>, text: String) {
        self.unchanged.insert(path.as_ref().to_path_buf(), text);
    }

    /// memop's own text of each planned file: [`Plan::set_base`]'s where one was set, else the
    /// planned text; and of each file [`Plan::set_unchanged`] or [`Plan::set_base`] names that
    /// the plan leaves.
    pub fn written_by_memop(&self) -> impl Iterator<Item = (&Path, &str)> {
        let planned = self.planned().map(|(path, text)| (path, self.bases.get(path).map_or(text, String::as_str)));
        let left = self.bases.iter().filter(|(path, _)| !self.changes.contains_key(*path));
        planned.chain(self.unchanged.iter().chain(left).map(|(path, text)| (path.as_path(), text.as_str())))
    }

    pub fn planned(&self) -> impl Iterator<Item = (&Path, &str)> {
        self.changes.iter().filter_map(|(path, change)| match change {
            Change::Create { contents } | Change::Update { new: contents, .. } => {
                Some((path.as_path(), contents.as_str()))
            }
            Change::Remove { .. } => None,
        })
    }

    /// True when applying would change nothing.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Prints every planned change without writing: new files whole, changed files as diffs.
    pub fn render_dry_run(&self) -> String {
        let mut out = String::new();
        for (path, change) in &self.changes {
            let shown = path.display();
            match change {
                Change::Create { contents } => {
                    let _ = writeln!(out, "create {shown} ({} lines)", contents.lines().count());
                    for line in contents.lines() {
                        let _ = writeln!(out, "+{line}");
                    }
                }
                Change::Update { old, new } => {
                    let _ = writeln!(out, "update {shown}");
                    let old = unix_endings(old);
                    let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_str());
                    let unified = diff
                        .unified_diff()
                        .context_radius(3)
                        .header(&format!("a/{shown}"), &format!("b/{shown}"))
                        .to_string();
                    out.push_str(&unified);
                }
                Change::Remove { old } => {
                    let _ = writeln!(out, "remove {shown} ({} lines)", old.lines().count());
                }
            }
        }
        let _ = writeln!(out, "dry run: {} file(s) would change; nothing was written", self.changes.len());
        out
    }

    /// Writes the plan: all files or none.
    ///
    /// Every file is first written to a temporary sibling; only when all of them were written are
    /// they renamed over their targets. If a rename fails, the files already renamed are put back
    /// as they were, so a failure leaves the directory as it was. Then the plan's merge bases
    /// (see [`Plan::set_base`]) go into git, where the next merge finds them
    /// ([`sum::keep_bases`]).
    pub fn apply(self) -> Result<Applied> {
        if self.scratch {
            bail!("memop tried to write a scratch plan, which sees no disk; please report it");
        }
        // From here on a signal no longer stops memop at once: it would leave the files half-written.
        let Some(_writing) = crate::lock::Writing::begin() else {
            bail!("interrupted; nothing was written");
        };
        // Each file written from its temporary sibling, or removed (no sibling).
        let mut staged: Vec<(Option<PathBuf>, PathBuf, &Change)> = Vec::new();
        let mut created_dirs: Vec<PathBuf> = Vec::new();
        let result = self.stage(&mut staged, &mut created_dirs);
        if let Err(err) = result {
            for (tmp, _, _) in &staged {
                tmp.as_ref().map(fs::remove_file);
            }
            remove_dirs(&created_dirs);
            return Err(err);
        }
        // PROJECT.sum, then PROJECT, last: if memop is killed among the renames, the record
        // still names what each file held before (a file already renamed holds memop's new
        // text, which the rerun takes for memop's), and PROJECT does not yet list what is
        // half-written: re-running the command completes it.
        let root_file = |target: &Path, file: &str| target == self.root.join(file);
        staged.sort_by_key(|(_, target, _)| {
            (root_file(target, crate::sum::FILE) as u8) + 2 * (root_file(target, crate::project::FILE) as u8)
        });
        let mut done: Vec<(&PathBuf, &Change)> = Vec::new();
        for (tmp, target, change) in &staged {
            let result = match tmp {
                Some(tmp) => fs::rename(tmp, target),
                None => fs::remove_file(target),
            };
            if let Err(err) = result {
                for (target, change) in done.iter().rev() {
                    match change {
                        Change::Create { .. } => drop(fs::remove_file(target)),
                        Change::Update { old, .. } | Change::Remove { old } => drop(fs::write(target, old)),
                    }
                }
                for (tmp, _, _) in &staged {
                    tmp.as_ref().map(fs::remove_file);
                }
                remove_dirs(&created_dirs);
                return Err(err).with_context(|| format!("writing {}", target.display()));
            }
            done.push((target, change));
        }
        // Right after the files, so that a report that cannot be written loses no base.
        if !self.bases.is_empty() {
            let bases: Vec<(String, String)> = self
                .bases
                .iter()
                .map(|(path, text)| (path.to_string_lossy().replace('\\', "/"), text.clone()))
                .collect();
            sum::keep_bases(&self.root, &bases);
        }
        let mut applied = Applied::default();
        for (path, change) in self.changes {
            match change {
                Change::Create { .. } => applied.created.push(path),
                Change::Update { .. } => applied.updated.push(path),
                Change::Remove { .. } => {
                    // The directory it leaves empty goes too (`src/manager/`).
                    if let Some(parent) = self.root.join(&path).parent() {
                        let _ = fs::remove_dir(parent);
                    }
                    applied.removed.push(path)
                }
            }
        }
        Ok(applied)
    }

    fn stage<'a>(
        &'a self,
        staged: &mut Vec<(Option<PathBuf>, PathBuf, &'a Change)>,
        created_dirs: &mut Vec<PathBuf>,
    ) -> Result<()> {
        let mut cleaned = std::collections::HashSet::new();
        for (path, change) in &self.changes {
            // Checked again right before writing: the tree may have changed since planning.
            self.check_inside(path)?;
            let target = self.root.join(path);
            if let Change::Remove { .. } = change {
                staged.push((None, target, change));
                continue;
            }
            let parent = target.parent().unwrap_or(&self.root).to_path_buf();
            create_dirs(&parent, created_dirs)?;
            remove_stale_temps(&parent, &mut cleaned);
            let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let contents = match change {
                Change::Create { contents } => Cow::Borrowed(contents.as_str()),
                // A file in `\r\n` keeps them.
                Change::Update { old, new } if old.contains("\r\n") => Cow::Owned(new.replace('\n', "\r\n")),
                Change::Update { new, .. } => Cow::Borrowed(new.as_str()),
                Change::Remove { .. } => continue,
            };
            let (tmp, mut file) = create_temp(&parent, &name)?;
            // Staged at once, so that a failed write below is cleaned up with the rest.
            staged.push((Some(tmp.clone()), target.clone(), change));
            file.write_all(contents.as_bytes()).with_context(|| format!("writing {}", tmp.display()))?;
            if let Ok(meta) = fs::metadata(&target) {
                // Keep the mode of files we replace (a user may have made a script executable);
                // through the handle, so it is the file we created that changes.
                let _ = file.set_permissions(meta.permissions());
            }
        }
        Ok(())
    }
}

/// Creates a new temporary file beside `name` in `dir`: a name no one can predict, created only
/// if nothing (a file, or a symbolic link) is there yet.
/// Removes the temporary files a killed memop left in `dir` (once per directory): the project's
/// lock, which this command holds, keeps any other memop from writing there now.
fn remove_stale_temps(dir: &Path, cleaned: &mut std::collections::HashSet<PathBuf>) {
    if !cleaned.insert(dir.to_path_buf()) {
        return;
    }
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.ends_with(".memop-tmp") && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn create_temp(dir: &Path, name: &str) -> Result<(PathBuf, fs::File)> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    for attempt in 0..100u32 {
        let tmp = dir.join(format!(".{name}.{}-{nanos:x}-{attempt}.memop-tmp", std::process::id()));
        match fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("writing {}", tmp.display())),
        }
    }
    bail!("could not create a temporary file beside {}", dir.join(name).display())
}

/// Creates `dir` and its missing parents, remembering which ones it created (outermost first).
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> Result<()> {
    let mut missing = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if d.as_os_str().is_empty() || d.exists() {
            break;
        }
        missing.push(d.to_path_buf());
        cur = d.parent();
    }
    for d in missing.into_iter().rev() {
        fs::create_dir(&d).with_context(|| format!("creating directory {}", d.display()))?;
        created.push(d);
    }
    Ok(())
}

fn remove_dirs(created: &[PathBuf]) {
    for d in created.iter().rev() {
        let _ = fs::remove_dir(d);
    }
}

/// `text` with the line endings memop writes, `\n`.
fn unix_endings(text: &str) -> Cow<'_, str> {
    match text.contains("\r\n") {
        true => Cow::Owned(text.replace("\r\n", "\n")),
        false => Cow::Borrowed(text),
    }
}

/// A marker line is a comment (`//` or `#`) holding exactly the marker tag.
fn is_marker(line: &str, tag: &str) -> bool {
    let t = line.trim();
    let body = t.strip_prefix("//").or_else(|| t.strip_prefix('#'));
    body.is_some_and(|b| b.trim() == tag)
}

/// Where a fragment of a sorted list goes in `lines`, whose marker is at `marker`: the first line
/// of the first entry of the list that sorts after it (moved up over as many blank lines as the
/// fragment starts with, which separate entries), else the marker.
fn sorted_place(lines: &[&str], marker: usize, fragment: &str) -> usize {
    let wanted = tokens(fragment.lines().map(|line| (0, line)));
    let top = lines[..marker].iter().rposition(|line| line.contains("+memop:scaffold:")).map_or(0, |at| at + 1);
    let list = tokens(lines[top..marker].iter().enumerate().map(|(at, line)| (top + at, *line)));
    fn shape(token: &(usize, String)) -> &str {
        match token.1.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            true => "",
            false => token.1.as_str(),
        }
    }
    let text = |tokens: &[(usize, String)]| tokens.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join(" ");
    let (wanted_shape, wanted_text): (Vec<&str>, String) = (wanted.iter().map(shape).collect(), text(&wanted));
    let mut from = 0;
    while !wanted.is_empty() && from + wanted.len() <= list.len() {
        let entry = &list[from..from + wanted.len()];
        let starts_a_line = from == 0 || list[from - 1].0 != list[from].0;
        if !starts_a_line || !entry.iter().map(shape).eq(wanted_shape.iter().copied()) {
            from += 1;
            continue;
        }
        if text(entry) > wanted_text {
            let blank = fragment.lines().take_while(|line| line.trim().is_empty()).count();
            let mut at = entry[0].0;
            for _ in 0..blank {
                if at > top && lines[at - 1].trim().is_empty() {
                    at -= 1;
                }
            }
            return at;
        }
        from += wanted.len();
    }
    marker
}

/// The tokens of `lines` (each with the index of its line), as a list's entries are compared:
/// names and numbers whole, every other character alone, comment lines and whitespace left
/// out, and the trailing comma rustfmt adds before a closing bracket when it wraps a list.
fn tokens<'a>(lines: impl Iterator<Item = (usize, &'a str)>) -> Vec<(usize, String)> {
    let mut tokens: Vec<(usize, String)> = Vec::new();
    for (at, line) in lines {
        let line = line.trim();
        if line.starts_with("//") || (line.starts_with('#') && !line.starts_with("#[")) {
            continue;
        }
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_whitespace() {
                continue;
            }
            let mut token = c.to_string();
            if c.is_alphanumeric() || c == '_' {
                while let Some(&next) = chars.peek().filter(|n| n.is_alphanumeric() || **n == '_') {
                    token.push(next);
                    chars.next();
                }
            }
            tokens.push((at, token));
        }
    }
    // `a,)` is `a)`: rustfmt's comma of a wrapped list.
    let closes = |t: &(usize, String)| matches!(t.1.as_str(), ")" | "]" | "}" | ">");
    let keep: Vec<bool> =
        (0..tokens.len()).map(|i| !(tokens[i].1 == "," && tokens.get(i + 1).is_some_and(closes))).collect();
    tokens.into_iter().zip(keep).filter_map(|(token, keep)| keep.then_some(token)).collect()
}

/// Whether `text` already holds the `wanted` lines, in order, however a formatter has wrapped or
/// indented them since (rustfmt splits a long line; a user may add a trailing comment).
fn contains_lines(text: &str, wanted: &[&str]) -> bool {
    // Without whitespace, and without the trailing commas rustfmt adds when it wraps a list (a
    // generic one too: `Conversion::between::<Hub, Spoke>()` in src/webhook/mod.rs).
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let unwrap = |s: String| s.replace(",}", "}").replace(",)", ")").replace(",]", "]").replace(",>", ">");
    // Line by line, each without its trailing `//` or `#` comment, so that a comment added at
    // the end of an inserted line does not hide it (nor one the fragment has itself).
    let code = |line: &str| {
        let line = line.trim();
        let attribute = line.starts_with("#[") || line.starts_with("#!");
        if line.starts_with("//") || (line.starts_with('#') && !attribute) {
            return String::new(); // a comment line, such as the marker itself
        }
        let comment = line.find(" //").or_else(|| line.find(" #")).unwrap_or(line.len());
        squeeze(&line[..comment])
    };
    // A fragment's own last comma may be the one dropped before a closing bracket.
    let wanted: String = wanted.iter().map(|line| code(line)).collect();
    let wanted = unwrap(wanted).trim_end_matches(',').to_string();
    let text: String = text.lines().map(code).collect();
    unwrap(text).contains(&wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fragment_ending_with_a_comma_is_found_before_a_closing_brace() {
        let text =
            "struct Flags {\n    #[command(flatten)]\n    pub webhook: Webhook,\n    // +memop:scaffold:flags\n}\n";
        assert!(contains_lines(text, &["#[command(flatten)]", "pub webhook: Webhook,"]));
        assert!(!contains_lines(text, &["#[command(flatten)]", "pub other: Webhook,"]));
    }

    #[test]
    fn a_fragment_rustfmt_wrapped_into_a_generic_list_is_found() {
        let text = "vec![\n    Conversion::between::<\n        crate::v1::M,\n        crate::v1alpha1::M,\n    >(),\n    // +memop:scaffold:conversions\n]\n";
        assert!(contains_lines(text, &["Conversion::between::<crate::v1::M, crate::v1alpha1::M>(),"]));
        assert!(!contains_lines(text, &["Conversion::between::<crate::v1::M, crate::v2::M>(),"]));
    }

    fn plan_with(file: &str, contents: &str) -> (tempfile::TempDir, Plan) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(file), contents).unwrap();
        let plan = Plan::unrecorded(dir.path());
        (dir, plan)
    }

    #[test]
    fn inserts_before_marker_with_its_indentation_once() {
        let (_dir, mut plan) = plan_with("main.rs", "fn main() {\n    // +memop:scaffold:run\n}\n");
        plan.insert("main.rs", "run", "a();\nb();\n").unwrap();
        plan.insert("main.rs", "run", "a();\nb();\n").unwrap();
        let text = plan.read(Path::new("main.rs")).unwrap().unwrap();
        assert_eq!(text, "fn main() {\n    a();\n    b();\n    // +memop:scaffold:run\n}\n");
    }

    /// A sorted list's entry goes before the first that sorts after it, wrapped by rustfmt or not,
    /// with the blank line that separates entries; the file's other lines of the region count
    /// only where they have the entry's shape.
    #[test]
    fn a_sorted_fragment_goes_in_its_place_in_the_list() {
        let file = "//! Doc.\nuse x::y;\n\npub mod b;\n// +memop:scaffold:m\nfn f() {\n    vec![\n        c(\n            long_argument_one,\n            long_argument_two,\n        ),\n        // +memop:scaffold:n\n    ]\n}\n";
        let (_dir, mut plan) = plan_with("mod.rs", file);
        let read = |plan: &Plan| plan.read(Path::new("mod.rs")).unwrap().unwrap();
        plan.insert_sorted("mod.rs", "m", "\npub mod c;\n").unwrap();
        plan.insert_sorted("mod.rs", "m", "\npub mod a;\n").unwrap();
        plan.insert_sorted("mod.rs", "m", "\npub mod a;\n").unwrap();
        plan.insert_sorted("mod.rs", "n", "b(long_argument_one, long_argument_two),\n").unwrap();
        plan.insert_sorted("mod.rs", "n", "d(x, y),\n").unwrap();
        let expected = "//! Doc.\nuse x::y;\n\npub mod a;\n\npub mod b;\n\npub mod c;\n// +memop:scaffold:m\nfn f() {\n    vec![\n        b(long_argument_one, long_argument_two),\n        c(\n            long_argument_one,\n            long_argument_two,\n        ),\n        d(x, y),\n        // +memop:scaffold:n\n    ]\n}\n";
        assert_eq!(read(&plan), expected);
    }

    #[test]
    fn a_keyed_fragment_replaces_the_line_with_its_key_or_is_inserted_once() {
        let table = "const T: &[(&str, &str)] = &[\n    // +memop:scaffold:t\n];\n";
        let (_dir, mut plan) = plan_with("mod.rs", table);
        let read = |plan: &Plan| plan.read(Path::new("mod.rs")).unwrap().unwrap();
        plan.upsert("mod.rs", "t", "\n").unwrap();
        assert!(plan.is_empty(), "a fragment that renders to nothing adds nothing");
        plan.upsert("mod.rs", "t", "(\"a.x\", \"v1\"),\n").unwrap();
        plan.upsert("mod.rs", "t", "(\"b.x\", \"v1\"),\n").unwrap();
        plan.upsert("mod.rs", "t", "(\"a.x\", \"v2\"),\n").unwrap();
        plan.upsert("mod.rs", "t", "(\"a.x\", \"v2\"),\n").unwrap();
        let expected = "const T: &[(&str, &str)] = &[\n    (\"a.x\", \"v2\"),\n    (\"b.x\", \"v1\"),\n    // +memop:scaffold:t\n];\n";
        assert_eq!(read(&plan), expected);
        assert!(plan.upsert("mod.rs", "t", "a\nb\n").is_err(), "a keyed fragment is one line");
    }

    /// Line endings are handled where files are read and written: a file in `\r\n` reads in
    /// `\n`, its text in `\n` is no change, and a change keeps its `\r\n` (and its dry run shows
    /// only the line that changed).
    #[test]
    fn a_file_in_windows_line_endings_reads_in_unix_ones_and_keeps_its_own() {
        let (dir, mut plan) = plan_with("m.yaml", "a: 1\r\nb: 2\r\n");
        assert_eq!(plan.read(Path::new("m.yaml")).unwrap().as_deref(), Some("a: 1\nb: 2\n"));
        plan.write("m.yaml", "a: 1\nb: 2\n".into()).unwrap();
        assert!(plan.is_empty(), "line endings are no edit");
        plan.write("m.yaml", "a: 1\nb: 3\n".into()).unwrap();
        let shown = plan.render_dry_run();
        assert!(shown.contains(" a: 1\n-b: 2\n+b: 3\n"), "{shown}");
        plan.apply().unwrap();
        assert_eq!(fs::read_to_string(dir.path().join("m.yaml")).unwrap(), "a: 1\r\nb: 3\r\n");
    }

    #[test]
    fn yaml_markers_use_hash_comments() {
        let (_dir, mut plan) = plan_with("k.yaml", "resources:\n- a.yaml\n# +memop:scaffold:crd\n");
        plan.insert("k.yaml", "crd", "- ../crd\n").unwrap();
        let text = plan.read(Path::new("k.yaml")).unwrap().unwrap();
        assert_eq!(text, "resources:\n- a.yaml\n- ../crd\n# +memop:scaffold:crd\n");
    }

    #[test]
    fn missing_marker_is_an_error_that_names_it() {
        let (_dir, mut plan) = plan_with("main.rs", "fn main() {}\n");
        let err = plan.insert("main.rs", "run", "a();").unwrap_err().to_string();
        assert!(err.contains("+memop:scaffold:run"), "{err}");
        assert!(plan.is_empty());
    }

    #[test]
    fn a_removal_is_shown_then_applied_and_its_emptied_directory_goes() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("src/manager")).unwrap();
        fs::write(dir.path().join("src/manager/mod.rs"), "// old\n").unwrap();
        fs::write(dir.path().join("src/lib.rs"), "pub mod manager;\n").unwrap();
        let mut plan = Plan::unrecorded(dir.path());
        plan.remove("src/manager/mod.rs").unwrap();
        plan.remove("src/missing.rs").unwrap();
        plan.write("src/lib.rs", "\n".into()).unwrap();
        assert_eq!(plan.read(Path::new("src/manager/mod.rs")).unwrap(), None, "the plan sees it gone");
        assert!(plan.render_dry_run().contains("remove src/manager/mod.rs (1 lines)"), "{}", plan.render_dry_run());
        let applied = plan.apply().unwrap();
        assert_eq!(applied.removed, vec![PathBuf::from("src/manager/mod.rs")]);
        assert!(!dir.path().join("src/manager").exists());
        assert_eq!(fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(), "\n");
    }

    #[test]
    fn apply_writes_new_directories_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut plan = Plan::unrecorded(dir.path());
        plan.write("x/y/z.txt", "hi\n".into()).unwrap();
        let applied = plan.apply().unwrap();
        assert_eq!(applied.created, vec![PathBuf::from("x/y/z.txt")]);
        assert_eq!(fs::read_to_string(dir.path().join("x/y/z.txt")).unwrap(), "hi\n");
        let names: Vec<_> = fs::read_dir(dir.path().join("x/y")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_file_where_a_directory_of_the_path_goes_is_refused_when_planning() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("dist")).unwrap();
        fs::write(dir.path().join("dist/chart"), "").unwrap();
        let mut plan = Plan::unrecorded(dir.path());
        let err = plan.write("dist/chart/Chart.yaml", "x\n".into()).unwrap_err().to_string();
        assert!(err.starts_with("dist/chart is a regular file, not a directory"), "{err}");
        assert!(plan.read(Path::new("dist/chart/values.yaml")).is_err());
        // The file itself is fine.
        assert_eq!(plan.read(Path::new("dist/chart")).unwrap().as_deref(), Some(""));
    }

    #[test]
    fn failed_apply_leaves_the_directory_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "old\n").unwrap();
        let mut plan = Plan::unrecorded(dir.path());
        plan.write("a.txt", "new\n".into()).unwrap();
        plan.write("blocker/inner.txt", "x\n".into()).unwrap();
        plan.write("fresh/dir/f.txt", "x\n".into()).unwrap();
        // A plain file where the plan needs a directory, made after planning (which refuses
        // one), makes staging fail midway.
        fs::write(dir.path().join("blocker"), "").unwrap();
        assert!(plan.apply().is_err());
        assert_eq!(fs::read_to_string(dir.path().join("a.txt")).unwrap(), "old\n");
        let mut names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, vec!["a.txt", "blocker"]);
    }

    #[test]
    fn dry_run_shows_diffs_for_changes() {
        let (_dir, mut plan) = plan_with("k.yaml", "a\n# +memop:scaffold:x\n");
        plan.insert("k.yaml", "x", "b\n").unwrap();
        plan.write("new.txt", "n\n".into()).unwrap();
        let out = plan.render_dry_run();
        assert!(out.contains("update k.yaml"), "{out}");
        assert!(out.contains("+b\n"), "{out}");
        assert!(out.contains("create new.txt (1 lines)"), "{out}");
        assert!(out.contains("2 file(s) would change"), "{out}");
    }
}
