/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Helper macros shared by every module.
 */

#ifndef KERN_MACROS_H
#define KERN_MACROS_H

#include <stddef.h>

#define ARRAY_SIZE(a)       (sizeof(a) / sizeof((a)[0]))

#define likely(x)           __builtin_expect(!!(x), 1)
#define unlikely(x)         __builtin_expect(!!(x), 0)

#define P2ALIGNED(x, a)     (((x) & ((a) - 1)) == 0)
#define P2ALIGN(x, a)       ((x) & -(a))
#define P2ROUND(x, a)       (-(-(x) & -(a)))
#define DIV_CEIL(n, d)      (((n) + (d) - 1) / (d))

#define MIN(a, b)           ((a) < (b) ? (a) : (b))
#define MAX(a, b)           ((a) > (b) ? (a) : (b))

#define STRINGIFY_(x)       #x
#define STRINGIFY(x)        STRINGIFY_(x)

#define structof(ptr, type, member) \
    ((type *)((char *)(ptr) - offsetof(type, member)))

#define READ_ONCE(x)        (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)    (*(volatile __typeof__(x) *)&(x) = (v))

#define barrier()           __asm__ __volatile__("" : : : "memory")

#define __noreturn          __attribute__((noreturn))
#define __aligned(x)        __attribute__((aligned(x)))
#define __packed            __attribute__((packed))
#define __used              __attribute__((used))
#define __unused            __attribute__((unused))
#define __section(s)        __attribute__((section(s)))
#define __format_printf(fmt, args) \
    __attribute__((format(printf, fmt, args)))

/*
 * Loops kept as written: at -O2 gcc turns a copy loop into a memcpy call
 * (rep movsb in the kernel, counted per byte by the step PMU).  clang,
 * which builds the fuzz targets, has no such option.
 */
#ifdef __clang__
#define __keep_loops
#else
#define __keep_loops \
    __attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif

#define CACHE_LINE_SIZE     64

#endif /* KERN_MACROS_H */
