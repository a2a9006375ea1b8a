// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "addrmap.h"
#include "inspect.h"
#include "libgraph.h"
#include "lockwait.h"
#include "phase.h"
#include "procmaps.h"
#include "target.h"
#include "threadscan.h"
#include "unwind.h"

int inspection__new(pid_t pid, struct inspection **out, char *why, size_t whylen)
{
	struct inspection *in = calloc(1, sizeof(*in));
	int err;

	*out = NULL;
	if (!in) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	err = target__open(pid, &in->t, why, whylen);
	if (err) {
		free(in);
		return err;
	}
	*out = in;
	return 0;
}

struct inspection *inspection__from_target(struct target *t)
{
	struct inspection *in = calloc(1, sizeof(*in));

	if (in)
		in->t = t;
	return in;
}

/* The threads' TIDs as the scan found them: the stacks are taken of the same threads. */
static pid_t *scanned_tids(const struct threadscan *ts)
{
	pid_t *tids = malloc((ts->n ? ts->n : 1) * sizeof(*tids));

	for (size_t i = 0; tids && i < ts->n; i++)
		tids[i] = ts->t[i].tid;
	return tids;
}

int inspection__read(struct inspection *in, unsigned int what, unsigned int max_frames, char *why,
		     size_t whylen)
{
	const struct target *t = in->t;
	int err;

	/* Everything that needs no stop first: mappings, objects, threads, the lock-wait graph. */
	phase__mark("inspect start");
	in->maps = t->core ? procmaps__from_core(t->core) : procmaps__read(t->pid);
	phase__mark("procmaps");
	if (!in->maps) {
		err = -errno;
		snprintf(why, whylen, "process %d (%s) exited while being read", t->pid, t->comm);
		return err;
	}
	err = libgraph__snapshot_maps(t, in->maps, NULL, &in->g, why, whylen);
	phase__mark("libgraph snapshot");
	if (err)
		return err;
	in->am = addrmap__build(in->maps, in->g);
	if (!in->am) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	in->ts_err = in->lw_err = in->stacks_err = -ENODATA;
	in->py_err = libgraph__find_python(in->g, &in->py, in->py_why, sizeof(in->py_why));
	/*
	 * A core file: its threads' system calls and stacks from its registers and memory, and
	 * the lock-wait graph from them (its unwound stacks are stacks CORE's).
	 */
	if (t->core) {
		in->stacks_err = -ENOTSUP;
		if (what & (INSPECT_THREADS | INSPECT_LOCKWAIT | INSPECT_STACKS))
			in->ts_err = threadscan__from_core(t, in->g, in->am, &in->ts);
		if ((what & INSPECT_LOCKWAIT) && in->ts) {
			if (!in->py_err)
				py_snapshot__read_core(&in->py, t->core, 1, &in->py_live);
			in->lw_err = lockwait__analyze(t, in->g, in->am, in->ts, in->py_live, NULL,
						       &in->lw);
		}
		return 0;
	}
	if (what & (INSPECT_THREADS | INSPECT_LOCKWAIT | INSPECT_STACKS))
		in->ts_err = threadscan__scan(t, in->g, in->am, &in->ts);
	phase__mark("addrmap, python, threadscan");
	if (what & INSPECT_STACKS) {
		pid_t *tids = in->ts ? scanned_tids(in->ts) : NULL;

		in->stacks_err =
			stacks__capture(t->pid, in->maps, in->py_err ? NULL : &in->py,
					what & INSPECT_PYTHON_ONLY ? STACKS_PYTHON_ONLY : 0, tids,
					in->ts ? in->ts->n : 0, max_frames, &in->stacks,
					in->stacks_why, sizeof(in->stacks_why));
		free(tids);
		phase__mark("stacks capture");
	}
	if ((what & INSPECT_LOCKWAIT) && in->ts) {
		const struct py_snapshot *py = in->stacks ? in->stacks->py : NULL;

		/* A hung process holds still: its GIL and locks read as well without a stop. */
		if (!py && !in->py_err && !py_snapshot__read(&in->py, t->pid, 1, &in->py_live))
			py = in->py_live;
		in->lw_err = lockwait__analyze(t, in->g, in->am, in->ts, py, in->stacks, &in->lw);
		phase__mark("lockwait");
	}
	return 0;
}

void inspection__free(struct inspection *in)
{
	if (!in)
		return;
	stacks__free(in->stacks);
	py_snapshot__free(in->py_live);
	lockwait__free(in->lw);
	threadscan__free(in->ts);
	addrmap__free(in->am);
	libgraph__free(in->g);
	procmaps__free(in->maps);
	target__free(in->t);
	free(in);
}
