// Most shims are inline functions in include/CKeyedArchiveShims.h; the stack bottom needs
// _GNU_SOURCE on Linux, which must come before the system headers.
#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include "CKeyedArchiveShims.h"

unsigned long keyed_archive_stack_bottom(void) {
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
