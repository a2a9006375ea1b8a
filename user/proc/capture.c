// SPDX-License-Identifier: GPL-2.0
/* A small core file of a live process; see capture.h. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arch.h"
#include "array.h"
#include "capture.h"
#include "linkmap.h"
#include "procfs.h"
#include "procmaps.h"
#include "target.h"
#include "tracee.h"

#define PAGE 4096ULL
#define STOP_TIMEOUT_NS (3 * 1000000000ULL)
#define STACK_MAX (16ULL << 20) /* of one thread's stack, from its stack pointer up */
#define XSTATE_MAX 16384

/* A run of pages to write, copied while the threads are stopped. */
struct range {
	uint64_t lo, hi;
	uint64_t file_off; /* --full: where its bytes go in the core, written in the stop */
	unsigned char *data;
	uint64_t got; /* bytes read from lo; the rest is left out of the core */
};

struct ranges {
	struct range *r;
	size_t n, cap;
};

struct cthread {
	pid_t tid;
	bool seized, stopped, gone, have_regs;
	int deliver_sig; /* a signal whose delivery stop was the thread's stop: sent at release */
	arch_regs regs;
	arch_fpregs fpregs;
	unsigned char xstate[XSTATE_MAX];
	size_t xstate_len;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int want(struct ranges *rs, uint64_t lo, uint64_t hi)
{
	lo &= ~(PAGE - 1);
	hi = (hi + PAGE - 1) & ~(PAGE - 1);
	if (lo >= hi)
		return 0;
	if (rs->n == rs->cap) {
		if (ARRAY_GROW(rs->r, rs->cap, 64))
			return -ENOMEM;
	}
	rs->r[rs->n++] = (struct range){ .lo = lo, .hi = hi };
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sorted, overlapping and touching runs merged, none crossing a mapping's end. */
static void merge(struct ranges *rs, const struct procmaps *maps)
{
	size_t k = 0;

	qsort(rs->r, rs->n, sizeof(*rs->r), cmp_range);
	for (size_t i = 0; i < rs->n; i++) {
		struct range *r = &rs->r[i];
		const struct mapping *mp = procmaps__find(maps, r->lo);

		if (!mp)
			continue;
		if (r->hi > mp->end)
			r->hi = mp->end;
		if (k && rs->r[k - 1].hi >= r->lo && procmaps__find(maps, rs->r[k - 1].lo) == mp) {
			struct range *p = &rs->r[k - 1];

			if (r->hi > p->hi)
				p->hi = r->hi;
		} else {
			rs->r[k++] = *r;
		}
	}
	rs->n = k;
}

/* Copy a range; a page that cannot be read ends it (the rest is left out, not made up). */
static void copy_range(pid_t pid, struct range *r)
{
	uint64_t len = r->hi - r->lo;

	if (!r->data && !(r->data = malloc(len)))
		return;
	r->got = 0;
	while (r->got < len) {
		struct iovec local = { r->data + r->got, len - r->got };
		struct iovec remote = { (void *)(uintptr_t)(r->lo + r->got), len - r->got };
		ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

		if (n <= 0)
			break;
		r->got += (uint64_t)n;
	}
	r->got &= ~(PAGE - 1);
}

/*
 * --full: a range read in chunks and written straight to its place in the core, while the
 * threads are stopped (as gcore does): dlscope never holds a whole mapping. A page that cannot
 * be read ends the range, as in copy_range. -errno when the file cannot be written.
 */
static int stream_range(pid_t pid, int fd, struct range *r, unsigned char *buf, size_t buflen)
{
	uint64_t len = r->hi - r->lo;

	r->got = 0;
	while (r->got < len) {
		size_t want = len - r->got < buflen ? (size_t)(len - r->got) : buflen;
		struct iovec local = { buf, want };
		struct iovec remote = { (void *)(uintptr_t)(r->lo + r->got), want };
		ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0), w;

		if (n <= 0)
			break;
		for (ssize_t done = 0; done < n; done += w) {
			w = pwrite(fd, buf + done, (size_t)(n - done),
				   (off_t)(r->file_off + r->got + (uint64_t)done));
			if (w <= 0)
				return w < 0 ? -errno : -EIO;
		}
		r->got += (uint64_t)n;
	}
	r->got &= ~(PAGE - 1);
	return 0;
}

static bool is_loader_or_libc(const struct mapping *mp, uint64_t interp_base,
			      const struct procmaps *maps)
{
	const char *base;

	if (!mp->path || mp->path[0] != '/')
		return false;
	base = strrchr(mp->path, '/') + 1;
	if (!strncmp(base, "libc.so", 7) || !strncmp(base, "ld-linux", 8) ||
	    !strncmp(base, "ld64.so", 7))
		return true;
	/* The loader by AT_BASE, whatever its name. */
	return interp_base && procmaps__find(maps, interp_base) &&
	       procmaps__find(maps, interp_base)->path &&
	       !strcmp(procmaps__find(maps, interp_base)->path, mp->path);
}

/* What the small core holds, known before the stop (stacks are added once the SPs are). */
static int plan(const struct target *t, const struct procmaps *maps, const struct linkmap *lm,
		uint64_t interp_base, uint64_t vdso, bool full, struct ranges *rs)
{
	int err = 0;

	for (size_t i = 0; i < maps->n && !err; i++) {
		const struct mapping *mp = &maps->maps[i];
		const struct mapping *prev = i ? &maps->maps[i - 1] : NULL;

		if (mp->perms[0] != 'r')
			continue;
		if (full) {
			if (!mp->path || strcmp(mp->path, "[vvar]"))
				err = want(rs, mp->start, mp->end);
			continue;
		}
		if (mp->start == vdso)
			err = want(rs, mp->start, mp->end);
		/* The ELF header, program headers and (mostly) the build-id note of an object. */
		else if (mapping__is_file(mp) && mp->offset == 0)
			err = want(rs, mp->start, mp->start + PAGE);
		if (!err && mp->perms[1] == 'w' &&
		    (is_loader_or_libc(mp, interp_base, maps) ||
		     /* their .bss, the anonymous mapping right after their data */
		     (!mp->path && prev && prev->end == mp->start && prev->perms[1] == 'w' &&
		      is_loader_or_libc(prev, interp_base, maps))))
			err = want(rs, mp->start, mp->end);
	}
	if (full || !lm)
		return err;
	/* The link maps: r_debug, each entry, its name and its object's dynamic section. */
	err = err ?: want(rs, lm->r_debug, lm->r_debug + 64);
	for (size_t i = 0; i < lm->n && !err; i++) {
		const struct lm_entry *e = &lm->e[i];
		char name[PATH_MAX];
		uint64_t name_at = 0;

		err = want(rs, e->lm_addr, e->lm_addr + 64);
		/* l_name is the second word of struct link_map. */
		if (!err && !target__read(t, e->lm_addr + 8, &name_at, sizeof(name_at)) && name_at)
			err = want(rs, name_at,
				   name_at + (target__read_str(t, name_at, name, sizeof(name)) > 0 ?
						      strlen(name) + 1 :
						      1));
		if (!err && e->l_ld)
			err = want(rs, e->l_ld, e->l_ld + 1024);
	}
	return err;
}

static int list_threads(pid_t pid, struct cthread **out, size_t *n)
{
	char path[64];
	struct dirent *de;
	size_t cap = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if (!(d = opendir(path)))
		return -ESRCH;
	while ((de = readdir(d))) {
		pid_t tid;

		if (parse_pid(de->d_name, &tid))
			continue;
		if (*n == cap && ARRAY_GROW(*out, cap, 64)) {
			closedir(d);
			return -ENOMEM;
		}
		memset(&(*out)[*n], 0, sizeof(**out));
		(*out)[(*n)++].tid = tid;
	}
	closedir(d);
	return 0;
}

/* The registers of @c, in a ptrace stop of ours. */
static void take_regs(struct cthread *c)
{
	c->stopped = true;
	c->have_regs = !arch_regs__read(c->tid, &c->regs);
	if (c->have_regs) {
		if (arch_fpregs__read(c->tid, &c->fpregs))
			memset(&c->fpregs, 0, sizeof(c->fpregs));
		c->xstate_len = arch_xstate__read(c->tid, c->xstate, sizeof(c->xstate));
	}
}

/* One look at a seized thread: true once it is stopped (registers taken) or gone. */
static bool collect(struct cthread *c)
{
	int status = 0;

	switch (tracee__look(c->tid, false, &status)) {
	case TRACEE_NOTHING: return false;
	case TRACEE_STOPPED: break;
	default: return c->gone = true;
	}
	/* A signal came first: its delivery stop is the thread's stop (resumed, the thread
	 * might not stop again, the interrupt spent); the signal goes with the release. */
	c->deliver_sig = tracee__held_signal(status);
	take_regs(c);
	return true;
}

/*
 * The stop: seize and interrupt every thread, take its registers, its stack (@maps gives each
 * stack pointer's mapping) and every range of @rs, and let every thread go.
 */
static int freeze_and_copy(pid_t pid, struct cthread *c, size_t n, const struct procmaps *maps,
			   struct ranges *rs, bool full, int fd, int *werr, bool held,
			   struct capture_stats *st)
{
	size_t buflen = 1 << 20;
	unsigned char *buf = fd >= 0 ? malloc(buflen) : NULL;

