// SPDX-License-Identifier: GPL-2.0
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "elfobj.h"
#include "corefile.h"
#include "linkmap.h"
#include "procfs.h"
#include "output.h"

/* More than any real process has; bounds a corrupted or hostile list. */
#define MAX_OBJECTS 100000
#define MAX_NAMESPACES 64
#define MAX_DYN 4096

struct auxv_info {
	uint64_t phdr, phnum, base, entry;
};

static int read_auxv(pid_t pid, struct auxv_info *ai)
{
	char path[64];
	Elf64_auxv_t av[128];
	ssize_t n;
	int fd;

	proc__path(path, sizeof(path), pid, 0, "auxv");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, av, sizeof(av));
	close(fd);
	if (n < 0)
		return -errno;
	memset(ai, 0, sizeof(*ai));
	for (size_t i = 0; i < (size_t)n / sizeof(av[0]) && av[i].a_type != AT_NULL; i++) {
		switch (av[i].a_type) {
		case AT_PHDR: ai->phdr = av[i].a_un.a_val; break;
		case AT_PHNUM: ai->phnum = av[i].a_un.a_val; break;
		case AT_BASE: ai->base = av[i].a_un.a_val; break;
		case AT_ENTRY: ai->entry = av[i].a_un.a_val; break;
		}
	}
	return ai->phdr && ai->phnum ? 0 : -ESRCH;
}

/* The e_entry of the executable file, to find its load bias when it has no PT_PHDR. */
static int exe_entry(const struct target *t, uint64_t *entry)
{
	char path[64];
	Elf64_Ehdr eh;
	int fd;
	ssize_t n;

	target__exe_path(t, path, sizeof(path));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, &eh, sizeof(eh), 0);
	close(fd);
	if (n != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return -ENOEXEC;
	*entry = eh.e_entry;
	return 0;
}

/*
 * DT_DEBUG's value in the @n entries of the dynamic section at @addr: the section in one read
 * (each read takes the target's mmap lock, which its own mmap and dlopen wait for), entry by
 * entry where that fails (a p_memsz that overstates the mapping).
 */
static int dt_debug_at(const struct target *t, uint64_t addr, uint64_t n, uint64_t *r_debug)
{
	Elf64_Dyn *dyn = n && n <= MAX_DYN ? malloc(n * sizeof(*dyn)) : NULL;
	bool whole = dyn && !target__read(t, addr, dyn, n * sizeof(*dyn));
	int err = 0;

	for (size_t i = 0; i < (whole ? n : MAX_DYN); i++) {
		Elf64_Dyn d;

		if (whole)
			d = dyn[i];
		else if ((err = target__read(t, addr + i * sizeof(d), &d, sizeof(d))))
			break;
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_DEBUG) {
			*r_debug = d.d_un.d_ptr;
			break;
		}
	}
	free(dyn);
	return err;
}

/* DT_DEBUG of the executable, read from memory: where the loader published its r_debug. */
static int find_dt_debug(const struct target *t, const struct auxv_info *ai, uint64_t *r_debug)
{
	Elf64_Phdr ph[64];
	uint64_t bias = 0, dyn_addr = 0, entry = 0, dyn_n = 0;
	bool have_bias = false, have_interp = false;
	size_t phnum = ai->phnum < 64 ? ai->phnum : 64;
	int err;

	err = target__read(t, ai->phdr, ph, phnum * sizeof(ph[0]));
	if (err)
		return err;
	for (size_t i = 0; i < phnum; i++) {
		if (ph[i].p_type == PT_PHDR) {
			bias = ai->phdr - ph[i].p_vaddr;
			have_bias = true;
		} else if (ph[i].p_type == PT_INTERP) {
			have_interp = true;
		}
	}
	if (!have_interp)
		return -ENOEXEC;
	if (!have_bias) {
		err = exe_entry(t, &entry);
		if (err)
			return err;
		bias = ai->entry - entry;
	}
	for (size_t i = 0; i < phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC) {
			dyn_addr = ph[i].p_vaddr + bias;
			dyn_n = ph[i].p_memsz / sizeof(Elf64_Dyn);
		}
	*r_debug = 0;
	if (!dyn_addr)
		return 0;
	return dt_debug_at(t, dyn_addr, dyn_n, r_debug);
}

struct sym_lookup {
	const char *name;
	GElf_Sym *sym;
	bool found;
};

