#ifndef C_KEYED_ARCHIVE_SHIMS_H
#define C_KEYED_ARCHIVE_SHIMS_H

/// Asks the processor to start loading the cache line at `address` for reading, without
/// waiting for it: a load that misses the caches holds up the instructions after it once the
/// processor's window fills, a prefetch never does. Swift has no way to say this itself.
static inline __attribute__((always_inline)) void keyed_archive_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

#endif
