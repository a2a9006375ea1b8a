// SPDX-License-Identifier: GPL-2.0
#include "rtprio.h"

void rtprio__raise(struct rtprio *r)
{
	r->raised = false;
	r->policy = sched_getscheduler(0);
	if (r->policy < 0 || r->policy == SCHED_FIFO || r->policy == SCHED_RR ||
	    sched_getparam(0, &r->param))
		return;
	/* Not inherited: a command the work starts runs at its own priority. */
	r->raised = !sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK,
					&(struct sched_param){ .sched_priority = 1 });
}

void rtprio__restore(const struct rtprio *r)
{
	if (r->raised)
		sched_setscheduler(0, r->policy, &r->param);
}
