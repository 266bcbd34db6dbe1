/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Profiles: samples added up by key, as `perfmon report` and `perfmon top`
 * print them (kern/perfmon/cmd/perfmon_report.c).  A profile is a table of rows (one
 * per distinct key: thread name, symbol, CPU, as chosen) weighted by the
 * samples' periods, and, when asked for, a table of whole stacks (the call
 * chain's symbols, root first) for call-graph views and folded stacks.
 * Thread context; one user per profile.
 */

#ifndef KERN_PERFMON_REPORT_H
#define KERN_PERFMON_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/perfmon.h"

struct perfmon_capture;

#define PERFMON_PROFILE_KEY_COMM    0x1
#define PERFMON_PROFILE_KEY_SYM     0x2
#define PERFMON_PROFILE_KEY_CPU     0x4
#define PERFMON_PROFILE_KEY_EVENT   0x8

struct perfmon_profile;

/* Returns 0 or -ENOMEM. */
int perfmon_profile_create(struct perfmon_profile **profilep,
                           unsigned int keys, bool stacks);
void perfmon_profile_destroy(struct perfmon_profile *profile);

/* Add a sample of cap (for its thread names), or every sample of cap. */
void perfmon_profile_add(struct perfmon_profile *profile,
                         const struct perfmon_capture *cap,
                         const struct perfmon_sample *sample);
void perfmon_profile_add_all(struct perfmon_profile *profile,
                             const struct perfmon_capture *cap);

/*
 * Print perf's --stdio table: the rows, heaviest first, at most max_rows,
 * down to limit_bp hundredths of a percent; with chains (and stacks), the
 * call chains under each row.
 */
void perfmon_profile_print(const struct perfmon_profile *profile,
                           const char *event, unsigned int limit_bp,
                           unsigned int max_rows, bool chains);

/*
 * `perfmon report --branch` (kern/perfmon/cmd/perfmon_report_branch.c): the branch
 * stacks of cap's samples by from -> to pair, hottest first, down to
 * limit_bp hundredths of a percent.  Returns 0, or SHELL_ERR_REPORTED
 * after one line (no branch stacks in cap, out of memory).
 */
int perfmon_report_branches(const struct perfmon_capture *cap,
                            unsigned int limit_bp);

/* An address as perf names it: "symbol+0xoffset", or "0xaddress". */
void perfmon_report_addr(char *buf, size_t size, uint64_t addr);

/*
 * The last recording, for `report` and `script` (perfmon_script.c); NULL
 * after one line naming who asked, when there is none.
 */
const struct perfmon_capture *perfmon_report_last(const char *who);

#endif /* KERN_PERFMON_REPORT_H */
