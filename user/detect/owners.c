// SPDX-License-Identifier: GPL-2.0
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "finding.h"
#include "libgraph.h"
#include "owners.h"
#include "pkgindex.h"

/* Up the loading chain of @id (libgraph__loaded_by): another package's. */
static const struct pkg_owner *loaded_for(const struct libgraph *g, unsigned int id)
{
	const struct pkg_owner *own = g->objs[id]->pkg;

	for (unsigned int hops = 0; libgraph__loaded_by(g, id) != LG_NONE && hops < 16; hops++) {
		const struct pkg_owner *p;

		id = libgraph__loaded_by(g, id);
		p = g->objs[id]->pkg;
		if (p && (!own || strcmp(p->name, own->name) || p->manager != own->manager))
			return p;
	}
	return NULL;
}

/* A wheel carries its own copy of a native library; conda and dpkg packages provide one. */
static bool vendors(const struct pkg_owner *p)
{
	return p && p->manager == PKG_PIP;
}

void owners__describe(const struct libgraph *g, unsigned int id, char *buf, size_t len)
{
	const struct lg_object *o = g->objs[id];
	const struct pkg_owner *by = loaded_for(g, id);
	char own[256], user[256];
	size_t used = 0;

	buf[0] = '\0';
	if (o->pkg) {
		pkg_owner__describe(o->pkg, own, sizeof(own));
		used = (size_t)snprintf(buf, len, vendors(o->pkg) ? "%s vendors it" : "from %s",
					own);
	}
	if (by && used < len) {
		pkg_owner__describe(by, user, sizeof(user));
		snprintf(buf + used, len - used, "%sloaded for %s", used ? ", " : "", user);
	}
}

static bool listed(const struct pkg_owner *const *seen, size_t n, const struct pkg_owner *p)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(seen[i]->name, p->name) && seen[i]->manager == p->manager)
			return true;
	return false;
}

void owners__remedy(struct finding *f, const struct libgraph *g, const unsigned int *ids, size_t n)
{
	const struct pkg_owner *seen[64];
	const char *fix = f && f->remedy ? f->remedy : "";
	size_t n_seen = 0, used, cap = strlen(fix) + 512 * (n + 1) + 128;
	json_t *pkgs = json_array();
	bool any = false, vendored = false;
	char *text = f ? malloc(cap) : NULL;

	if (!text || !pkgs) {
		free(text);
		json_decref(pkgs);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct pkg_owner *p = g->objs[ids[i]]->pkg, *by = loaded_for(g, ids[i]);

		any = any || p || by;
		vendored = vendored || vendors(p);
		json_array_append_new(pkgs,
				      json_pack("{s:i, s:s, s:o, s:o}", "object",
						(json_int_t)ids[i], "path", g->objs[ids[i]]->path,
						"package", pkg_owner__to_json(p), "loaded_for",
						pkg_owner__to_json(by)));
	}
	used = (size_t)snprintf(text, cap, "%s", fix);
	/* The wheels that vendor a copy are what to rebuild; else say where each copy comes from. */
	for (size_t i = 0; any && i < n && used < cap && n_seen < 64; i++) {
		const struct lg_object *o = g->objs[ids[i]];
		const struct pkg_owner *p = o->pkg, *by = loaded_for(g, ids[i]);
		char a[256], b[256];

		if (vendored) {
			if (!vendors(p) || listed(seen, n_seen, p))
				continue;
			pkg_owner__describe(p, a, sizeof(a));
			used += (size_t)snprintf(text + used, cap - used, "%s%s, which vendors %s",
						 n_seen ? "; " : " Rebuild or reinstall: ", a,
						 lg_object__basename(o));
			seen[n_seen++] = p;
			continue;
		}
		if (p)
			pkg_owner__describe(p, a, sizeof(a));
		else
			snprintf(a, sizeof(a), "no known package");
		if (by)
			pkg_owner__describe(by, b, sizeof(b));
		used += (size_t)snprintf(text + used, cap - used, "%s%s from %s%s%s",
					 i ? "; " : " The copies: ", lg_object__basename(o), a,
					 by ? ", loaded for " : "", by ? b : "");
		n_seen++;
	}
	if (any && !vendored && used < cap)
		snprintf(text + used, cap - used,
			 ": rebuild or reinstall the package whose copy should go.");
	else if (any && used < cap)
		snprintf(text + used, cap - used, ".");
	if (any) {
		free(f->remedy);
		f->remedy = text;
		text = NULL;
		if (!f->data)
			f->data = json_object();
		json_object_set(f->data, "packages", pkgs);
	}
	json_decref(pkgs);
	free(text);
}
