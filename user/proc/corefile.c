// SPDX-License-Identifier: GPL-2.0
/* An ELF core file read through libelf; see corefile.h. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch.h"
#include "array.h"
#include "corefile.h"

/* The machines a core may come from, named for the one line that refuses it. */
static const char *machine_name(unsigned int m)
{
	switch (m) {
	case EM_386: return "i386";
	case EM_X86_64: return "x86-64";
	case EM_AARCH64: return "AArch64";
	case EM_ARM: return "ARM";
	case EM_PPC64: return "PowerPC64";
	case EM_S390: return "s390";
	case EM_RISCV: return "RISC-V";
	case EM_MIPS: return "MIPS";
	default: return NULL;
	}
}

int corefile__probe(const char *path)
{
	unsigned char h[EI_NIDENT + 2];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	unsigned int type;

	if (fd < 0)
		return -errno;
	n = pread(fd, h, sizeof(h), 0);
	close(fd);
	if (n < (ssize_t)sizeof(h) || memcmp(h, ELFMAG, SELFMAG))
		return 0;
	type = h[EI_DATA] == ELFDATA2MSB ? (unsigned int)h[16] << 8 | h[17] :
					   (unsigned int)h[17] << 8 | h[16];
	return type == ET_CORE;
}

static int add_thread(struct corefile *c, const void *desc, size_t len)
{
	struct elf_prstatus st;
	struct core_thread *nt;

	if (len < sizeof(st))
		return -EINVAL;
	memcpy(&st, desc, sizeof(st));
	if (st.pr_pid <= 0)
		return -EINVAL;
	if (ARRAY_RESERVE(c->threads, c->cap_threads, c->n_threads + 1))
		return -ENOMEM;
	nt = c->threads;
	nt[c->n_threads] = (struct core_thread){ .tid = st.pr_pid, .cursig = st.pr_cursig };
	_Static_assert(sizeof(st.pr_reg) == sizeof(arch_regs), "pr_reg is not arch_regs");
	memcpy(&nt[c->n_threads++].regs, &st.pr_reg, sizeof(arch_regs));
	return 0;
}

/* NT_FILE: count, page size, count (start, end, page offset) triples, then count names. */
static int read_files(struct corefile *c, const unsigned char *d, size_t len)
{
	uint64_t count, page;
	const char *names, *end = (const char *)d + len;

	if (len < 16)
		return -EINVAL;
	memcpy(&count, d, 8);
	memcpy(&page, d + 8, 8);
	if (!count || count > (len - 16) / 24)
		return -EINVAL;
	c->files = calloc(count, sizeof(*c->files));
	if (!c->files)
		return -ENOMEM;
	names = (const char *)d + 16 + count * 24;
	for (uint64_t i = 0; i < count; i++) {
		struct core_file_map *f = &c->files[i];
		const char *nul = memchr(names, '\0', (size_t)(end - names));
		uint64_t t[3];

		if (names >= end || !nul)
			return -EINVAL;
		memcpy(t, d + 16 + i * 24, sizeof(t));
		f->start = t[0];
		f->end = t[1];
		f->offset = t[2] * page;
		f->path = strdup(names);
		if (!f->path)
			return -ENOMEM;
		c->n_files++;
		names = nul + 1;
	}
	return 0;
}

static void read_siginfo(struct corefile *c, const void *desc, size_t len)
{
	siginfo_t si;

	if (c->have_siginfo || len < sizeof(si))
		return;
	memcpy(&si, desc, sizeof(si));
	c->have_siginfo = true;
	c->signo = si.si_signo;
	c->si_code = si.si_code;
	c->signal_tid = c->n_threads ? c->threads[c->n_threads - 1].tid : 0;
	switch (si.si_signo) {
	case SIGSEGV:
	case SIGBUS:
	case SIGILL:
	case SIGFPE:
	case SIGTRAP:
		if (si.si_code > 0)
			c->fault_addr = (uint64_t)(uintptr_t)si.si_addr;
		break;
	}
	if (si.si_code <= 0)
		c->sender_pid = si.si_pid;
}

