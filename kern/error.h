/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Error codes.
 *
 * Functions that can fail return 0 on success or a negative error code
 * (-EINVAL and so on).  The values match Linux and glibc so that host unit
 * tests may include <errno.h> too without conflicting definitions.
 */

#ifndef KERN_ERROR_H
#define KERN_ERROR_H

#define ENOENT      2
#define EIO         5
#define E2BIG       7
#define EAGAIN      11
#define ENOMEM      12
#define EFAULT      14
#define EBUSY       16
#define EEXIST      17
#define ENODEV      19
#define EINVAL      22
#define ENOSPC      28
#define EDOM        33
#define ERANGE      34
#define ENOSYS      38
#define ELOOP       40
#define EOPNOTSUPP  95
#define ETIMEDOUT   110
#define EINTR       4

/*
 * Return a short readable description of an error code (positive or
 * negative), for messages shown to a user.
 */
const char *error_str(int error);

#endif /* KERN_ERROR_H */
