// SPDX-License-Identifier: GPL-2.0
/* Event lines that watch prints and the TUI shows alike. */
#include <stdio.h>

#include "event_text.h"

void event_text__futex(char *buf, size_t len, unsigned long long futex, const char *blocked_in,
		       const char *call, bool begins, unsigned long long duration_ns,
		       unsigned int in_dlopen)
{
	if (blocked_in)
		snprintf(buf, len,
			 "blocked in a futex wait on 0x%llx inside %s(\"%s\"), which began %.0f ms "
			 "ago",
			 futex, blocked_in, call ? call : "", (double)duration_ns / 1e6);
	else if (begins)
		snprintf(buf, len, "futex wait on 0x%llx begins inside dlopen", futex);
	else
		snprintf(buf, len, "futex wait on 0x%llx for %.1f ms%s", futex,
			 (double)duration_ns / 1e6, in_dlopen ? " (inside dlopen)" : "");
}

void event_text__omp_fork(char *buf, size_t len, unsigned long long entry,
			  unsigned long long regions)
{
	snprintf(buf, len, "%s #%llu started inside dlopen",
		 entry == 4 ? "BLAS parallel dispatch (exec_blas)" : "parallel region", regions);
}

void event_text__fork(char *buf, size_t len, unsigned long long child, bool thread,
		      unsigned int in_dlopen)
{
	snprintf(buf, len, "%s %llu%s", thread ? "new thread" : "fork, child", child,
		 in_dlopen ? " (inside dlopen)" : "");
}

void event_text__exit(char *buf, size_t len, unsigned long long status)
{
	snprintf(buf, len, "exit, status 0x%llx", status);
}

void event_text__signal(char *buf, size_t len, unsigned long long sig, const char *where,
			const char *at)
{
	snprintf(buf, len, "fatal signal %llu, fault address %s, at %s", sig, where ? where : "?",
		 at ? at : "?");
}
