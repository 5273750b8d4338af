//! The `pai` binary: parse the command line and hand off to `polyglot::app`.

use clap::Parser;

fn main() {
    let cli = polyglot::cli::Cli::parse();
    std::process::exit(polyglot::app::run(cli));
}
