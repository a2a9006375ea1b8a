// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "arch.h"
#include "elfobj.h"
#include "libgraph.h"
#include "target.h"
#include "tls.h"

/*
 * What libthread_db reads, read here directly: glibc describes the fields of its own structures
 * to thread_db in read-only arrays named _thread_db_<struct>_<field>, each three uint32_t (size
 * in bits, element count, byte offset; nptl_db's db_desc_t). From glibc 2.33 the thread lists
 * are the list_t heads _dl_stack_user and _dl_stack_used inside the loader's _rtld_global; before
 * that they were libpthread's own __stack_user and stack_used. Reading them needs no
 * libthread_db of the target's glibc version, and so no libthread_db at all.
 */
enum tls_sym {
	SYM_PTHREAD_LIST, /* struct pthread's list_t */
	SYM_PTHREAD_TID,
	SYM_PTHREAD_START, /* the start routine pthread_create was given */
	SYM_LIST_NEXT,
	SYM_STACK_USER_DESC, /* offsets of the heads in _rtld_global (2.33 and later) */
	SYM_STACK_USED_DESC,
	SYM_RTLD_GLOBAL,
	SYM_OLD_STACK_USER, /* the heads themselves (before 2.33, in libpthread) */
	SYM_OLD_STACK_USED,
	SYM__COUNT,
};

static const char *const sym_names[SYM__COUNT] = {
	[SYM_PTHREAD_LIST] = "_thread_db_pthread_list",
	[SYM_PTHREAD_TID] = "_thread_db_pthread_tid",
	[SYM_PTHREAD_START] = "_thread_db_pthread_start_routine",
	[SYM_LIST_NEXT] = "_thread_db_list_t_next",
	[SYM_STACK_USER_DESC] = "_thread_db_rtld_global__dl_stack_user",
	[SYM_STACK_USED_DESC] = "_thread_db_rtld_global__dl_stack_used",
	[SYM_RTLD_GLOBAL] = "_rtld_global",
	[SYM_OLD_STACK_USER] = "__stack_user",
	[SYM_OLD_STACK_USED] = "stack_used",
};

struct sym_scan {
	uint64_t base;
	uint64_t addr[SYM__COUNT]; /* 0: not found */
};

static int match_symbol(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct sym_scan *s = ctx;

	for (int i = 0; i < SYM__COUNT; i++)
		if (!s->addr[i] && !strcmp(name, sym_names[i]))
			s->addr[i] = s->base + sym->st_value;
	return 0;
}

/* glibc's thread code is in libc (2.34 and later) or libpthread, its lists in the loader. */
static bool holds_thread_symbols(const struct lg_object *o)
{
	const struct obj_roles *r = lg_object__roles(o);

	return obj_roles__find(r, ROLE_LIBC) || obj_roles__find(r, ROLE_LOADER) ||
	       !strncmp(lg_object__basename(o), "libpthread.so", 13);
}

/* The byte offset a descriptor gives, when it describes a field of @bits bits. */
static int read_desc(const struct target *t, uint64_t addr, uint32_t bits, uint32_t *offset)
{
	uint32_t d[3];

	if (!addr || target__read(t, addr, d, sizeof(d)) || d[0] != bits || d[1] != 1)
		return -1;
	*offset = d[2];
	return 0;
}

/* The thread lists hold every thread; more than this many links is a corrupt or moving list. */
#define MAX_THREADS (1u << 20)

/* Where glibc keeps its thread lists in @t, and the fields of its descriptors. */
struct thread_lists {
	uint32_t list_off, tid_off, next_off;
	uint32_t start_off; /* UINT32_MAX: start_routine not described */
	uint64_t heads[2];
};

