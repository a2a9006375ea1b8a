// SPDX-License-Identifier: GPL-2.0
/*
 * How a role is worded: the label every text output prints ("GNU libgomp (GCC 12), OpenMP
 * 5.1") and the ROLE objects of docs/libs-schema.md. Only reads what roles.c classified.
 */
#include <stdio.h>
#include <string.h>

#include "roles.h"

/* The version node a text shows: libstdc++'s GLIBCXX_ (what binaries require) always, the others
 * only when nothing better names the library. */
static const char *shown_node(const struct obj_role *r)
{
	if (r->version_kind != VERSION_NODE ||
	    (r->impl != IMPL_LIBSTDCXX && (r->release[0] || r->openmp[0])))
		return NULL;
	return r->impl == IMPL_LIBSTDCXX   ? "GLIBCXX_" :
	       r->impl == IMPL_GNU_LIBGOMP ? "GOMP_" :
	       r->impl == IMPL_GLIBC	   ? "GLIBC_" :
					     "";
}

/* The library's own release ("OpenBLAS 0.3.21"), not a toolchain's ("GCC 12"). */
static bool own(const struct obj_role *r)
{
	return r->release[0] && !r->release_of[0];
}

void obj_role__version_text(const struct obj_role *r, char *buf, size_t len)
{
	const char *node = shown_node(r);
	char rel[64] = "";
	size_t n;

	if (own(r)) {
		snprintf(buf, len, "%s", r->release);
		return;
	}
	if (r->release[0])
		snprintf(rel, sizeof(rel), "%s %s", r->release_of, r->release);
	if (node)
		snprintf(buf, len, "%s%s%s%s%s", node, r->version, rel[0] ? " (" : "", rel,
			 rel[0] ? ")" : "");
	else
		snprintf(buf, len, "%s", rel);
	n = strlen(buf);
	if (r->openmp[0] && n < len)
		snprintf(buf + n, len - n, "%sOpenMP %s", n ? ", " : "", r->openmp);
}

/* Appends to @buf (@len bytes, *@n of them used), cutting what does not fit. */
static void append(char *buf, size_t len, size_t *n, const char *a, const char *b, const char *c)
{
	if (*n < len)
		*n += (size_t)snprintf(buf + *n, len - *n, "%s%s%s", a, b, c);
}

void obj_role__label(const struct obj_role *r, char *buf, size_t len)
{
	const char *node = shown_node(r);
	size_t n = 0;

	if (!len)
		return;
	buf[0] = '\0';
	append(buf, len, &n, role_impl__name(r->impl), "", "");
	if (own(r)) {
		append(buf, len, &n, " ", r->release, "");
	} else {
		if (node)
			append(buf, len, &n, " ", node, r->version);
		if (r->release[0]) {
			append(buf, len, &n, " (", r->release_of, " ");
			append(buf, len, &n, r->release, ")", "");
		}
		if (r->openmp[0])
			append(buf, len, &n, ", OpenMP ", r->openmp, "");
	}
	if (r->detail[0])
		append(buf, len, &n, " (", r->detail, ")");
}

void obj_role__describe(const struct obj_role *r, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s: ", role_kind__label(r->kind));

	if (n > 0 && (size_t)n < len)
		obj_role__label(r, buf + n, len - (size_t)n);
}

static const char *const version_kinds[] = {
	[VERSION_NONE] = NULL,
	[VERSION_RELEASE] = "release",
	[VERSION_NODE] = "symbol-version",
	[VERSION_KMP] = "kmp",
};

static const char *const release_froms[] = {
	[RELEASE_NONE] = NULL,
	[RELEASE_COMMENT] = "comment",
	[RELEASE_RODATA] = "rodata",
	[RELEASE_SYMVER] = "symbol-versions",
	[RELEASE_BUILD_COMPILER] = "build-compiler",
	[RELEASE_FUNCTION] = "function",
	[RELEASE_SONAME] = "soname",
};

static json_t *str_or_null(const char *s)
{
	return s && s[0] ? json_string(s) : json_null();
}

void obj_role__json_versions(const struct obj_role *r, json_t *obj)
{
	char text[256];

	if (!obj)
		return;
	json_object_set_new(obj, "version_kind",
			    str_or_null(r->version_kind <= VERSION_KMP ?
						version_kinds[r->version_kind] :
						NULL));
	json_object_set_new(obj, "release", str_or_null(r->release));
	json_object_set_new(obj, "release_of",
			    r->release[0] ?
				    json_string(r->release_of[0] ? r->release_of :
								   role_impl__name(r->impl)) :
				    json_null());
	json_object_set_new(obj, "release_from",
			    str_or_null(r->release_from <= RELEASE_SONAME ?
						release_froms[r->release_from] :
						NULL));
	json_object_set_new(obj, "openmp_version", str_or_null(r->openmp));
	obj_role__version_text(r, text, sizeof(text));
	json_object_set_new(obj, "version_text", str_or_null(text));
	obj_role__label(r, text, sizeof(text));
	json_object_set_new(obj, "label", json_string(text));
}

json_t *obj_roles__to_json(const struct obj_roles *roles)
{
	json_t *arr = json_array();

	for (unsigned i = 0; arr && i < roles->n; i++) {
		const struct obj_role *r = &roles->r[i];
		json_t *one =
			json_pack("{s:s, s:s, s:s, s:o, s:o, s:b}", "kind", role_kind__id(r->kind),
				  "impl", role_impl__id(r->impl), "name", role_impl__name(r->impl),
				  "version", r->version[0] ? json_string(r->version) : json_null(),
				  "detail", r->detail[0] ? json_string(r->detail) : json_null(),
				  "runtime", role_kind__is_runtime(r->kind));

		obj_role__json_versions(r, one);
		json_array_append_new(arr, one);
	}
	return arr;
}
