// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness: any bytes as a core file, through the core reader (its notes, segments,
 * memory, executable, mapped files and their build-ids) and the unwinding of its threads. Cut, zeroed or lying
 * notes must end in an error, never a crash or a hang.
 */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "corefile.h"
#include "unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	struct corefile *c = NULL;
	struct stacks *s = NULL;
	char path[64], why[512], id[256];
	uint64_t word;

	if (fd < 0 && (fd = memfd_create("fuzz-core", MFD_CLOEXEC)) < 0)
		return 0;
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	corefile__probe(path);
	if (corefile__open(path, &c, why, sizeof(why)))
		return 0;
	corefile__exe(c);
	for (size_t i = 0; i < c->n_segs; i++)
		corefile__read(c, c->segs[i].vaddr + c->segs[i].memsz / 2, &word, sizeof(word));
	corefile__read(c, corefile__auxv(c, AT_PHDR), &word, sizeof(word));
	corefile__si_code_name(c->signo, c->si_code);
	/* The build-ids the changed-file check compares, from the core's bytes only. */
	for (size_t i = 0; i < c->n_files && i < 64; i++)
		corefile__build_id_at(c, c->files[i].start, id, sizeof(id));
	if (!stacks__from_core(c, NULL, 64, &s, why, sizeof(why)))
		stacks__free(s);
	corefile__free(c);
	return 0;
}
