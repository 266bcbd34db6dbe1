/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The pure parts of the `perfmon` shell command: event-list (-e) and
 * CPU-list parsing, and name suggestions (-j's branch filters are in
 * kern/perfmon/cmd/perfmon_parse_branch.c).  See
 * kern/perfmon/cmd/perfmon_parse.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/printf.h"
#include "kern/string.h"

/* ---- event lists -------------------------------------------------------- */

static void
perfmon_parse_set_error(struct perfmon_parse_error *errp, const char *reason,
                        const char *item, size_t len)
{
    if (errp == NULL) {
        return;
    }

    errp->reason = reason;
    len = MIN(len, sizeof(errp->item) - 1);
    memcpy(errp->item, item, len);
    errp->item[len] = '\0';
}

static char
perfmon_parse_lower(char c)
{
    return ((c >= 'A') && (c <= 'Z')) ? (char)(c - 'A' + 'a') : c;
}

static bool
perfmon_parse_is_name_char(char c)
{
    return ((c >= 'a') && (c <= 'z')) || ((c >= 'A') && (c <= 'Z'))
           || ((c >= '0') && (c <= '9')) || (c == '-') || (c == '_')
           || (c == '.');
}

static int
perfmon_parse_hex_digit(char c)
{
    if ((c >= '0') && (c <= '9')) {
        return c - '0';
    } else if ((c >= 'a') && (c <= 'f')) {
        return c - 'a' + 10;
    } else if ((c >= 'A') && (c <= 'F')) {
        return c - 'A' + 10;
    }

    return -1;
}

/*
 * An `r` followed by hex digits only is a raw code (perf's rule, which
 * makes a name like "rab" raw too).  Returns true and the code, or false
 * when the name is not of that form; *too_longp tells a raw code of more
 * than 16 digits.
 */
static bool
perfmon_parse_raw(const char *name, size_t len, uint64_t *codep,
                  bool *too_longp)
{
    uint64_t code = 0;

    *too_longp = false;

    if ((len < 2) || (name[0] != 'r')) {
        return false;
    }

    for (size_t i = 1; i < len; i++) {
        int digit = perfmon_parse_hex_digit(name[i]);

        if (digit < 0) {
            return false;
        }

        code = (code << 4) | (unsigned int)digit;
    }

    if (len - 1 > 16) {
        *too_longp = true;
    }

    *codep = code;
    return true;
}

/*
 * Modifiers: u and k (the modes; both when neither is given), D (pinned),
 * and for a group S (the leader's samples read the members: *samplep),
 * each at most once: cs:uu is a typo, not a request.
 */
static int
perfmon_parse_modifiers(const char *mods, size_t len, unsigned int *flagsp,
                        bool *samplep)
{
    unsigned int flags = 0;
    bool sample = false;

    if (len == 0) {
        return -EINVAL;
    }

    for (size_t i = 0; i < len; i++) {
        unsigned int flag;

        if (mods[i] == 'S' && samplep != NULL && !sample) {
            sample = true;
            continue;
        } else if (mods[i] == 'u') {
            flag = PERFMON_EF_USER;
        } else if (mods[i] == 'k') {
            flag = PERFMON_EF_KERN;
        } else if (mods[i] == 'D') {
            flag = PERFMON_EF_PINNED;
        } else {
            return -EINVAL;
        }

        if (flags & flag) {
            return -EINVAL;
        }

        flags |= flag;
    }

    if (!(flags & PERFMON_EF_MODE)) {
        flags |= PERFMON_EF_MODE;
    }

    *flagsp = flags;

    if (samplep != NULL) {
        *samplep = sample;
    }

    return 0;
}

/*
 * perf's terms for the cpu PMU (tools/perf/Documentation/perf-list.txt,
 * "RAW HARDWARE EVENT DESCRIPTOR"; the format of
 * /sys/bus/event_source/devices/cpu/format): each term's field and bits
 * in the raw code, in the PERFEVTSEL layout (event select bits 11:8 go
 * to 35:32, as on AMD).  max: the largest value; 0 for a flag.
 */
