/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The reference unwinder of the host tests (unwind_ref.c): unwind_fp()
 * and unwind_interrupted() as they were before the walk was shortened.
 */

#ifndef TESTS_UNIT_UNWIND_REF_H
#define TESTS_UNIT_UNWIND_REF_H

#include <stdint.h>

#include "arch/x86/unwind.h"

unsigned int ref_unwind_fp(const struct unwind_env *env, uint64_t fp,
                           uint64_t callee, uint64_t *ips, unsigned int max);
unsigned int ref_unwind_interrupted(const struct unwind_env *env,
                                    uint64_t rip, uint64_t rsp, uint64_t fp,
                                    uint64_t *ips, unsigned int max);

#endif /* TESTS_UNIT_UNWIND_REF_H */