static int match_data_symbol(const char *name, const GElf_Sym *s, void *ctx)
{
	struct sym_lookup *l = ctx;
	size_t len = strlen(l->name);

	if (strncmp(name, l->name, len) || (name[len] && name[len] != '@'))
		return 0;
	*l->sym = *s;
	l->found = true;
	return 1;
}

/* Fallback: the loader exports _r_debug; find it in ld.so's symbols and add its base. */
static int find_rtld_r_debug(const struct target *t, const struct procmaps *maps,
			     const struct auxv_info *ai, uint64_t *r_debug)
{
	const struct mapping *mp = procmaps__find(maps, ai->base);
	char host[PATH_MAX];
	struct elf_object *ld;
	GElf_Sym sym;
	int err = -ENOENT;

	if (!ai->base || !mp || !mapping__is_file(mp))
		return -ENOENT;
	target__host_path(t, mp->path, host, sizeof(host));
	ld = elfobj__open(host);
	if (!ld)
		return -ENOENT;
	/* _r_debug is data, so func_offset will not do; look it up among the symbols. */
	struct sym_lookup lk = { .name = "_r_debug", .sym = &sym };
	elfobj__foreach_defined(ld, ELFOBJ_DYNSYM | ELFOBJ_SYMTAB, match_data_symbol, &lk);
	if (lk.found) {
		*r_debug = ai->base + sym.st_value;
		err = 0;
	}
	elfobj__free(ld);
	return err;
}

static void clear_entries(struct linkmap *lm)
{
	for (size_t i = 0; i < lm->n; i++)
		free(lm->e[i].name);
	lm->n = 0;
}

static int push_entry(struct linkmap *lm, size_t *cap, const struct lm_entry *e)
{
	if (lm->n == *cap) {
		if (ARRAY_GROW(lm->e, *cap, 64)) {
			free(e->name);
			return -ENOMEM;
		}
	}
	lm->e[lm->n++] = *e;
	return 0;
}

/*
 * Every namespace's list from lm->r_debug. @known, when given, is asked of each entry before its
 * name is read: a known one gets no name (NULL), one read of the target less per object.
 */
/* The link_maps of an earlier walk, read again in one go (target__read_many). */
struct prefetch {
	const uint64_t *addrs;
	size_t n, got, next;
	struct link_map *maps;
	bool tried;
};

/* @addr's link_map from the prefetch, when it was there: the entries an earlier walk met are
 * met again in the same order, a few removed (dlclose) and new ones at the end. */
static bool prefetched(const struct target *t, struct prefetch *pf, uint64_t addr,
		       struct link_map *out)
{
	if (!pf->n)
		return false;
	if (!pf->tried) {
		pf->tried = true;
		pf->maps = malloc(pf->n * sizeof(*pf->maps));
		pf->got = pf->maps ? target__read_many(t, pf->addrs, pf->n, pf->maps,
						       sizeof(*pf->maps)) :
				     0;
	}
	for (size_t j = pf->next; j < pf->got && j < pf->next + 8; j++) {
		if (pf->addrs[j] != addr)
			continue;
		*out = pf->maps[j];
		pf->next = j + 1;
		return true;
	}
	return false;
}

/*
 * The target's memory from one entry on, read in one call: the loader allocates its link_maps
 * one after another, most within 4 KiB of the one before (503 of 504 in a process of 500
 * dlopens, 291 of 315 in `import torch`), so the next entries are mostly found in it. A first
 * walk of 500 objects took 500 system calls, one an entry.
 */
struct lm_window {
	uint64_t base;
	size_t len;
	unsigned char *buf;
};

#define LM_WINDOW_BYTES 16384

/* @len bytes at @addr, from the window or from a new window read at @addr. */
static int window_read(const struct target *t, struct lm_window *w, uint64_t addr, void *out,
		       size_t len)
{
	ssize_t n;

	if (w->buf && addr >= w->base && addr - w->base <= w->len &&
	    len <= w->len - (addr - w->base)) {
		memcpy(out, w->buf + (addr - w->base), len);
		return 0;
	}
	if (!w->buf && !(w->buf = malloc(LM_WINDOW_BYTES)))
		return target__read(t, addr, out, len);
	n = target__read_some(t, addr, w->buf, LM_WINDOW_BYTES);
	if (n < (ssize_t)len) {
		w->len = 0;
		return n == -ESRCH || n == -EPERM ? (int)n : target__read(t, addr, out, len);
	}
	w->base = addr;
	w->len = (size_t)n;
	memcpy(out, w->buf, len);
	return 0;
}

