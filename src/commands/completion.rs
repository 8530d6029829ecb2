//! `memop completion <shell>`: shell completion scripts.

use anyhow::Result;
use clap::CommandFactory;
use clap_complete::Shell;

/// Print a shell completion script
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example:\n  memop completion bash > /etc/bash_completion.d/memop\n  memop completion zsh > \"${fpath[1]}/_memop\""
)]
pub struct Args {
    /// The shell to complete for
    #[arg(value_parser = ["bash", "zsh", "fish"])]
    shell: String,
}

pub fn run<C: CommandFactory>(args: Args) -> Result<()> {
    let shell = match args.shell.as_str() {
        "zsh" => Shell::Zsh,
        "fish" => Shell::Fish,
        _ => Shell::Bash,
    };
    let mut cmd = C::command();
    // Into memory first: clap_complete panics when it cannot write.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "memop", &mut script);
    super::tell(&String::from_utf8_lossy(&script))
}
