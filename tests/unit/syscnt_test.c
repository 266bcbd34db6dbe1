/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the system counter registry (kern/syscnt.c): registration
 * resets the value and copies the name (truncated to SYSCNT_NAME_SIZE - 1
 * characters), exact-name lookup, iteration in registration order with and
 * without a prefix, and the add/inc/read arithmetic including negative
 * deltas and 64-bit wrap-around.  The registry is emptied before each test
 * with syscnt_reset().
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kern/macros.h"
#include "kern/syscnt.h"

#define MAX_SEEN    16

/* What a foreach callback saw, in order. */
struct seen {
    const struct syscnt *cnts[MAX_SEEN];
    unsigned int n;
};

static void
record(const struct syscnt *syscnt, void *arg)
{
    struct seen *seen = arg;

    assert_true(seen->n < MAX_SEEN);
    seen->cnts[seen->n++] = syscnt;
}

static int
setup(void **state)
{
    (void)state;
    syscnt_reset();
    return 0;
}

static void
test_register_resets_and_copies(void **state)
{
    struct syscnt cnt;
    char name[] = "xcall_sent/0";

    (void)state;
    memset(&cnt, 0xa5, sizeof(cnt));
    syscnt_register(&cnt, name);
    assert_int_equal(syscnt_read(&cnt), 0);
    assert_string_equal(cnt.name, "xcall_sent/0");

    /* The name is a copy: the caller's buffer may go away. */
    name[0] = 'X';
    assert_string_equal(cnt.name, "xcall_sent/0");
    assert_ptr_equal(syscnt_lookup("xcall_sent/0"), &cnt);
    assert_null(syscnt_lookup(name));
}

static void
test_name_truncated(void **state)
{
    struct syscnt exact, over, long_cnt, empty;
    char fits[SYSCNT_NAME_SIZE], one_over[SYSCNT_NAME_SIZE + 1];
    const char *long_name =
        "a_counter_name_far_longer_than_the_name_field_allows/12";

    (void)state;
    memset(fits, 'f', sizeof(fits) - 1);
    fits[sizeof(fits) - 1] = '\0';
    memset(one_over, 'o', sizeof(one_over) - 1);
    one_over[sizeof(one_over) - 1] = '\0';

    syscnt_register(&exact, fits);
    syscnt_register(&over, one_over);
    syscnt_register(&long_cnt, long_name);
    syscnt_register(&empty, "");

    assert_string_equal(exact.name, fits);
    assert_int_equal(strlen(over.name), SYSCNT_NAME_SIZE - 1);
    assert_memory_equal(over.name, one_over, SYSCNT_NAME_SIZE - 1);
    assert_int_equal(strlen(long_cnt.name), SYSCNT_NAME_SIZE - 1);
    assert_memory_equal(long_cnt.name, long_name, SYSCNT_NAME_SIZE - 1);
    assert_string_equal(empty.name, "");

    /* Lookups go by the stored (truncated) name. */
    assert_null(syscnt_lookup(long_name));
    one_over[SYSCNT_NAME_SIZE - 1] = '\0';
    assert_ptr_equal(syscnt_lookup(one_over), &over);
    assert_ptr_equal(syscnt_lookup(fits), &exact);
    assert_ptr_equal(syscnt_lookup(""), &empty);
}

static void
test_lookup(void **state)
{
    struct syscnt a, b, c;

    (void)state;
    assert_null(syscnt_lookup("anything"));
    assert_null(syscnt_lookup(""));

    syscnt_register(&a, "ipi/0");
    syscnt_register(&b, "ipi/1");
    syscnt_register(&c, "ipi/10");

    assert_ptr_equal(syscnt_lookup("ipi/0"), &a);
    assert_ptr_equal(syscnt_lookup("ipi/1"), &b);
    assert_ptr_equal(syscnt_lookup("ipi/10"), &c);

    /* Exact names only: no prefix or extension matches. */
    assert_null(syscnt_lookup("ipi/"));
    assert_null(syscnt_lookup("ipi"));
    assert_null(syscnt_lookup("ipi/100"));
    assert_null(syscnt_lookup("IPI/0"));
    assert_null(syscnt_lookup(""));
}

/* Per-CPU counters are named prefix/cpu, truncated like any name. */
static void
test_register_cpu(void **state)
{
    struct syscnt a, b, c;

    (void)state;
    syscnt_register_cpu(&a, "nmi", 0);
    syscnt_register_cpu(&b, "perfmon_nr_overflows", 255);
    syscnt_register_cpu(&c, "a_prefix_that_is_far_too_long_x", 7);

    assert_ptr_equal(syscnt_lookup("nmi/0"), &a);
    assert_ptr_equal(syscnt_lookup("perfmon_nr_overflows/255"), &b);
    assert_string_equal(c.name, "a_prefix_that_is_far_too_long_x");
    assert_true(syscnt_read(&b) == 0);
}

/* Two counters of one name: the first registered is the one found. */
static void
test_lookup_duplicate_name(void **state)
{
    struct syscnt first, second;

    (void)state;
    syscnt_register(&first, "dup");
    syscnt_register(&second, "dup");
    assert_ptr_equal(syscnt_lookup("dup"), &first);
}

