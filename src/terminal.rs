//! Everything labrun prints goes through here, because most of it carries
//! text from a lab file, a guest or a remote machine: names, versions, URLs,
//! paths, tool output, error messages. A terminal obeys the control
//! characters in that text (clear the screen, retitle the window, return to
//! the start of the line and print a fake "is valid"), so they are shown
//! escaped instead (see [`labrun_evidence::printable`]).
//!
//! The `safe_*` macros are `println!` and friends with the whole text
//! escaped, newlines and tabs kept: a line labrun composes from any source
//! cannot drive the terminal. A single value that must stay on its line
//! (a tool name, a status message) is escaped with [`one_line`] as well.

pub use labrun_evidence::printable::{printable as one_line, printable_text as text};

/// `println!`, with every control character but newline and tab escaped.
macro_rules! safe_println {
    () => {
        println!()
    };
    ($($arg:tt)*) => {
        println!("{}", $crate::terminal::text(&format!($($arg)*)))
    };
}

/// `print!`, escaped as [`safe_println!`].
macro_rules! safe_print {
    ($($arg:tt)*) => {
        print!("{}", $crate::terminal::text(&format!($($arg)*)))
    };
}

/// `eprintln!`, escaped as [`safe_println!`].
macro_rules! safe_eprintln {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::terminal::text(&format!($($arg)*)))
    };
}

/// `eprint!`, escaped as [`safe_println!`].
macro_rules! safe_eprint {
    ($($arg:tt)*) => {
        eprint!("{}", $crate::terminal::text(&format!($($arg)*)))
    };
}

/// A line for an indicatif bar (its message, or a line printed above it):
/// escaped, newline included, since a bar redraws one line in place.
pub fn bar_line(s: &str) -> String {
    one_line(s).into_owned()
}

/// Text printed above an indicatif bar: several lines allowed, escaped.
pub fn bar_text(s: &str) -> String {
    text(s).into_owned()
}
