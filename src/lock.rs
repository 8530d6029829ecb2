//! One memop command at a time per project, and what a signal does to one.
//!
//! [`Lock`] keeps two commands from changing a project at once. Ctrl-C, SIGTERM and SIGHUP set a
//! flag ([`interrupted`]) that commands check before they write, so that an interrupted command
//! leaves the project as it was; [`Writing`] marks the few milliseconds of writing the plan, which
//! no signal cuts short.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context as _, Result, bail};

/// The lock file that keeps two memop commands from changing one project at once (each would
/// read PROJECT before the other wrote it, and one API would be lost).
pub const LOCK_FILE: &str = ".memop.lock";

/// Held while a command works on a project; dropping it removes the lock file.
///
/// The file holds the PID of the command, which also keeps an advisory lock on it while it runs,
/// so that of two commands that find the same stale lock only one takes it over.
pub struct Lock {
    path: PathBuf,
    _file: std::fs::File,
}

impl Lock {
    /// Takes the lock of the project in `dir`, or says who holds it. `None` when `dir` does not
    /// exist yet (nothing else can be working on it). A lock no command holds any more (its
    /// process was killed, or ran out of memory; the PID it names may be running another program
    /// since) is taken over, and a line on stderr says so.
    pub fn take(dir: &Path) -> Result<Option<Self>> {
        use std::io::{Read as _, Seek as _, Write as _};
        if !dir.is_dir() {
            return Ok(None);
        }
        let path = dir.join(LOCK_FILE);
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut file) => {
                // Blocks only while another command reads this new file and finds it is not stale.
                let _ = file.lock();
                let _ = writeln!(file, "{}", std::process::id());
                return Ok(Some(Self::held(path, file)));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
        let mut file = open_existing_lock(&path)?;
        let holder = |mut file: &std::fs::File| {
            let mut text = String::new();
            let _ = file.rewind().and_then(|()| file.take(32).read_to_string(&mut text));
            text.trim().parse::<u32>().ok().filter(|&pid| pid > 0)
        };
        let busy = |pid: Option<u32>| {
            let process = pid.map(|pid| format!(", process {pid}")).unwrap_or_default();
            anyhow::anyhow!(
                "another memop command is working on this project (it holds {}{process}); wait for it to finish \
                 and run this one again. If none is running (it was killed), delete that file",
                path.display()
            )
        };
        // A command that holds the lock, or is taking it over, keeps it locked (the kernel lets go
        // of that when its process ends, however it ends): a lock file whose advisory lock is free
        // is held by nobody, whatever process its PID names now. Without advisory locks on this
        // file system, the PID alone decides.
        let advisory = match file.try_lock() {
            Ok(()) => true,
            Err(std::fs::TryLockError::WouldBlock) => return Err(busy(holder(&file))),
            Err(std::fs::TryLockError::Error(_)) => false,
        };
        // Still the lock file (not removed by a command that just finished), holding a PID (not
        // one being created, whose command locks it before it writes its PID).
        let same = open_existing_lock(&path).is_ok_and(|again| same_file(&again, &file));
        let pid = holder(&file);
        let stale = pid.filter(|&pid| same && (advisory || !process_is_running(pid)));
        let Some(stale) = stale else { return Err(busy(pid)) };
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .with_context(|| format!("taking over {}", path.display()))?;
        let why = match process_is_running(stale) {
            false => "which is no longer running",
            // Killed without removing the file, and its PID since reused by another process.
            true => "which no longer holds it (that PID is another program's now)",
        };
        crate::warn_line!("warning: took over {} from process {stale}, {why}", path.display());
        Ok(Some(Self::held(path, file)))
    }

    fn held(path: PathBuf, file: std::fs::File) -> Self {
        holding_lock(Some(path.clone()));
        Self { path, _file: file }
    }
}

