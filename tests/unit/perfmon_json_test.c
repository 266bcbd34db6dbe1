/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the subcommands' -j output: JSON strings
 * (kern/perfmon/cmd/perfmon_json.c) with quotes, backslashes and control
 * characters escaped, other bytes kept, and a string too long for its line
 * cut before an escape, never inside one, with its closing quote kept;
 * `perfmon list -j` and `perfmon info -j` on the fake devices of fdev.c
 * (an array whose last object has no comma; a counter in use with its
 * CPU), and with a CPU model's table (Skylake-SP) its events too, with
 * their topic, encoding, counters and notes as `perfmon list` shows them.
 * The boot tests tests/boot/boot_shapes.py and boot_events.py parse them
 * with
 * Python's json.  And the -t lists of stat and record
 * (perfmon_cmd_threads()): ids resolved with a reference each, every bad
 * list refused in one line with no reference left.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "arch/x86/pmu_evtab.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_json.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/thread.h"

const char *fake_console_output(void);
void fake_console_reset(void);

static void
test_escapes(void **state)
{
    struct perfmon_cmd_line line;

    (void)state;
    perfmon_cmd_line_init(&line);
    perfmon_json_add_string(&line, "a\"b\\c\td\x01/\xc3\xa9");
    assert_string_equal(line.buf, "\"a\\\"b\\\\c\\u0009d\\u0001/\xc3\xa9\"");

    perfmon_cmd_line_init(&line);
    perfmon_json_add_string(&line, NULL);
    perfmon_json_add_string(&line, "");
    assert_string_equal(line.buf, "\"\"\"\"");
}

static void
test_long_string(void **state)
{
    char s[2 * PERFMON_CMD_LINE_SIZE];
    struct perfmon_cmd_line line;
    size_t len;

    (void)state;

    /* Escapes only: the cut may fall on no half of one. */
    for (size_t i = 0; i + 1 < sizeof(s); i++) {
        s[i] = '"';
    }

    s[sizeof(s) - 1] = '\0';

    for (size_t pad = 0; pad < 4; pad++) {
        perfmon_cmd_line_init(&line);

        for (size_t i = 0; i < pad; i++) {
            perfmon_cmd_line_add(&line, "x");
        }

        perfmon_json_add_string(&line, s);
        len = strlen(line.buf);
        assert_true(len <= sizeof(line.buf) - 1);
        assert_int_equal(line.buf[len - 1], '"');
        assert_int_equal(line.buf[pad], '"');

        /* Between the quotes: whole \" pairs. */
        assert_int_equal((len - pad - 2) % 2, 0);

        for (size_t i = pad + 1; i + 1 < len; i += 2) {
            assert_int_equal(line.buf[i], '\\');
            assert_int_equal(line.buf[i + 1], '"');
        }
    }
}

static void
test_list_and_info(void **state)
{
    struct perfmon_event ev;
    const char *out, *end;

    (void)state;
    fdev_add(0, 48, 4, true);
    perfmon_set_hw_status(true, "fake \"PMU\"");

    fake_console_reset();
    assert_int_equal(shell_exec("perfmon list -j"), 0);
    out = fake_console_output();
    assert_memory_equal(out, "[\n{\"Unit\" : ", 12);
    assert_non_null(strstr(out, "\"EventName\" : \"cycles\""));
    end = strstr(out, "\n]\n");
    assert_non_null(end);
    assert_int_equal(end[-1], '}');
    assert_int_equal(end[4], '\0');

    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_USER);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    fake_console_reset();
    assert_int_equal(shell_exec("perfmon info --json"), 0);
    out = fake_console_output();
    assert_non_null(strstr(out, "\"hardware-pmu\" : \"fake \\\"PMU\\\"\","));
    assert_non_null(strstr(out, "\"counters-in-use\" : [\n  {\"device\" : "));
    assert_non_null(strstr(out, "\"event\" : \"cycles\""));
    assert_non_null(strstr(out, "\"threads\" : [], \"cpus\" : [1]}\n],"));
    assert_int_equal(perfmon_event_detach(&ev), 0);

    fake_console_reset();
    assert_int_equal(shell_exec("perfmon info -j -x"), SHELL_ERR_REPORTED);
    assert_string_equal(fake_console_output(),
                        "perfmon: info: unknown option '-x'\n"
                        "usage: perfmon info [-j]\n");
}

