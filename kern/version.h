/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The kernel's version, as the host's perf shows a recording's "os
 * release" (kern/perfmon/cmd/perfmon_stream.h).
 */

#ifndef KERN_VERSION_H
#define KERN_VERSION_H

#define TALLY_VERSION       "0.1"

#endif /* KERN_VERSION_H */
