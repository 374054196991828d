// DLAUNCH_SANITIZER_MALLOC is defined where ASan or TSan replaces malloc (gcc's
// __SANITIZE_*__, clang's __has_feature): there freed memory is kept (quarantine) and resident
// memory is not the program's own, so tests of memory use or of glibc's allocator skip.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DLAUNCH_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DLAUNCH_SANITIZER_MALLOC 1
#endif
#endif
