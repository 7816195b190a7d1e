// What the compiler of this translation unit offers, asked in one place.
//
// Sanitizers. GCC defines __SANITIZE_THREAD__ / __SANITIZE_ADDRESS__; Clang (14 at
// least) defines neither and answers __has_feature instead, so a check of the
// GCC macros alone silently leaves fiber switches unannotated under Clang.
//
//   PROMPTLY_UNDER_TSAN  1 under ThreadSanitizer, else 0
//   PROMPTLY_UNDER_ASAN  1 under AddressSanitizer, else 0
//
// PROMPTLY_NEVER_INLINE: a call that stays a call, not even analysed across by
// link-time optimization (GCC's noipa; Clang has no such attribute, and its
// noinline keeps the call opaque enough: a function that re-reads a
// thread_local after a fiber switch must not be folded into its caller).
#pragma once

#if defined(__has_feature)
#define PROMPTLY_HAS_FEATURE(x) __has_feature(x)
#else
#define PROMPTLY_HAS_FEATURE(x) 0
#endif

#if defined(__SANITIZE_THREAD__) || PROMPTLY_HAS_FEATURE(thread_sanitizer)
#define PROMPTLY_UNDER_TSAN 1
#else
#define PROMPTLY_UNDER_TSAN 0
#endif

#if defined(__SANITIZE_ADDRESS__) || PROMPTLY_HAS_FEATURE(address_sanitizer)
#define PROMPTLY_UNDER_ASAN 1
#else
#define PROMPTLY_UNDER_ASAN 0
#endif

#if defined(__clang__)
#define PROMPTLY_NEVER_INLINE __attribute__((noinline))
#else
#define PROMPTLY_NEVER_INLINE __attribute__((noinline, noipa))
#endif
