//! labrun's exit statuses: one table for every command, so that a script
//! (a CI job, a systemd timer, `labrun track`'s caller) reads each the same
//! way. The guide's "Exit status" table (docs/guide/getting-started.md)
//! says the same in words.

/// Done as asked: every step passed, the lab is valid, nothing worse, the
/// commit found.
pub const OK: u8 = 0;
/// Done, and the answer is no: a step failed or the run was stopped, the
/// lab is invalid, a comparison or a track found something worse, a search
/// stopped without its answer; and every error labrun reports itself.
pub const FAILED: u8 = 1;
/// Nothing was done: the arguments or the data named what is not there or
/// cannot be used (nothing to compare, no run of that tool in the store, a
/// bad `--scale`), as clap's own usage errors are 2.
pub const NOTHING_DONE: u8 = 2;
/// `bench`: the connection to the guest was lost while the run goes on
/// there; `labrun bench --attach` reconnects and finishes it.
pub const CONNECTION_LOST: u8 = 3;
/// Interrupted (Ctrl-C): what was measured is kept, and the same command
/// continues from it (128 + SIGINT, as a shell reports it).
pub const INTERRUPTED: u8 = 130;
