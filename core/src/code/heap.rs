//! The JavaScript heap's allocator: Rust's, counted, refusing past the limit.
//!
//! QuickJS's own memory limit lives in its default allocator, and its out-of-memory error is
//! an exception the code can catch (and then try again). Counting here lets the run end for
//! good once the limit was hit: the interrupt handler reads [`HeapMeter::hit`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use rquickjs::allocator::{Allocator, RustAllocator};

/// What the heap holds now and whether an allocation was refused; shared with the run.
#[derive(Debug, Default)]
pub(crate) struct HeapMeter {
    used: AtomicUsize,
    hit: AtomicBool,
}

impl HeapMeter {
    /// An allocation was refused: the code reached the memory limit.
    pub(crate) fn hit(&self) -> bool {
        self.hit.load(Ordering::Relaxed)
    }

    /// Bytes the heap holds now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

/// [`RustAllocator`] that refuses any allocation taking the heap past `limit` bytes.
pub(crate) struct LimitedHeap {
    limit: usize,
    meter: Arc<HeapMeter>,
}

impl LimitedHeap {
    pub(crate) fn new(limit: usize, meter: Arc<HeapMeter>) -> Self {
        LimitedHeap { limit, meter }
    }

    /// Reserve `size` more bytes; false (and the limit marked hit) when they do not fit.
    fn reserve(&self, size: usize) -> bool {
        let used = self.meter.used.load(Ordering::Relaxed);
        match used.checked_add(size) {
            Some(total) if total <= self.limit => {
                self.meter.used.store(total, Ordering::Relaxed);
                true
            }
            _ => {
                self.meter.hit.store(true, Ordering::Relaxed);
                false
            }
        }
    }

    fn release(&self, size: usize) {
        self.meter.used.fetch_sub(size, Ordering::Relaxed);
    }
}

// SAFETY: every pointer comes from RustAllocator and goes back to it; the counting only
// refuses (returns null, which QuickJS handles as out of memory) before it is asked.
unsafe impl Allocator for LimitedHeap {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.reserve(size) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        if ptr.is_null() {
            self.release(size);
            return ptr;
        }
        // Count what the block really holds (sizes are rounded up).
        // SAFETY: `ptr` came from RustAllocator just now.
        let real = unsafe { RustAllocator::usable_size(ptr) };
        self.meter
            .used
            .fetch_add(real - size.min(real), Ordering::Relaxed);
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        // RustAllocator panics on an overflowing product: refuse it here instead.
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if total == 0 || !self.reserve(total) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        if ptr.is_null() {
            self.release(total);
            return ptr;
        }
        // SAFETY: `ptr` came from RustAllocator just now.
        let real = unsafe { RustAllocator::usable_size(ptr) };
        self.meter
            .used
            .fetch_add(real - total.min(real), Ordering::Relaxed);
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: `ptr` came from RustAllocator (the caller's contract).
        let size = unsafe { RustAllocator::usable_size(ptr) };
        unsafe { RustAllocator.dealloc(ptr) };
        self.release(size);
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(new_size);
        }
        // SAFETY: `ptr` came from RustAllocator (the caller's contract).
        let old = unsafe { RustAllocator::usable_size(ptr) };
        if new_size > old && !self.reserve(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above; on failure the old block stays valid, as realloc promises.
        let new = unsafe { RustAllocator.realloc(ptr, new_size) };
        if new.is_null() {
            if new_size > old {
                self.release(new_size - old);
            }
            return new;
        }
        // Settle the count on what the new block really holds.
        // SAFETY: `new` came from RustAllocator just now.
        let real = unsafe { RustAllocator::usable_size(new) };
        let counted = old.max(new_size);
        if real >= counted {
            self.meter.used.fetch_add(real - counted, Ordering::Relaxed);
        } else {
            self.release(counted - real);
        }
        new
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: `ptr` came from RustAllocator (the caller's contract).
        unsafe { RustAllocator::usable_size(ptr) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_what_it_holds_and_refuses_past_the_limit() {
        let meter = Arc::new(HeapMeter::default());
        let mut heap = LimitedHeap::new(4096, meter.clone());
        let a = heap.alloc(1000);
        assert!(!a.is_null());
        assert!(meter.used() >= 1000);
        let a = unsafe { heap.realloc(a, 3000) };
        assert!(!a.is_null());
        assert!(meter.used() >= 3000);
        assert!(heap.alloc(2000).is_null(), "past the limit");
        assert!(meter.hit());
        assert!(
            heap.calloc(usize::MAX, 2).is_null(),
            "an overflowing product is refused"
        );
        unsafe { heap.dealloc(a) };
        assert_eq!(meter.used(), 0, "everything given back");
    }

    #[test]
    fn the_whole_runtime_gives_back_every_byte() {
        let meter = Arc::new(HeapMeter::default());
        {
            let rt = rquickjs::Runtime::new_with_alloc(LimitedHeap::new(1 << 26, meter.clone()))
                .unwrap();
            let ctx = rquickjs::Context::full(&rt).unwrap();
            let n: i32 = ctx.with(|ctx| ctx.eval("[1, 2, 3].map((x) => x * 2).length").unwrap());
            assert_eq!(n, 3);
            assert!(meter.used() > 0);
        }
        assert_eq!(meter.used(), 0);
        assert!(!meter.hit());
    }
}
