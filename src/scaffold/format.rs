//! rustfmt over the Rust files of a plan, as kubebuilder runs goimports over Go files.
//!
//! Templates are written formatted for typical names, but where rustfmt breaks a line depends
//! on how long the names in it are; formatting the rendered files is the only way every
//! generated project passes `cargo fmt --check`. Each file goes through rustfmt alone, from its
//! standard input to its standard output: rustfmt then formats only that text and never opens
//! the files of the modules it declares (`mod x;`, whatever `#[path]` says), so nothing is read,
//! created or formatted on disk, `--dry-run` included.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context as _, Result};

/// rustfmt could not parse a file the plan writes: the project would not compile.
#[derive(Debug)]
pub struct Unparsable(pub String);

impl std::fmt::Display for Unparsable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rustfmt cannot parse the Rust this command would write:\n{}", self.0)
    }
}

impl std::error::Error for Unparsable {}

/// How many rustfmt processes run at once.
const PARALLEL: usize = 4;

/// Formats `files` (path relative to `project`, contents) in place. Errors when rustfmt is
/// missing, and with [`Unparsable`] (naming every such file) when it cannot parse some of them.
/// Stops early, leaving the rest as they are, when memop is interrupted.
pub fn rustfmt(files: &mut [(PathBuf, String)], project: &Path) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let rustfmt = Rustfmt::new(project);
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, PARALLEL).min(files.len());
    let shared: &[(PathBuf, String)] = files;
    let mut results: Vec<(usize, Result<Option<String>>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= shared.len() || crate::interrupted() {
                            return done;
                        }
                        let (path, contents) = &shared[i];
                        done.push((i, rustfmt.format(path, contents)));
                    }
                })
            })
            .collect();
        workers.into_iter().flat_map(|worker| worker.join().expect("a rustfmt thread panicked")).collect()
    });
    results.sort_by_key(|(i, _)| *i);
    let mut unparsable = Vec::new();
    let mut formatted = Vec::new();
    for (i, result) in results {
        match result {
            Ok(text) => formatted.push((i, text)),
            Err(err) => match err.downcast::<Unparsable>() {
                Ok(Unparsable(message)) => unparsable.push(message),
                // rustfmt is missing, or could not run: the same for every file.
                Err(err) => return Err(err),
            },
        }
    }
    if !unparsable.is_empty() {
        return Err(Unparsable(unparsable.join("\n")).into());
    }
    for (i, text) in formatted {
        if let Some(text) = text {
            files[i].1 = text;
        }
    }
    Ok(())
}

/// Refuses a FIFO, device or directory where the project's rustfmt settings go (`rustfmt.toml`,
/// `.rustfmt.toml`): taken for no settings, memop would format otherwise than `cargo fmt` does.
pub fn refuse_special_config(project: &Path) -> Result<()> {
    for name in ["rustfmt.toml", ".rustfmt.toml"] {
        if let Ok(meta) = std::fs::metadata(project.join(name))
            && !meta.is_file()
        {
            anyhow::bail!("{}", crate::fs::not_regular(Path::new(name), &meta.file_type(), "regular file"));
        }
    }
    Ok(())
}

/// The rustfmt command line.
struct Rustfmt {
    program: OsString,
    config: Option<PathBuf>,
}

