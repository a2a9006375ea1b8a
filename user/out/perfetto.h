/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A dlscope trace as Chrome trace-event JSON, the format ui.perfetto.dev and chrome://tracing
 * open: a track per process (named with its rank when it has one) and per thread; dlopen,
 * dlsym and futex waits as slices nested on their thread's track; loads, signals, findings and
 * process events as instants; parallel regions and BLAS dispatches (--hot) as counters.
 */
#ifndef DLSCOPE_PERFETTO_H
#define DLSCOPE_PERFETTO_H

#include <stdint.h>
#include <stdio.h>

struct perfetto_stats {
	uint64_t records;   /* lines read */
	uint64_t events;    /* trace events written (metadata included) */
	uint64_t skipped;   /* records that are no event (header, summary) or could not be read */
	uint64_t processes; /* process tracks */
};

/*
 * Convert the trace at @path into @out, events ordered by time. The trace is read twice
 * (an index of times and offsets, then each record again in time order), so memory stays
 * small for millions of events. Returns 0, or -errno with a one-line reason in @why.
 */
int perfetto__export(const char *path, FILE *out, struct perfetto_stats *st, char *why,
		     size_t whylen);

#endif
