// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <string.h>

#include "detector.h"
#include "libgraph.h"

const struct detector detectors[] = {
	{ "dup-openmp", "more than one OpenMP runtime in a process", dup_openmp__process, NULL },
	{ "dup-blas", "more than one BLAS library in a process", dup_blas__process, NULL },
	{ "dup-cxx-runtime", "more than one C++ runtime, shared or statically linked",
	  dup_cxx__process, dup_cxx__files },
	{ "dup-library", "one library loaded twice, or vague-linkage statics split between objects",
	  dup_library__process, dup_library__files },
	{ "abi-mismatch", "symbols and versions an object needs that the loaded providers lack",
	  abi_mismatch__process, abi_mismatch__files },
	{ "loader-lock-hazard", "a parallel region started from a constructor inside dlopen",
	  loader_lock__process, NULL },
	{ "deadlock", "threads waiting for each other in a cycle (locks, joins, parallel regions)",
	  deadlock__process, NULL },
	{ "elf-defects", "duplicate sections with conflicting flags, W+X segments, executable stack",
	  elf_defects__process, elf_defects__files },
};

const size_t n_detectors = sizeof(detectors) / sizeof(detectors[0]);

void lg_object__describe_origin(const struct libgraph *g, unsigned int id, char *buf,
				size_t len)
{
	const struct lg_object *o = g->objs[id];
	size_t used;

	switch (o->origin) {
	case LG_NEEDED:
		used = (size_t)snprintf(buf, len, "DT_NEEDED of ");
		for (size_t i = 0; i < o->n_parents && used < len; i++)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
						 lg_object__basename(g->objs[o->parents[i]]));
		break;
	case LG_DLOPEN:
		snprintf(buf, len, o->ns ? "dlmopen into namespace %u" : "dlopen", o->ns);
		break;
	default:
		snprintf(buf, len, "%s", lg_origin__id(o->origin));
		break;
	}
}