static int read_notes(struct corefile *c, const GElf_Phdr *ph, char *why, size_t whylen)
{
	Elf_Data *data =
		elf_getdata_rawchunk(c->elf, (int64_t)ph->p_offset, ph->p_filesz, ELF_T_NHDR);
	size_t off = 0, name_off, desc_off;
	GElf_Nhdr nh;

	if (!data)
		return 0; /* an empty or unreadable note segment: the thread check says what */
	while (off < data->d_size &&
	       (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const unsigned char *desc = (const unsigned char *)data->d_buf + desc_off;
		const char *name = (const char *)data->d_buf + name_off;
		int err = 0;

		if (nh.n_namesz < 5 || memcmp(name, "CORE", 5))
			continue; /* "LINUX" (the XSTATE), "GDB" and others: not needed here */
		switch (nh.n_type) {
		case NT_PRSTATUS: err = add_thread(c, desc, nh.n_descsz); break;
		case NT_PRPSINFO:
			if (nh.n_descsz >= sizeof(struct elf_prpsinfo)) {
				struct elf_prpsinfo ps;

				memcpy(&ps, desc, sizeof(ps));
				c->pid = ps.pr_pid;
				snprintf(c->comm, sizeof(c->comm), "%.16s", ps.pr_fname);
				snprintf(c->args, sizeof(c->args), "%.80s", ps.pr_psargs);
				/* The kernel pads the arguments with a space. */
				for (size_t n = strlen(c->args); n && c->args[n - 1] == ' ';)
					c->args[--n] = '\0';
			}
			break;
		case NT_SIGINFO: read_siginfo(c, desc, nh.n_descsz); break;
		case NT_FILE:
			if (!c->files)
				err = read_files(c, desc, nh.n_descsz);
			break;
		case NT_AUXV:
			c->n_auxv = nh.n_descsz / 16 > 32 ? 32 : nh.n_descsz / 16;
			memcpy(c->auxv, desc, c->n_auxv * 16);
			break;
		}
		if (err == -ENOMEM)
			return err;
		if (err) {
			snprintf(why, whylen, "core file %s has a malformed %s note", c->path,
				 nh.n_type == NT_FILE ? "NT_FILE" : "NT_PRSTATUS");
			return err;
		}
	}
	return 0;
}

static int fail(int err, char *why, size_t whylen, const char *fmt, const char *path)
{
	snprintf(why, whylen, fmt, path);
	return err;
}

/* The ELF header: a 64-bit core of this machine, or one line on what the file is instead. */
static int check_header(struct corefile *c, const char *path, char *why, size_t whylen)
{
	const char *m;
	GElf_Ehdr eh;

	elf_version(EV_CURRENT);
	c->elf = elf_begin(c->fd, ELF_C_READ_MMAP, NULL);
	if (!c->elf || elf_kind(c->elf) != ELF_K_ELF || !gelf_getehdr(c->elf, &eh))
		return fail(-EINVAL, why, whylen, "%s is not an ELF file", path);
	if (eh.e_type != ET_CORE)
		return fail(-EINVAL, why, whylen, "%s is an ELF file but not a core file", path);
	if (eh.e_machine == arch_elf_machine() && gelf_getclass(c->elf) == ELFCLASS64)
		return 0;
	m = machine_name(eh.e_machine);
	if (m)
		snprintf(why, whylen,
			 "core file %s is of another machine (%s%s); this dlscope reads %s cores",
			 path, m, gelf_getclass(c->elf) == ELFCLASS32 ? ", 32-bit" : "",
			 arch_elf_machine_name());
	else
		snprintf(why, whylen,
			 "core file %s is of another machine (ELF machine %u); this dlscope reads "
			 "%s cores",
			 path, eh.e_machine, arch_elf_machine_name());
	return -ENOEXEC;
}

/* The program headers: the PT_LOAD segments kept, the PT_NOTE ones read. */
static int read_segments(struct corefile *c, const char *path, char *why, size_t whylen)
{
	size_t phnum = 0;
	int err;

	if (elf_getphdrnum(c->elf, &phnum) || !phnum)
		return fail(-EINVAL, why, whylen, "core file %s has no program headers", path);
	c->segs = calloc(phnum, sizeof(*c->segs));
	if (!c->segs)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(c->elf, (int)i, &ph))
			return fail(-EINVAL, why, whylen,
				    "core file %s has a malformed program header", path);
		if (ph.p_filesz && (ph.p_offset > c->size || ph.p_filesz > c->size - ph.p_offset)) {
			snprintf(why, whylen,
				 "core file %s is truncated: its segments need %llu bytes, the "
				 "file has %llu (a dump cut short?)",
				 path, (unsigned long long)(ph.p_offset + ph.p_filesz),
				 (unsigned long long)c->size);
			return -EINVAL;
		}
		if (ph.p_type == PT_LOAD)
			c->segs[c->n_segs++] = (struct core_segment){ ph.p_vaddr, ph.p_memsz,
								      ph.p_filesz, ph.p_offset,
								      ph.p_flags };
		else if (ph.p_type == PT_NOTE && (err = read_notes(c, &ph, why, whylen)))
			return err;
	}
	return 0;
}

