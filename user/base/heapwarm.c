// SPDX-License-Identifier: GPL-2.0
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heapwarm.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static bool enabled;

void heap__warm_enable(void)
{
	/* Blocks up to twice the warming from the heap, not a fresh mapping each (whose pages all
	 * fault), and the warmed top kept when a free would trim it. */
	mallopt(M_MMAP_THRESHOLD, 2 * HEAPWARM_MAX);
	mallopt(M_TRIM_THRESHOLD, 4 * HEAPWARM_MAX);
	enabled = true;
}

void heap__warm(size_t bytes)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), from, to;
	char *p;

	if (!enabled)
		return;
	if (bytes > HEAPWARM_MAX)
		bytes = HEAPWARM_MAX;
	p = bytes ? malloc(bytes) : NULL;
	if (!p)
		return;
	from = ((uintptr_t)p + page - 1) & ~(page - 1);
	to = ((uintptr_t)p + bytes) & ~(page - 1);
	/* Before 5.14 (EINVAL) the pages fault in as they are used, as without this. */
	if (to > from)
		madvise((void *)from, to - from, MADV_POPULATE_WRITE);
	free(p);
}
