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
	static const char *const names[] = { "__environ", "environ" };
	const struct lg_object *first = NULL;
	const char *name = NULL;
	GElf_Sym sym;

	/* Either name: a copy of one alias is where both are read. */
	for (size_t i = 0; i < 2; i++) {
		const struct lg_object *o = libgraph__first_definer(g, names[i]);

		if (o && (!first || o->seq < first->seq)) {
			first = o;
			name = names[i];
		}
	}
	if (!first || elfobj__lookup(first->elf, name, ELFOBJ_DYNSYM, &sym))
		return 0;
	return first->base + sym.st_value;
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