#define PERFMON_PARSE_TERM_RAW      0   /* config=: the whole code */
#define PERFMON_PARSE_TERM_EVENT    1
#define PERFMON_PARSE_TERM_PERIOD   2
#define PERFMON_PARSE_TERM_NAME     3
#define PERFMON_PARSE_TERM_FIELD    4
#define PERFMON_PARSE_TERM_FREQ     5

static const struct perfmon_parse_term {
    const char *key;
    unsigned int kind;
    unsigned int shift;
    uint64_t max;
} perfmon_parse_terms[] = {
    { "config", PERFMON_PARSE_TERM_RAW, 0, UINT64_MAX },
    { "event", PERFMON_PARSE_TERM_EVENT, 0, 0xfff },
    { "umask", PERFMON_PARSE_TERM_FIELD, 8, 0xff },
    { "cmask", PERFMON_PARSE_TERM_FIELD, 24, 0xff },
    { "edge", PERFMON_PARSE_TERM_FIELD, 18, 0 },
    { "any", PERFMON_PARSE_TERM_FIELD, 21, 0 },
    { "inv", PERFMON_PARSE_TERM_FIELD, 23, 0 },
    { "period", PERFMON_PARSE_TERM_PERIOD, 0, UINT64_MAX >> 1 },
    { "name", PERFMON_PARSE_TERM_NAME, 0, 0 },
    { "freq", PERFMON_PARSE_TERM_FREQ, 0, UINT32_MAX },
};

/* The terms of perf's `EVENT/TERMS/`: how it samples, and its name. */
#define PERFMON_PARSE_SAMPLING_TERMS                                        \
    ((1U << 7) | (1U << 8) | (1U << 9))

/* A number of a term: decimal, or hex after 0x. */
static bool
perfmon_parse_term_number(const char *s, size_t len, uint64_t max,
                          uint64_t *valuep)
{
    unsigned int base = 10;
    uint64_t value = 0;
    size_t i = 0;

    if (len > 2 && s[0] == '0' && perfmon_parse_lower(s[1]) == 'x') {
        base = 16;
        i = 2;
    }

    if (i == len) {
        return false;
    }

    for (; i < len; i++) {
        int digit = perfmon_parse_hex_digit(s[i]);

        if (digit < 0 || (unsigned int)digit >= base
            || value > (max - (unsigned int)digit) / base) {
            return false;
        }

        value = value * base + (unsigned int)digit;
    }

    *valuep = value;
    return true;
}

static void
perfmon_parse_term_error(struct perfmon_parse_error *errp,
                         const char *reason, const char *item,
                         const char *term, size_t len)
{
    perfmon_parse_set_error(errp, reason, term, len);

    if (errp != NULL) {
        errp->pos += (unsigned int)(term - item);
    }
}

/* One term, key[=value], into event; its errors point at the term. */
static int
perfmon_parse_term(const char *item, const char *term, size_t len,
                   struct perfmon_parse_event *event, unsigned int *seenp,
                   struct perfmon_parse_error *errp)
{
    const char *eq = memchr(term, '=', len), *value;
    size_t key_len = (eq == NULL) ? len : (size_t)(eq - term), value_len;
    const struct perfmon_parse_term *t = NULL;
    uint64_t number = 1;
    unsigned int i;

    for (i = 0; i < ARRAY_SIZE(perfmon_parse_terms); i++) {
        if (strlen(perfmon_parse_terms[i].key) == key_len
            && memcmp(perfmon_parse_terms[i].key, term, key_len) == 0) {
            t = &perfmon_parse_terms[i];
            break;
        }
    }

    if (t == NULL) {
        perfmon_parse_term_error(errp, "unknown term (config, event, umask, "
                                 "cmask, inv, edge, any, period, freq, "
                                 "name)",
                                 item, term, len);
        return -EINVAL;
    }

    if (*seenp & (1U << i)) {
        perfmon_parse_term_error(errp, "term given twice", item, term, len);
        return -EINVAL;
    }

