/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dlscope merge: the traces of several nodes (one `record` each) as one trace. Each node's
 * CLOCK_MONOTONIC times move to CLOCK_REALTIME through its header's realtime offset, every
 * record is labelled with its host (PIDs of two hosts are unrelated), and the records are
 * merged by time, streaming: one record per input is held, whatever the traces' size.
 */
#ifndef DLSCOPE_TRACEMERGE_H
#define DLSCOPE_TRACEMERGE_H

#include <stddef.h>
#include <stdint.h>

struct merge_stats {
	uint64_t records; /* records written, header and summary included */
	uint64_t bad;	  /* input lines that were no JSON object, skipped */
};

/* What names one input's host: its name, and its boot's id when the header has one. */
struct merge_host {
	const char *host;    /* "" when the header names none */
	const char *boot_id; /* NULL or "" when unknown */
};

/*
 * The label each input's records get ("host"): the host name; a host seen with several boot
 * ids is several hosts, "NAME/BOOT" (the boot id's first 8 characters). Two inputs of one host
 * and one boot (or of one host without boot ids) are one node's run recorded twice: refused,
 * -EEXIST with the indices in @dup. @labels[i] gets a malloc'd string each. 0, -EEXIST or
 * -ENOMEM.
 */
int merge__labels(const struct merge_host *h, size_t n, char **labels, size_t dup[2]);

/* t of a node's record on the merged (realtime) clock: t + offset, 0 below 0. */
uint64_t merge__realtime(uint64_t t, int64_t realtime_minus_monotonic_ns);

/*
 * Merge the traces @paths[0..n) into @out_path (written to a temporary file beside it and
 * renamed at the end: a failed merge leaves no half file, an existing one untouched).
 * Refuses, with a one-line reason in @why: an unreadable input, one that is no dlscope trace
 * or of a format this dlscope does not read, one already merged, the same host twice, and
 * @out_path naming an input. 0 or -errno.
 */
int trace__merge(const char *const *paths, size_t n, const char *out_path, struct merge_stats *st,
		 char *why, size_t whylen);

#endif
