/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The fork-unsafe pool of a process: how many threads GNU libgomp's pool has in it now. libgomp
 * keeps its pool's bookkeeping across fork() but not its threads, so a child forked while the
 * pool has threads, and that does not exec, waits for ever in its first parallel region.
 * (OpenBLAS, LLVM's and Intel's OpenMP runtimes restart their pools after a fork.)
 */
#ifndef DLSCOPE_FORKPOOL_H
#define DLSCOPE_FORKPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct elf_cache;
struct libgraph;

/* Why a pool lost in a fork hangs, and what to do: one text for every command that says it. */
#define FORKPOOL_WHY                                                                         \
	"GNU libgomp is not fork-safe: a child keeps its parent's pool bookkeeping but not " \
	"its threads, so a region there waits at the pool's dock for workers that never come."
#define FORKPOOL_REMEDY                                                                      \
	"Do not fork a process that has run an OpenMP region unless the child execs: start " \
	"workers with the spawn or forkserver method "                                       \
	"(multiprocessing.set_start_method(\"spawn\"), or a DataLoader's "                   \
	"multiprocessing_context=\"spawn\"), or set OMP_NUM_THREADS=1 in the parent before " \
	"its first parallel region."

/* Whether @g has GNU libgomp loaded (its path into @path when it has). */
bool forkpool__has_gomp(const struct libgraph *g, char *path, size_t len);
/*
 * The threads of process @pid's GNU libgomp pool, read without stopping it (@cache: files
 * analysed already, or NULL); the runtime's path into @path. 0 when it has no libgomp or no
 * pool, -errno when the process cannot be read.
 */
int forkpool__gomp_threads(pid_t pid, struct elf_cache *cache, char *path, size_t len);

#endif