    *seenp |= 1U << i;
    value = (eq == NULL) ? NULL : eq + 1;
    value_len = (eq == NULL) ? 0 : len - key_len - 1;

    if (t->kind == PERFMON_PARSE_TERM_NAME) {
        bool ok = (value_len > 0 && value_len < sizeof(event->spec));

        for (size_t j = 0; ok && j < value_len; j++) {
            ok = perfmon_parse_is_name_char(value[j]);
        }

        if (!ok) {
            perfmon_parse_term_error(errp, "bad name= (letters, digits, "
                                     "'-', '_', '.')", item, term, len);
            return -EINVAL;
        }

        memcpy(event->spec, value, value_len);
        event->spec[value_len] = '\0';
        return 0;
    }

    if ((t->max == 0) ? (value != NULL && !(value_len == 1
                                            && (value[0] == '0'
                                                || value[0] == '1')))
                      : (value == NULL
                         || !perfmon_parse_term_number(value, value_len,
                                                       t->max, &number))) {
        perfmon_parse_term_error(errp, (t->max == 0) ? "a flag term takes "
                                 "no value (or =0, =1)" : "bad or too large "
                                 "a value", item, term, len);
        return -EINVAL;
    }

    if (t->max == 0 && value != NULL) {
        number = (uint64_t)(value[0] - '0');
    }

    switch (t->kind) {
    case PERFMON_PARSE_TERM_RAW:
        event->raw_code |= number;
        break;
    case PERFMON_PARSE_TERM_EVENT:
        event->raw_code |= (number & 0xff) | ((number & 0xf00) << 24);
        break;
    case PERFMON_PARSE_TERM_PERIOD:
    case PERFMON_PARSE_TERM_FREQ:
        if (number == 0) {
            perfmon_parse_term_error(errp, (t->kind == PERFMON_PARSE_TERM_FREQ)
                                     ? "freq must be above 0"
                                     : "period must be above 0", item,
                                     term, len);
            return -EINVAL;
        }

        if (t->kind == PERFMON_PARSE_TERM_FREQ) {
            event->freq = number;
        } else {
            event->period = number;
        }

        break;
    default:
        event->raw_code |= number << t->shift;
        break;
    }

    return 0;
}

/*
 * Terms between a PMU's slashes (`cpu/event=0xd1,umask=0x20,cmask=1/`):
 * comma-separated, each at most once; the event becomes a raw code.
 * Returns 1 when the terms only say how to sample (period, freq, name):
 * then what stands before the slash is an event's name (`cycles/period=N/`).
 */
static int
perfmon_parse_terms_list(const char *item, const char *terms, size_t len,
                         struct perfmon_parse_event *event,
                         struct perfmon_parse_error *errp)
{
    unsigned int seen = 0;
    const char *end = terms + len;

    event->raw_code = 0;

    for (const char *term = terms; term <= end;) {
        const char *comma = memchr(term, ',', (size_t)(end - term));
        size_t term_len = (comma == NULL) ? (size_t)(end - term)
                                          : (size_t)(comma - term);
        int error;

        if (term_len == 0) {
            perfmon_parse_term_error(errp, "empty term", item, term, 0);
            return -EINVAL;
        }

        error = perfmon_parse_term(item, term, term_len, event, &seen, errp);

        if (error) {
            return error;
        }

        term += term_len + 1;
    }

    if ((seen & ~PERFMON_PARSE_SAMPLING_TERMS) == 0) {
        return 1;
    }

    if (!(seen & ((1U << PERFMON_PARSE_TERM_RAW)
                  | (1U << PERFMON_PARSE_TERM_EVENT)))) {
        perfmon_parse_term_error(errp, "terms without event= or config=",
                                 item, terms, len);
        return -EINVAL;
    }

    return 0;
}

/* Whether what stands between a PMU's slashes is terms, not a name. */
static bool
perfmon_parse_is_terms(const char *s, size_t len)
{
    if (memchr(s, '=', len) != NULL || memchr(s, ',', len) != NULL) {
        return true;
    }

    for (size_t i = 0; i < ARRAY_SIZE(perfmon_parse_terms); i++) {
        if (strlen(perfmon_parse_terms[i].key) == len
            && memcmp(perfmon_parse_terms[i].key, s, len) == 0) {
            return true;
        }
    }

    return false;
}

