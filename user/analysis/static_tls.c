// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>

#include "arch.h"
#include "elfobj.h"
#include "libgraph.h"
#include "static_tls.h"
#include "target.h"

static bool holds_tls_symbols(const struct lg_object *o)
{
	const struct obj_roles *r = lg_object__roles(o);

	return obj_roles__find(r, ROLE_LIBC) || obj_roles__find(r, ROLE_LOADER) ||
	       !strncmp(lg_object__basename(o), "libpthread.so", 13);
}

/* An l_tls_offset that is no place in the block: none yet (0), or forced dynamic (-1). */
static bool placed(uint64_t off, uint64_t size)
{
	return off && off < size;
}

int static_tls__read(const struct target *t, const struct libgraph *g, struct static_tls *out)
{
	uint64_t desc_at = 0, sizeof_at = 0, size_at = 0, align_at;
	uint32_t desc[3], tcb;
	GElf_Sym sym;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		unsigned char code[32];
		uint64_t entry;

		/* The C library publishes the descriptors (libpthread before 2.34), the loader
		 * has the accessor: no other object is asked (each lookup opens its file). */
		if (o->gone || !o->elf || o->ns || !holds_tls_symbols(o))
			continue;
		/* The descriptors libc publishes for libthread_db: (bits, count, byte offset). */
		if (!elfobj__lookup(o->elf, "_thread_db_link_map_l_tls_offset", ELFOBJ_DYNSYM,
				    &sym))
			desc_at = o->base + sym.st_value;
		if (!elfobj__lookup(o->elf, "_thread_db_sizeof_pthread", ELFOBJ_DYNSYM, &sym))
			sizeof_at = o->base + sym.st_value;
		/* The loader's accessor: two loads of its read-only globals, size then align. */
		if (!elfobj__func_code(o->elf, "_dl_get_tls_static_info", code, sizeof(code),
				       &entry) &&
		    arch_decode_two_stores(code, sizeof(code), entry, &size_at, &align_at))
			size_at += o->base;
	}
	if (!desc_at || !sizeof_at || !size_at)
		return -ENOTSUP;
	if (target__read(t, desc_at, desc, sizeof(desc)) || target__read(t, sizeof_at, &tcb, 4) ||
	    target__read(t, size_at, &out->size, sizeof(out->size)))
		return -EFAULT;
	if (desc[0] != 64 || desc[1] != 1 || !tcb || out->size <= tcb)
		return -ENOTSUP;
	out->tcb = tcb;
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		uint64_t off;

		if (o->gone || !o->lm_addr ||
		    target__read(t, o->lm_addr + desc[2], &off, sizeof(off)) ||
		    !placed(off, out->size))
			continue;
		out->objects++;
		if (off > out->used)
			out->used = off;
	}
	out->left = out->size - out->tcb > out->used ? out->size - out->tcb - out->used : 0;
	return 0;
}
