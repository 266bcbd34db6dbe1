/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What the fuzz targets share (tests/fuzz/, one libFuzzer program per
 * parser that reads outside bytes).  Each target defines
 * LLVMFuzzerTestOneInput(), links the kernel modules it feeds plus the
 * host fakes it needs (tests/fuzz/NAME.mk), and checks the module's
 * documented contract on every input with fuzz_check(): a broken
 * contract, like a sanitizer report, aborts and leaves the input behind
 * as a reproducer.
 */

#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry point, called once per input. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Abort with file, line and the expression when cond is false. */
#define fuzz_check(cond) fuzz_check_at((cond), #cond, __FILE__, __LINE__)

void fuzz_check_at(int cond, const char *expr, const char *file, int line);

/*
 * A stream of choices taken from the front of an input: the fuzzer
 * learns which bytes steer what.  Past the end every read returns 0.
 */
struct fuzz_stream {
    const uint8_t *data;
    size_t size;
};

uint8_t fuzz_stream_u8(struct fuzz_stream *s);
uint64_t fuzz_stream_u64(struct fuzz_stream *s);

/*
 * The next n bytes (or what is left) as a NUL-terminated string in buf
 * of size bytes (n < size); returns its length.  Embedded NULs stay,
 * so the C string may be shorter.
 */
size_t fuzz_stream_str(struct fuzz_stream *s, char *buf, size_t size,
                       size_t n);

/*
 * For the targets that parse ACPI tables (acpi_fuzz_check.c): the memory
 * acpi_fuzz_map() maps (size bytes at mem, physical address N at offset
 * N), and the check of acpi_info after acpi_parse() returned error.
 */
void acpi_fuzz_map_set(const void *mem, size_t size);
const void *acpi_fuzz_map(uint64_t pa, size_t size);
void acpi_fuzz_check_info(int error);

#endif /* TESTS_FUZZ_FUZZ_H */
