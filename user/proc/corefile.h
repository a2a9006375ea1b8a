/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An ELF core file (the kernel's, gcore's, dlscope capture's), read through libelf: what it
 * says of the process (NT_PRPSINFO), its threads (NT_PRSTATUS), the signal that ended it
 * (NT_SIGINFO), its mapped files (NT_FILE) and its memory (the PT_LOAD segments). A core that
 * does not hold together (truncated, notes zeroed, another machine's) is refused with one line.
 */
#ifndef DLSCOPE_COREFILE_H
#define DLSCOPE_COREFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch.h"

struct core_thread {
	pid_t tid;
	int cursig;	/* pr_cursig: the signal being delivered when it was dumped, 0 for none */
	arch_regs regs; /* pr_reg: its registers when dumped */
};

/* One NT_FILE entry: [start, end) maps @path from file page offset @offset (in bytes). */
struct core_file_map {
	uint64_t start, end, offset;
	char *path;
};

struct core_segment {
	uint64_t vaddr, memsz, filesz, offset; /* filesz < memsz: the rest was not dumped */
	unsigned int flags;		       /* PF_R, PF_W, PF_X */
};

struct corefile {
	char *path;
	int fd;
	struct Elf *elf;
	uint64_t size; /* of the file */
	pid_t pid;     /* NT_PRPSINFO's, else the first thread's */
	char comm[17]; /* pr_fname */
	char args[81]; /* pr_psargs */
	struct core_thread *threads;
	size_t n_threads, cap_threads;
	/* NT_SIGINFO (the first one, the dumping thread's in a kernel core). */
	bool have_siginfo;
	int signo, si_code;
	uint64_t fault_addr; /* the faulting address, for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP */
	pid_t sender_pid;    /* the sender, for a signal sent by kill/tgkill */
	pid_t signal_tid;    /* the thread whose NT_PRSTATUS the NT_SIGINFO follows */
	struct core_file_map *files;
	size_t n_files;
	struct core_segment *segs;
	size_t n_segs;
	/* The mapped file last read for memory the core left out (its code), held open. */
	int file_fd;
	const struct core_file_map *file_fd_map;
	uint64_t auxv[64]; /* NT_AUXV as (type, value) pairs, up to 32 */
	size_t n_auxv;	   /* pairs */
};

/*
 * Whether @path is an ELF core file: 1 yes, 0 no (not ELF, or another ELF type), -errno when it
 * cannot be read. Reads its header only.
 */
int corefile__probe(const char *path);
/*
 * Open and check @path: an ELF core of this machine whose notes hold at least one thread and
 * whose segments lie in the file. Returns 0, or -errno with one line in @why (no "dlscope:").
 */
int corefile__open(const char *path, struct corefile **out, char *why, size_t whylen);
void corefile__free(struct corefile *c);
/*
 * Read @len bytes of the process's memory at @addr from the core. Returns how many bytes could
 * be read from the start (0: none; a segment not dumped reads as absent).
 */
size_t corefile__read(const struct corefile *c, uint64_t addr, void *buf, size_t len);
/* The value of auxv entry @type (AT_*), 0 when absent. */
uint64_t corefile__auxv(const struct corefile *c, uint64_t type);
/* The NT_FILE entry that maps @addr, or NULL. */
const struct core_file_map *corefile__file_at(const struct corefile *c, uint64_t addr);
/*
 * The path of the executable: the NT_FILE entry holding AT_PHDR (or AT_ENTRY). NULL when the
 * core does not say.
 */
const char *corefile__exe(const struct corefile *c);
/*
 * The GNU build-id of the ELF object mapped at @base in the core's memory (its ELF header and
 * notes, which the kernel dumps with the first page of every mapped ELF file), as lowercase
 * hex in @hex. Returns its length in bytes, or 0 when the core does not hold it.
 */
size_t corefile__build_id_at(const struct corefile *c, uint64_t base, char *hex, size_t hexlen);
/* Whether @signo is one whose default action dumps core (a crash, not a request). */
bool corefile__fatal_signal(int signo);
/* "SEGV_MAPERR"-style name of @c's si_code for its signal, or NULL. */
const char *corefile__si_code_name(int signo, int code);

#endif
