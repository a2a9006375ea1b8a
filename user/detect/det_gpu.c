// SPDX-License-Identifier: GPL-2.0
/*
 * cuda-driver-too-old: a CUDA library built for a newer CUDA than the loaded driver provides.
 * The driver's CUDA is the constant its cuDriverGetVersion stores; a runtime's is its own
 * getter's (or its symbols' major), NCCL's the "+cuda12.1" of its banner. Read off the objects.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "libgraph.h"
#include "owners.h"
#include "runtimes.h"

/* The CUDA a runtime of the inventory was built for ("12.1", "12"), or NULL. */
static const char *built_for(const struct obj_role *r)
{
	static const char nccl[] = "built for CUDA ";

	if ((r->impl == IMPL_CUDA_RUNTIME || r->impl == IMPL_NVRTC || r->impl == IMPL_NVJITLINK) &&
	    !strcmp(r->release_of, "CUDA") && r->release[0])
		return r->release;
	if (r->impl == IMPL_NCCL && !strncmp(r->detail, nccl, sizeof(nccl) - 1))
		return r->detail + sizeof(nccl) - 1;
	return NULL;
}

static long major_of(const char *v)
{
	return strtol(v, NULL, 10);
}

void cuda_driver__process(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;
	struct runtime_list own = { 0 };
	const struct runtime_list *rt = ctx->rt;
	const struct runtime *drv = NULL;

	if (!rt) {
		if (runtimes__collect_kind(g, ROLE_CUDA, &own))
			return;
		rt = &own;
	}
	for (size_t i = 0; i < rt->n && !drv; i++)
		if (rt->r[i].role.impl == IMPL_CUDA_DRIVER && rt->r[i].role.release[0])
			drv = &rt->r[i];
	for (size_t i = 0; drv && i < rt->n; i++) {
		const struct runtime *r = &rt->r[i];
		const char *want = built_for(&r->role), *have = drv->role.release;
		bool major;
		char label[256], dlabel[256], pkg[600], dpkg[600];
		unsigned int ids[2] = { r->obj, drv->obj };
		struct finding *f;

		if (!want || version_cmp(want, have) <= 0)
			continue;
		/* Within one major, CUDA's minor version compatibility runs most code. */
		major = major_of(want) > major_of(have);
		obj_role__label(&r->role, label, sizeof(label));
		obj_role__label(&drv->role, dlabel, sizeof(dlabel));
		owners__describe(g, r->obj, pkg, sizeof(pkg));
		owners__describe(g, drv->obj, dpkg, sizeof(dpkg));
		f = findings__add(out, "cuda-driver-too-old", major ? SEV_ERROR : SEV_WARNING,
				  g->pid, "%s is built for CUDA %s; the driver provides CUDA %s",
				  lg_object__basename(g->objs[r->obj]), want, have);
		finding__evidence(f, "#%u %s: %s%s%s", r->obj, g->objs[r->obj]->path, label,
				  pkg[0] ? "; " : "", pkg);
		finding__evidence(f, "#%u %s: %s (what cuDriverGetVersion returns)%s%s", drv->obj,
				  g->objs[drv->obj]->path, dlabel, dpkg[0] ? "; " : "", dpkg);
		finding__explain(
			f,
			major ? "A CUDA library needs a driver of at least its CUDA major: every call "
				"into an older driver fails with cudaErrorInsufficientDriver (\"CUDA "
				"driver version is insufficient for CUDA runtime version\"), so the "
				"framework sees no GPU or stops at its first kernel." :
				"The driver is older than the CUDA minor release the library was built "
				"for: minor version compatibility runs most of it, but PTX it carries "
				"fails to JIT (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) and the newer APIs "
				"it uses are missing.",
			"Install an NVIDIA driver that provides this CUDA (nvidia-smi names the CUDA a "
			"driver provides), or the build of the framework for the driver's CUDA (the "
			"cu11 wheels for a CUDA 11 driver); in a container, the CUDA forward "
			"compatibility package (cuda-compat) for the image's CUDA.");
		owners__remedy(f, g, ids, 2);
	}
	runtimes__free(&own);
}
