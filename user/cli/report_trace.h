/* SPDX-License-Identifier: GPL-2.0 */
/* What report (cmd_report.c) takes from a trace of 'dlscope record' or 'dlscope merge'. */
#ifndef DLSCOPE_REPORT_TRACE_H
#define DLSCOPE_REPORT_TRACE_H

#include <jansson.h>
#include <stddef.h>

/* A trace: its header's host and a timeline; its processes as check TRACE reads them. */
struct from_trace {
	json_t *env, *check, *timeline;
	char host[256];
	json_t *hosts; /* a merged trace's host names (dlscope merge), for --redact */
};

/*
 * The trace at @path into @tr: its header's facts, the timeline of runtime arrivals, findings,
 * signals, execs, exits and GPU loads, and check TRACE's document. 0, or -errno with @why.
 */
int report_trace__read(const char *path, struct from_trace *tr, char *why, size_t whylen);

#endif
