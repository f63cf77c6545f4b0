//! One malloc arena for the whole agent. glibc gives each thread that
//! allocates an arena of its own (up to 8 per core), and a hashing
//! thread's arena keeps what it freed: at a million files, the default
//! arenas took 59.4 MiB of resident memory for a run whose heap peaked at
//! 27.3 MiB, and one arena 35.1 MiB (`make bench-agent-tree`; issue 31's
//! target is 64 MiB at 4 million files). The hashing threads allocate a
//! few small strings per file, a lock's cost beside a file's read.

/// Limits glibc's malloc to one arena; elsewhere (musl, other systems)
/// there is nothing to limit.
pub fn limit() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of the allocator; it is called
    // before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
