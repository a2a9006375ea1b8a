// SPDX-License-Identifier: GPL-2.0
/*
 * The stacks events carry: unwound with the model's view of the process, named as frames.
 * Naming only reads the model; the dispatcher reads the process again when it is behind.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "frame_text.h"
#include "procfs.h"
#include "procmaps.h"
#include "watch_internal.h"

/* Below this, no address is mapped by default (the kernel's vm.mmap_min_addr). */
#define NULL_NEAR 0x10000

/* "fn+0x12 (libfoo.so)" for an address of process @ps. */
static void symbolize(struct proc_state *ps, uint64_t addr, char *buf, size_t len)
{
	const struct mapping *mp = ps && ps->maps ? procmaps__find(ps->maps, addr) : NULL;
	const struct lg_object *best = NULL;
	const char *name;
	uint64_t off;

	/* The null page and the 64 KiB the kernel keeps unmappable above it (mmap_min_addr): a
	 * null pointer, or a field read through one, whatever file spans it in a non-PIE one. */
	if (!mp && addr < NULL_NEAR) {
		if (addr)
			snprintf(buf, len, "0x%" PRIx64 " (null pointer + 0x%" PRIx64 ")", addr,
				 addr);
		else
			snprintf(buf, len, "0x0 (null pointer)");
		return;
	}
	for (size_t i = 0; mp && ps->g && i < ps->g->n; i++) {
		const struct lg_object *o = ps->g->objs[i];

		if (o->inode == mp->inode && o->base <= mp->start &&
		    (!best || o->base > best->base))
			best = o;
	}
	/* No mapping known (a forked child that died unread): the object whose file spans it. */
	if (!mp && ps)
		best = libgraph__object_at(ps->g, addr);
	if (best && best->elf &&
	    !elfobj__symbol_at(best->elf, addr - best->base, true, &name, &off))
		snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", name, off, lg_object__basename(best));
	else if (best)
		snprintf(buf, len, "0x%" PRIx64 " (%s)", addr, lg_object__basename(best));
	else
		snprintf(buf, len, "0x%" PRIx64, addr);
}

/* The model's view of a process, for the unwinder: what is mapped executable, and file bytes. */
struct unwind_ctx {
	struct proc_state *ps;
	bool unknown_pc; /* a pc in no mapping the model knows: the model may be behind */
};

static bool uw_pc_ok(void *ctx, uint64_t pc)
{
	struct unwind_ctx *c = ctx;
	const struct mapping *mp = c->ps->maps ? procmaps__find(c->ps->maps, pc) : NULL;

	if (mp)
		return mp->perms[2] == 'x';
	/* Maps older than the object (read at exec, the process gone since): its image. */
	if (libgraph__object_at(c->ps->g, pc))
		return true;
	c->unknown_pc = true;
	return false;
}

/* A word outside the stack copy: only from a read-only mapping of a file, as the file has it. */
static bool uw_read(void *ctx, uint64_t addr, uint64_t *word)
{
	struct unwind_ctx *c = ctx;
	const struct mapping *mp = c->ps->maps ? procmaps__find(c->ps->maps, addr) : NULL;
	const struct lg_object *o = libgraph__object_at(c->ps->g, addr);

	if (!o || (mp && (mp->perms[1] == 'w' || !mapping__is_file(mp))))
		return false;
	return !elfobj__read_vaddr(o->elf, addr - o->base, word, sizeof(*word));
}

/*
 * Unwinders (libdwfl sessions, their objects' files and CFI) kept alive at once: beyond, the
 * one used least recently is let go, and read again if its process sends another stack. Names
 * are kept apart from them (unwind.h), so one read again costs its CFI only.
 */
#define UNWINDERS_MAX 32

/*
 * ps->uw, the unwinder of @ps for its objects @mods: its own, one shared with a process laid out
 * alike, or a new one, the least recently used let go first past UNWINDERS_MAX (NULL: none).
 */
static void unwinder_for(struct watch *w, struct proc_state *ps, const struct sample_module *mods,
			 size_t n)
{
	/* An unwinder shared with processes laid out alike, while this one still is. */
	if (ps->uw && sample_unwinder__shared(ps->uw) &&
	    !sample_unwinder__serves(ps->uw, ps->pid, mods, n)) {
		sample_unwinder__free(ps->uw);
		ps->uw = NULL;
	}
	for (size_t i = 0; !ps->uw && n && i < w->n_procs; i++)
		if (w->procs[i].uw && sample_unwinder__serves(w->procs[i].uw, ps->pid, mods, n))
			ps->uw = sample_unwinder__share(w->procs[i].uw);
	/* The least recently used let go first: a few hundred processes, a bounded memory. */
	while (!ps->uw && sample_unwinder__live() >= UNWINDERS_MAX) {
		struct proc_state *lru = NULL;

		for (size_t i = 0; i < w->n_procs; i++)
			if (w->procs[i].uw && &w->procs[i] != ps &&
			    (!lru || w->procs[i].uw_used < lru->uw_used))
				lru = &w->procs[i];
		if (!lru)
			break;
		sample_unwinder__free(lru->uw);
		lru->uw = NULL;
	}
	if (!ps->uw)
		ps->uw = sample_unwinder__new(ps->pid);
	if (ps->uw)
		ps->uw_used = ++w->uw_clock;
}

