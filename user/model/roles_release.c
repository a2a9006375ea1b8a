// SPDX-License-Identifier: GPL-2.0
/*
 * Releases read from what an object carries, as plain text and tables: version strings
 * compared, the compilers .comment names, the GCC release a libstdc++ or libgomp version node
 * came with. Pure functions over bytes, unit-tested alone (roles.c applies them to objects).
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roles.h"

int version_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			unsigned long x = strtoul(a, (char **)&a, 10);
			unsigned long y = strtoul(b, (char **)&b, 10);

			if (x != y)
				return x < y ? -1 : 1;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return 0;
}

/* The next "X.Y.Z" at @p (digits and dots, at most @len - 1), or "". */
void roles__version_at(const char *p, const char *end, char *out, size_t len)
{
	size_t n = 0;

	while (p + n < end && n < len - 1 && (isdigit((unsigned char)p[n]) || p[n] == '.'))
		n++;
	while (n && p[n - 1] == '.')
		n--;
	memcpy(out, p, n);
	out[n] = '\0';
}

/* Keep @v in @best when it is the newer version. */
static void keep_newest(char *best, size_t len, const char *v)
{
	if (v[0] && (!best[0] || version_cmp(v, best) > 0))
		snprintf(best, len, "%s", v);
}

void roles__comment_compilers(const char *comment, size_t len, char *gcc, size_t gcclen,
			      char *clang, size_t clanglen)
{
	const char *end = comment + len;
	char v[32];

	if (gcc)
		gcc[0] = '\0';
	if (clang)
		clang[0] = '\0';
	/* Strings one after another, each NUL-terminated. */
	for (const char *s = comment; s && s < end; s += strnlen(s, (size_t)(end - s)) + 1) {
		const char *e = s + strnlen(s, (size_t)(end - s)), *p;

		/* "GCC: (Debian 12.2.0-14) 12.2.0", "GCC: (GNU) 9.3.1 20200408 (Red Hat 9.3.1-2)". */
		if (gcc && e - s > 5 && !strncmp(s, "GCC: ", 5)) {
			p = s + 5;
			if (*p == '(') {
				int depth = 0;

				for (; p < e; p++) {
					depth += (*p == '(') - (*p == ')');
					if (!depth && *p == ')')
						break;
				}
				p += p < e;
				while (p < e && *p == ' ') /* the section's end may be no NUL */
					p++;
			}
			roles__version_at(p, e, v, sizeof(v));
			if (strchr(v, '.'))
				keep_newest(gcc, gcclen, v);
		}
		/* "Debian clang version 14.0.6", "clang version 17.0.6 (https://...)". */
		if (clang && (p = memmem(s, (size_t)(e - s), "clang version ", 14))) {
			roles__version_at(p + 14, e, v, sizeof(v));
			if (strchr(v, '.'))
				keep_newest(clang, clanglen, v);
		}
	}
}

/*
 * libstdc++'s newest GLIBCXX_ node and the GCC releases that have it as their newest (the
 * libstdc++ manual, "ABI Policy and Guidelines": GCC 12.1.0 brought GLIBCXX_3.4.30, 13.1.0
 * 3.4.31, 13.2.0 3.4.32, 14.1.0 3.4.33).
 */
static const struct {
	const char *node, *gcc;
} glibcxx_gcc[] = {
	{ "3.4.9", "4.2" },
	{ "3.4.10", "4.3" },
	{ "3.4.11", "4.4.0" },
	{ "3.4.12", "4.4.1" },
	{ "3.4.13", "4.4.2 to 4.4.7" },
	{ "3.4.14", "4.5" },
	{ "3.4.15", "4.6.0" },
	{ "3.4.16", "4.6.1 to 4.6.4" },
	{ "3.4.17", "4.7" },
	{ "3.4.18", "4.8.0 to 4.8.2" },
	{ "3.4.19", "4.8.3 to 4.8.5" },
	{ "3.4.20", "4.9" },
	{ "3.4.21", "5" },
	{ "3.4.22", "6" },
	{ "3.4.23", "7.1" },
	{ "3.4.24", "7.2 to 7.5" },
	{ "3.4.25", "8" },
	{ "3.4.26", "9.1" },
	{ "3.4.27", "9.2" },
	{ "3.4.28", "9.3 to 10" },
	{ "3.4.29", "11" },
	{ "3.4.30", "12" },
	{ "3.4.31", "13.1" },
	{ "3.4.32", "13.2 or a later 13" },
	{ "3.4.33", "14" },
};

