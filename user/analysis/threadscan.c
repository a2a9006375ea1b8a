// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "addrmap.h"
#include "arch.h"
#include "corefile.h"
#include "libgraph.h"
#include "procfs.h"
#include "procmaps.h"
#include "target.h"
#include "threadscan.h"
#include "tls.h"

#define STACK_SCAN_MAX (512 * 1024)

/* The object whose code holds @addr (an executable mapping of it), or -1. */
static int code_lookup(const struct addrmap *am, uint64_t addr)
{
	const struct addr_range *r = addrmap__find(am, addr);

	return r && r->obj && r->mp->perms[2] == 'x' ? (int)r->obj->id : -1;
}

/* True when the bytes before @addr encode a call: then @addr is a return address. */
static bool after_call(const struct target *t, uint64_t addr)
{
	unsigned char b[8];

	return addr >= 8 && !target__read(t, addr - 8, b, sizeof(b)) && arch_follows_call(b);
}

static int read_syscall(pid_t pid, struct thread_info *ti)
{
	char buf[512];
	ssize_t n;

	n = proc__read(pid, ti->tid, "syscall", buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	ti->syscall = -2;
	if (!strncmp(buf, "running", 7))
		return 0;
	if (sscanf(buf, "%ld", &ti->syscall) != 1)
		return -EPROTO;
	if (ti->syscall == -1) {
		sscanf(buf, "%*d %" SCNx64 " %" SCNx64, &ti->sp, &ti->pc);
		return 0;
	}
	sscanf(buf,
	       "%*d %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64
	       " %" SCNx64 " %" SCNx64,
	       &ti->args[0], &ti->args[1], &ti->args[2], &ti->args[3], &ti->args[4], &ti->args[5],
	       &ti->sp, &ti->pc);
	return 0;
}

static int scan_stack(const struct target *t, const struct addrmap *cm, struct thread_info *ti)
{
	const struct addr_range *r = addrmap__find(cm, ti->sp);
	const struct mapping *stack = r ? r->mp : NULL;
	uint64_t end, len, *words;
	size_t n = 0, cap = 0;

	if (!ti->sp || !stack)
		return 0;
	end = stack->end;
	len = end - (ti->sp & ~7ULL);
	if (len > STACK_SCAN_MAX)
		len = STACK_SCAN_MAX;
	words = malloc(len);
	if (!words)
		return -ENOMEM;
	if (target__read(t, ti->sp & ~7ULL, words, len)) {
		free(words);
		return 0;
	}
	/* Walk from the top of the stack down, so frames come outermost first. */
	for (size_t i = len / 8; i-- > 0;) {
		int obj = code_lookup(cm, words[i]);

		if (obj < 0 || !after_call(t, words[i]))
			continue;
		if (n == cap) {
			if (ARRAY_GROW(ti->frames, cap, 32))
				break;
		}
		ti->frames[n++] = (struct thread_frame){ words[i], (unsigned int)obj };
	}
	ti->n_frames = n;
	free(words);
	return 0;
}

static int cmp_listed(const void *a, const void *b)
{
	const struct tls_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/*
 * Each thread's start routine from glibc's thread list: what started it (blas_thread_server,
 * gomp_thread_start, a std::thread's trampoline), the same whether it runs or sleeps now.
 */
static void start_routines(const struct target *t, const struct libgraph *g,
			   const struct addrmap *am, struct threadscan *ts)
{
	struct tls_thread *v;
	size_t n;

	if (!g || tls__threads(t, g, &v, &n))
		return;
	qsort(v, n, sizeof(*v), cmp_listed);
	for (size_t i = 0; i < ts->n; i++) {
		struct thread_info *ti = &ts->t[i];
		/* glibc's list has the thread's own namespace's TIDs (a container's). */
		struct tls_thread key = { .tid = ti->ns_tid };
		const struct tls_thread *e = n ? bsearch(&key, v, n, sizeof(*v), cmp_listed) : NULL;
		int obj;

		if (!e)
			continue;
		ti->start_known = true;
		ti->start_routine = e->start_routine;
		obj = e->start_routine ? code_lookup(am, e->start_routine) : -1;
		if (obj >= 0)
			ti->start_obj = (unsigned int)obj;
	}
	free(v);
}

int threadscan__scan(const struct target *t, const struct libgraph *g, const struct addrmap *am,
		     struct threadscan **out)
{
	struct threadscan *ts = NULL;
	pid_t *tids;
	size_t n_tids, cap = 0;
	bool other_ns;
	int err;

	*out = NULL;
	err = proc__tids(t->pid, &tids, &n_tids);
	if (err)
		return err;
	ts = calloc(1, sizeof(*ts));
	if (!ts) {
		err = -ENOMEM;
		goto out;
	}
	/* One more /proc read a thread, only in a container: its ids in its memory are its own. */
	other_ns = proc__in_other_pidns(t->pid);
	for (size_t k = 0; k < n_tids; k++) {
		struct thread_info *ti;
		pid_t tid = tids[k];

		if (ts->n == cap) {
			if (ARRAY_GROW(ts->t, cap, 16)) {
				err = -ENOMEM;
				goto out;
			}
		}
		ti = &ts->t[ts->n];
		memset(ti, 0, sizeof(*ti));
		ti->tid = ti->ns_tid = tid;
		ti->pc_obj = UINT32_MAX;
		ti->start_obj = UINT32_MAX;
		/* A thread that exits between readdir and here is simply left out. */
		if (proc__read_stat(t->pid, tid, ti->comm, sizeof(ti->comm), &ti->state, NULL) ||
		    read_syscall(t->pid, ti) ||
		    (other_ns && !(ti->ns_tid = proc__ns_tid(t->pid, tid))))
			continue;
		ts->n++;
		if (ti->pc) {
			int obj = code_lookup(am, ti->pc);

			if (obj >= 0)
				ti->pc_obj = (unsigned int)obj;
		}
		err = scan_stack(t, am, ti);
		if (err)
			goto out;
	}
out:
	free(tids);
	if (err) {
		threadscan__free(ts);
		return err;
	}
	start_routines(t, g, am, ts);
	*out = ts;
	return 0;
}

int threadscan__from_core(const struct target *t, const struct libgraph *g,
			  const struct addrmap *am, struct threadscan **out)
{
	const struct corefile *c = t->core;
	struct threadscan *ts = calloc(1, sizeof(*ts));
	int err = 0;

	*out = NULL;
	if (!ts || !(ts->t = calloc(c->n_threads ? c->n_threads : 1, sizeof(*ts->t)))) {
		free(ts);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n_threads && !err; i++) {
		struct thread_info *ti = &ts->t[ts->n++];
		const arch_regs *r = &c->threads[i].regs;
		int obj;

		ti->tid = ti->ns_tid = c->threads[i].tid;
		snprintf(ti->comm, sizeof(ti->comm), "%s", c->comm);
		ti->pc_obj = ti->start_obj = UINT32_MAX;
		/* Its system call, if it stopped in one, and where: as /proc/TID/syscall says. */
		ti->syscall = arch_regs__syscall(r, ti->args);
		ti->state = ti->syscall >= 0 ? 'S' : 't';
		ti->sp = arch_regs__sp(r);
		ti->pc = arch_regs__pc(r);
		obj = code_lookup(am, ti->pc);
		if (obj >= 0)
			ti->pc_obj = (unsigned int)obj;
		err = scan_stack(t, am, ti);
	}
	if (err) {
		threadscan__free(ts);
		return err;
	}
	start_routines(t, g, am, ts);
	*out = ts;
	return 0;
}

void threadscan__free(struct threadscan *ts)
{
	if (!ts)
		return;
	for (size_t i = 0; i < ts->n; i++)
		free(ts->t[i].frames);
	free(ts->t);
	free(ts);
}
