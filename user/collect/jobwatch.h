/* SPDX-License-Identifier: GPL-2.0 */
/*
 * watch/record/ui on a multi-rank job: a sink in front of the others that labels every event,
 * object, finding and activity of a rank's process with its rank (learnt from the environment
 * as processes exec and fork, user/proc/job.h), names the first rank to die (fatal signal with
 * the faulting object and symbol, or its exit status) with the other ranks' state at that
 * moment, and a rank that makes no CPU progress while the others do, with its stack.
 */
#ifndef DLSCOPE_JOBWATCH_H
#define DLSCOPE_JOBWATCH_H

#include <stddef.h>
#include <sys/types.h>

#include "sink.h"

struct jobwatch;

/* In front of @down (borrowed); a rank idle for @hang_secs while another progresses is hung. */
struct jobwatch *jobwatch__new(struct event_sink *const *down, size_t n_down, double hang_secs);
/* The sink to give the collector. */
struct event_sink *jobwatch__sink(struct jobwatch *jw);
/* A process watched from the start (-p, --job): its rank, if it has one. */
void jobwatch__add(struct jobwatch *jw, pid_t pid);
/* The findings it raised (rank-died, rank-hung): the collector does not count them. */
unsigned long long jobwatch__findings(const struct jobwatch *jw);
void jobwatch__free(struct jobwatch *jw);

#endif