	uint64_t t0 = now_ns();
	size_t pending = 0;
	long delay = 20000;
	int err = 0;

	if (fd >= 0 && !buf)
		return -ENOMEM;
	/* One thread the caller holds in a stop of its own: nothing to seize or let go. */
	if (held) {
		take_regs(&c[0]);
		n = 1;
	}
	for (size_t i = 0; i < n && !held; i++) {
		if (ptrace(PTRACE_SEIZE, c[i].tid, NULL, NULL)) {
			if (errno == EPERM && c[i].tid == pid) {
				err = -EPERM;
				break;
			}
			continue;
		}
		c[i].seized = true;
		pending++;
		ptrace(PTRACE_INTERRUPT, c[i].tid, NULL, NULL);
	}
	while (!err && pending && now_ns() - t0 < STOP_TIMEOUT_NS) {
		bool progress = false;

		for (size_t i = 0; i < n; i++)
			if (c[i].seized && !c[i].stopped && !c[i].gone && collect(&c[i])) {
				pending--;
				progress = true;
			}
		if (pending && !progress) {
			nanosleep(&(struct timespec){ 0, delay }, NULL);
			delay = delay * 2 > 1000000 ? 1000000 : delay * 2;
		} else {
			delay = 20000;
		}
	}
	/* Each thread's stack, from below its red zone to its mapping's end. */
	for (size_t i = 0; !err && !full && i < n; i++) {
		uint64_t sp = c[i].regs.rsp, lo = sp > 128 ? sp - 128 : 0;
		const struct mapping *mp = c[i].have_regs ? procmaps__find(maps, sp) : NULL;

		if (!mp)
			continue;
		if (lo < mp->start)
			lo = mp->start;
		err = want(rs, lo, mp->end - lo > STACK_MAX ? lo + STACK_MAX : mp->end);
	}
	/* Sorting a few hundred runs costs microseconds: one list, all copied in the stop. */
	if (!err && !full)
		merge(rs, maps);
	for (size_t i = 0; !err && i < rs->n; i++)
		if (fd < 0)
			copy_range(pid, &rs->r[i]);
		else if ((err = stream_range(pid, fd, &rs->r[i], buf, buflen)))
			*werr = err;
	/* A thread that never stopped cannot be detached: our exit releases it. */
	for (size_t i = 0; i < n && !held; i++)
		if (c[i].seized && !c[i].gone)
			tracee__release(c[i].tid, false, c[i].stopped, c[i].deliver_sig);
	st->stopped_ns = now_ns() - t0;
	free(buf);
	return *werr ? 0 : err;
}

/* Notes: a growing buffer of ELF notes, each 4-byte aligned. */
struct notes {
	unsigned char *b;
	size_t len, cap;
	bool failed;
};

static void note(struct notes *ns, const char *name, uint32_t type, const void *desc, size_t len)
{
	Elf64_Nhdr nh = { (uint32_t)strlen(name) + 1, (uint32_t)len, type };
	size_t name_pad = (nh.n_namesz + 3) & ~3U, desc_pad = (len + 3) & ~3UL;
	size_t need = sizeof(nh) + name_pad + desc_pad;

	if (ns->failed)
		return;
	if (ARRAY_RESERVE(ns->b, ns->cap, ns->len + need)) {
		ns->failed = true;
		return;
	}
	memset(ns->b + ns->len, 0, need);
	memcpy(ns->b + ns->len, &nh, sizeof(nh));
	memcpy(ns->b + ns->len + sizeof(nh), name, nh.n_namesz - 1);
	memcpy(ns->b + ns->len + sizeof(nh) + name_pad, desc, len);
	ns->len += need;
}

/* NT_FILE: every file mapping, with the kernel's " (deleted)" for a file unlinked. */
static void file_note(struct notes *ns, const struct procmaps *maps)
{
	size_t count = 0, len = 16, off;
	unsigned char *d;

	for (size_t i = 0; i < maps->n; i++)
		if (mapping__is_file(&maps->maps[i])) {
			count++;
			len += 24 + strlen(maps->maps[i].path) + 1 +
			       (maps->maps[i].deleted ? 10 : 0);
		}
	if (!count || !(d = calloc(1, len))) {
		ns->failed |= count != 0;
		return;
	}
	memcpy(d, &(uint64_t){ count }, 8);
	memcpy(d + 8, &(uint64_t){ PAGE }, 8);
	off = 16 + count * 24;
	for (size_t i = 0, k = 0; i < maps->n; i++) {
		const struct mapping *mp = &maps->maps[i];
		uint64_t t[3] = { mp->start, mp->end, mp->offset / PAGE };

		if (!mapping__is_file(mp))
			continue;
		memcpy(d + 16 + 24 * k++, t, sizeof(t));
		off += (size_t)sprintf((char *)d + off, "%s%s", mp->path,
				       mp->deleted ? " (deleted)" : "") +
		       1;
	}
	note(ns, "CORE", NT_FILE, d, len);
	free(d);
}

static void process_notes(struct notes *ns, const struct target *t, pid_t pid, const siginfo_t *si,
			  const unsigned char *auxv, size_t auxv_len, const struct procmaps *maps,
			  pid_t ppid, pid_t pgrp, pid_t sid)
{
	struct elf_prpsinfo ps = { 0 };
	char path[64], args[4096];
	ssize_t n;

	ps.pr_state = 0;
	ps.pr_sname = 'R';
	ps.pr_pid = pid;
	ps.pr_ppid = ppid;
	ps.pr_pgrp = pgrp;
	ps.pr_sid = sid;
	snprintf(ps.pr_fname, sizeof(ps.pr_fname), "%.15s", t->comm);
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	n = proc__read_small(path, args, sizeof(args));
	for (ssize_t i = 0; i < n; i++)
		if (!args[i])
			args[i] = ' ';
	while (n > 0 && args[n - 1] == ' ')
		n--;
	memcpy(ps.pr_psargs, args,
	       n > 0 ? (size_t)n < sizeof(ps.pr_psargs) ? (size_t)n : sizeof(ps.pr_psargs) - 1 : 0);
	note(ns, "CORE", NT_PRPSINFO, &ps, sizeof(ps));
	if (si)
		note(ns, "CORE", NT_SIGINFO, si, sizeof(*si));
	if (auxv_len)
		note(ns, "CORE", NT_AUXV, auxv, auxv_len);
	file_note(ns, maps);
}

static void thread_notes(struct notes *ns, const struct cthread *c, const siginfo_t *si, pid_t ppid,
			 pid_t pgrp, pid_t sid)
{
	struct elf_prstatus pr = { 0 };

	if (si) {
		pr.pr_cursig = (short)si->si_signo;
		pr.pr_info.si_signo = si->si_signo;
		pr.pr_info.si_code = si->si_code;
		pr.pr_info.si_errno = si->si_errno;
	}
	pr.pr_pid = c->tid;
	pr.pr_ppid = ppid;
	pr.pr_pgrp = pgrp;
	pr.pr_sid = sid;
	memcpy(&pr.pr_reg, &c->regs,
	       sizeof(pr.pr_reg) < sizeof(c->regs) ? sizeof(pr.pr_reg) : sizeof(c->regs));
	pr.pr_fpvalid = 1;
	note(ns, "CORE", NT_PRSTATUS, &pr, sizeof(pr));
	note(ns, "CORE", NT_FPREGSET, &c->fpregs, sizeof(c->fpregs));
	if (c->xstate_len)
		note(ns, "LINUX", arch_xstate_note(), c->xstate, c->xstate_len);
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

static unsigned int seg_flags(const struct mapping *mp)
{
	return (mp->perms[0] == 'r' ? PF_R : 0) | (mp->perms[1] == 'w' ? PF_W : 0) |
	       (mp->perms[2] == 'x' ? PF_X : 0);
}

static void add_seg(Elf64_Phdr *ph, const struct range **d, size_t *k, const struct mapping *mp,
		    uint64_t from, uint64_t to, const struct range *x)
{
	/*
	 * Memory not written has no segment, as in gcore's cores (the kernel writes one with
	 * p_filesz 0): with those, libdwfl 0.188 found no link map in these small cores.
	 */
	if (!x)
		return;
	ph[*k] = (Elf64_Phdr){ .p_type = PT_LOAD,
			       .p_flags = seg_flags(mp),
			       .p_vaddr = from,
			       .p_memsz = to - from,
			       .p_filesz = x ? to - from : 0,
			       .p_align = PAGE };
	d[(*k)++] = x;
}

/*
 * The program headers: one PT_LOAD per run of each mapping, with the bytes of a written range
 * (p_filesz = p_memsz) or none (p_filesz 0: in the file NT_FILE names, or left out).
 */
static int build_phdrs(const struct procmaps *maps, const struct ranges *rs, Elf64_Phdr **out,
		       size_t *n, const struct range ***data)
{
	size_t cap = maps->n + rs->n * 3, k = 0, r = 0;
	Elf64_Phdr *ph = calloc(cap, sizeof(*ph));
	const struct range **d = calloc(cap, sizeof(*d));

	if (!ph || !d) {
		free(ph);
		free(d);
		return -ENOMEM;
	}
	for (size_t i = 0; i < maps->n; i++) {
		const struct mapping *mp = &maps->maps[i];
		uint64_t at = mp->start;

		while (r < rs->n && rs->r[r].lo < mp->start)
			r++;
		for (; r < rs->n && rs->r[r].lo < mp->end; r++) {
			const struct range *x = &rs->r[r];
			uint64_t hi = x->hi < mp->end ? x->hi : mp->end;

			if (x->lo > at)
				add_seg(ph, d, &k, mp, at, x->lo, NULL);
			if (x->got)
				add_seg(ph, d, &k, mp, x->lo, x->lo + x->got, x);
			if (x->lo + x->got < hi)
				add_seg(ph, d, &k, mp, x->lo + x->got, hi, NULL);
			at = hi;
		}
		if (at < mp->end)
			add_seg(ph, d, &k, mp, at, mp->end, NULL);
	}
	*out = ph;
	*n = k;
	*data = d;
	return 0;
}

/* Where segment data starts after the ELF header and @phnum program headers. */
static uint64_t data_start(size_t phnum)
{
	return (sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr) + PAGE - 1) & ~(PAGE - 1);
}

static void elf_header(Elf64_Ehdr *eh, size_t phnum)
{
	*eh = (Elf64_Ehdr){ .e_type = ET_CORE,
			    .e_machine = EM_X86_64,
			    .e_version = EV_CURRENT,
			    .e_phoff = sizeof(Elf64_Ehdr),
			    .e_ehsize = sizeof(Elf64_Ehdr),
			    .e_phentsize = sizeof(Elf64_Phdr),
			    .e_phnum = (uint16_t)phnum };
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_ident[EI_OSABI] = ELFOSABI_NONE;
}

static int write_core(int fd, const struct notes *ns, const Elf64_Phdr *lph, size_t n_load,
		      const struct range **data, struct capture_stats *st)
{
	size_t phnum = n_load + 1;
	Elf64_Ehdr eh;
	Elf64_Phdr *ph = calloc(phnum, sizeof(*ph));
	uint64_t off = sizeof(eh) + phnum * sizeof(*ph);
	int err = 0;

	if (!ph)
		return -ENOMEM;
	if (phnum >= PN_XNUM) {
		free(ph);
		return -E2BIG;
	}
	elf_header(&eh, phnum);
	ph[0] = (Elf64_Phdr){
		.p_type = PT_NOTE, .p_offset = off, .p_filesz = ns->len, .p_align = 4
	};
	off = (off + ns->len + PAGE - 1) & ~(PAGE - 1);
	for (size_t i = 0; i < n_load; i++) {
		ph[i + 1] = lph[i];
		ph[i + 1].p_offset = lph[i].p_filesz ? off : 0;
		off += lph[i].p_filesz;
		st->dumped += lph[i].p_filesz;
		st->segments++;
	}
	err = pwrite_all(fd, &eh, sizeof(eh), 0);
	err = err ?: pwrite_all(fd, ph, phnum * sizeof(*ph), sizeof(eh));
	err = err ?: pwrite_all(fd, ns->b, ns->len, ph[0].p_offset);
	for (size_t i = 0; !err && i < n_load; i++)
		if (lph[i].p_filesz)
			err = pwrite_all(fd, data[i]->data + (lph[i].p_vaddr - data[i]->lo),
					 lph[i].p_filesz, ph[i + 1].p_offset);
	if (!err && ftruncate(fd, (off_t)off))
		err = -errno;
	st->file_size = off;
	free(ph);
	return err;
}

/*
 * --full, after the stop: the segments are in the file already; the notes go after them, the
 * ELF header and the program headers (one per range read, its bytes as far as they could be
 * read) at the start.
 */
static int write_full_headers(int fd, const struct notes *ns, const struct procmaps *maps,
			      const struct ranges *rs, struct capture_stats *st)
{
	Elf64_Phdr *ph = calloc(rs->n + 1, sizeof(*ph));
	uint64_t end = data_start(rs->n + 1);
	size_t k = 1;
	Elf64_Ehdr eh;
	int err;

	if (!ph)
		return -ENOMEM;
	for (size_t i = 0; i < rs->n; i++) {
		const struct range *r = &rs->r[i];
		const struct mapping *mp = procmaps__find(maps, r->lo);

		if (r->file_off + (r->hi - r->lo) > end)
			end = r->file_off + (r->hi - r->lo);
		if (!r->got || !mp)
			continue;
		ph[k++] = (Elf64_Phdr){ .p_type = PT_LOAD,
					.p_flags = seg_flags(mp),
					.p_offset = r->file_off,
					.p_vaddr = r->lo,
					.p_filesz = r->got,
					.p_memsz = r->got,
					.p_align = PAGE };
		st->dumped += r->got;
		st->segments++;
	}
	ph[0] = (Elf64_Phdr){
		.p_type = PT_NOTE, .p_offset = end, .p_filesz = ns->len, .p_align = 4
	};
	elf_header(&eh, k);
	err = k >= PN_XNUM ? -E2BIG : 0;
	err = err ?: pwrite_all(fd, &eh, sizeof(eh), 0);
	err = err ?: pwrite_all(fd, ph, k * sizeof(*ph), sizeof(eh));
	err = err ?: pwrite_all(fd, ns->b, ns->len, end);
	if (!err && ftruncate(fd, (off_t)(end + ns->len)))
		err = -errno;
	st->file_size = end + ns->len;
	free(ph);
	return err;
}

/* What capture reads of the process before it stops it: none of it changes while it runs. */
struct facts {
	struct target *t;
	struct procmaps *maps;
	struct linkmap *lm; /* NULL for a static program: the core has no link map */
	unsigned char auxv[4096];
	size_t auxv_len;
	uint64_t interp_base, vdso;
	pid_t ppid, pgrp, sid;
};

static void facts__free(struct facts *f)
{
	linkmap__free(f->lm);
	procmaps__free(f->maps);
	target__free(f->t);
}

static int read_facts(pid_t pid, struct facts *f, char *why, size_t whylen)
{
	char path[64], stat[1024], *p;
	ssize_t auxv_len;
	int err;

	err = target__open(pid, &f->t, why, whylen);
	if (err)
		return err;
	f->maps = procmaps__read(pid);
	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	auxv_len = proc__read_small(path, (char *)f->auxv, sizeof(f->auxv));
	if (!f->maps || auxv_len <= 0) {
		snprintf(why, whylen, "process %d (%s) exited while being read", pid, f->t->comm);
		return -ESRCH;
	}
	f->auxv_len = (size_t)auxv_len;
	for (size_t i = 0; i + 16 <= f->auxv_len; i += 16) {
		uint64_t type, val;

		memcpy(&type, f->auxv + i, 8);
		memcpy(&val, f->auxv + i + 8, 8);
		if (type == AT_BASE)
			f->interp_base = val;
		else if (type == AT_SYSINFO_EHDR)
			f->vdso = val;
	}
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (proc__read_small(path, stat, sizeof(stat)) > 0 && (p = strrchr(stat, ')')))
		sscanf(p + 2, "%*c %d %d %d", &f->ppid, &f->pgrp, &f->sid);
	linkmap__read(f->t, f->maps, &f->lm);
	return 0;
}

/* The threads to stop: @held alone (check --core holds it in its signal stop), else all. */
static int pick_threads(pid_t pid, pid_t held, struct cthread **c, size_t *n)
{
	if (!held)
		return list_threads(pid, c, n);
	*c = calloc(1, sizeof(**c));
	if (!*c)
		return -ENOMEM;
	(*c)[0].tid = held;
	*n = 1;
	return 0;
}

/* The notes from the copies, once the threads run again; -ESRCH when no thread was stopped. */
static int make_notes(struct notes *ns, pid_t pid, const struct facts *f, const struct cthread *c,
		      size_t n, const siginfo_t *si, struct capture_stats *st)
{
	for (size_t i = 0; i < n; i++) {
		if (!c[i].have_regs) {
			st->left_out++;
			continue;
		}
		st->threads++;
		thread_notes(ns, &c[i], si, f->ppid, f->pgrp, f->sid);
		/* The kernel's order: the process's notes after the first thread's status. */
		if (st->threads == 1)
			process_notes(ns, f->t, pid, si, f->auxv, f->auxv_len, f->maps, f->ppid,
				      f->pgrp, f->sid);
	}
	return st->threads ? 0 : -ESRCH;
}

/* The stop, and the copies made in it; 0, or -errno with @why. */
static int stop_and_copy(pid_t pid, pid_t held, const struct facts *f, struct cthread *c, size_t n,
			 struct ranges *rs, bool full, int fd, struct capture_stats *st, char *why,
			 size_t whylen)
{
	int err, werr = 0;

	/* --full: each mapping's place in the core is set now; its bytes go there in the stop. */
	for (size_t i = 0, at = full ? data_start(rs->n + 1) : 0; full && i < rs->n; i++) {
		rs->r[i].file_off = at;
		at += rs->r[i].hi - rs->r[i].lo;
	}
	err = freeze_and_copy(pid, c, n, f->maps, rs, full, full ? fd : -1, &werr, held > 0, st);
	if (werr) {
		snprintf(why, whylen, "cannot write the core: %s", strerror(-werr));
		return werr;
	}
	if (err)
		snprintf(why, whylen,
			 err == -EPERM ? "permission denied stopping process %d (%s)" :
					 "out of memory copying process %d (%s)",
			 pid, f->t->comm);
	return err;
}

static int capture(pid_t pid, pid_t held, const siginfo_t *si, int fd, bool full,
		   struct capture_stats *st, char *why, size_t whylen)
{
	struct facts f = { 0 };
	struct ranges rs = { 0 };
	struct notes ns = { 0 };
	struct cthread *c = NULL;
	Elf64_Phdr *ph = NULL;
	const struct range **data = NULL;
	size_t n = 0, n_ph = 0;
	int err;

