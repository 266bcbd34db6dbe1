/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * QEMU fw_cfg access through the legacy I/O ports.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/fwcfg.h"
#include "arch/x86/io.h"
#include "kern/error.h"
#include "kern/string.h"

#define FWCFG_PORT_SEL          0x510
#define FWCFG_PORT_DATA         0x511
#define FWCFG_KEY_SIGNATURE     0x0000
#define FWCFG_KEY_FILE_DIR      0x0019
#define FWCFG_NAME_MAX          56

struct fwcfg_file {
    uint32_t size;              /* big-endian */
    uint16_t select;            /* big-endian */
    uint16_t reserved;
    char name[FWCFG_NAME_MAX];
};

static void
fwcfg_select(uint16_t key)
{
    io_write16(FWCFG_PORT_SEL, key);
}

static void
fwcfg_read(void *buf, size_t size)
{
    uint8_t *p = buf;

    for (size_t i = 0; i < size; i++) {
        p[i] = io_read8(FWCFG_PORT_DATA);
    }
}

static uint32_t
fwcfg_be32(uint32_t x)
{
    return __builtin_bswap32(x);
}

static bool
fwcfg_present(void)
{
    char sig[4];

    fwcfg_select(FWCFG_KEY_SIGNATURE);
    fwcfg_read(sig, sizeof(sig));
    return memcmp(sig, "QEMU", sizeof(sig)) == 0;
}

int
fwcfg_read_file(const char *name, char *buf, size_t size)
{
    struct fwcfg_file file;
    uint32_t count;

    if (!fwcfg_present()) {
        return -ENODEV;
    }

    fwcfg_select(FWCFG_KEY_FILE_DIR);
    fwcfg_read(&count, sizeof(count));
    count = fwcfg_be32(count);

    for (uint32_t i = 0; i < count; i++) {
        fwcfg_read(&file, sizeof(file));
        file.name[FWCFG_NAME_MAX - 1] = '\0';

        if (strcmp(file.name, name) != 0) {
            continue;
        }

        file.size = fwcfg_be32(file.size);

        if (file.size >= size) {
            return -E2BIG;
        }

        fwcfg_select(__builtin_bswap16(file.select));
        fwcfg_read(buf, file.size);
        buf[file.size] = '\0';
        return file.size;
    }

    return -ENOENT;
}
