//! How memop reads the files of a project: regular files inside it, as UTF-8, never through a
//! symbolic link, and never a FIFO or a device (reading one could wait forever).

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use anyhow::{Context as _, Result, bail};

/// The text of the file at `path` in the project in `root`, `None` when there is none, after
/// [`check_inside`].
pub fn read(root: &Path, path: &Path) -> Result<Option<String>> {
    check_inside(root, path)?;
    read_regular(root, path)
}

/// Refuses a path of the project in `root` that could lead outside it: not a plain relative
/// path, or with a symbolic link as the file or as any directory on the way to it; and a path
/// where a FIFO, socket or device is (reading one could wait forever, or never end).
pub fn check_inside(root: &Path, path: &Path) -> Result<()> {
    use std::path::Component;
    if !path.components().all(|c| matches!(c, Component::Normal(_))) {
        bail!("{} is not a path inside the project; memop writes only there", path.display());
    }
    let mut at = root.to_path_buf();
    for component in path.components() {
        at.push(component);
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let shown = at.strip_prefix(root).unwrap_or(&at);
                bail!(
                    "{} is a symbolic link, and memop does not follow links, so that it never writes outside \
                     the project; replace it with the real {} (or remove it) and run the command again",
                    shown.display(),
                    if at.as_path() == root.join(path) { "file" } else { "directory" }
                );
            }
            Ok(meta) if !meta.is_file() && !meta.is_dir() => {
                let shown = at.strip_prefix(root).unwrap_or(&at);
                let wanted = if at.as_path() == root.join(path) { "regular file" } else { "directory" };
                bail!("{}", not_regular(shown, &meta.file_type(), wanted));
            }
            // A file where a directory of the path goes: refused now, by name, rather than
            // by the OS when the plan is applied.
            Ok(meta) if meta.is_file() && at.as_path() != root.join(path) => {
                let shown = at.strip_prefix(root).unwrap_or(&at);
                bail!(
                    "{} is a regular file, not a directory, and memop writes {} inside it; move it away (or \
                     remove it) and run the command again",
                    shown.display(),
                    path.display()
                );
            }
            Ok(_) => {}
            // Nothing there yet: nothing below it can be a link either.
            Err(_) => break,
        }
    }
    Ok(())
}

/// The contents of `root/path`, or `None` when it does not exist. Anything but a regular file is
/// refused before it is opened, and checked again once open (it may have been replaced since).
pub fn read_regular(root: &Path, path: &Path) -> Result<Option<String>> {
    use std::io::Read as _;
    let full = root.join(path);
    let absent = |e: &std::io::Error| matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory);
    let reading = || format!("reading {}", full.display());
    match fs::metadata(&full) {
        Ok(meta) if !meta.is_file() => bail!("{}", not_regular(path, &meta.file_type(), "regular file")),
        Ok(_) => {}
        Err(e) if absent(&e) => return Ok(None),
        Err(e) => return Err(e).with_context(reading),
    }
    let mut file = match fs::File::open(&full) {
        Ok(file) => file,
        Err(e) if absent(&e) => return Ok(None),
        Err(e) => return Err(e).with_context(reading),
    };
    let meta = file.metadata().with_context(reading)?;
    if !meta.is_file() {
        bail!("{}", not_regular(path, &meta.file_type(), "regular file"));
    }
    let mut text = String::new();
    match file.read_to_string(&mut text) {
        Ok(_) => Ok(Some(text)),
        Err(e) if e.kind() == ErrorKind::InvalidData => bail!(
            "{} is not UTF-8 text, which memop reads the files of a project as: save it as UTF-8 (or move it \
             away) and run the command again",
            path.display()
        ),
        Err(e) => Err(e).with_context(reading),
    }
}

/// The refusal of something at `path` that is not the regular file or directory (`wanted`) memop
/// expects there.
pub(crate) fn not_regular(path: &Path, kind: &fs::FileType, wanted: &str) -> String {
    format!(
        "{} is {}, not a {wanted}: memop reads and writes regular files only; remove it or move it away",
        path.display(),
        file_kind(kind)
    )
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
