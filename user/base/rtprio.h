/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A short piece of work another process waits on, run at the lowest real-time priority: its
 * threads stopped (stacks), a held thread waiting for its probes, or its mmap lock, which
 * reading its memory or /proc/PID/maps and attaching a uprobe take. Started at nice 19 on a
 * busy CPU, the collector was preempted in the middle of such work, and the target stalled in
 * D state behind it. Without the right to it (CAP_SYS_NICE or RLIMIT_RTPRIO) the work runs at
 * the priority it has.
 */
#ifndef DLSCOPE_RTPRIO_H
#define DLSCOPE_RTPRIO_H

#include <sched.h>
#include <stdbool.h>

struct rtprio {
	bool raised;
	int policy;
	struct sched_param param;
};

/* Raise the calling thread, unless it runs at a real-time priority already. */
void rtprio__raise(struct rtprio *r);
/* Back to the policy, priority and nice value it had. */
void rtprio__restore(const struct rtprio *r);

#endif /* DLSCOPE_RTPRIO_H */
