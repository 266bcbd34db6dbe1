/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Recordings leave the machine on COM2 as they are drained, in the pipe
 * format of Linux perf (perf.data without seeking), so that the host's
 * `perf report`, `perf script` and `perf annotate` read them with the
 * kernel's ELF (tools/perfdata on the host turns a stream into a
 * perf.data file).  The format is Linux's
 * tools/perf/Documentation/perf.data-file-format.txt and the record
 * layouts of include/uapi/linux/perf_event.h, checked against perf 6.1.
 *
 * One recording is, in this order, all little-endian, every record a
 * multiple of 8 bytes with perf's header (u32 type, u16 misc, u16 size):
 *
 *   "PERFILE2", u64 16                      the pipe header
 *   HEADER_ATTR      the event's perf_event_attr (128 bytes), u64 id 1
 *   EVENT_UPDATE     NAME of id 1: the event as the user named it
 *                    (several events: an attr and a name each, below)
 *   HEADER_FEATURE   HOSTNAME "tally", OSRELEASE "tally VERSION",
 *                    VERSION "tally VERSION (build ID)", ARCH "x86_64",
 *                    NRCPUS, CMDLINE (the perfmon command), and
 *                    BRANCH_STACK (empty) when samples carry branches
 *   MMAP             the kernel: "[kernel.kallsyms]_text_start" over
 *                    KERNEL_VMA.., pgoff the address of _text_start
 *   then, as the drain moves them (kern/perfmon/cmd/perfmon_capture.h):
 *   COMM             a thread's name, before its first sample
 *   SAMPLE           IP, TID, TIME, CPU, PERIOD, CALLCHAIN
 *                    [PERF_CONTEXT_KERNEL, ip, callers...], and
 *                    BRANCH_STACK when recorded
 *   LOST_SAMPLES     samples a CPU's ring had no room for
 *   SWITCH_CPU_WIDE  with --switch-events: a thread leaving or coming in,
 *                    the other thread (attr.context_switch set)
 *   and at the end:
 *   LOST_SAMPLES     what the store had no room for, if anything
 *   HEADER_FEATURE   SAMPLE_TIME (first, last): the recording's end; a
 *                    recording without it was cut short
 *
 * Records other than samples end with perf's sample_id trailer (u32 pid,
 * u32 tid, u64 time, u32 cpu, u32 0).  A thread is its own process for
 * perf (pid = tid).  Times are ns since boot, as in the samples.
 *
 * A recording of several events (or of a group its leader's samples read)
 * has one attribute per event, each with one id per CPU, as perf's own
 * recordings have one per CPU and event: event E (counting from 0) on CPU
 * C has id 1 + E * NRCPUS + C.  Every attribute then asks for
 * PERF_SAMPLE_IDENTIFIER: each sample starts with the id of its event and
 * CPU, and each trailer ends with u64 0 (perf takes 0 for the first
 * event).  A leader's samples that read its group carry PERF_SAMPLE_READ
 * (read_format GROUP | ID, on every attribute of the group): after PERIOD,
 * u64 nr, then nr times u64 value, u64 id (the leader first).  perf takes
 * the difference between two values of one id as what that event counted
 * between the two samples; a value is the event's count on that CPU.
 * A recording of one event keeps the layout above, id 1 alone.
 *
 * ID, the build identity, is 16 hex digits: the 64-bit FNV-1a hash of the
 * kernel's text as loaded (symtab_text_bounds()), which equals the .text
 * section of the ELF it was built as.  The host compares it with the ELF
 * it symbolizes against: another build's addresses mean other functions.
 *
 * Several recordings follow each other on the port, each with its own
 * pipe header.  Samples are written by the drain thread (the sink of the
 * recording), never from the overflow interrupt.
 *
 * Contexts: thread context; one stream open at a time (there is one COM2).
 */

#ifndef KERN_PERFMON_STREAM_H
#define KERN_PERFMON_STREAM_H

#include <stdint.h>

#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon_ring.h"

/* What the stream says about a recording, before its first sample. */
struct perfmon_stream_desc {
    const char *event;                  /* the event, as the user named it */
    int generic;                        /* PERFMON_EV_*, or -1: raw code */
    uint64_t raw_code;                  /* for a raw code */
    unsigned int flags;                 /* PERFMON_EF_MODE bits */
    uint64_t period;                    /* events per sample, or with */
    unsigned int freq;                  /*   freq, samples per second */
    unsigned int fields;                /* PERFMON_SF_* of the samples */
    unsigned int branch_filter;         /* PERFMON_BRF_*, with branches */
    bool switch_events;                 /* switch records come too */
    int argc;                           /* the command that records */
    char *const *argv;
    const struct perfmon_stream_desc *next;     /* the next event, or NULL */
    unsigned int nr_reads;              /* a leader's samples read these */
    const uint32_t *reads;              /*   events (places in the list) */
};

struct perfmon_stream;

#define PERFMON_STREAM_MAX_EVENTS       8

/*
 * Open the stream of a new recording of desc's events (desc, desc->next,
 * ...: at most PERFMON_STREAM_MAX_EVENTS, ids their places; the command is
 * the first's) and write everything up to the kernel's MMAP.  Returns 0,
 * -ENODEV when there is no COM2, -EBUSY while another stream is open, -EIO
 * when the port takes no bytes, -EINVAL for more events than that or reads
 * of an event not in the list, and then leaves nothing open.
 */
int perfmon_stream_open(struct perfmon_stream **streamp,
                        const struct perfmon_stream_desc *desc);

/*
 * The recording's sink (perfmon_capture_set_sink(), arg: the stream): write
 * one record in perf's form.  Records of other types are left out.
 */
void perfmon_stream_rec(const struct perfmon_rec_hdr *hdr, void *arg);

/*
 * End the recording (info: its final counts) and close the stream.
 * Returns 0, or -EIO when the port stopped taking bytes at some point: the
 * stream was cut there.  The stream is closed either way.
 */
int perfmon_stream_close(struct perfmon_stream *stream,
                         const struct perfmon_capture_info *info);

/*
 * The build identity: FNV-1a (64 bits: offset basis 0xcbf29ce484222325,
 * prime 0x100000001b3) over the bytes of [start, end).
 */
uint64_t perfmon_stream_hash(const void *start, const void *end);

#ifdef TALLY_HOST_TEST
/* Forget any open stream, as at boot (host tests only). */
void perfmon_stream_reset(void);
#endif

#endif /* KERN_PERFMON_STREAM_H */
