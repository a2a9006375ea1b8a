/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The heap's next pages made present before a burst of small allocations. On a nested VM a page
 * fault costs some 13 us and a page populated by one madvise about 1 us: `libs` of a process
 * with 500 objects took 770 faults of its own, a third of its time. Elsewhere it costs little.
 */
#ifndef DLSCOPE_HEAPWARM_H
#define DLSCOPE_HEAPWARM_H

#include <stddef.h>

/* The largest warming: malloc's mmap threshold is set above it, so that the block is the heap's. */
#define HEAPWARM_MAX (4u << 20)

/*
 * For a command that reads a process once and ends (libs, check, stacks, report): from now on
 * heap__warm acts. A long-running collector leaves malloc as it is: it trims what it frees, and
 * a hold does not wait for pages to be populated.
 */
void heap__warm_enable(void);
/* Once enabled: at least @bytes (at most HEAPWARM_MAX) of the heap's free top present, kept from
 * trimming. */
void heap__warm(size_t bytes);

#endif /* DLSCOPE_HEAPWARM_H */
