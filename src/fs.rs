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

/// The text of a file the user names (`--external-api-crd FILE`: anywhere, through links, as
/// any path they give), by `flag`: a regular file of at most `limit` bytes, UTF-8. Anything else
/// (a FIFO, which would wait forever for a writer; a device such as `/dev/zero`, which never
/// ends; a directory) is refused before it is opened, and checked again once open; a longer file
/// is refused without being read whole. `shown` is the path as given.
pub fn read_given(path: &Path, shown: &str, flag: &str, limit: u64) -> Result<String> {
    use std::io::Read as _;
    let fix = "pass the path of a regular file";
    let cannot = || format!("{flag} {shown}: cannot read it; {fix}");
    let refuse = |kind: &fs::FileType| -> Result<String> {
        bail!("{flag} {shown} is {}, not a regular file: memop reads regular files only; {fix}", file_kind(kind))
    };
    let meta = fs::metadata(path).with_context(cannot)?;
    if !meta.is_file() {
        return refuse(&meta.file_type());
    }
    let file = fs::File::open(path).with_context(cannot)?;
    let meta = file.metadata().with_context(cannot)?;
    if !meta.is_file() {
        return refuse(&meta.file_type());
    }
    let too_long = || {
        anyhow::anyhow!(
            "{flag} {shown} is longer than {} MiB, which no file of CustomResourceDefinitions is (the API server \
             takes objects of a few MiB); {fix} of the kind's CRD",
            limit >> 20
        )
    };
    if meta.len() > limit {
        return Err(too_long());
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).with_context(cannot)?;
    if bytes.len() as u64 > limit {
        return Err(too_long());
    }
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{flag} {shown} is not UTF-8 text; {fix} of YAML, in UTF-8"))
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