/* The entries whose names are still to be read (lm->e[at[i]], its l_name at addr[i]). */
struct names_due {
	size_t *at;
	uint64_t *addr;
	size_t n, cap;
};

static void names_due__free(struct names_due *due)
{
	free(due->at);
	free(due->addr);
}

/* What read_names reads of each name in one go: longer ones are read again alone. */
#define NAME_PEEK 257

/*
 * The names of @due, in one system call per 256 entries rather than one each (a process's
 * 500 objects took 500 reads). 0 or -errno.
 */
static int read_names(const struct target *t, struct linkmap *lm, const struct names_due *due)
{
	char *block = malloc(due->n * NAME_PEEK), **bufs = malloc(due->n * sizeof(*bufs));
	int *res = malloc(due->n * sizeof(*res)), err = 0;

	if (due->n && (!block || !bufs || !res)) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < due->n; i++)
		bufs[i] = block + i * NAME_PEEK;
	target__read_strs(t, due->addr, due->n, bufs, NAME_PEEK, res);
	for (size_t i = 0; i < due->n && !err; i++) {
		char name[PATH_MAX]; /* not in the entry: 500 of 4 KiB each cost page faults */
		const char *got = bufs[i];

		if (res[i] == -ENAMETOOLONG) {
			res[i] = target__read_str(t, due->addr[i], name, sizeof(name));
			got = name;
		}
		if (res[i] < 0)
			err = res[i] == -ENAMETOOLONG ? -EFAULT : res[i];
		else if (!(lm->e[due->at[i]].name = strdup(got)))
			err = -ENOMEM;
	}
out:
	free(block);
	free(bufs);
	free(res);
	return err;
}

/*
 * One namespace's list from the entry at @lm_addr (whose l_prev is @prev) to its end, pushed
 * onto @lm; the names to read are left in @due. 0 or -errno.
 */
static int walk_list(const struct target *t, struct linkmap *lm, size_t *cap, unsigned int ns,
		     uint64_t lm_addr, uint64_t prev, linkmap_known_fn known, void *arg,
		     struct prefetch *pf, struct names_due *due)
{
	struct lm_window win = { 0 };
	size_t count = 0;
	int err = 0;

	while (lm_addr) {
		struct link_map l;
		struct lm_entry e = { .ns = ns, .lm_addr = lm_addr };
		const char *known_name = NULL;
		bool name_due = false;

		if (++count > MAX_OBJECTS) {
			err = -EFAULT;
			break;
		}
		/* Two system calls an entry: torch's 339 took the collector's lock for
		 * milliseconds from a hold that waited for it. */
		if (count % 32 == 0)
			target__pause(t);
		err = pf && prefetched(t, pf, lm_addr, &l) ?
			      0 :
			      window_read(t, &win, lm_addr, &l, sizeof(l));
		if (err)
			break;
		/*
		 * The loader keeps l_prev in step with l_next: an entry that does not point back
		 * at the one before is a list being rewritten or memory that is no list (a loop
		 * would otherwise run to MAX_OBJECTS entries of PATH_MAX each).
		 */
		if ((uint64_t)(uintptr_t)l.l_prev != prev) {
			err = -EFAULT;
			break;
		}
		prev = lm_addr;
		e.l_addr = l.l_addr;
		e.l_ld = (uint64_t)(uintptr_t)l.l_ld;
		if (known && known(&e, arg, &known_name)) {
			e.name = known_name ? strdup(known_name) : NULL;
			if (known_name && !e.name) {
				err = -ENOMEM;
				break;
			}
		} else if (l.l_name) {
			name_due = true;
		} else if (!(e.name = strdup(""))) {
			err = -ENOMEM;
			break;
		}
		err = push_entry(lm, cap, &e);
		if (err)
			break;
		if (name_due) {
			size_t c = due->cap;

			if (due->n == due->cap &&
			    (ARRAY_GROW(due->at, c, 64) || ARRAY_GROW(due->addr, due->cap, 64))) {
				err = -ENOMEM;
				break;
			}
			due->at[due->n] = lm->n - 1;
			due->addr[due->n++] = (uint64_t)(uintptr_t)l.l_name;
		}
		lm_addr = (uint64_t)(uintptr_t)l.l_next;
	}
	free(win.buf);
	return err;
}

