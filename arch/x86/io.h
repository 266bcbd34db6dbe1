/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * x86 port I/O.
 */

#ifndef ARCH_X86_IO_H
#define ARCH_X86_IO_H

#include <stdint.h>

static inline void
io_write8(uint16_t port, uint8_t value)
{
    __asm__ __volatile__("outb %0, %1" : : "a"(value), "Nd"(port));
}

static inline uint8_t
io_read8(uint16_t port)
{
    uint8_t value;

    __asm__ __volatile__("inb %1, %0" : "=a"(value) : "Nd"(port));
    return value;
}

static inline void
io_write16(uint16_t port, uint16_t value)
{
    __asm__ __volatile__("outw %0, %1" : : "a"(value), "Nd"(port));
}

static inline void
io_write32(uint16_t port, uint32_t value)
{
    __asm__ __volatile__("outl %0, %1" : : "a"(value), "Nd"(port));
}

static inline uint32_t
io_read32(uint16_t port)
{
    uint32_t value;

    __asm__ __volatile__("inl %1, %0" : "=a"(value) : "Nd"(port));
    return value;
}

#endif /* ARCH_X86_IO_H */