static void
test_foreach_all_in_order(void **state)
{
    struct syscnt cnts[6];
    const char *names[] = { "timer_ticks/0", "a", "xcall_sent/1", "zz",
                            "timer_ticks/1", "m" };
    struct seen seen = { .n = 0 };

    (void)state;
    syscnt_foreach(NULL, record, &seen);
    assert_int_equal(seen.n, 0);

    for (size_t i = 0; i < ARRAY_SIZE(cnts); i++) {
        syscnt_register(&cnts[i], names[i]);
    }

    syscnt_foreach(NULL, record, &seen);
    assert_int_equal(seen.n, ARRAY_SIZE(cnts));

    for (size_t i = 0; i < ARRAY_SIZE(cnts); i++) {
        assert_ptr_equal(seen.cnts[i], &cnts[i]);
    }

    seen.n = 0;
    syscnt_foreach("", record, &seen);
    assert_int_equal(seen.n, ARRAY_SIZE(cnts));

    for (size_t i = 0; i < ARRAY_SIZE(cnts); i++) {
        assert_ptr_equal(seen.cnts[i], &cnts[i]);
    }
}

static void
test_foreach_prefix(void **state)
{
    struct syscnt t0, x0, t1, t10, tick;
    struct seen seen = { .n = 0 };

    (void)state;
    syscnt_register(&t0, "timer_ticks/0");
    syscnt_register(&x0, "xcall_sent/0");
    syscnt_register(&t1, "timer_ticks/1");
    syscnt_register(&t10, "timer_ticks/10");
    syscnt_register(&tick, "tick");

    syscnt_foreach("timer_ticks/", record, &seen);
    assert_int_equal(seen.n, 3);
    assert_ptr_equal(seen.cnts[0], &t0);
    assert_ptr_equal(seen.cnts[1], &t1);
    assert_ptr_equal(seen.cnts[2], &t10);

    seen.n = 0;
    syscnt_foreach("timer_ticks/1", record, &seen);
    assert_int_equal(seen.n, 2);
    assert_ptr_equal(seen.cnts[0], &t1);
    assert_ptr_equal(seen.cnts[1], &t10);

    seen.n = 0;
    syscnt_foreach("t", record, &seen);
    assert_int_equal(seen.n, 4);
    assert_ptr_equal(seen.cnts[3], &tick);

    /* A whole name is its own prefix. */
    seen.n = 0;
    syscnt_foreach("xcall_sent/0", record, &seen);
    assert_int_equal(seen.n, 1);
    assert_ptr_equal(seen.cnts[0], &x0);

    /* Nothing matches: longer than any name, or no such start. */
    seen.n = 0;
    syscnt_foreach("xcall_sent/00", record, &seen);
    syscnt_foreach("perfmon", record, &seen);
    syscnt_foreach("Timer", record, &seen);
    assert_int_equal(seen.n, 0);
}

static void
test_add_inc_read(void **state)
{
    struct syscnt a, b;

    (void)state;
    syscnt_register(&a, "a");
    syscnt_register(&b, "b");

    syscnt_inc(&a);
    syscnt_inc(&a);
    assert_int_equal(syscnt_read(&a), 2);
    assert_int_equal(syscnt_read(&b), 0);

    syscnt_add(&a, 1000000000000LL);
    assert_int_equal(syscnt_read(&a), 1000000000002ULL);
    syscnt_add(&a, -2);
    assert_int_equal(syscnt_read(&a), 1000000000000ULL);
    syscnt_add(&a, 0);
    assert_int_equal(syscnt_read(&a), 1000000000000ULL);

    /* Counters are 64-bit and wrap like unsigned integers. */
    syscnt_add(&b, -1);
    assert_true(syscnt_read(&b) == UINT64_MAX);
    syscnt_inc(&b);
    assert_int_equal(syscnt_read(&b), 0);
    syscnt_add(&b, INT64_MAX);
    syscnt_add(&b, INT64_MAX);
    assert_true(syscnt_read(&b) == UINT64_MAX - 1);

    /* The registered counter is the same object a lookup finds. */
    assert_true(syscnt_read(syscnt_lookup("a")) == 1000000000000ULL);
}

/* Registering a counter that was used before starts it from zero. */
static void
test_register_again_resets(void **state)
{
    struct syscnt a;

    (void)state;
    syscnt_register(&a, "once");
    syscnt_add(&a, 77);
    syscnt_reset();
    syscnt_register(&a, "twice");
    assert_int_equal(syscnt_read(&a), 0);
    assert_null(syscnt_lookup("once"));
    assert_ptr_equal(syscnt_lookup("twice"), &a);
}

/* syscnt_reset() empties the registry. */
static void
test_reset(void **state)
{
    struct syscnt a;
    struct seen seen = { .n = 0 };

    (void)state;
    syscnt_register(&a, "a");
    syscnt_reset();
    assert_null(syscnt_lookup("a"));
    syscnt_foreach(NULL, record, &seen);
    assert_int_equal(seen.n, 0);

    /* And registration works after it, from an empty list. */
    syscnt_register(&a, "a");
    syscnt_foreach(NULL, record, &seen);
    assert_int_equal(seen.n, 1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_register_resets_and_copies, setup),
        cmocka_unit_test_setup(test_name_truncated, setup),
        cmocka_unit_test_setup(test_lookup, setup),
        cmocka_unit_test_setup(test_register_cpu, setup),
        cmocka_unit_test_setup(test_lookup_duplicate_name, setup),
        cmocka_unit_test_setup(test_foreach_all_in_order, setup),
        cmocka_unit_test_setup(test_foreach_prefix, setup),
        cmocka_unit_test_setup(test_add_inc_read, setup),
        cmocka_unit_test_setup(test_register_again_resets, setup),
        cmocka_unit_test_setup(test_reset, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
