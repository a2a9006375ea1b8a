// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <proc_service.h>
#include <string.h>
#include <thread_db.h>

#include "elfobj.h"
#include "libgraph.h"
#include "target.h"
#include "tls.h"

/* The process handle libthread_db hands back to the callbacks below. */
struct ps_prochandle {
	const struct target *t;
	const struct libgraph *g;
};

struct sym_find {
	const char *name;
	uint64_t value;
	bool found;
};

static int match_symbol(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct sym_find *s = ctx;

	if (strcmp(name, s->name))
		return 0;
	s->value = sym->st_value;
	s->found = true;
	return 1;
}

/*
 * libthread_db asks for glibc's descriptors of its own structures (_thread_db_*, nptl_version,
 * _rtld_global): they live in libc and ld.so, so only those are searched.
 */
ps_err_e ps_pglobal_lookup(struct ps_prochandle *ph, const char *obj, const char *name,
			   psaddr_t *addr)
{
	const struct libgraph *g = ph->g;

	(void)obj;
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		const struct obj_roles *r = lg_object__roles(o);
		struct sym_find s = { .name = name };

		if (o->gone || !o->elf || o->ns ||
		    (!obj_roles__find(r, ROLE_LIBC) && !obj_roles__find(r, ROLE_LOADER)))
			continue;
		elfobj__foreach_defined(o->elf, ELFOBJ_DYNSYM | ELFOBJ_SYMTAB, match_symbol, &s);
		if (s.found) {
			*addr = (psaddr_t)(uintptr_t)(o->base + s.value);
			return PS_OK;
		}
	}
	return PS_NOSYM;
}

ps_err_e ps_pdread(struct ps_prochandle *ph, psaddr_t addr, void *buf, size_t len)
{
	return target__read(ph->t, (uint64_t)(uintptr_t)addr, buf, len) ? PS_ERR : PS_OK;
}

/* dlscope never writes to the process it inspects, and never stops it here. */
ps_err_e ps_pdwrite(struct ps_prochandle *ph, psaddr_t addr, const void *buf, size_t len)
{
	(void)ph, (void)addr, (void)buf, (void)len;
	return PS_ERR;
}

ps_err_e ps_lgetregs(struct ps_prochandle *ph, lwpid_t lwp, prgregset_t regs)
{
	(void)ph, (void)lwp, (void)regs;
	return PS_ERR;
}

ps_err_e ps_lsetregs(struct ps_prochandle *ph, lwpid_t lwp, const prgregset_t regs)
{
	(void)ph, (void)lwp, (void)regs;
	return PS_ERR;
}

ps_err_e ps_lgetfpregs(struct ps_prochandle *ph, lwpid_t lwp, prfpregset_t *regs)
{
	(void)ph, (void)lwp, (void)regs;
	return PS_ERR;
}

ps_err_e ps_lsetfpregs(struct ps_prochandle *ph, lwpid_t lwp, const prfpregset_t *regs)
{
	(void)ph, (void)lwp, (void)regs;
	return PS_ERR;
}

ps_err_e ps_get_thread_area(struct ps_prochandle *ph, lwpid_t lwp, int idx, psaddr_t *addr)
{
	(void)ph, (void)lwp, (void)idx, (void)addr;
	return PS_ERR;
}

pid_t ps_getpid(struct ps_prochandle *ph)
{
	return ph->t->pid;
}

struct thread_find {
	pid_t tid;
	uint64_t tp;
	bool found;
};

static int match_thread(const td_thrhandle_t *th, void *ctx)
{
	struct thread_find *f = ctx;
	td_thrinfo_t info;

	if (td_thr_get_info(th, &info) != TD_OK || info.ti_lid != f->tid)
		return 0;
	f->tp = (uint64_t)(uintptr_t)th->th_unique;
	f->found = true;
	return 1;
}

int tls__thread_pointer(const struct target *t, const struct libgraph *g, pid_t tid, uint64_t *tp)
{
#if defined(__x86_64__)
	struct ps_prochandle ph = { .t = t, .g = g };
	struct thread_find f = { .tid = tid };
	td_thragent_t *ta = NULL;
	static bool ready;

	if (!ready && td_init() != TD_OK)
		return -ENOTSUP;
	ready = true;
	if (td_ta_new(&ph, &ta) != TD_OK)
		return -ENOTSUP;
	td_ta_thr_iter(ta, match_thread, &f, TD_THR_ANY_STATE, TD_THR_LOWEST_PRIORITY,
		       TD_SIGNO_MASK, TD_THR_ANY_USER_FLAGS);
	td_ta_delete(ta);
	if (!f.found)
		return -ESRCH;
	/* x86-64 keeps the thread descriptor at the thread pointer (TLS_TCB_AT_TP). */
	*tp = f.tp;
	return 0;
#else
	(void)t, (void)g, (void)tid, (void)tp;
	return -ENOTSUP;
#endif
}
