/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The agent's metrics (docs/agent.md) in Prometheus' text exposition format: one series per
 * finding that is true of a live process now, and the agent's own counts. Written every
 * interval to DIR/dlscope.prom, which node_exporter's textfile collector reads, through a
 * temporary file and a rename, so that a scrape never reads half a file.
 */
#ifndef DLSCOPE_PROMFILE_H
#define DLSCOPE_PROMFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "finding.h"
#include "sink.h"

/* One dlscope_finding series: bounded labels only (no path, no free text). */
struct prom_series {
	pid_t pid;
	unsigned long long start; /* the process's start: a reused PID is another process */
	char comm[64];		  /* escaped for a terminal (termsafe.h) */
	char check[32];
	enum severity sev;
	char container[96]; /* "docker 3f2a9c1b5e7d" (procfs.h), "" on the host */
};

struct prom_sink {
	struct event_sink s;
	char path[4096], tmp[4096];
	uint64_t interval_ns, next_write; /* CLOCK_MONOTONIC ns */
	const struct watch_stats *st;	  /* the collector's, kept current (live_counts) */
	struct prom_series *v;
	size_t n, cap;
	int write_err; /* the last write's errno, said once until a write succeeds */
};

/*
 * Metrics into @dir every @interval_s seconds from the sink's ticks, with the counts of @st.
 * 0, or -errno with @why when @dir cannot be written (checked by writing the file now).
 */
int prom_sink__init(struct prom_sink *p, const char *dir, double interval_s,
		    const struct watch_stats *st, char *why, size_t whylen);
/* The file written now: 0 or -errno. */
int prom_sink__write(struct prom_sink *p);
/* The file removed (an agent that stopped vouches for nothing) and the series freed. */
void prom_sink__free(struct prom_sink *p);

#endif
