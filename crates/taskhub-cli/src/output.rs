//! Writing to stdout without panicking when the reader goes away (`taskhub ... | head`):
//! [`outln!`](crate::outln) and [`out!`](crate::out) end the process quietly on a broken pipe
//! instead of panicking as `println!` does.

use std::io::Write as _;

/// Writes `text` to stdout. On a broken pipe the process exits with code 0: the reader has
/// seen all it wanted. Other write errors are reported on stderr and exit with code 1.
pub fn write_stdout(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}

/// `print!` that never panics (see [`write_stdout`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_stdout(&format!($($arg)*)) };
}

/// `println!` that never panics (see [`write_stdout`]).
#[macro_export]
macro_rules! outln {
    () => { $crate::output::write_stdout("\n") };
    ($($arg:tt)*) => { $crate::output::write_stdout(&format!("{}\n", format_args!($($arg)*))) };
}