/*
 * The device part of a `PMU/EVENT/[:mods]` or `PMU/TERMS/[:mods]` item:
 * store PMU in event->pmu and set *namep, *name_lenp to EVENT (NULL for
 * terms, parsed here into event->raw_code), *restp to what follows the
 * closing slash.
 */
static int
perfmon_parse_pmu(const char *item, size_t len,
                  struct perfmon_parse_event *event, const char **namep,
                  size_t *name_lenp, const char **restp,
                  struct perfmon_parse_error *errp)
{
    const char *slash = memchr(item, '/', len), *close;
    size_t pmu_len = (size_t)(slash - item), ev_len;
    bool terms;
    int error;

    close = memchr(slash + 1, '/', len - pmu_len - 1);
    ev_len = (close == NULL) ? 0 : (size_t)(close - slash - 1);
    terms = (close != NULL) && perfmon_parse_is_terms(slash + 1, ev_len);

    for (size_t i = 0; i < pmu_len; i++) {
        if (!perfmon_parse_is_name_char(item[i])) {
            close = NULL;
        }
    }

    for (size_t i = 0; close != NULL && !terms && i < ev_len; i++) {
        if (!perfmon_parse_is_name_char(slash[1 + i])) {
            close = NULL;
        }
    }

    if (close == NULL || pmu_len == 0 || ev_len == 0
        || (close + 1 < item + len && close[1] != ':')) {
        close = NULL;
    }

    error = (close != NULL && terms)
            ? perfmon_parse_terms_list(item, slash + 1, ev_len, event, errp)
            : 0;

    if (error < 0) {
        return error;
    }

    /* `EVENT/period=N/`: no device named, the event before the slash. */
    if (error == 1) {
        event->pmu[0] = '\0';
        *namep = item;
        *name_lenp = pmu_len;
        *restp = close + 1;
        return 0;
    }

    if (close == NULL || pmu_len >= sizeof(event->pmu)) {
        perfmon_parse_set_error(errp, "bad PMU item (PMU/EVENT/ or "
                                "PMU/event=0xNN,umask=0xNN,.../)", item, len);
        return -EINVAL;
    }

    memcpy(event->pmu, item, pmu_len);
    event->pmu[pmu_len] = '\0';
    *namep = terms ? NULL : slash + 1;
    *name_lenp = ev_len;
    *restp = close + 1;
    return 0;
}

static int
perfmon_parse_item(const char *item, size_t len,
                   struct perfmon_parse_event *event,
                   struct perfmon_parse_error *errp)
{
    const char *name = item, *rest, *end = item + len;
    unsigned int flags = PERFMON_EF_MODE;
    size_t name_len = len;
    bool too_long;
    uint64_t code;
    int error;

    if (len == 0) {
        perfmon_parse_set_error(errp, "empty event name", item, len);
        return -EINVAL;
    }

    if (len >= PERFMON_PARSE_NAME_SIZE) {
        perfmon_parse_set_error(errp, "event name too long (at most "
                                STRINGIFY(PERFMON_PARSE_NAME_MAX)
                                " characters)", item, len);
        return -E2BIG;
    }

    /* Groups open and close between items (perfmon_parse_events). */
    if (memchr(item, '{', len) != NULL || memchr(item, '}', len) != NULL) {
        perfmon_parse_set_error(errp, "a brace inside an event name", item,
                                len);
        return -EINVAL;
    }

    event->pmu[0] = '\0';
    event->spec[0] = '\0';
    event->period = 0;
    event->freq = 0;
    event->leader_sample = false;

