/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one-line text of a watch event, shared by watch's output (from the BPF event) and the
 * TUI (from the trace record), so that both say the same thing and neither drops a detail.
 */
#ifndef DLSCOPE_EVENT_TEXT_H
#define DLSCOPE_EVENT_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * A futex wait: @blocked_in ("dlopen", "dlsym") for a thread found blocked inside that call
 * (@call its file or symbol, @duration_ns since the call began); else @begins for a wait that
 * began inside dlopen, reported as it began; else a wait that ended after @duration_ns.
 */
void event_text__futex(char *buf, size_t len, unsigned long long futex, const char *blocked_in,
		       const char *call, bool begins, unsigned long long duration_ns,
		       unsigned int in_dlopen);
/* A parallel region (entry 1-3) or an OpenBLAS dispatch (entry 4) started inside dlopen. */
void event_text__omp_fork(char *buf, size_t len, unsigned long long entry,
			  unsigned long long regions);
/* A process forked (@thread false) or a thread created, inside dlopen when @in_dlopen. */
void event_text__fork(char *buf, size_t len, unsigned long long child, bool thread,
		      unsigned int in_dlopen);
void event_text__exit(char *buf, size_t len, unsigned long long status);
void event_text__signal(char *buf, size_t len, unsigned long long sig, const char *where,
			const char *at);

#endif
