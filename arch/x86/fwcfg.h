/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * QEMU's firmware configuration device (fw_cfg, docs/specs/fw_cfg.rst in
 * QEMU), through its I/O ports.  The kernel reads one file from it: extra
 * command-line options in `opt/tally/cmdline`, which the test harness sets
 * with `-fw_cfg name=opt/tally/cmdline,string=...` so that tests choose
 * boot options without building an ISO each.
 */

#ifndef ARCH_X86_FWCFG_H
#define ARCH_X86_FWCFG_H

#include <stddef.h>

#define FWCFG_CMDLINE_FILE  "opt/tally/cmdline"

/*
 * Read the named file into buf (NUL-terminated).  Returns its length, or
 * -ENODEV without fw_cfg, -ENOENT without the file, -E2BIG when it does not
 * fit.
 */
int fwcfg_read_file(const char *name, char *buf, size_t size);

#endif /* ARCH_X86_FWCFG_H */