static int walk_namespaces(const struct target *t, struct linkmap *lm, linkmap_known_fn known,
			   void *arg, struct prefetch *pf)
{
	struct r_debug_extended rd;
	uint64_t rd_addr = lm->r_debug;
	struct names_due due = { 0 };
	size_t cap = 0;
	int err = 0;

	clear_entries(lm);
	lm->n_namespaces = 0;
	lm->consistent = true;
	for (unsigned ns = 0; rd_addr && ns < MAX_NAMESPACES && !err; ns++) {
		err = target__read(t, rd_addr, &rd, sizeof(rd));
		if (err)
			break;
		if (ns == 0) {
			if (rd.base.r_version < 1) {
				err = -ENOENT; /* the loader has not initialized it yet */
				break;
			}
			lm->r_brk = rd.base.r_brk;
		}
		if (rd.base.r_state != RT_CONSISTENT)
			lm->consistent = false;
		lm->n_namespaces++;
		err = walk_list(t, lm, &cap, ns, (uint64_t)(uintptr_t)rd.base.r_map, 0, known, arg,
				pf, &due);
		/* Namespaces other than the default are chained only from r_version 2 on. */
		if (rd.base.r_version < 2)
			break;
		rd_addr = (uint64_t)(uintptr_t)rd.r_next;
	}
	if (!err)
		err = read_names(t, lm, &due);
	names_due__free(&due);
	return err;
}

int linkmap__read(const struct target *t, const struct procmaps *maps, struct linkmap **out)
{
	struct auxv_info ai;
	struct linkmap *lm;
	int err;

	*out = NULL;
	if (t->core) {
		/* A core's NT_AUXV note. */
		ai = (struct auxv_info){ corefile__auxv(t->core, AT_PHDR),
					 corefile__auxv(t->core, AT_PHNUM),
					 corefile__auxv(t->core, AT_BASE),
					 corefile__auxv(t->core, AT_ENTRY) };
		err = ai.phdr && ai.phnum ? 0 : -ENOENT;
	} else {
		err = read_auxv(t->task, &ai);
	}
	if (err)
		return err;
	lm = calloc(1, sizeof(*lm));
	if (!lm)
		return -ENOMEM;
	lm->interp_base = ai.base;
	err = find_dt_debug(t, &ai, &lm->r_debug);
	if (err)
		goto err_free;
	if (!lm->r_debug) {
		err = find_rtld_r_debug(t, maps, &ai, &lm->r_debug);
		if (err)
			goto err_free;
	}
	/*
	 * A dlopen in another thread may rewrite the lists while we walk them. The loader marks
	 * that with r_state; retry a few times, then take what we saw and say so. A program read
	 * at its exec, before its loader began (r_version 0: on a loaded machine it may not run
	 * for tens of ms), is waited for longer: read then, its start-up would be its program
	 * and loader alone.
	 */
	for (int attempt = 0; attempt < 200; attempt++) {
		err = walk_namespaces(t, lm, NULL, NULL, NULL);
		if (!err && lm->consistent)
			break;
		if (err == -ESRCH || err == -EPERM || err == -ENOMEM)
			break;
		if (attempt >= 20 && !(err == -ENOENT && ai.base))
			break;
		target__sleep(t, 1000000);
	}
	if (err)
		goto err_free;
	*out = lm;
	return 0;

err_free:
	linkmap__free(lm);
	return err;
}

/* The entry of @prev that @e is, met from @*cursor on: the same link_map, bias and dynamic
 * section in the same namespace (a dlclose removes a few, a dlopen appends). */
static const struct lm_entry *prev_entry(const struct linkmap *prev, size_t *cursor,
					 const struct lm_entry *e)
{
	for (size_t j = *cursor; j < prev->n && j < *cursor + 64; j++) {
		const struct lm_entry *p = &prev->e[j];

		if (p->lm_addr == e->lm_addr && p->l_addr == e->l_addr && p->l_ld == e->l_ld &&
		    p->ns == e->ns && p->name) {
			*cursor = j + 1;
			return p;
		}
	}
	return NULL;
}

struct again {
	const struct linkmap *prev;
	size_t cursor;
};

/* An entry of @prev again: named as it was. */
static bool known_before(const struct lm_entry *e, void *arg, const char **name)
{
	struct again *a = arg;
	const struct lm_entry *p = prev_entry(a->prev, &a->cursor, e);

	*name = p ? p->name : NULL;
	return p != NULL;
}

