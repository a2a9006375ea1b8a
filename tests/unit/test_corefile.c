// SPDX-License-Identifier: GPL-2.0
/*
 * The core reader on cores laid out here as the kernel lays them out: its notes, its memory, the
 * mappings made from NT_FILE, a build-id read from memory, and cores that must be refused.
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/procfs.h>
#include <unistd.h>

#include "corefile.h"
#include "procmaps.h"
#include "tap.h"
#include "target.h"

#define LOAD_AT 0x7f0000000000ULL

static unsigned char img[16384];
static size_t len;

static void put(const void *p, size_t n)
{
	memcpy(img + len, p, n);
	len += n;
}

static void note(uint32_t type, const char *name, const void *desc, uint32_t n)
{
	Elf64_Nhdr nh = { (uint32_t)strlen(name) + 1, n, type };
	char pad[4] = { 0 };

	put(&nh, sizeof(nh));
	put(name, nh.n_namesz);
	put(pad, (4 - nh.n_namesz % 4) % 4);
	put(desc, n);
	put(pad, (4 - n % 4) % 4);
}

/*
 * A core of process 42 with threads 42 and 43 (43 took SIGSEGV at 0x10), NT_FILE naming
 * /lib/x.so at LOAD_AT, and one PT_LOAD there holding an ELF header whose PT_NOTE has build-id
 * 0xabcdef01.
 */
static void make_core(void)
{
	Elf64_Ehdr eh = { .e_type = ET_CORE,
			  .e_machine = EM_X86_64,
			  .e_version = EV_CURRENT,
			  .e_phoff = sizeof(Elf64_Ehdr),
			  .e_ehsize = sizeof(Elf64_Ehdr),
			  .e_phentsize = sizeof(Elf64_Phdr),
			  .e_phnum = 2 };
	Elf64_Phdr ph[2] = { { .p_type = PT_NOTE }, { .p_type = PT_LOAD, .p_flags = PF_R } };
	struct elf_prstatus st = { 0 };
	struct elf_prpsinfo ps = { .pr_pid = 42 };
	siginfo_t si = { .si_signo = SIGSEGV, .si_code = SEGV_MAPERR };
	uint64_t auxv[] = { AT_PHDR, LOAD_AT + 64, AT_ENTRY, LOAD_AT + 0x100, AT_NULL, 0 };
	unsigned char files[16 + 24 + 16] = { 0 };
	uint64_t fhdr[5] = { 1, 4096, LOAD_AT, LOAD_AT + 4096, 0 };
	size_t notes_at, load_at;
	Elf64_Ehdr obj = { .e_ident = { 0x7f, 'E', 'L', 'F', ELFCLASS64 },
			   .e_phoff = sizeof(Elf64_Ehdr),
			   .e_phentsize = sizeof(Elf64_Phdr),
			   .e_phnum = 2 };
	Elf64_Phdr oph[2] = { { .p_type = PT_LOAD },
			      { .p_type = PT_NOTE, .p_vaddr = 0x100, .p_filesz = 20 } };
	unsigned char bid[20] = { 4,   0,   0,	 0, 4,	  0,	0,    0,   NT_GNU_BUILD_ID, 0, 0, 0,
				  'G', 'N', 'U', 0, 0xab, 0xcd, 0xef, 0x01 };

	memset(img, 0, sizeof(img));
	len = sizeof(eh) + sizeof(ph);
	notes_at = len;
	memcpy(files, fhdr, sizeof(fhdr));
	memcpy(files + 40, "/lib/x.so", 10);
	st.pr_pid = 43;
	st.pr_cursig = SIGSEGV;
	si.si_addr = (void *)0x10;
	note(NT_PRSTATUS, "CORE", &st, sizeof(st));
	strcpy(ps.pr_fname, "app");
	strcpy(ps.pr_psargs, "app --go   ");
	note(NT_PRPSINFO, "CORE", &ps, sizeof(ps));
	note(NT_SIGINFO, "CORE", &si, sizeof(si));
	note(NT_AUXV, "CORE", auxv, sizeof(auxv));
	note(NT_FILE, "CORE", files, sizeof(files));
	st.pr_pid = 42;
	note(NT_PRSTATUS, "CORE", &st, sizeof(st));
	ph[0].p_offset = notes_at;
	ph[0].p_filesz = len - notes_at;
	load_at = (len + 4095) & ~4095UL;
	len = load_at;
	memcpy(img + len, &obj, sizeof(obj));
	memcpy(img + len + sizeof(obj), oph, sizeof(oph));
	memcpy(img + len + 0x100, bid, sizeof(bid));
	len += 4096;
	ph[1].p_offset = load_at;
	ph[1].p_vaddr = LOAD_AT;
	ph[1].p_filesz = ph[1].p_memsz = 4096;
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(img, &eh, sizeof(eh));
	memcpy(img + sizeof(eh), ph, sizeof(ph));
}

