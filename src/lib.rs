//! memop: scaffold Kubernetes operators in Rust (kube-rs), the way kubebuilder does for Go.
//!
//! - [`commands`]: one module per subcommand; each validates its input and builds a plan.
//! - [`scaffold`]: the engine: embedded templates, the in-memory plan, dry runs and writes.
//! - [`names`]: every validation rule and derived spelling of user-supplied names.
//! - [`project`]: the `PROJECT` file.

use std::path::PathBuf;
use std::sync::Mutex;

/// `eprintln!` that never panics: a closed standard error (`memop … 2>&1 | head`) must not turn
/// a command that did its work into a crash.
#[macro_export]
macro_rules! warn_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use std::sync::atomic::{AtomicBool, Ordering};

pub mod commands;
pub mod names;
pub mod project;
pub mod resource;
pub mod scaffold;
pub mod sum;

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

/// What a file type is, for messages: "a FIFO", "a character device", "a directory", ...
pub(crate) fn file_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    match kind {
        k if k.is_file() => "a regular file",
        k if k.is_dir() => "a directory",
        k if k.is_symlink() => "a symbolic link",
        k if k.is_fifo() => "a FIFO",
        k if k.is_socket() => "a socket",
        k if k.is_char_device() => "a character device",
        k if k.is_block_device() => "a block device",
        _ => "a special file",
    }
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