int linkmap__read_again(const struct target *t, const struct procmaps *maps,
			const struct linkmap *prev, struct linkmap **out)
{
	uint64_t *addrs = NULL, ldbase = 0;
	struct linkmap *lm = NULL;
	int err = -ESTALE;

	*out = NULL;
	/* Still the loader it was: its r_debug names the same base (r_ldbase, AT_BASE). */
	if (!prev || !prev->r_debug || !prev->interp_base || t->core ||
	    target__read(t, prev->r_debug + offsetof(struct r_debug, r_ldbase), &ldbase,
			 sizeof(ldbase)) ||
	    ldbase != prev->interp_base)
		return linkmap__read(t, maps, out);
	addrs = malloc((prev->n ? prev->n : 1) * sizeof(*addrs));
	lm = calloc(1, sizeof(*lm));
	if (!addrs || !lm) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < prev->n; i++)
		addrs[i] = prev->e[i].lm_addr;
	lm->r_debug = prev->r_debug;
	lm->interp_base = prev->interp_base;
	for (int attempt = 0; attempt < 20; attempt++) {
		struct prefetch pf = { .addrs = addrs, .n = prev->n };
		struct again a = { prev, 0 };

		err = walk_namespaces(t, lm, known_before, &a, &pf);
		free(pf.maps);
		if (!err && lm->consistent)
			break;
		if (err == -ESRCH || err == -EPERM || err == -ENOMEM)
			break;
		target__sleep(t, 1000000);
	}
out:
	free(addrs);
	if (err) {
		linkmap__free(lm);
		return err == -ENOMEM ? err : linkmap__read(t, maps, out);
	}
	*out = lm;
	return 0;
}

int linkmap__walk(const struct target *t, uint64_t r_debug, struct linkmap **out)
{
	return linkmap__walk_new(t, r_debug, NULL, 0, NULL, NULL, out);
}

int linkmap__walk_new(const struct target *t, uint64_t r_debug, const uint64_t *prev, size_t n_prev,
		      linkmap_known_fn known, void *arg, struct linkmap **out)
{
	struct linkmap *lm = calloc(1, sizeof(*lm));
	struct prefetch pf = { .addrs = prev, .n = n_prev };
	int err;

	if (!lm)
		return -ENOMEM;
	lm->r_debug = r_debug;
	err = walk_namespaces(t, lm, known, arg, &pf);
	free(pf.maps);
	if (err) {
		linkmap__free(lm);
		return err;
	}
	*out = lm;
	return 0;
}

int linkmap__walk_after(const struct target *t, uint64_t r_debug, const struct lm_entry *tail,
			linkmap_known_fn known, void *arg, struct linkmap **out)
{
	struct r_debug_extended rd;
	struct link_map l;
	uint64_t back = 0;
	struct names_due due = { 0 };
	struct linkmap *lm;
	size_t cap = 0;
	int err = target__read(t, r_debug, &rd, sizeof(rd));

	*out = NULL;
	if (err)
		return err;
	if (rd.base.r_version < 1 || (rd.base.r_version >= 2 && rd.r_next))
		return -ESTALE;
	err = target__read(t, tail->lm_addr, &l, sizeof(l));
	if (err)
		return err;
	/* Still the same object at the same place, still linked from the entry before it. */
	if (l.l_addr != tail->l_addr || (uint64_t)(uintptr_t)l.l_ld != tail->l_ld || !l.l_prev ||
	    target__read(t, (uint64_t)(uintptr_t)l.l_prev + offsetof(struct link_map, l_next),
			 &back, sizeof(back)) ||
	    back != tail->lm_addr)
		return -ESTALE;
	lm = calloc(1, sizeof(*lm));
	if (!lm)
		return -ENOMEM;
	lm->r_debug = r_debug;
	lm->r_brk = rd.base.r_brk;
	lm->n_namespaces = 1;
	lm->after_tail = true;
	lm->consistent = rd.base.r_state == RT_CONSISTENT;
	err = walk_list(t, lm, &cap, 0, (uint64_t)(uintptr_t)l.l_next, tail->lm_addr, known, arg,
			NULL, &due);
	if (!err)
		err = read_names(t, lm, &due);
	names_due__free(&due);
	if (err) {
		linkmap__free(lm);
		return err;
	}
	*out = lm;
	return 0;
}

void linkmap__free(struct linkmap *lm)
{
	if (!lm)
		return;
	clear_entries(lm);
	free(lm->e);
	free(lm);
}
