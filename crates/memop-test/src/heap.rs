//! The bytes a process holds on the heap, for benchmarks: [`Counting`] is the system allocator
//! with a counter of the bytes allocated and not yet freed beside it. What a controller's caches
//! cost is the growth of [`live`] while they fill, once the benchmark's own transient lists are
//! dropped; the resident size would also count memory the allocator keeps after they are freed.
//!
//! ```ignore
//! #[global_allocator]
//! static COUNTING_ALLOCATOR: memop_test::heap::Counting = memop_test::heap::Counting;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting; install it with `#[global_allocator]`.
pub struct Counting;

/// The bytes allocated and not yet freed.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The bytes allocated through [`Counting`] and not yet freed, now (0 when it is not the
/// global allocator).
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

// SAFETY: every call goes to the system allocator unchanged; a counter is kept beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Added before the old size is taken away, so that the counter never wraps below zero.
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_bytes_grow_with_an_allocation_and_shrink_with_its_release() {
        let layout = Layout::from_size_align(1 << 20, 8).unwrap();
        let before = live();
        // SAFETY: a non-zero layout; the pointer is released with the same layout.
        unsafe {
            let ptr = Counting.alloc(layout);
            assert!(!ptr.is_null());
            assert_eq!(live() - before, 1 << 20);
            let ptr = Counting.realloc(ptr, layout, 2 << 20);
            assert_eq!(live() - before, 2 << 20);
            Counting.dealloc(ptr, Layout::from_size_align(2 << 20, 8).unwrap());
        }
        assert_eq!(live(), before);
    }
}