impl Rustfmt {
    fn new(project: &Path) -> Self {
        let program = std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into());
        // A project's own rustfmt settings win, as with `cargo fmt` (see [`refuse_special_config`]).
        // Absolute: rustfmt runs in another directory.
        let config = ["rustfmt.toml", ".rustfmt.toml"]
            .iter()
            .map(|name| project.join(name))
            .find(|config| config.is_file())
            .map(|config| std::path::absolute(&config).unwrap_or(config));
        Self { program, config }
    }

    /// `contents` formatted, or `None` when the formatter printed nothing (a stand-in such as
    /// `RUSTFMT=true` that formats nothing): the file is then left as it is.
    fn format(&self, path: &Path, contents: &str) -> Result<Option<String>> {
        let mut cmd = Command::new(&self.program);
        cmd.args(["--edition", "2024", "--emit", "stdout", "--quiet"]);
        if let Some(config) = &self.config {
            cmd.arg("--config-path").arg(config);
        }
        // Without a config of the project's, rustfmt looks for one from its working directory up:
        // the temporary directory, as for a file of its own, not wherever memop was started.
        let temp = std::env::temp_dir();
        if temp.is_dir() {
            cmd.current_dir(temp);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running rustfmt")?;
        let mut stdin = child.stdin.take().expect("rustfmt's stdin is piped");
        // Written and read beside the wait, so that no side blocks on a full pipe; a formatter
        // that exits without reading breaks the pipe, which is its business. Threads of their
        // own, not scoped: a signal must not wait for a pipe that a killed formatter's children
        // still hold open.
        let input = contents.to_string();
        std::thread::spawn(move || drop(stdin.write_all(input.as_bytes())));
        fn read(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut bytes);
                }
                bytes
            })
        }
        let (stdout, stderr) = (read(child.stdout.take()), read(child.stderr.take()));
        // A signal stops memop within moments, not when rustfmt is done.
        let status = loop {
            if let Some(status) = child.try_wait().context("running rustfmt")? {
                break status;
            }
            if crate::interrupted() {
                let _ = child.kill();
                anyhow::bail!("interrupted; nothing was written");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let output = std::process::Output {
            status,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
        };
        if !output.status.success() {
            // rustfmt names its input `<stdin>`: name the project's file instead.
            let stderr = String::from_utf8_lossy(&output.stderr);
            let shown = path.display().to_string();
            // A parse error names its input; anything else (a bad rustfmt.toml, say) is not the
            // Rust's fault: the files then stay unformatted, with a note.
            if !stderr.contains("<stdin>") {
                anyhow::bail!("rustfmt failed on {shown}: {}", stderr.trim());
            }
            return Err(Unparsable(stderr.replace("<stdin>", &shown).trim().to_string()).into());
        }
        let text = String::from_utf8(output.stdout).context("rustfmt printed text that is not UTF-8")?;
        Ok((!text.is_empty() || contents.is_empty()).then_some(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn have_rustfmt() -> bool {
        Command::new("rustfmt").arg("--version").output().is_ok_and(|out| out.status.success())
    }

    #[test]
    fn formats_each_file_alone_and_never_opens_its_modules() {
        if !have_rustfmt() || std::env::var_os("RUSTFMT").is_some() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.rs");
        std::fs::write(&outside, "fn   outside( ) {let x=1;}\n").unwrap();
        let main = format!(
            "#[path = r\"{0}\"]\nmod a;\n#[cfg_attr(all(), path = \"{0}\")] mod b;\n#[allow(unused)] #[path = \"{0}\"] \
             mod c;\n#[path\n= \"{0}\"]\nmod d;\nmod missing;\nfn   main( ) {{}}\n",
            outside.display()
        );
        let mut files = vec![(PathBuf::from("src/main.rs"), main), (PathBuf::from("src/x.rs"), "fn  x() {}".into())];
        rustfmt(&mut files, dir.path()).unwrap();
        assert!(files[0].1.ends_with("mod missing;\nfn main() {}\n"), "{}", files[0].1);
        assert_eq!(files[1].1, "fn x() {}\n");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "fn   outside( ) {let x=1;}\n");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["outside.rs"], "nothing created beside it");
    }

    #[test]
    fn an_unparsable_file_is_named_by_its_project_path() {
        if !have_rustfmt() || std::env::var_os("RUSTFMT").is_some() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut files = vec![
            (PathBuf::from("src/fine.rs"), "fn fine() {}\n".to_string()),
            (PathBuf::from("src/controller/broken.rs"), "fn broken( {\n".to_string()),
        ];
        let err = rustfmt(&mut files, dir.path()).unwrap_err();
        let message = err.downcast_ref::<Unparsable>().expect("Unparsable").0.clone();
        assert!(message.contains("src/controller/broken.rs:1:"), "{message}");
        assert!(!message.contains("<stdin>"), "{message}");
        assert_eq!(files[1].1, "fn broken( {\n", "left as it was");
    }
}
