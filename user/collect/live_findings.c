// SPDX-License-Identifier: GPL-2.0
/*
 * The live detectors' hooks (detector.h) for objects and events, and their findings, with
 * the time, thread and stack of the event that raised them, to every sink.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "detector.h"
#include "elfobj.h"
#include "finding.h"
#include "procfs.h"
#include "rtprio.h"
#include "runtimes.h"
#include "target.h"
#include "watch_internal.h"

/*
 * A live finding: the detector's live_findings__one (check --json's shape: id, severity, title, evidence,
 * why, remedy) with the time, thread and stack of the event that raised it, to every sink.
 */
void live_findings__one(struct watch *w, struct proc_state *ps, const struct watch_event *we,
			const struct finding *f)
{
	struct event_stack stack = { 0 };
	struct live_finding lf = {
		.t = we->ev.t,
		.pid = we->ev.pid,
		.tid = we->ev.tid,
		.comm = we->comm,
		.f = f,
	};

	w->st->findings++;
	if (w->o->n_sinks && sampling__stack_of(w, ps, we, &stack))
		lf.stack = &stack;
	SINKS(w, finding, &lf);
	event_stack__clear(&stack);
}

/*
 * A process found running (the agent's): what check would say of it now, said as live findings
 * at this moment. Its threads are not read (nothing is stopped), so the rules that need them
 * (loader-lock, deadlock, fork-hang) stay silent here; its live events still reach them.
 */
void live_findings__check_running(struct watch *w, struct proc_state *ps)
{
	struct watch_event we = {
		.ev = { .t = mono_ns(CLOCK_MONOTONIC), .pid = ps->pid, .tid = ps->pid }
	};
	struct runtime_list rt = { 0 };
	struct findings fs = { 0 };
	struct check_ctx ctx;
	struct rtprio prio;
	struct target *t;
	char why[256];

	if (!ps->g || target__open(ps->pid, &t, why, sizeof(why)))
		return;
	/* Its memory is read: never from a starved thread (rtprio.h). */
	rtprio__raise(&prio);
	snprintf(we.comm, sizeof(we.comm), "%.15s", t->comm);
	memcpy(we.ev.comm, we.comm, sizeof(we.ev.comm));
	if (!runtimes__collect(ps->g, t, NULL, &rt)) {
		ctx = (struct check_ctx){ .t = t, .g = ps->g, .rt = &rt };
		for (size_t i = 0; i < n_detectors; i++) {
			if (detectors[i].process)
				detectors[i].process(&ctx, &fs);
			reader__let_holds_in(w);
		}
	}
	rtprio__restore(&prio);
	runtimes__free(&rt);
	target__free(t);
	live_findings__report(w, ps, &we, &fs);
}

static bool live_reported(const struct live_ctx *lc, const struct lg_object *o)
{
	return lc->arg && o->reported;
}

/* The live detectors' view of @ps: reported objects are the present ones. */

static void let_holds_in(void *w)
{
	reader__let_holds_in(w);
}

struct live_ctx live_findings__ctx(struct watch *w, struct proc_state *ps)
{
	return (struct live_ctx){ .g = ps ? ps->g : NULL,
				  .reported = live_reported,
				  .arg = ps,
				  .pause = let_holds_in,
				  .pause_arg = w };
}

/* Report what the detectors found about @we, then forget it. */
void live_findings__report(struct watch *w, struct proc_state *ps, const struct watch_event *we,
			   struct findings *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		live_findings__one(w, ps, we, &fs->f[i]);
	findings__free(fs);
}

/* The detector table's hooks for an object the model gained (detector.h). */
void live_findings__on_object(struct watch *w, struct proc_state *ps,
			      const struct watch_event *cause, const struct lg_object *o)
{
	struct live_ctx lc = live_findings__ctx(w, ps);
	struct findings fs = { 0 };

	if (o->gone)
		return;
	if (cause == w->cur.we && w->cur.python[0])
		lc.arrived_through = w->cur.python;
	detectors__on_object(&lc, o, &fs);
	live_findings__report(w, ps, cause, &fs);
}