/// Opens the lock file another command left, refusing anything but a regular file: a symbolic
/// link is not followed (memop would read, and later remove, whatever it points to).
fn open_existing_lock(path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::MetadataExt as _;
    let refuse = |kind: &std::fs::FileType| -> Result<std::fs::File> {
        match kind.is_symlink() {
            true => bail!(
                "{} is a symbolic link, and memop does not follow links (it would read and remove what it points \
                 to); remove it and run the command again",
                path.display()
            ),
            false => bail!(
                "{} is {}, not a regular file: memop keeps its lock in a regular file; remove it and run the \
                 command again",
                path.display(),
                crate::fs::file_kind(kind)
            ),
        }
    };
    let before = std::fs::symlink_metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if !before.file_type().is_file() {
        return refuse(&before.file_type());
    }
    // Read and write (to take it over), which never waits, even for a FIFO put there since.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .or_else(|_| std::fs::File::open(path))
        .with_context(|| format!("reading {}", path.display()))?;
    let opened = file.metadata().with_context(|| format!("reading {}", path.display()))?;
    let now = std::fs::symlink_metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if !now.file_type().is_file() {
        return refuse(&now.file_type());
    }
    if (opened.dev(), opened.ino()) != (now.dev(), now.ino()) {
        bail!("{} changed while memop read it (another memop command?); run the command again", path.display());
    }
    Ok(file)
}

/// Whether two open files are one.
fn same_file(a: &std::fs::File, b: &std::fs::File) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (a.metadata(), b.metadata()) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// Whether process `pid` is running (on this machine): `/proc/<pid>` where there is a `/proc`,
/// else `kill -0`. When it cannot tell, it says yes: without advisory locks, a lock is taken over
/// only when surely stale.
fn process_is_running(pid: u32) -> bool {
    if pid == std::process::id() {
        // This process holds no lock yet: the PID is a dead process's, since reused.
        return false;
    }
    if Path::new("/proc/self").exists() {
        return Path::new("/proc").join(pid.to_string()).exists();
    }
    match std::process::Command::new("kill").args(["-0", &pid.to_string()]).output() {
        Ok(out) if out.status.success() => true,
        Ok(out) => !String::from_utf8_lossy(&out.stderr).contains("No such process"),
        Err(_) => true,
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        holding_lock(None);
        let _ = std::fs::remove_file(&self.path);
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether the plan is being written, and the lock file to remove if memop stops at once. Behind
/// one mutex, so that a second signal and the start of writing never pass each other.
static STATE: Mutex<State> = Mutex::new(State { writing: false, lock: None });

struct State {
    writing: bool,
    lock: Option<PathBuf>,
}

/// Turns Ctrl-C, SIGTERM and SIGHUP into a flag that [`interrupted`] reads, instead of an exit at
/// any point: commands stop before they write, and clean up what they made. A second signal stops
/// memop at once (exit code 130), in whatever phase it waits, unless the plan is being written:
/// that takes milliseconds, and stopping halfway would leave the project half-changed.
pub fn catch_interrupts() {
    // Without the handler (it can only be set once) memop is just stopped by the signal.
    let _ = ctrlc::set_handler(|| {
        if !INTERRUPTED.swap(true, Ordering::SeqCst) {
            return;
        }
        let state = STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if state.writing {
            return;
        }
        if let Some(lock) = &state.lock {
            let _ = std::fs::remove_file(lock);
        }
        crate::warn_line!("error: interrupted again; memop stopped at once, and nothing was written");
        // `state` stays locked until the exit, so writing cannot start after this point.
        std::process::exit(130);
    });
}

/// Whether Ctrl-C or SIGTERM arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Records the lock file this process holds (`None` once released), for a stop at once to remove.
pub(crate) fn holding_lock(path: Option<PathBuf>) {
    STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).lock = path;
}

/// While alive, the plan is being written: signals no longer stop memop at once.
pub(crate) struct Writing(());

impl Writing {
    /// Starts writing, or `None` when a signal arrived before: then nothing may be written.
    pub(crate) fn begin() -> Option<Self> {
        let mut state = STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if interrupted() {
            return None;
        }
        state.writing = true;
        Some(Self(()))
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        STATE.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).writing = false;
    }
}
