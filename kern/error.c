/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 */

#include "kern/error.h"

const char *
error_str(int error)
{
    if (error < 0) {
        error = -error;
    }

    switch (error) {
    case 0:          return "success";
    case ENOENT:     return "no such entry";
    case EIO:        return "input/output error";
    case E2BIG:      return "argument list too long";
    case EAGAIN:     return "resource temporarily unavailable";
    case ENOMEM:     return "out of memory";
    case EFAULT:     return "bad address";
    case EBUSY:      return "resource busy";
    case EEXIST:     return "already exists";
    case ENODEV:     return "no such device";
    case EINVAL:     return "invalid argument";
    case ENOSPC:     return "no space left";
    case EDOM:       return "division by zero";
    case ERANGE:     return "value out of range";
    case ENOSYS:     return "not implemented";
    case ELOOP:      return "dependency cycle";
    case EOPNOTSUPP: return "operation not supported";
    case ETIMEDOUT:  return "timed out";
    case EINTR:      return "interrupted";
    default:         return "unknown error";
    }
}
