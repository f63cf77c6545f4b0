//! One malloc arena for the whole agent. glibc gives each thread that
//! allocates an arena of its own (up to 8 per core), and a hashing
//! thread's arena keeps what it freed: at a million files, the default
//! arenas took 59.4 MiB of resident memory for a run whose heap peaked at
//! 27.3 MiB, and one arena 35.1 MiB (`make bench-agent-tree`; issue 31's
//! target is 64 MiB at 4 million files). The hashing threads allocate a
//! few small strings per file, a lock's cost beside a file's read.

//!
//! Blocks of 128 KiB or more are always mapped on their own, and unmapped
//! when freed: glibc's default raises that threshold each time such a
//! block is freed (up to 32 MiB), after which a step's large buffers and
//! tables (a sort run, a change plan's sets) come from the heap, whose
//! freed middle the next step's small allocations keep resident.

/// What glibc's `M_MMAP_THRESHOLD` is held at (its initial default).
const MMAP_THRESHOLD: i32 = 128 * 1024;

/// Limits glibc's malloc to one arena and a fixed mmap threshold;
/// elsewhere (musl, other systems) there is nothing to limit.
pub fn limit() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets tunables of the allocator; it is called
    // before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}
