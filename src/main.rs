//! memop: scaffold Kubernetes operators in Rust (kube-rs), the way kubebuilder does for Go.
//!
//! This file parses the command line, dispatches, and turns an error into one message and a
//! non-zero exit code. Everything else lives in the modules.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use memop::commands;

#[derive(Debug, Parser)]
#[command(
    name = "memop",
    version,
    about = "Scaffold Kubernetes operators in Rust (kube-rs), the way kubebuilder does for Go",
    after_help = "Example:\n  mkdir memcached-operator && cd memcached-operator\n  memop init --domain example.com\n  memop create api --group cache --kind Memcached"
)]
struct Cli {
    /// Run as if memop was started in DIR (`init` creates DIR when it is missing)
    #[arg(short = 'C', long = "directory", global = true, value_name = "DIR")]
    dir: Option<PathBuf>,

    /// Print every file that would be created or changed (a diff for changes); write nothing
    #[arg(long, global = true)]
    dry_run: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Init(commands::init::Args),
    /// Scaffold a new part of the project (`create api`, `create webhook`)
    #[command(subcommand, after_help = "Example:\n  memop create api --group cache --kind Memcached")]
    Create(Create),
    /// Delete a part of the project (`delete api`: one version of a kind)
    #[command(
        subcommand,
        after_help = "Example:\n  memop delete api --group cache --version v1alpha1 --kind Memcached"
    )]
    Delete(Delete),
    Update(commands::update::Args),
    ExternalTypes(commands::external_types::Args),
    /// Print memop's version, the commit it was built from, and the Kubernetes, kube and runtime
    /// versions of the projects it generates
    Version,
    Completion(commands::completion::Args),
    Edit(commands::edit::Args),
    /// kubebuilder's `alpha`, answered with what memop offers instead
    #[command(hide = true)]
    Alpha(Ignored),
}

/// The arguments of a kubebuilder command memop does not have: taken as they are, so that the
/// answer is about the command, not about its flags.
#[derive(Debug, clap::Args)]
struct Ignored {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum Create {
    // Boxed: the largest of the arguments by far, which the others need not carry.
    Api(Box<commands::create_api::Args>),
    Webhook(commands::create_webhook::Args),
}

#[derive(Debug, Subcommand)]
enum Delete {
    Api(commands::delete_api::Args),
}

impl Command {
    /// Whether the command works on an existing project, which it finds from inside it.
    fn on_a_project(&self) -> bool {
        matches!(
            self,
            Command::Create(_) | Command::Delete(_) | Command::Update(_) | Command::Edit(_) | Command::ExternalTypes(_)
        )
    }

    /// Whether the command writes a project (`init` a new one): it dates license headers, and
    /// holds the project's lock.
    fn writes(&self) -> bool {
        self.on_a_project() || matches!(self, Command::Init(_))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    memop::catch_interrupts();
    let on_a_project = cli.command.on_a_project();
    // As `git -C` and `make -C`: a -C that names no directory is an error, never a reason to
    // look further up (a typo in a script would change the project around it).
    if let Some(dir) = cli.dir.as_deref().filter(|_| on_a_project)
        && !dir.is_dir()
    {
        let what = match dir.exists() {
            true => format!("{} is not a directory", dir.display()),
            false => format!("directory {} does not exist", dir.display()),
        };
        memop::warn_line!("error: {what}; pass -C with your project's directory (or run the command inside it)");
        return ExitCode::FAILURE;
    }
    // The commands that write files date their license headers with it.
    if cli.command.writes()
        && let Err(err) = memop::clock::source_date_epoch()
    {
        memop::warn_line!("error: {err}");
        return ExitCode::FAILURE;
    }
    let mut dir = cli.dir.unwrap_or_else(|| PathBuf::from("."));
    // Commands on a project work from any directory inside it, as cargo and git find their root.
    if on_a_project
        && !dir.join(memop::project::FILE).exists()
        && let Some(root) = memop::project::find_root(&dir)
    {
        memop::warn_line!("note: working on the project in {}", root.display());
        dir = root;
    }
    let global = commands::Global { dir, dry_run: cli.dry_run };
    // `init` makes its directory first, to hold its lock (see `init::make_dir`).
    let made_dirs = match matches!(cli.command, Command::Init(_)) && !global.dry_run {
        true => commands::init::make_dir(&global.dir),
        false => Vec::new(),
    };
    // Commands that change a project hold its lock while they read, plan and write.
    let lock = match cli.command.writes() && !global.dry_run {
        true => memop::lock::Lock::take(&global.dir),
        false => Ok(None),
    };
    // The report of the commands that answer flags: a command that fails still shows them.
    let mut report = commands::Report::default();
    let result = match (lock, cli.command) {
        (Err(err), _) => Err(err),
        (Ok(_lock), Command::Init(args)) => commands::init::run(&global, args, &mut report),
        (Ok(_lock), Command::Create(Create::Api(args))) => commands::create_api::run(&global, *args, &mut report),
        (Ok(_lock), Command::Create(Create::Webhook(args))) => {
            commands::create_webhook::run(&global, args, &mut report)
        }
        (Ok(_lock), Command::Delete(Delete::Api(args))) => commands::delete_api::run(&global, args, &mut report),
        (Ok(_lock), Command::Update(args)) => commands::update::run(&global, args, &mut report),
        (Ok(_lock), Command::ExternalTypes(args)) => commands::external_types::run(&global, args),
        (Ok(_), Command::Version) => commands::say(&commands::version::text()),
        (Ok(_lock), Command::Edit(args)) => commands::edit::run(&global, args, &mut report),
        (Ok(_), Command::Alpha(_)) => Err(anyhow::anyhow!(
            "memop has no `alpha` commands: for `alpha update`, run `memop update` (it moves the \
             project to this memop's runtime); for `alpha generate`, run `memop init` in a new \
             directory and copy your code over"
        )),
        (Ok(_), Command::Completion(args)) => commands::completion::run::<Cli>(args),
    };
    // Before the error, where the command would have printed them first.
    commands::print_answers(&mut report);
    if result.is_err() {
        commands::init::remove_dirs(&made_dirs);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            memop::warn_line!("error: {err}");
            for cause in err.chain().skip(1) {
                memop::warn_line!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}
