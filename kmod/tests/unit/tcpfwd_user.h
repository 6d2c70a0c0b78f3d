/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace stand-ins for the kernel types and helpers that the pure parts
 * of the modules use (included by kmod/core/tcpfwd_pure.h when
 * __KERNEL__ is not defined).  Only the unit tests see this file.
 */
#ifndef _TCPFWD_USER_H
#define _TCPFWD_USER_H

#include <assert.h>		/* static_assert */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((__always_inline__))
#endif

#ifndef noinline
#define noinline __attribute__((__noinline__))
#endif

#ifndef min_t
#define min_t(type, x, y) ((type)(x) < (type)(y) ? (type)(x) : (type)(y))
#define max_t(type, x, y) ((type)(x) > (type)(y) ? (type)(x) : (type)(y))
#endif
#ifndef DIV_ROUND_UP
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#endif

#ifndef U16_MAX
#define U16_MAX ((u16)~0U)
#endif

/* Nothing is exported from a test binary. */
#define EXPORT_SYMBOL_GPL(sym) extern int tcpfwd_unit_no_export_##sym

/* Same definitions as include/net/tcp.h: sequence-space comparisons. */
static inline bool before(u32 seq1, u32 seq2)
{
	return (s32)(seq1 - seq2) < 0;
}

#define after(seq2, seq1)	before(seq1, seq2)

#endif /* _TCPFWD_USER_H */