static void
test_thread_lists(void **state)
{
    struct thread *threads[PERFMON_CMD_MAX_THREADS], *a, *b, *gone;
    static const char *const bad[] = {
        "", ",", "1,", "x", "-1", "99", "1,1", "4294967296",
        "1,2,3,1,2,3,1,2,3,1,2,3,1,2,3,1,2",
    };
    unsigned int nr = 0;
    char list[32];

    (void)state;
    a = fake_thread_create("a");
    b = fake_thread_create("b");
    gone = fake_thread_create("gone");
    gone->exited = true;

    ksnprintf(list, sizeof(list), "%u,%u", thread_id(b), thread_id(a));
    assert_int_equal(perfmon_cmd_threads("stat", "u\n", list, threads, &nr),
                     0);
    assert_int_equal(nr, 2);
    assert_ptr_equal(threads[0], b);
    assert_ptr_equal(threads[1], a);
    assert_int_equal(a->nr_refs, 2);
    perfmon_cmd_threads_put(threads, nr);
    assert_int_equal(a->nr_refs, 1);
    assert_int_equal(b->nr_refs, 1);

    ksnprintf(list, sizeof(list), "%u,%u", thread_id(a), thread_id(gone));
    fake_console_reset();
    assert_int_equal(perfmon_cmd_threads("stat", "u\n", list, threads, &nr),
                     SHELL_ERR_REPORTED);
    ksnprintf(list, sizeof(list), "-t: no thread %u (", thread_id(gone));
    assert_non_null(strstr(fake_console_output(), list));
    assert_int_equal(a->nr_refs, 1);

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *out;

        fake_console_reset();
        assert_int_equal(perfmon_cmd_threads("record", "usage\n", bad[i],
                                             threads, &nr),
                         SHELL_ERR_REPORTED);
        out = fake_console_output();
        assert_memory_equal(out, "perfmon: record: -t", 19);
        assert_string_equal(strchr(out, '\n'), "\nusage\n");
        assert_int_equal(a->nr_refs, 1);
        assert_int_equal(b->nr_refs, 1);
    }
}

/* Last: a host model's table, once chosen, stays for the program. */
static void
test_list_model(void **state)
{
    const char *out, *ev, *end;

    (void)state;
    fdev_add(0, 48, 4, true);
    fake_console_reset();
    assert_int_equal(shell_exec("perfmon list -j mem_load_retired.l3"),
                     SHELL_ERR_REPORTED);
    assert_null(strstr(fake_console_output(), "MEM_LOAD_RETIRED"));

    pmu_evtab_setup(CPU_VENDOR_INTEL, 6, 0x55, 4);
    fake_console_reset();
    assert_int_equal(shell_exec("perfmon list -j mem_load_retired.l3"), 0);
    out = fake_console_output();
    ev = strstr(out, "{\"Unit\" : \"intel\", \"Topic\" : ");
    assert_non_null(ev);
    assert_non_null(strstr(ev, "\"EventName\" : \"MEM_LOAD_RETIRED.L3_MISS\", "
                           "\"EventAlias\" : \"\", \"Encoding\" : "
                           "\"event=0xd1,umask=0x20\", \"Modes\" : \"u,k\", "
                           "\"BriefDescription\" : \"skylakex\", "
                           "\"Counters\" : \"0-3\", \"Notes\" : \"precise\", "
                           "\"Status\" : \"not supported: no hardware "
                           "PMU\"}"));
    end = strstr(out, "\n]\n");
    assert_non_null(end);
    assert_int_equal(end[-1], '}');

    /* Unfiltered: the devices' events, then the model's, one array. */
    fake_console_reset();
    assert_int_equal(shell_exec("perfmon list -j"), 0);
    out = fake_console_output();
    ev = strstr(out, "\"EventName\" : \"INST_RETIRED.ANY\"");
    assert_non_null(ev);
    assert_true(strstr(out, "\"EventName\" : \"cycles\"") < ev);
    assert_non_null(strstr(ev, "\"Counters\" : \"fixed 0\""));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_long_string),
        cmocka_unit_test_setup(test_list_and_info, setup),
        cmocka_unit_test_setup(test_thread_lists, setup),
        cmocka_unit_test_setup(test_list_model, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
