//! Gives the allocator's free memory back to the system every few seconds (glibc's malloc;
//! nothing to do with other allocators).
//!
//! glibc keeps what a process frees for its next allocations and gives back to the system only
//! the free room at the top of each heap. A manager's caches replace an object's compact JSON at
//! each change of it, in sizes that vary, so the room they free is scattered through the heaps
//! and stays resident: at 30,000 objects, 142 MiB held by malloc for 108 MiB in use
//! (`docs/performance.md`). `malloc_trim` gives back every whole free page inside the heaps as
//! well, so that the manager's resident memory follows what it holds.

use std::time::Duration;

use super::Shutdown;

/// How often: a trim walks the free room of every heap, a few milliseconds at 30,000 objects.
const EVERY: Duration = Duration::from_secs(5);

/// Trims every [`EVERY`] until `shutdown`.
pub(crate) async fn every_few_seconds(shutdown: Shutdown) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(EVERY) => {}
            () = shutdown.wait() => return,
        }
        // It holds each heap's lock while it walks it: off the runtime's workers.
        let _ = tokio::task::spawn_blocking(trim).await;
    }
}

/// Gives glibc's free memory back to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn trim() {
    unsafe extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: malloc_trim takes no pointer and only rearranges malloc's own free lists; glibc
    // has had it since 2.0.
    unsafe {
        malloc_trim(0);
    }
}

/// Other allocators (musl's gives its free memory back as it goes).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn trim() {}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// The process's resident memory, in KiB.
    fn resident_kib() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status
            .lines()
            .find(|line| line.starts_with("VmRSS:"))
            .unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// Scattered free room, as a cache's replaced objects leave it, is given back: 64 MiB of
    /// 1 KiB allocations of which every sixteenth stays, in a thread of its own (its own
    /// arena, which no other test's allocations share).
    #[test]
    fn scattered_free_memory_goes_back_to_the_system() {
        let (before, after) = std::thread::spawn(|| {
            let mut blocks: Vec<Box<[u8]>> =
                (0..65_536).map(|i| vec![i as u8; 1000].into()).collect();
            let mut kept = Vec::with_capacity(blocks.len() / 16);
            for (i, block) in blocks.drain(..).enumerate() {
                if i % 16 == 0 {
                    kept.push(block);
                }
            }
            let before = resident_kib();
            super::trim();
            let after = resident_kib();
            drop(kept);
            (before, after)
        })
        .join()
        .unwrap();
        // About 60 MiB are free, in holes of 15 KiB: at least 3 whole pages each.
        assert!(
            before.saturating_sub(after) > 20 * 1024,
            "resident {before} KiB before the trim, {after} KiB after"
        );
    }
}
