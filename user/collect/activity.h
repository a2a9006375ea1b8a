/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --hot's runtime activity: the kernel counts parallel regions and BLAS dispatches per thread
 * and runtime (the activity map of dlwatch.bpf.c); this reads the map, turns the counts into
 * what each process's runtimes did in the last interval and in the whole run, and drops the
 * kernel's entries of threads that ended (their counts stay here).
 */
#ifndef DLSCOPE_ACTIVITY_H
#define DLSCOPE_ACTIVITY_H

#include <stdint.h>

#include "sink.h"

struct activity_counts;

struct activity_counts *activity_counts__new(void);
void activity_counts__free(struct activity_counts *a);

/* Name runtime @id (the probes' cookie id): its object's path, "openmp" or "blas". */
int activity_counts__name(struct activity_counts *a, unsigned int id, const char *path,
			  const char *kind);
/* The object of runtime @id, or NULL. */
const char *activity_counts__path(const struct activity_counts *a, unsigned int id);

/*
 * Read the map (@map_fd) at time @t: @emit gets, per process and runtime with regions since the
 * last read, what they were (the struct is valid during the call). Returns 0 or -errno.
 */
int activity_counts__read(struct activity_counts *a, int map_fd, uint64_t t,
			  void (*emit)(void *ctx, const struct activity *act), void *ctx);

/* The run's totals per process and runtime (threads' totals), valid until the next call. */
const struct activity *activity_counts__totals(struct activity_counts *a, uint64_t t, size_t *n);

#endif
