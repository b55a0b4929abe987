//! `--backend`'s help, made from the backends `taskhub_backends` lists, so that `taskhub --help`
//! names every one (a backend added to `BACKENDS` shows up with no edit here).

use clap::{CommandFactory, FromArgMatches};
use taskhub_backends::{Backend, BACKENDS};

use crate::args::Cli;

/// The command line, with `--backend`'s help made from [`BACKENDS`].
pub fn command() -> clap::Command {
    Cli::command().mut_arg("backend", |arg| arg.help(help(BACKENDS)))
}

/// The process's arguments parsed against [`command`]; exits as clap does on an error or
/// `--help`.
pub fn parse() -> Cli {
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.format(&mut command()).exit())
}

/// "Where the task hub lives (setting `backend`): `sqlite`, its summary; `azure`, …".
fn help(backends: &[&dyn Backend]) -> String {
    let each: Vec<String> = backends
        .iter()
        .map(|b| format!("`{}`, {}", b.name(), b.summary()))
        .collect();
    format!(
        "Where the task hub lives (setting `backend`): {}",
        each.join("; ")
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_help_names_every_backend() {
        let help = super::command().render_long_help().to_string();
        let names = taskhub_backends::names();
        assert!(names.len() >= 4, "{names:?}");
        for name in names {
            assert!(
                help.contains(&format!("`{name}`")),
                "{name} missing from:\n{help}"
            );
        }
    }
}