/* @n bytes of @buf as a file; its /proc/self/fd path in @path. */
static int as_file(const void *buf, size_t n, char *path, size_t pathlen)
{
	int fd = memfd_create("core", MFD_CLOEXEC);

	if (fd < 0 || write(fd, buf, n) != (ssize_t)n)
		return -1;
	snprintf(path, pathlen, "/proc/self/fd/%d", fd);
	return fd;
}

static int open_bytes(const void *buf, size_t n, struct corefile **c, char *why, size_t whylen)
{
	char path[64];
	int fd = as_file(buf, n, path, sizeof(path)), err;

	if (fd < 0)
		return -EIO;
	err = corefile__open(path, c, why, whylen);
	close(fd);
	return err;
}

int main(void)
{
	struct corefile *c = NULL;
	struct procmaps *m;
	struct target *t;
	char why[512], hex[64], path[64];
	unsigned char word[4];
	int fd;

	make_core();
	fd = as_file(img, len, path, sizeof(path));
	CHECK(corefile__probe(path) == 1, "an ET_CORE file is a core");
	CHECK(corefile__probe("/proc/self/exe") == 0, "an executable is not");
	close(fd);
	CHECK(!open_bytes(img, len, &c, why, sizeof(why)), "the core opens");
	if (!c)
		return tap_done();
	CHECK(c->pid == 42 && !strcmp(c->comm, "app") && !strcmp(c->args, "app --go"),
	      "NT_PRPSINFO: pid, name, arguments without the kernel's padding");
	CHECK(c->n_threads == 2 && c->threads[0].tid == 43 && c->threads[1].tid == 42,
	      "NT_PRSTATUS: the threads in the notes' order");
	CHECK(c->have_siginfo && c->signo == SIGSEGV && c->fault_addr == 0x10 &&
		      c->signal_tid == 43,
	      "NT_SIGINFO: signal, address, and the thread whose status it follows");
	CHECK(corefile__si_code_name(SIGSEGV, SEGV_MAPERR) &&
		      !strcmp(corefile__si_code_name(SIGSEGV, SEGV_MAPERR), "SEGV_MAPERR"),
	      "si_code named");
	CHECK(c->n_files == 1 && !strcmp(c->files[0].path, "/lib/x.so") && corefile__exe(c) &&
		      !strcmp(corefile__exe(c), "/lib/x.so"),
	      "NT_FILE, and the executable as the file holding AT_PHDR");
	CHECK(corefile__read(c, LOAD_AT, word, 4) == 4 && !memcmp(word, ELFMAG, 4),
	      "memory read from the PT_LOAD");
	CHECK(corefile__read(c, LOAD_AT + 4094, word, 4) == 2, "a read past the segment stops");
	CHECK(corefile__build_id_at(c, LOAD_AT, hex, sizeof(hex)) == 4 && !strcmp(hex, "abcdef01"),
	      "the build-id of the object in memory");
	m = procmaps__from_core(c);
	CHECK(m && m->n == 1 && m->maps[0].start == LOAD_AT && m->maps[0].path &&
		      !strcmp(m->maps[0].path, "/lib/x.so") && !strcmp(m->maps[0].perms, "r--p") &&
		      mapping__is_file(&m->maps[0]),
	      "the mappings from the segments and NT_FILE");
	procmaps__free(m);
	t = target__from_core(c, NULL);
	CHECK(t && !target__read(t, LOAD_AT + 1, word, 3) && !memcmp(word, "ELF", 3) &&
		      target__read(t, 0x1000, word, 1) == -EFAULT && target__alive(t) &&
		      t->pid == 42 && t->task == -1,
	      "a target over the core reads its memory, and no /proc entry");
	target__free(t);
	corefile__free(c);

	/* Cores to refuse, each with its reason. */
	c = NULL;
	CHECK(open_bytes(img, len - 100, &c, why, sizeof(why)) && strstr(why, "is truncated"),
	      "a cut core");
	{
		unsigned char *z = malloc(len);
		Elf64_Phdr ph;

		memcpy(z, img, len);
		memcpy(&ph, z + sizeof(Elf64_Ehdr), sizeof(ph));
		memset(z + ph.p_offset, 0, ph.p_filesz);
		CHECK(open_bytes(z, len, &c, why, sizeof(why)) && strstr(why, "names no thread"),
		      "zeroed notes");
		memcpy(z, img, len);
		z[18] = EM_AARCH64;
		CHECK(open_bytes(z, len, &c, why, sizeof(why)) &&
			      strstr(why, "another machine (AArch64)"),
		      "another machine's core");
		memcpy(z, img, len);
		z[16] = ET_DYN;
		CHECK(open_bytes(z, len, &c, why, sizeof(why)) && strstr(why, "not a core file"),
		      "an ELF file that is no core");
		free(z);
	}
	CHECK(open_bytes("", 0, &c, why, sizeof(why)) && strstr(why, "not an ELF file"),
	      "an empty file");
	CHECK(!c, "nothing is left open after a refusal");
	return tap_done();
}
