/* SPDX-License-Identifier: GPL-2.0 */
/* The dynamic loader's own list of loaded objects, read from the target's memory. */
#ifndef DLSCOPE_LINKMAP_H
#define DLSCOPE_LINKMAP_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "procmaps.h"
#include "target.h"

struct lm_entry {
	unsigned int ns;  /* namespace: 0 is the default one, others come from dlmopen */
	uint64_t lm_addr; /* the struct link_map in the target */
	uint64_t l_addr;  /* load bias */
	uint64_t l_ld;	  /* address of its dynamic section */
	char *name;	  /* l_name: "" for the executable; owned by the linkmap */
};

struct linkmap {
	uint64_t r_debug;     /* where the loader's struct r_debug lives */
	uint64_t r_brk;	      /* _dl_debug_state: the loader calls it around every change */
	uint64_t interp_base; /* AT_BASE */
	unsigned int n_namespaces;
	bool consistent; /* false when a dlopen/dlclose was in progress every time we looked */
	bool after_tail; /* linkmap__walk_after: only the entries after a known last one */
	struct lm_entry *e;
	size_t n;
};

/*
 * Walk every namespace's link map of @t. Finds r_debug through the executable's DT_DEBUG, or the
 * loader's _r_debug symbol when DT_DEBUG is empty. Retries while a dlopen is in progress.
 * Returns 0, -ENOEXEC for a statically linked executable, -ENOENT when no r_debug can be found,
 * -ESRCH when the process went away, -EPERM, or -EFAULT for a list that does not hold together.
 */
int linkmap__read(const struct target *t, const struct procmaps *maps, struct linkmap **out);
/*
 * linkmap__read for a reader that kept @prev, the last read of the same process: its r_debug
 * and loader base are taken again where the loader still names that base, its entries are read
 * in one go and only new ones named (a refresh at each dlopen of a process with 500 objects:
 * three reads instead of a thousand). Falls back to linkmap__read; @prev NULL is that.
 */
int linkmap__read_again(const struct target *t, const struct procmaps *maps,
			const struct linkmap *prev, struct linkmap **out);
void linkmap__free(struct linkmap *lm);
/* The walk alone, from a known r_debug address (the readers' tests and fuzzing). */
int linkmap__walk(const struct target *t, uint64_t r_debug, struct linkmap **out);

/*
 * The walk again for a reader that remembers the last one: @prev, the @n_prev link_map addresses
 * that walk met in its order, are read in one go; and only the entries @known does not know are
 * named from the target. One it knows takes the name it gives in @name (copied), else NULL. One
 * system call for the list, one per new object.
 */
typedef bool (*linkmap_known_fn)(const struct lm_entry *e, void *arg, const char **name);
int linkmap__walk_new(const struct target *t, uint64_t r_debug, const uint64_t *prev, size_t n_prev,
		      linkmap_known_fn known, void *arg, struct linkmap **out);

/*
 * The entries after @tail, the last one an earlier walk met (its lm_addr, l_addr and l_ld), in
 * a list of one namespace: the loader appends what it maps, so while the process unloads
 * nothing these are all a reader that knows the rest has not seen (an unload can take @tail
 * and objects before it, and a dlopen bring it back after new ones: the caller checks). -ESTALE
 * when @tail is not as it was (closed, reused, unlinked) or the list has other namespaces now:
 * walk it whole.
 */
int linkmap__walk_after(const struct target *t, uint64_t r_debug, const struct lm_entry *tail,
			linkmap_known_fn known, void *arg, struct linkmap **out);

#endif