int corefile__open(const char *path, struct corefile **out, char *why, size_t whylen)
{
	struct corefile *c = calloc(1, sizeof(*c));
	struct stat st;
	int err = 0;

	*out = NULL;
	if (c)
		c->fd = c->file_fd = -1;
	if (!c || !(c->path = strdup(path))) {
		free(c);
		return fail(-ENOMEM, why, whylen, "out of memory reading %s", path);
	}
	c->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->fd < 0 || fstat(c->fd, &st)) {
		err = -errno;
		snprintf(why, whylen, "cannot open core file %s: %s", path, strerror(errno));
		goto out;
	}
	c->size = (uint64_t)st.st_size;
	err = check_header(c, path, why, whylen);
	if (!err)
		err = read_segments(c, path, why, whylen);
	if (!err && !c->n_threads)
		err = fail(-EINVAL, why, whylen,
			   "core file %s names no thread (no NT_PRSTATUS note): its notes are "
			   "missing or zeroed",
			   path);
	if (!err && !c->pid)
		c->pid = c->threads[0].tid;
out:
	if (err == -ENOMEM)
		snprintf(why, whylen, "out of memory reading %s", path);
	if (err)
		corefile__free(c);
	else
		*out = c;
	return err;
}

void corefile__free(struct corefile *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_files; i++)
		free(c->files[i].path);
	free(c->files);
	free(c->threads);
	free(c->segs);
	if (c->elf)
		elf_end(c->elf);
	if (c->fd >= 0)
		close(c->fd);
	if (c->file_fd >= 0)
		close(c->file_fd);
	free(c->path);
	free(c);
}

/*
 * Memory the core left out of a file mapping (gcore and the kernel skip read-only code): read
 * from the file itself, as gdb and libdwfl do. Returns the bytes read at @a, up to @len.
 */
static size_t read_mapped_file(const struct corefile *cc, uint64_t a, void *buf, size_t len)
{
	struct corefile *c = (struct corefile *)cc; /* the descriptor cache only */
	const struct core_file_map *f = corefile__file_at(c, a);
	struct stat st;
	uint64_t in;
	ssize_t n;

	if (!f)
		return 0;
	if (c->file_fd_map != f &&
	    (!c->file_fd_map || strcmp(c->file_fd_map->path, f->path) || c->file_fd < 0)) {
		if (c->file_fd >= 0)
			close(c->file_fd);
		/* A regular file only: a core may name a FIFO or a device. */
		c->file_fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		if (c->file_fd >= 0 && (fstat(c->file_fd, &st) || !S_ISREG(st.st_mode))) {
			close(c->file_fd);
			c->file_fd = -1;
		}
	}
	c->file_fd_map = f;
	if (c->file_fd < 0)
		return 0;
	in = f->end - a;
	n = pread(c->file_fd, buf, len < in ? len : (size_t)in,
		  (off_t)(f->offset + (a - f->start)));
	return n > 0 ? (size_t)n : 0;
}

/* Memory at @addr from the core's segments, and with @files from the files it mapped. */
static size_t core_read(const struct corefile *c, uint64_t addr, void *buf, size_t len, bool files)
{
	size_t done = 0;

	while (done < len) {
		const struct core_segment *s = NULL;
		uint64_t a = addr + done, in;
		size_t n;

		for (size_t i = 0; i < c->n_segs && !s; i++)
			if (a >= c->segs[i].vaddr && a - c->segs[i].vaddr < c->segs[i].filesz)
				s = &c->segs[i];
		if (!s) {
			bool dumped_part = false;

			/* Only where the core has no bytes at all: not the zeroed tail of .bss. */
			for (size_t i = 0; i < c->n_segs && !dumped_part; i++)
				dumped_part = a >= c->segs[i].vaddr &&
					      a - c->segs[i].vaddr < c->segs[i].memsz &&
					      c->segs[i].flags & PF_W;
			n = dumped_part || !files ?
				    0 :
				    read_mapped_file(c, a, (char *)buf + done, len - done);
			if (!n)
				break;
			done += n;
			continue;
		}
		in = s->filesz - (a - s->vaddr);
		n = len - done < in ? len - done : (size_t)in;
		if (pread(c->fd, (char *)buf + done, n, (off_t)(s->offset + (a - s->vaddr))) !=
		    (ssize_t)n)
			break;
		done += n;
	}
	return done;
}

size_t corefile__read(const struct corefile *c, uint64_t addr, void *buf, size_t len)
{
	return core_read(c, addr, buf, len, true);
}

