//! `contenox`: a hook registry in SQLite (`contenox hook ...`), and agent turns and task chains
//! in the terminal (`contenox run ...`), and the agent of an editor over the Agent Client
//! Protocol (`contenox acp`).

mod acp;
mod args;
mod db;
mod elicit_form;
mod error;
mod gate;
mod hook_args;
mod hook_cmd;
mod mcp_auth;
mod preview;
mod printer;
mod run_cmd;
mod setup;
mod stdout;
mod terminal;

use std::time::Duration;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::error::EXIT_FAILED;

fn main() {
    // clap exits with code 2 on a bad flag, as every other bad input does.
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("contenox: cannot start: {e}");
            std::process::exit(EXIT_FAILED);
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Hook(command) => hook_cmd::run(&cli.db, command).await.map(|()| 0),
            Command::Run(args) => run_cmd::run(&cli.db, *args).await,
            Command::Acp(args) => acp::run(&cli.db, *args).await,
            Command::Mcp(command) => mcp_auth::run(command).map(|()| 0),
        }
    });
    // The stdin reader of the approval prompt is a plain thread blocked in read(): it is not
    // waited for.
    runtime.shutdown_timeout(Duration::from_secs(2));
    match outcome {
        Ok(code) => stdout::exit(code),
        Err(e) => {
            if !e.message.is_empty() {
                eprintln!("contenox: {}", e.message);
            }
            stdout::exit(e.code);
        }
    }
}