    if (memchr(item, '/', len) != NULL) {
        error = perfmon_parse_pmu(item, len, event, &name, &name_len, &rest,
                                  errp);

        if (error) {
            return error;
        }
    } else {
        rest = memchr(item, ':', len);
        rest = (rest == NULL) ? end : rest;
        name_len = (size_t)(rest - item);

        for (size_t i = 0; i < name_len; i++) {
            if (!perfmon_parse_is_name_char(item[i])) {
                perfmon_parse_set_error(errp, "bad character in event name",
                                        item, len);
                return -EINVAL;
            }
        }
    }

    if (name_len == 0) {
        perfmon_parse_set_error(errp, "empty event name", item, len);
        return -EINVAL;
    }

    if (rest < end && memchr(rest + 1, ':', (size_t)(end - rest - 1))
                      != NULL) {
        perfmon_parse_set_error(errp, "more than one ':'", item, len);
        return -EINVAL;
    }

    if (rest < end
        && perfmon_parse_modifiers(rest + 1, (size_t)(end - rest - 1),
                                   &flags, NULL) != 0) {
        perfmon_parse_set_error(errp, "bad modifier (u, k and D, each at "
                                "most once)", item, len);
        return -EINVAL;
    }

    /* name= names the event in the output, as perf shows it. */
    if (event->spec[0] == '\0') {
        memcpy(event->spec, item, len);
        event->spec[len] = '\0';
    }

    event->flags = flags;
    event->own_modes = (rest < end)
                       && (memchr(rest, 'u', (size_t)(end - rest)) != NULL
                           || memchr(rest, 'k', (size_t)(end - rest))
                              != NULL);
    if (name == NULL) {
        event->name[0] = '\0';
        event->flags |= PERFMON_EF_RAW;
    } else if (perfmon_parse_raw(name, name_len, &code, &too_long)) {
        if (too_long) {
            perfmon_parse_set_error(errp, "raw code over 64 bits", item, len);
            return -EINVAL;
        }

        event->name[0] = '\0';
        event->raw_code = code;
        event->flags |= PERFMON_EF_RAW;
    } else {
        event->raw_code = 0;
        memcpy(event->name, name, name_len);
        event->name[name_len] = '\0';
    }

    return 0;
}

/*
 * Where an item ends: the next comma outside braces' meaning (a comma
 * always ends an item; braces only open and close groups around items).
 */
static size_t
perfmon_parse_item_len(const char *item)
{
    bool in_terms = false;
    size_t i;

    /* Commas between a PMU's slashes separate its terms. */
    for (i = 0; item[i] != '\0' && (item[i] != ',' || in_terms); i++) {
        in_terms ^= (item[i] == '/');
    }

    return i;
}

/*
 * A group's closing brace and its modifiers (`}` or `}:mods`) at the end
 * of an item of len characters: the item's length without them, with
 * *modsp and *mods_lenp the modifiers (NULL: none); len when the item
 * closes no group.
 */
static size_t
perfmon_parse_group_end(const char *item, size_t len, const char **modsp,
                        size_t *mods_lenp)
{
    size_t i = len;

    while (i > 0 && item[i - 1] != '}') {
        i--;
    }

    /* No brace, or `}x`: the item's own business (a bad name). */
    if (i == 0 || (i < len && item[i] != ':')) {
        return len;
    }

    *modsp = (i < len) ? &item[i + 1] : NULL;
    *mods_lenp = (i < len) ? len - i - 1 : 0;
    return i - 1;
}

/*
 * The group modifiers (u, k, D) apply to every member without its own; S
 * marks every member as read by the leader's samples.
 */
static int
perfmon_parse_group_close(struct perfmon_parse_event *events,
                          unsigned int first, unsigned int nr,
                          const char *mods, size_t mods_len,
                          const char *item, size_t item_len,
                          struct perfmon_parse_error *errp)
{
    unsigned int flags;
    bool sample;

    if (mods == NULL) {
        return 0;
    }

    if (perfmon_parse_modifiers(mods, mods_len, &flags, &sample) != 0) {
        perfmon_parse_set_error(errp, "bad group modifier (u, k, D and S, "
                                "each at most once)", item, item_len);
        return -EINVAL;
    }