/*
 * Whether futex @uaddr of @ps is one of its loader's own locks (glibc's in _rtld_global,
 * musl's in its dynamic linker's data): a thread inside dlopen that waits there waits to
 * enter, behind another thread's dlopen, and holds nothing. Only a wait on something else
 * (a join, a team's barrier) is a constructor waiting under the loader lock.
 */
bool live_findings__loader_lock(const struct proc_state *ps, uint64_t uaddr)
{
	for (size_t i = 0; ps && ps->g && i < ps->g->n; i++) {
		const struct lg_object *o = ps->g->objs[i];

		if (!o->gone && o->elf && lg_object__is_loader(o) && uaddr >= o->base &&
		    elfobj__writable_at(o->elf, uaddr - o->base))
			return true;
	}
	return false;
}

/*
 * A dlopen that failed, with its error: the detectors explain it from the files the process
 * sees, read through its root while it lives.
 */
static void dlopen_failed(struct watch *w, struct proc_state *ps, const struct event *ev,
			  struct findings *fs)
{
	const char *arg = ev->u.dlopen.path;
	char why[256], file[PATH_MAX], link[64], cwd[PATH_MAX];
	struct target *t = NULL;
	struct live_ctx lc = live_findings__ctx(w, ps);
	struct live_event le = {
		.kind = LIVE_DLOPEN_FAILED,
		.pid = ev->pid,
		.tid = ev->tid,
		.comm = ev->comm,
		.dlopen_file = arg,
		.error = ev->u.dlopen.error,
	};
	ssize_t n;

	/* Gone already (a short command): said all the same, with what needs no process. */
	if (target__open(ev->pid, &t, why, sizeof(why)))
		t = NULL;
	proc__path(link, sizeof(link), ev->pid, 0, "cwd");
	if (arg[0] == '/') {
		le.file = arg;
	} else if (strchr(arg, '/') && (n = readlink(link, cwd, sizeof(cwd) - 1)) > 0) {
		cwd[n] = '\0';
		snprintf(file, sizeof(file), "%.*s/%s", PATH_MAX / 2, cwd, arg);
		le.file = file;
	}
	le.t = t;
	detectors__on_event(&lc, &le, fs);
	target__free(t);
}

/* The detector table's hooks for an event: a parallel region or a wait inside dlopen. */
void live_findings__on_event(struct watch *w, struct proc_state *ps, const struct event *ev,
			     struct findings *fs)
{
	bool futex = ev->kind == EVENT_FUTEX_WAIT &&
		     (ev->u.futex.what == EVENT_FUTEX_BEGINS ||
		      ev->u.futex.what == EVENT_FUTEX_BLOCKED_DLOPEN);
	struct live_ctx lc;
	struct live_event le = {
		.kind = futex ? LIVE_FUTEX_IN_DLOPEN : LIVE_PARALLEL_IN_DLOPEN,
		.pid = ev->pid,
		.tid = ev->tid,
		.comm = ev->comm,
		.entry = ev->kind == EVENT_OMP_FORK ? (unsigned int)ev->u.omp_fork.entry : 0,
		.dlopen_file = futex && ev->u.futex.what == EVENT_FUTEX_BLOCKED_DLOPEN ?
				       ev->u.futex.call :
				       NULL,
	};

	if (ev->kind == EVENT_DLOPEN && !ev->u.dlopen.handle && ev->u.dlopen.error[0] &&
	    !ev->u.dlopen.path_null) {
		dlopen_failed(w, ps, ev, fs);
		return;
	}
	/* A region outside dlopen is sent only as its runtime's first: nothing to flag. */
	if ((ev->kind != EVENT_OMP_FORK || !ev->in_dlopen) && !futex)
		return;
	if (futex && live_findings__loader_lock(ps, ev->u.futex.futex))
		return;
	lc = live_findings__ctx(w, ps);
	detectors__on_event(&lc, &le, fs);
}
