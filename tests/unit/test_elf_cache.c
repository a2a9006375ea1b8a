// SPDX-License-Identifier: GPL-2.0
/*
 * The collector's ELF cache stays bounded: analyses that no graph holds any longer are dropped
 * (a process loading and unloading thousands of libraries once grew watch by 25 KB each),
 * while those a graph holds stay shared.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "elfobj.h"
#include "libgraph.h"
#include "tap.h"

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/usr/lib/x86_64-linux-gnu";
	struct elf_cache *cache = elf_cache__new();
	struct libgraph *keep = libgraph__new_cached(1, "keep", cache);
	size_t files = 0, peak = 0;
	struct lg_object *held = NULL;
	char held_path[PATH_MAX] = "";
	struct dirent *de;
	DIR *d = opendir(dir);

	/* Each library once, in a graph of its own that is then dropped: a dlopen, a dlclose. */
	while (d && (de = readdir(d)) && files < 300) {
		char path[PATH_MAX];
		struct libgraph *g;
		struct lg_object *o;
		size_t len = strlen(de->d_name);

		if (len < 4 || strcmp(de->d_name + len - 3, ".so"))
			if (!strstr(de->d_name, ".so."))
				continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		g = libgraph__new_cached(2, "churn", cache);
		o = g ? libgraph__add(g, 0, path, path, 0, 1, 0) : NULL;
		if (o && o->elf) {
			files++;
			if (!held) { /* the first one stays held by a live graph */
				held = libgraph__add(keep, 0, path, path, 0, 1, 0);
				snprintf(held_path, sizeof(held_path), "%s", path);
			}
		}
		libgraph__free(g);
		if (elf_cache__size(cache) > peak)
			peak = elf_cache__size(cache);
	}
	if (d)
		closedir(d);
	CHECK(files >= 100, "enough distinct libraries were analysed");
	CHECK(peak <= 65 + 1, "idle analyses never exceed the bound");
	/* Under ASan, a dropped analysis still in use would be a use after free here. */
	CHECK(held && held->elf && !strcmp(elfobj__path(held->elf), held_path),
	      "an analysis a graph holds is kept through every trim");
	libgraph__free(keep);
	elf_cache__put(cache);
	return tap_done();
}