    for (unsigned int i = first; i < nr; i++) {
        events[i].flags |= flags & PERFMON_EF_PINNED;
        events[i].leader_sample = sample;

        if (!events[i].own_modes) {
            events[i].flags = (events[i].flags & ~PERFMON_EF_MODE)
                              | (flags & PERFMON_EF_MODE);
        }
    }

    return 0;
}

int
perfmon_parse_events(const char *list, struct perfmon_parse_event *events,
                     unsigned int max, struct perfmon_parse_error *errp)
{
    unsigned int nr = 0, group_first = 0;
    bool in_group = false;
    const char *item;
    size_t len;
    int error;

    if ((list == NULL) || (events == NULL)) {
        perfmon_parse_set_error(errp, "no event list", "", 0);
        return -EINVAL;
    }

    if (errp != NULL) {
        errp->pos = 0;
    }

    len = strnlen(list, PERFMON_PARSE_LIST_MAX + 1);

    if (len > PERFMON_PARSE_LIST_MAX) {
        perfmon_parse_set_error(errp, "event list too long (at most "
                                STRINGIFY(PERFMON_PARSE_LIST_MAX)
                                " characters)", list,
                                PERFMON_PARSE_NAME_SIZE - 1);
        return -E2BIG;
    }

    if (len == 0) {
        perfmon_parse_set_error(errp, "empty event list", "", 0);
        return -EINVAL;
    }

    for (item = list;; item += len + 1) {
        const char *mods = NULL, *name = item;
        size_t mods_len = 0, name_len;
        bool opens, closes;

        len = perfmon_parse_item_len(item);
        opens = (len > 0 && item[0] == '{');
        name_len = perfmon_parse_group_end(item, len, &mods, &mods_len);
        closes = (name_len != len);

        if (errp != NULL) {
            errp->pos = (unsigned int)(item - list) + 1;
        }

        if (opens && in_group) {
            perfmon_parse_set_error(errp, "a group inside a group", item,
                                    len);
            return -EINVAL;
        }

        if (closes && !in_group && !opens) {
            perfmon_parse_set_error(errp, "'}' closes no group", item, len);
            return -EINVAL;
        }

        if (opens) {
            in_group = true;
            group_first = nr;
            name++;
            name_len--;

            if (errp != NULL) {
                errp->pos++;
            }
        }

        if (nr == max) {
            perfmon_parse_set_error(errp, "too many events (at most "
                                    STRINGIFY(PERFMON_PARSE_MAX_EVENTS)
                                    " in all)", item, len);
            return -E2BIG;
        }

        error = perfmon_parse_item(name, name_len, &events[nr], errp);

        if (error) {
            return error;
        }

        events[nr].group = in_group ? (int)group_first : -1;
        nr++;

        if (closes) {
            in_group = false;
            error = perfmon_parse_group_close(events, group_first, nr, mods,
                                              mods_len, item, len, errp);

            if (error) {
                return error;
            }
        }

        if (item[len] == '\0') {
            break;
        }
    }

    if (in_group) {
        if (errp != NULL) {
            errp->pos = (unsigned int)(&list[strlen(list)] - list) + 1;
        }

        perfmon_parse_set_error(errp, "a group without its '}'", "", 0);
        return -EINVAL;
    }

    return (int)nr;
}

/* ---- CPU lists ---------------------------------------------------------- */

/* Parse decimal digits at *sp, advancing it.  -EINVAL when there are none. */
static int
perfmon_parse_cpu(const char **sp, unsigned int *cpup)
{
    const char *s = *sp;
    unsigned int cpu = 0;

    if ((*s < '0') || (*s > '9')) {
        return -EINVAL;
    }

    while ((*s >= '0') && (*s <= '9')) {
        cpu = cpu * 10 + (unsigned int)(*s - '0');

        /* Anything this big is out of range; stop before it wraps. */
        if (cpu > 100000) {
            cpu = 100000;
        }

        s++;
    }

    *sp = s;
    *cpup = cpu;
    return 0;
}