	memset(st, 0, sizeof(*st));
	err = read_facts(pid, &f, why, whylen);
	if (!err && (err = plan(f.t, f.maps, f.lm, f.interp_base, f.vdso, full, &rs) ?:
				   pick_threads(pid, held, &c, &n)))
		snprintf(why, whylen,
			 err == -ENOMEM ? "out of memory" :
					  "process %d (%s) exited while being read",
			 pid, f.t->comm);
	err = err ?: stop_and_copy(pid, held, &f, c, n, &rs, full, fd, st, why, whylen);
	/* The threads run again: the file is made from the copies. */
	if (!err && (err = make_notes(&ns, pid, &f, c, n, si, st)))
		snprintf(why, whylen, "no thread of process %d (%s) could be stopped", pid,
			 f.t->comm);
	for (size_t i = 0; !err && !ns.failed && !full && i < rs.n; i++)
		ns.failed = !rs.r[i].data;
	if (!err && (ns.failed || (!full && build_phdrs(f.maps, &rs, &ph, &n_ph, &data)))) {
		snprintf(why, whylen, "out of memory");
		err = -ENOMEM;
	}
	if (!err && (err = full ? write_full_headers(fd, &ns, f.maps, &rs, st) :
				  write_core(fd, &ns, ph, n_ph, data, st)))
		snprintf(why, whylen, "cannot write the core: %s", strerror(-err));
	for (size_t i = 0; i < rs.n; i++)
		free(rs.r[i].data);
	free(rs.r);
	free(ns.b);
	free(ph);
	free(data);
	free(c);
	facts__free(&f);
	return err;
}

int capture__write(pid_t pid, int fd, bool full, struct capture_stats *st, char *why, size_t whylen)
{
	return capture(pid, 0, NULL, fd, full, st, why, whylen);
}

int capture__write_stopped(pid_t pid, pid_t tid, const siginfo_t *si, int fd,
			   struct capture_stats *st, char *why, size_t whylen)
{
	return capture(pid, tid, si, fd, false, st, why, whylen);
}
