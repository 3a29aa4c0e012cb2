#ifndef C_KEYED_ARCHIVE_SHIMS_H
#define C_KEYED_ARCHIVE_SHIMS_H

#include <pthread.h>

/// Asks the processor to start loading the cache line at `address` for reading, without
/// waiting for it: a load that misses the caches holds up the instructions after it once the
/// processor's window fills, a prefetch never does. Swift has no way to say this itself.
static inline __attribute__((always_inline)) void keyed_archive_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

/// Reads the word at `address` atomically, seeing everything written before the matching
/// store (acquire). Swift's own atomics need the Synchronization module (macOS 15).
static inline __attribute__((always_inline)) long keyed_archive_load_acquire(const long *address) {
    return __atomic_load_n(address, __ATOMIC_ACQUIRE);
}

/// Writes `value` to the word at `address` atomically (release).
static inline __attribute__((always_inline)) void keyed_archive_store_release(long *address, long value) {
    __atomic_store_n(address, value, __ATOMIC_RELEASE);
}

#if defined(__linux__)
/// Declared here: glibc and musl declare it only with _GNU_SOURCE, which Swift's Glibc module
/// is built without.
extern int pthread_getattr_np(pthread_t thread, pthread_attr_t *attributes);
#endif

/// The lowest address of the calling thread's stack, or 0 when the system cannot say
/// (pthread_getattr_np on Linux, the pthread_get_stack*_np pair on Apple platforms).
static inline unsigned long keyed_archive_stack_bottom(void) {
#if defined(__linux__)
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
    void *address = 0;
    size_t size = 0;
    int status = pthread_attr_getstack(&attributes, &address, &size);
    pthread_attr_destroy(&attributes);
    return status == 0 ? (unsigned long)address : 0;
#elif defined(__APPLE__)
    pthread_t thread = pthread_self();
    unsigned long top = (unsigned long)pthread_get_stackaddr_np(thread);
    unsigned long size = (unsigned long)pthread_get_stacksize_np(thread);
    return top > size ? top - size : 0;
#else
    return 0;
#endif
}

#endif