int
perfmon_parse_cpulist(const char *s, unsigned int nr_cpus, uint64_t *maskp)
{
    uint64_t mask = 0;

    if ((s == NULL) || (maskp == NULL)) {
        return -EINVAL;
    }

    nr_cpus = MIN(nr_cpus, PERFMON_PARSE_MAX_CPUS);

    for (;;) {
        unsigned int first, last;

        if (perfmon_parse_cpu(&s, &first) != 0) {
            return -EINVAL;
        }

        last = first;

        if (*s == '-') {
            s++;

            if ((perfmon_parse_cpu(&s, &last) != 0) || (last < first)) {
                return -EINVAL;
            }
        }

        if ((*s != ',') && (*s != '\0')) {
            return -EINVAL;
        }

        if (last >= nr_cpus) {
            return -ERANGE;
        }

        for (unsigned int cpu = first; cpu <= last; cpu++) {
            mask |= 1ULL << cpu;
        }

        if (*s == '\0') {
            break;
        }

        s++;
    }

    *maskp = mask;
    return 0;
}

/* ---- suggestions -------------------------------------------------------- */

unsigned int
perfmon_parse_distance(const char *a, const char *b)
{
    unsigned int row[PERFMON_PARSE_NAME_SIZE];
    size_t la, lb;

    la = strnlen(a, PERFMON_PARSE_NAME_SIZE - 1);
    lb = strnlen(b, PERFMON_PARSE_NAME_SIZE - 1);

    /* One row of the dynamic programming table: distances to b's prefixes. */
    for (size_t j = 0; j <= lb; j++) {
        row[j] = (unsigned int)j;
    }

    for (size_t i = 1; i <= la; i++) {
        unsigned int diag = row[0];

        row[0] = (unsigned int)i;

        for (size_t j = 1; j <= lb; j++) {
            unsigned int up = row[j];
            unsigned int best = diag + ((perfmon_parse_lower(a[i - 1])
                                         == perfmon_parse_lower(b[j - 1]))
                                        ? 0 : 1);

            best = MIN(best, up + 1);
            best = MIN(best, row[j - 1] + 1);
            diag = up;
            row[j] = best;
        }
    }

    return row[lb];
}

/* Whether name (len characters) begins cand, case aside. */
static bool
perfmon_parse_is_prefix(const char *name, size_t len, const char *cand)
{
    for (size_t i = 0; i < len; i++) {
        if (cand[i] == '\0'
            || perfmon_parse_lower(cand[i]) != perfmon_parse_lower(name[i])) {
            return false;
        }
    }

    return true;
}

static unsigned int
perfmon_parse_score(const char *name, size_t len, const char *cand)
{
    if ((len >= 3) && perfmon_parse_is_prefix(name, len, cand)
        && (cand[len] != '\0')) {
        return 1;
    }

    return perfmon_parse_distance(name, cand);
}

unsigned int
perfmon_parse_suggest(const char *name, const char *const *cands,
                      unsigned int nr_cands, const char **out,
                      unsigned int max_out)
{
    unsigned int best = UINT32_MAX, limit, nr = 0;
    size_t len;

    if ((name == NULL) || (cands == NULL) || (out == NULL)) {
        return 0;
    }

    len = strnlen(name, PERFMON_PARSE_NAME_SIZE - 1);
    limit = MAX(2U, (unsigned int)len / 3);

    for (unsigned int i = 0; i < nr_cands; i++) {
        if (cands[i] != NULL) {
            best = MIN(best, perfmon_parse_score(name, len, cands[i]));
        }
    }

    if (best > limit) {
        return 0;
    }

    for (unsigned int i = 0; (i < nr_cands) && (nr < max_out); i++) {
        bool seen = false;

        if ((cands[i] == NULL)
            || (perfmon_parse_score(name, len, cands[i]) != best)) {
            continue;
        }

        for (unsigned int j = 0; j < nr; j++) {
            if (strcmp(out[j], cands[i]) == 0) {
                seen = true;
            }
        }

        if (!seen) {
            out[nr++] = cands[i];
        }
    }

    return nr;
}
