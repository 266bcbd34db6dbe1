/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The pure parts of the `perfmon` shell command, kept apart so that they
 * can be tested on the host: the event-list parser (perf's `-e` syntax:
 * names, aliases, raw `rNNNN` codes, `:u`/`:k` modifiers), the CPU-list
 * parser ("0,2-3"), perf's `-j` branch filters and closest-name
 * suggestions (edit distance).  Event names themselves are the core's
 * (perfmon_event_desc()).  Nothing here touches hardware, threads or
 * locks: every function is reentrant and works on the caller's buffers
 * only.
 */

#ifndef KERN_PERFMON_PARSE_H
#define KERN_PERFMON_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest -e argument accepted, in characters. */
#define PERFMON_PARSE_LIST_MAX      511

/*
 * Longest event name or item as typed, and its size, NUL included: the
 * vendors' longest event names fit.
 */
#define PERFMON_PARSE_NAME_MAX      95
#define PERFMON_PARSE_NAME_SIZE     (PERFMON_PARSE_NAME_MAX + 1)

/* Most events in one -e list. */
#define PERFMON_PARSE_MAX_EVENTS    16

/* Longest PMU name in a `PMU/EVENT/` item, NUL included. */
#define PERFMON_PARSE_PMU_SIZE      16

/* Most CPUs a CPU list can name (the width of the mask). */
#define PERFMON_PARSE_MAX_CPUS      64

/*
 * One item of an event list.  spec is the item as typed (shown in the
 * output, modifiers kept, as perf does, braces left out); name is the
 * event name without its modifiers (empty for a raw event); pmu the
 * device an item of the form `PMU/EVENT/` or `PMU/TERMS/` names (empty
 * otherwise).  An item of terms is raw: raw_code holds what they set, and
 * period and freq what period= and freq= asked for (0: nothing), name=
 * replaces spec; `EVENT/TERMS/` with only those three terms names EVENT
 * (perf's `cycles/period=1000/`).  leader_sample: the item is in a group
 * written `{...}:S`, whose leader's samples read the other members.
 * flags holds the PERFMON_EF_MODE bits the modifiers asked for (both when
 * there were none; own_modes: the item named some itself),
 * PERFMON_EF_PINNED for :D, and PERFMON_EF_RAW for an rNNNN item, whose
 * code is raw_code.  group: the index of the first event of the item's
 * group, -1 when in none.
 */
struct perfmon_parse_event {
    char spec[PERFMON_PARSE_NAME_SIZE];
    char name[PERFMON_PARSE_NAME_SIZE];
    char pmu[PERFMON_PARSE_PMU_SIZE];
    uint64_t raw_code;
    uint64_t period;
    uint64_t freq;
    bool leader_sample;
    unsigned int flags;
    bool own_modes;
    int group;
};

/*
 * Why a list was refused: reason is a static phrase ("unknown modifier"),
 * item the offending item as typed (truncated to fit), possibly empty,
 * and pos where it starts in the list (1 for its first character; 0 when
 * it is the whole list).
 */
struct perfmon_parse_error {
    const char *reason;
    char item[PERFMON_PARSE_NAME_SIZE];
    unsigned int pos;
};

/*
 * Parse a comma-separated event list into events[0..max).  Items are
 * `name[:mods]` or `rHEX[:mods]` (1 to 16 hex digits; a name that is `r`
 * followed only by hex digits is a raw code, as in perf), or either of
 * them as `PMU/name/[:mods]`, naming the device, or perf's terms
 * `PMU/event=0xd1,umask=0x20,cmask=1,inv,edge,any,period=N,name=NAME/`
 * (and freq=N)
 * (also config=0xN; numbers decimal or 0x hex; event up to 0xfff, umask
 * and cmask up to 0xff; each term at most once); mods being `u`, `k` and
 * `D` (pinned), each at most once.  Names may hold letters, digits, '-',
 * '_' and '.'.  Items between `{` and `}` form a group, as in perf
 * (`{cycles,instructions}`); modifiers after the brace (`{...}:uD`) apply
 * to every member, a member's own `u`/`k` winning; `{...}:S` is perf's
 * leader sampling.  The names are not
 * looked up: that is the caller's job.  Returns the number of events (at
 * least 1), or:
 *   -EINVAL  NULL argument, empty list or item, bad character, bad or
 *            unsupported modifier, bad raw code, a group inside a group,
 *            a brace that opens or closes nothing, an unknown, repeated
 *            or bad term (err names the term, pos where it starts)
 *   -E2BIG   list longer than PERFMON_PARSE_LIST_MAX, an item longer than
 *            PERFMON_PARSE_NAME_SIZE - 1, or more than max items
 * filling *errp (when not NULL) on error.  events may be partly written on
 * error.
 */
int perfmon_parse_events(const char *list, struct perfmon_parse_event *events,
                         unsigned int max, struct perfmon_parse_error *errp);

/*
 * Parse a CPU list such as "0,2-3" (decimal numbers and inclusive ranges,
 * comma-separated, repeats allowed) into a mask of CPUs below nr_cpus
 * (at most PERFMON_PARSE_MAX_CPUS).  Returns 0, -EINVAL for a NULL
 * argument, an empty list or item, a malformed number or a reversed range,
 * -ERANGE for a CPU at or above nr_cpus (the first problem from the left
 * decides).  *maskp is written only on success.
 */
int perfmon_parse_cpulist(const char *s, unsigned int nr_cpus,
                          uint64_t *maskp);

/*
 * Levenshtein distance between a and b (insert, delete, replace cost 1),
 * case aside, comparing at most PERFMON_PARSE_NAME_SIZE - 1 characters of each.
 */
unsigned int perfmon_parse_distance(const char *a, const char *b);

/*
 * Choose the candidates closest to name: those at the smallest distance
 * (a candidate that name is a prefix of, for names of 3 characters or
 * more, counts as distance 1), provided that distance is at most
 * max(2, strlen(name) / 3), in the order given, duplicates skipped.
 * Stores up to max_out pointers from cands into out and returns how many;
 * 0 when nothing is close enough or on a NULL argument.
 */
unsigned int perfmon_parse_suggest(const char *name, const char *const *cands,
                                   unsigned int nr_cands, const char **out,
                                   unsigned int max_out);

/*
 * -j (kern/perfmon/cmd/perfmon_parse_branch.c).
 *
 * perf's name of one PERFMON_BRF_* bit ("any_call", "u"), or NULL; and a
 * filter as perf's -j list would give it ("any,u,k"), in buf.
 */
const char *perfmon_parse_branch_name(unsigned int bit);
void perfmon_parse_branch_fmt(char *buf, size_t size, unsigned int filter);

/*
 * A -j list (perf's --branch-filter: names, comma-separated; "ret" is
 * taken for any_ret) into *filterp, its PERFMON_BRF_* bits as given (the
 * caller adds the defaults: any, the event's modes).  Returns 0, or
 * -EINVAL for an empty list or item or an unknown name, -EOPNOTSUPP for a
 * name of perf's that Tally has no use for (hv, the TSX filters,
 * call_stack, save_type...), with the item as typed in bad (truncated to
 * bad_size - 1 characters).
 */
int perfmon_parse_branch_filter(const char *list, unsigned int *filterp,
                                char *bad, size_t bad_size);

#endif /* KERN_PERFMON_PARSE_H */