static int thread_lists(const struct target *t, const struct libgraph *g, struct thread_lists *tl)
{
	struct sym_scan s = { 0 };
	uint32_t user_off, used_off;

	memset(tl, 0, sizeof(*tl));
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		if (o->gone || !o->elf || o->ns || !holds_thread_symbols(o))
			continue;
		s.base = o->base;
		elfobj__foreach_defined(o->elf, ELFOBJ_DYNSYM | ELFOBJ_SYMTAB, match_symbol, &s);
	}
	if (read_desc(t, s.addr[SYM_PTHREAD_LIST], 128, &tl->list_off) ||
	    read_desc(t, s.addr[SYM_PTHREAD_TID], 32, &tl->tid_off) ||
	    read_desc(t, s.addr[SYM_LIST_NEXT], 64, &tl->next_off))
		return -ENOTSUP;
	if (read_desc(t, s.addr[SYM_PTHREAD_START], 64, &tl->start_off))
		tl->start_off = UINT32_MAX;
	if (s.addr[SYM_RTLD_GLOBAL] && !read_desc(t, s.addr[SYM_STACK_USER_DESC], 128, &user_off) &&
	    !read_desc(t, s.addr[SYM_STACK_USED_DESC], 128, &used_off)) {
		tl->heads[0] = s.addr[SYM_RTLD_GLOBAL] + user_off;
		tl->heads[1] = s.addr[SYM_RTLD_GLOBAL] + used_off;
	} else if (s.addr[SYM_OLD_STACK_USER]) {
		tl->heads[0] = s.addr[SYM_OLD_STACK_USER];
		tl->heads[1] = s.addr[SYM_OLD_STACK_USED];
	} else {
		return -ENOTSUP;
	}
	return 0;
}

/*
 * Walk the list at @head: @visit(descriptor, tid, ctx) for each thread until it returns true
 * (then that descriptor is returned), or 0 at the end, on a bad link or after MAX_THREADS.
 */
static uint64_t walk_list(const struct target *t, const struct thread_lists *tl, uint64_t head,
			  bool (*visit)(uint64_t pd, pid_t tid, void *ctx), void *ctx)
{
	uint64_t p;
	int32_t v;

	if (!head || target__read(t, head + tl->next_off, &p, sizeof(p)))
		return 0;
	for (unsigned int n = 0; p && p != head && n < MAX_THREADS; n++) {
		uint64_t pd = p - tl->list_off;

		if (!target__read(t, pd + tl->tid_off, &v, sizeof(v)) && visit(pd, v, ctx))
			return pd;
		if (target__read(t, p + tl->next_off, &p, sizeof(p)))
			return 0;
	}
	return 0;
}

static bool is_tid(uint64_t pd, pid_t tid, void *ctx)
{
	return tid == *(const pid_t *)ctx;
}

int tls__thread_pointer(const struct target *t, const struct libgraph *g, pid_t tid, uint64_t *tp)
{
	struct thread_lists tl;

	if (thread_lists(t, g, &tl))
		return -ENOTSUP;
	/* Threads made by pthread_create with a user stack, and the main thread, are in the
	 * first; the others in the second. */
	for (int i = 0; i < 2; i++) {
		uint64_t pd = walk_list(t, &tl, tl.heads[i], is_tid, &tid);

		if (pd)
			return arch_tp_of_descriptor(pd, tp);
	}
	return -ESRCH;
}

/* Thread lists longer than this are not taken whole: a pool has never been that large. */
#define MAX_LISTED (1u << 16)

struct collect {
	const struct target *t;
	const struct thread_lists *tl;
	struct tls_thread *v;
	size_t n, cap;
	bool oom;
};

static bool collect_one(uint64_t pd, pid_t tid, void *ctx)
{
	struct collect *c = ctx;
	uint64_t start = 0;

	if (tid <= 0)
		return false; /* exited, its descriptor not yet reused */
	if (c->n == c->cap) {
		if ((c->cap ? c->cap * 2 : 64) > MAX_LISTED)
			return true;
		if (ARRAY_GROW(c->v, c->cap, 64)) {
			c->oom = true;
			return true;
		}
	}
	if (c->tl->start_off != UINT32_MAX)
		target__read(c->t, pd + c->tl->start_off, &start, sizeof(start));
	c->v[c->n++] = (struct tls_thread){ .tid = tid, .descriptor = pd, .start_routine = start };
	return false;
}

int tls__threads(const struct target *t, const struct libgraph *g, struct tls_thread **out,
		 size_t *n)
{
	struct thread_lists tl;
	struct collect c = { .t = t, .tl = &tl };

	*out = NULL;
	*n = 0;
	if (thread_lists(t, g, &tl))
		return -ENOTSUP;
	for (int i = 0; i < 2 && !c.oom; i++)
		walk_list(t, &tl, tl.heads[i], collect_one, &c);
	if (c.oom) {
		free(c.v);
		return -ENOMEM;
	}
	*out = c.v;
	*n = c.n;
	return 0;
}
