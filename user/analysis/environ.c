// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "elfobj.h"
#include "environ.h"
#include "libgraph.h"
#include "target.h"

/* An environment of more entries than this is not read live. */
#define ENV_MAX 8192

/*
 * The address of `environ`'s value: its first definition in the global scope, the executable's
 * copy (a COPY relocation) before the C library's own, as the loader binds every user.
 */
static uint64_t environ_addr(const struct libgraph *g)
{
	const struct lg_object *first = NULL;
	GElf_Sym sym;
	uint64_t addr = 0;

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		if (o->gone || !o->elf || !o->in_link_map || o->ns ||
		    (first && o->seq > first->seq))
			continue;
		if (!elfobj__lookup(o->elf, "__environ", ELFOBJ_DYNSYM, &sym) ||
		    !elfobj__lookup(o->elf, "environ", ELFOBJ_DYNSYM, &sym)) {
			first = o;
			addr = o->base + sym.st_value;
		}
	}
	return addr;
}

/* @name's value in the live array: 0 and @buf, -ENOENT unset, or another -errno (unread). */
static int live_get(const struct target *t, const struct libgraph *g, const char *name, char *buf,
		    size_t len)
{
	size_t nlen = strlen(name);
	uint64_t at = g ? environ_addr(g) : 0, vec, p;
	char s[512];

	if (!at || target__read(t, at, &vec, sizeof(vec)) || !vec)
		return -EFAULT;
	for (size_t i = 0; i < ENV_MAX; i++) {
		int n;

		if (target__read(t, vec + i * sizeof(p), &p, sizeof(p)))
			return -EFAULT;
		if (!p)
			return -ENOENT;
		n = target__read_str(t, p, s, sizeof(s));
		if (n > (int)nlen && !strncmp(s, name, nlen) && s[nlen] == '=') {
			snprintf(buf, len, "%s", s + nlen + 1);
			return 0;
		}
	}
	return -E2BIG;
}

enum env_source environ__get(const struct target *t, const struct libgraph *g, const char *name,
			     char *buf, size_t len)
{
	char initial[512];
	bool had = !target__getenv(t, name, initial, sizeof(initial));
	int err = live_get(t, g, name, buf, len);

	if (!err)
		return had && !strcmp(initial, buf) ? ENV_LIVE : ENV_CHANGED;
	if (err == -ENOENT)
		return ENV_UNSET;
	if (!had)
		return ENV_UNKNOWN;
	snprintf(buf, len, "%s", initial);
	return ENV_INITIAL;
}