/*
 * Unwind the stack of the event being handled into w->cur.ts, from the model as it is: naming
 * never changes the model (graphs, maps), only the unwinders it keeps. True when the stack has
 * frames the model cannot place (it is behind).
 */
bool sampling__unwind(struct watch *w, struct proc_state *ps, const struct dlw_event *e)
{
	struct stack_sample smp = {
		.ip = e->regs.ip,
		.sp = e->regs.sp,
		.bp = e->regs.bp,
		.bx = e->regs.bx,
		.r12 = e->regs.r12,
		.r13 = e->regs.r13,
		.r14 = e->regs.r14,
		.r15 = e->regs.r15,
		.stack = w->cur.stack,
		.stack_len = w->cur.len,
		.absent = e->stack_absent,
	};
	struct unwind_ctx c = { .ps = ps };
	struct sample_access acc = { .read = uw_read, .pc_ok = uw_pc_ok, .ctx = &c };
	struct sample_module *mods;
	char *files;
	size_t n = 0;
	const size_t flen = PATH_MAX + 32;

	mods = calloc(ps->g && ps->g->n ? ps->g->n : 1, sizeof(*mods));
	files = malloc((ps->g && ps->g->n ? ps->g->n : 1) * flen);
	if (!mods || !files)
		goto out;
	/* Each object through the process's root; the unwinder falls back to the path itself. */
	for (size_t i = 0; ps->g && i < ps->g->n; i++) {
		const struct lg_object *o = ps->g->objs[i];

		char *file = files + n * flen;

		/* Mapped where the link map says (an object judged after the process was gone
		 * has no known base). */
		if (!o->elf || o->gone || !o->in_maps || o->origin == LG_VDSO)
			continue;
		proc__file_path(file, flen, ps->pid, o->path);
		mods[n++] = (struct sample_module){ o->path, file, o->base };
	}
	unwinder_for(w, ps, mods, n);
	if (!ps->uw || sample_unwinder__set_modules(ps->uw, mods, n))
		goto out;
	sample_unwinder__unwind(ps->uw, &smp, &acc, EVENT_MAX_FRAMES, &w->cur.ts);
	w->cur.ts.tid = ps->pid;
out:
	free(mods);
	free(files);
	/* A frame in an object the model has not read yet (a constructor's library, inside
	 * dlopen; the libraries of a process read at its exec): the model is behind. */
	return c.unknown_pc ||
	       (w->cur.ts.n_frames && !w->cur.ts.frames[w->cur.ts.n_frames - 1].module);
}

/*
 * The stack @we carries, unwound once per event; NULL when it carries none. Read-only: the
 * dispatcher (name_stack) has made the model current first where it could be behind.
 */
const struct thread_stack *sampling__event_stack(struct watch *w, struct proc_state *ps,
						 const struct watch_event *we)
{
	if (we != w->cur.we || !w->cur.stack || !ps)
		return NULL;
	if (!w->cur.done) {
		sampling__unwind(w, ps, we->raw);
		w->cur.done = true;
	}
	return &w->cur.ts;
}

/*
 * The stack @we carries, unwound, as the event's frames (innermost first) and, when it ends
 * before the outermost frame, why. False when @we carries none.
 */
bool sampling__stack_of(struct watch *w, struct proc_state *ps, const struct watch_event *we,
			struct event_stack *out)
{
	const struct thread_stack *ts = sampling__event_stack(w, ps, we);

	if (!ts)
		return false;
	for (size_t i = 0; i < ts->n_frames; i++) {
		char frame[512];

		frame_text__short(&ts->frames[i], frame, sizeof(frame));
		if (event_stack__push(out, frame, ts->frames[i].pc))
			break;
	}
	if (ts->error)
		out->end = strdup(ts->error);
	return true;
}

/* The event's fields that only the model can name: a signal's fault address and pc. */
void sampling__name_signal(struct watch *w, struct proc_state *ps, struct watch_event *we)
{
	const struct thread_stack *ts = sampling__event_stack(w, ps, we);
	struct event *ev = &we->ev;
	char *at = ev->u.signal.at;
	size_t atlen = sizeof(ev->u.signal.at);

	/* A signal sent (kill, raise) has no fault address to name. */
	if (ev->u.signal.sent)
		snprintf(ev->u.signal.where, sizeof(ev->u.signal.where), "none");
	else
		symbolize(ps, ev->u.signal.address, ev->u.signal.where, sizeof(ev->u.signal.where));
	snprintf(at, atlen, "?");
	/* The faulting pc: the stack's first frame, else the pc named from the model. */
	if (ts && ts->n_frames) {
		size_t k = 0, n;

		/* Code inlined into a function: both, as "inlined (...) in caller". */
		frame_text__short(&ts->frames[0], at, atlen);
		while (k + 1 < ts->n_frames && ts->frames[k].inlined)
			k++;
		n = strlen(at);
		if (k && n + 4 < atlen) {
			memcpy(at + n, " in ", 4);
			frame_text__short(&ts->frames[k], at + n + 4, atlen - n - 4);
		}
	} else if (ps && we->raw && we->size >= sizeof(*we->raw)) {
		symbolize(ps, we->raw->regs.ip, at, atlen);
	}
}
