// SPDX-License-Identifier: GPL-2.0
/*
 * The sample unwinder (what watch does with a probe's copy of the stack) on a sample of this
 * very process: its registers taken three calls deep, its stack copied, unwound with the CFI
 * of its own objects after the calls have returned. Needs no root.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "libgraph.h"
#include "procmaps.h"
#include "tap.h"
#include "target.h"
#include "unwind.h"

#define COPY (32 * 1024)

struct capture {
	struct stack_sample s;
	unsigned char stack[COPY];
};

static volatile int sink;

/* The registers at one instruction of this function, and the stack above sp, page by page
 * (the copy stops where the stack's mapping ends, as the probe's does). */
__attribute__((noinline, noclone)) static void take(struct capture *c)
{
	uint64_t ip, sp, bp, bx, r12, r13, r14, r15;
	size_t got = 0;

	__asm__ volatile("lea 0(%%rip), %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "mov %%rbp, %2\n\t"
			 "mov %%rbx, %3\n\t"
			 "mov %%r12, %4\n\t"
			 "mov %%r13, %5\n\t"
			 "mov %%r14, %6\n\t"
			 "mov %%r15, %7"
			 : "=r"(ip), "=m"(sp), "=m"(bp), "=m"(bx), "=m"(r12), "=m"(r13), "=m"(r14),
			   "=m"(r15));
	while (got < COPY) {
		size_t chunk = 4096 - ((sp + got) & 4095);
		struct iovec l = { c->stack + got, chunk < COPY - got ? chunk : COPY - got };
		struct iovec r = { (void *)(uintptr_t)(sp + got), l.iov_len };

		if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)l.iov_len)
			break;
		got += l.iov_len;
	}
	c->s = (struct stack_sample){ .ip = ip,
				      .sp = sp,
				      .bp = bp,
				      .bx = bx,
				      .r12 = r12,
				      .r13 = r13,
				      .r14 = r14,
				      .r15 = r15,
				      .stack = c->stack,
				      .stack_len = got };
	sink++;
}

__attribute__((noinline, noclone)) static void level3(struct capture *c)
{
	take(c);
	sink++;
}

__attribute__((noinline, noclone)) static void level2(struct capture *c)
{
	level3(c);
	sink++;
}

__attribute__((noinline, noclone)) static void level1(struct capture *c)
{
	level2(c);
	sink++;
}

static bool pc_in_exec(void *ctx, uint64_t pc)
{
	const struct mapping *mp = procmaps__find(ctx, pc);

	return mp && mp->perms[2] == 'x';
}

static bool no_read(void *ctx, uint64_t addr, uint64_t *word)
{
	return false;
}

static int index_of(const struct thread_stack *ts, const char *fn)
{
	for (size_t i = 0; i < ts->n_frames; i++)
		if (ts->frames[i].function && !strcmp(ts->frames[i].function, fn))
			return (int)i;
	return -1;
}

int main(void)
{
	struct capture *c = calloc(1, sizeof(*c));
	struct procmaps *maps = procmaps__read(getpid());
	struct sample_module *mods;
	struct sample_unwinder *u = sample_unwinder__new(getpid());
	struct thread_stack ts = { 0 };
	struct sample_access acc = { .read = no_read, .pc_ok = pc_in_exec, .ctx = maps };
	struct libgraph *g = NULL;
	struct target *t = NULL;
	char why[256];
	const struct mapping *stack_map;
	size_t n = 0;
	int i3, i2, i1, im;

	if (!c || !maps || !u || target__open(getpid(), &t, why, sizeof(why)) ||
	    libgraph__snapshot(t, &g, why, sizeof(why))) {
		printf("Bail out! cannot read this process\n");
		return 1;
	}
	/* A small frame for main: the copy must reach below it. */
	mods = calloc(g->n, sizeof(*mods));
	for (size_t i = 0; mods && i < g->n; i++) {
		if (!g->objs[i]->elf || !g->objs[i]->in_maps || g->objs[i]->origin == LG_VDSO)
			continue;
		mods[n++] = (struct sample_module){ g->objs[i]->path, g->objs[i]->path,
						    g->objs[i]->base };
	}
	level1(c);
	/* The calls have returned and the stack below has been reused: only the copy is right.
	 * It reaches the end of the stack's mapping (or COPY), however near the top main runs. */
	stack_map = procmaps__find(maps, c->s.sp);
	CHECK(stack_map && c->s.stack_len > 0 &&
		      c->s.stack_len ==
			      (stack_map->end - c->s.sp < COPY ? stack_map->end - c->s.sp : COPY),
	      "the stack was copied to the end of its mapping");
	CHECK(!sample_unwinder__set_modules(u, mods, n), "the objects are reported");
	CHECK(!sample_unwinder__unwind(u, &c->s, &acc, 64, &ts), "the sample unwinds");
	i3 = index_of(&ts, "level3");
	i2 = index_of(&ts, "level2");
	i1 = index_of(&ts, "level1");
	im = index_of(&ts, "main");
	CHECK(ts.n_frames && ts.frames[0].function && !strcmp(ts.frames[0].function, "take"),
	      "the first frame is where the registers were taken");
	CHECK(i3 == 1 && i2 == 2 && i1 == 3 && im == 4, "level3, level2, level1, main in order");
	CHECK(ts.n_frames > 5 && !ts.error, "it goes on below main to the outermost frame");
	thread_stack__clear(&ts);
	/* A copy cut above level2's frame: the stack ends there and says why. */
	c->s.stack_len = 64;
	sample_unwinder__unwind(u, &c->s, &acc, 64, &ts);
	CHECK(ts.error && strstr(ts.error, "above the 64 bytes copied") && ts.n_frames < 4,
	      "a stack cut by the copy's end says so");
	thread_stack__clear(&ts);
	sample_unwinder__free(u);
	/* A second unwinder once the first is gone (a watched process exits, another starts): the
	 * namer they share starts again from nothing. It kept its freed memo: the second free read
	 * it again (ASan: heap-use-after-free in pc_memo__free). */
	level1(c);
	u = sample_unwinder__new(getpid());
	CHECK(u && !sample_unwinder__set_modules(u, mods, n) &&
		      !sample_unwinder__unwind(u, &c->s, &acc, 64, &ts) &&
		      index_of(&ts, "level3") == 1,
	      "a second unwinder after the first names the same stack");
	thread_stack__clear(&ts);
	sample_unwinder__free(u);
	free(mods);
	libgraph__free(g);
	target__free(t);
	procmaps__free(maps);
	free(c);
	return tap_done();
}