uint64_t corefile__auxv(const struct corefile *c, uint64_t type)
{
	for (size_t i = 0; i < c->n_auxv; i++)
		if (c->auxv[2 * i] == type)
			return c->auxv[2 * i + 1];
	return 0;
}

const struct core_file_map *corefile__file_at(const struct corefile *c, uint64_t addr)
{
	for (size_t i = 0; i < c->n_files; i++)
		if (addr >= c->files[i].start && addr < c->files[i].end)
			return &c->files[i];
	return NULL;
}

const char *corefile__exe(const struct corefile *c)
{
	const struct core_file_map *f = corefile__file_at(c, corefile__auxv(c, AT_PHDR));

	if (!f)
		f = corefile__file_at(c, corefile__auxv(c, AT_ENTRY));
	return f ? f->path : NULL;
}

size_t corefile__build_id_at(const struct corefile *c, uint64_t base, char *hex, size_t hexlen)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[32];
	uint64_t bias = base;
	size_t n;

	if (core_read(c, base, &eh, sizeof(eh), false) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph[0]) || !eh.e_phnum)
		return 0;
	n = eh.e_phnum < 32 ? eh.e_phnum : 32;
	if (core_read(c, base + eh.e_phoff, ph, n * sizeof(ph[0]), false) != n * sizeof(ph[0]))
		return 0;
	/* The load bias: the object's first PT_LOAD (file offset 0) lies at @base. */
	for (size_t i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD) {
			bias = base - (ph[i].p_vaddr - ph[i].p_offset);
			break;
		}
	for (size_t i = 0; i < n; i++) {
		unsigned char notes[1024];
		size_t len = ph[i].p_filesz < sizeof(notes) ? ph[i].p_filesz : sizeof(notes);

		if (ph[i].p_type != PT_NOTE ||
		    core_read(c, bias + ph[i].p_vaddr, notes, len, false) != len)
			continue;
		for (size_t off = 0; off + sizeof(Elf64_Nhdr) <= len;) {
			Elf64_Nhdr nh;
			size_t name = off + sizeof(nh), desc;

			memcpy(&nh, notes + off, sizeof(nh));
			desc = name + ((nh.n_namesz + 3) & ~3U);
			if (nh.n_namesz > len || nh.n_descsz > len || desc + nh.n_descsz > len)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(notes + name, "GNU", 4) && nh.n_descsz &&
			    nh.n_descsz * 2 < hexlen) {
				for (size_t k = 0; k < nh.n_descsz; k++)
					snprintf(hex + 2 * k, 3, "%02x", notes[desc + k]);
				return nh.n_descsz;
			}
			off = desc + ((nh.n_descsz + 3) & ~3U);
		}
	}
	return 0;
}

bool corefile__fatal_signal(int signo)
{
	switch (signo) {
	case SIGQUIT:
	case SIGILL:
	case SIGTRAP:
	case SIGABRT:
	case SIGBUS:
	case SIGFPE:
	case SIGSEGV:
	case SIGXCPU:
	case SIGXFSZ:
	case SIGSYS: return true;
	default: return false;
	}
}

const char *corefile__si_code_name(int signo, int code)
{
	static const char *segv[] = { NULL, "SEGV_MAPERR", "SEGV_ACCERR", "SEGV_BNDERR",
				      "SEGV_PKUERR" };
	static const char *bus[] = { NULL, "BUS_ADRALN", "BUS_ADRERR", "BUS_OBJERR" };
	static const char *fpe[] = { NULL,	   "FPE_INTDIV", "FPE_INTOVF",
				     "FPE_FLTDIV", "FPE_FLTOVF", "FPE_FLTUND",
				     "FPE_FLTRES", "FPE_FLTINV", "FPE_FLTSUB" };
	static const char *ill[] = { NULL,	   "ILL_ILLOPC", "ILL_ILLOPN",
				     "ILL_ILLADR", "ILL_ILLTRP", "ILL_PRVOPC",
				     "ILL_PRVREG", "ILL_COPROC", "ILL_BADSTK" };

	switch (code) {
	case SI_USER: return "SI_USER";
	case SI_TKILL: return "SI_TKILL";
	case SI_QUEUE: return "SI_QUEUE";
	case SI_KERNEL: return "SI_KERNEL";
	}
	if (code <= 0)
		return NULL;
	if (signo == SIGSEGV && code < 5)
		return segv[code];
	if (signo == SIGBUS && code < 4)
		return bus[code];
	if (signo == SIGFPE && code < 9)
		return fpe[code];
	if (signo == SIGILL && code < 9)
		return ill[code];
	return NULL;
}
