//! The client build's allocator (no `std` feature): power-of-two size
//! classes, one free list each, carved from `memory.grow` pages. A few
//! hundred bytes instead of dlmalloc's ~8 KB, and O(1) both ways.
//!
//! Freed blocks are reused only by their own class and never coalesced, so
//! the heap is the sum of each class's peak: bounded for a client, whose
//! buffers are sized by its configuration and its one server's window, and
//! whose `Vec`s grow by doubling (one class per step). A block is aligned to
//! 16; a layout asking for more fails the allocation (no type in the module
//! asks for it). Single-threaded: wasm32 without atomics.

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32::memory_grow;
use core::cell::UnsafeCell;
use core::ptr::null_mut;

const PAGE: usize = 65_536;
const ALIGN: usize = 16;

pub(crate) struct ClassAlloc(UnsafeCell<Heap>);

struct Heap {
    /// Head of each class's free list (0: empty); class `c` holds blocks of
    /// `1 << c` bytes, each free block's first word the next one's address.
    free: [usize; usize::BITS as usize],
    /// The bump region taken from `memory.grow` and not yet carved.
    next: usize,
    end: usize,
}

// wasm32-unknown-unknown without atomics runs one thread.
unsafe impl Sync for ClassAlloc {}

impl ClassAlloc {
    pub(crate) const fn new() -> ClassAlloc {
        ClassAlloc(UnsafeCell::new(Heap {
            free: [0; usize::BITS as usize],
            next: 0,
            end: 0,
        }))
    }
}

/// The class of a block that holds `size` bytes: ceil(log2), at least 16.
fn class(size: usize) -> usize {
    (usize::BITS - (size.max(ALIGN) - 1).leading_zeros()) as usize
}

unsafe impl GlobalAlloc for ClassAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() > ALIGN {
            return null_mut();
        }
        let c = class(layout.size());
        if c >= usize::BITS as usize {
            return null_mut();
        }
        // SAFETY: one thread, and no allocation re-enters the allocator.
        let heap = unsafe { &mut *self.0.get() };
        let head = heap.free[c];
        if head != 0 {
            // SAFETY: `head` is a free block of this class, its first word
            // written by `dealloc`.
            heap.free[c] = unsafe { *(head as *const usize) };
            return head as *mut u8;
        }
        let size = 1usize << c;
        if heap.end - heap.next < size {
            let pages = size.div_ceil(PAGE);
            let old = memory_grow(0, pages);
            if old == usize::MAX {
                return null_mut();
            }
            let start = old * PAGE;
            // Contiguous with the region left (only this allocator grows
            // the memory): extend it; otherwise start afresh.
            if start != heap.end {
                heap.next = start;
            }
            heap.end = start + pages * PAGE;
        }
        let block = heap.next;
        heap.next += size;
        block as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let c = class(layout.size());
        // SAFETY: one thread; `ptr` came from `alloc` with this layout, so
        // it is a block of class `c`, aligned for a usize.
        unsafe {
            let heap = &mut *self.0.get();
            *(ptr as *mut usize) = heap.free[c];
            heap.free[c] = ptr as usize;
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if class(new_size) == class(layout.size()) {
            return ptr;
        }
        // SAFETY: the caller's contract, passed on (as the default does).
        unsafe {
            let new = self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()));
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}