const char *roles__glibcxx_gcc(const char *node)
{
	size_t n = sizeof(glibcxx_gcc) / sizeof(glibcxx_gcc[0]);

	if (!node || !node[0])
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(node, glibcxx_gcc[i].node))
			return glibcxx_gcc[i].gcc;
	/* Past the table: a release after the newest it knows. */
	if (version_cmp(node, glibcxx_gcc[n - 1].node) > 0)
		return "15 or later";
	return NULL;
}

/*
 * The GCC releases that added libgomp version nodes, and what a libgomp whose newest node came
 * with that release can be (GCC 7 added none: a GCC 6 or 7 libgomp looks the same). From
 * Debian's libgomp1 symbols file (the release each node first shipped in) and GCC's libgomp.map
 * for the nodes GCC 13 added.
 */
static const char *const gomp_releases[][2] = {
	{ "4.2", "4.2 or 4.3" },
	{ "4.4", "4.4 to 4.6" },
	{ "4.7", "4.7 or 4.8" },
	{ "4.9", "4.9" },
	{ "5", "5" },
	{ "6", "6 or 7" },
	{ "8", "8" },
	{ "9", "9" },
	{ "10", "10" },
	{ "11", "11" },
	{ "12", "12" },
	{ "13", "13 or later" },
};

static const struct {
	const char *node;
	unsigned char rel; /* index in gomp_releases */
} gomp_nodes[] = {
	{ "OMP_1.0", 0 },	  { "OMP_2.0", 0 },	    { "OMP_3.0", 1 },
	{ "OMP_3.1", 2 },	  { "OMP_4.0", 3 },	    { "OMP_4.5", 5 },
	{ "OMP_5.0", 7 },	  { "OMP_5.0.1", 9 },	    { "OMP_5.0.2", 10 },
	{ "OMP_5.1", 10 },	  { "OMP_5.1.1", 11 },	    { "OMP_5.2", 11 },
	{ "GOMP_1.0", 0 },	  { "GOMP_2.0", 1 },	    { "GOMP_3.0", 2 },
	{ "GOMP_4.0", 3 },	  { "GOMP_4.0.1", 4 },	    { "GOMP_4.5", 5 },
	{ "GOMP_5.0", 7 },	  { "GOMP_5.0.1", 9 },	    { "GOMP_5.1", 10 },
	{ "GOMP_5.1.1", 11 },	  { "OACC_2.0", 4 },	    { "OACC_2.0.1", 6 },
	{ "OACC_2.5", 7 },	  { "OACC_2.5.1", 8 },	    { "OACC_2.6", 8 },
	{ "GOACC_2.0", 4 },	  { "GOACC_2.0.1", 5 },	    { "GOACC_2.0.2", 10 },
	{ "GOMP_PLUGIN_1.0", 4 }, { "GOMP_PLUGIN_1.1", 5 }, { "GOMP_PLUGIN_1.2", 7 },
	{ "GOMP_PLUGIN_1.3", 8 },
};

void roles__libgomp_gcc(const char *const *nodes, size_t n, char *out, size_t len)
{
	int best = -1;
	bool unknown = false;

	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t k;

		if (!nodes[i] || strstr(nodes[i], ".so")) /* the base definition: the SONAME */
			continue;
		for (k = 0; k < sizeof(gomp_nodes) / sizeof(gomp_nodes[0]); k++)
			if (!strcmp(nodes[i], gomp_nodes[k].node))
				break;
		if (k == sizeof(gomp_nodes) / sizeof(gomp_nodes[0]))
			unknown = true;
		else if (gomp_nodes[k].rel > best)
			best = gomp_nodes[k].rel;
	}
	if (best < 0)
		return;
	/* A node the table does not know came with a release after the ones it names. */
	if (unknown && best + 1 < (int)(sizeof(gomp_releases) / sizeof(gomp_releases[0])))
		snprintf(out, len, "%s or later", gomp_releases[best][0]);
	else
		snprintf(out, len, "%s", gomp_releases[best][1]);
}
