// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <string.h>

#include "detector.h"
#include "libgraph.h"

const struct detector detectors[] = {
	{ "dup-openmp", SEV_ERROR, "more than one OpenMP runtime in a process", dup_openmp__process,
	  NULL, dup_openmp__on_object, NULL, NULL },
	{ "dup-blas", SEV_ERROR, "more than one BLAS library in a process", dup_blas__process, NULL,
	  dup_blas__on_object, NULL, NULL },
	{ "dup-gpu-runtime", SEV_ERROR,
	  "two CUDA runtime majors, or two cuDNN, cuBLAS, NCCL or RCCL versions, in a process",
	  dup_gpu__process, NULL, dup_gpu__on_object, NULL, NULL },
	{ "dup-cxx-runtime", SEV_ERROR, "more than one C++ runtime, shared or statically linked",
	  dup_cxx__process, dup_cxx__files, dup_cxx__on_object, NULL, NULL },
	{ "dup-library", SEV_ERROR,
	  "one library loaded twice, or vague-linkage statics split between objects",
	  dup_library__process, dup_library__files, dup_library__on_object, NULL, NULL },
	{ "abi-mismatch", SEV_ERROR,
	  "symbols and versions an object needs that the loaded providers lack",
	  abi_mismatch__process, abi_mismatch__files, NULL, NULL, NULL },
	{ "shadowed-soname", SEV_ERROR,
	  "a library given another file of a SONAME than its own RUNPATH names, loaded first",
	  shadowed__process, NULL, NULL, shadowed__on_event, NULL },
	{ "blas-in-parallel", SEV_WARNING,
	  "OpenBLAS's pthreads pool called from inside OpenMP parallel regions (N x N threads)",
	  blas_in_parallel__process, NULL, NULL, NULL, NULL },
	{ "dup-proto", SEV_ERROR,
	  "one .proto file registered with libprotobuf by two objects (aborts at load)",
	  dup_proto__process, dup_proto__files, NULL, NULL, NULL },
	{ "static-tls", SEV_ERROR,
	  "initial-exec TLS that a dlopen after start-up cannot fit in the static TLS block", NULL,
	  static_tls__files, NULL, static_tls__on_event, NULL },
	{ "cuda-driver-too-old", SEV_ERROR,
	  "a CUDA library built for a newer CUDA than the loaded driver provides",
	  cuda_driver__process, NULL, NULL, NULL, NULL },
	{ "loader-lock-hazard", SEV_ERROR,
	  "a parallel region started from a constructor inside dlopen", loader_lock__process, NULL,
	  NULL, loader_lock__on_event, NULL },
	{ "deadlock", SEV_ERROR,
	  "threads waiting for each other in a cycle (locks, joins, parallel regions)",
	  deadlock__process, NULL, NULL, deadlock__on_event, NULL },
	{ "fork-hang", SEV_ERROR,
	  "a wait that can never end: a mutex or an OpenMP pool a fork() left behind",
	  fork_hang__process, NULL, NULL, NULL, NULL },
	{ "elf-defects", SEV_WARNING,
	  "duplicate sections with conflicting flags, W+X segments, executable stack",
	  elf_defects__process, elf_defects__files, NULL, NULL, NULL },
	{ "rank-objects", SEV_WARNING,
	  "ranks of a job that load different objects, versions or builds (check --job)", NULL,
	  NULL, NULL, NULL, rank_objects__job },
	{ "rank-gpu-versions", SEV_ERROR,
	  "ranks of a job that load different NCCL, RCCL, CUDA runtime, cuDNN or cuBLAS versions "
	  "(check --job)",
	  NULL, NULL, NULL, NULL, rank_gpu__job },
	{ "rank-environment", SEV_WARNING,
	  "ranks of a job started with different *_NUM_THREADS, LD_*, NCCL_* (check --job)", NULL,
	  NULL, NULL, NULL, rank_environment__job },
	{ "oversubscription", SEV_WARNING,
	  "the ranks of a node run more pool threads than the CPUs they may use (check --job)",
	  NULL, NULL, NULL, NULL, oversubscription__job },
};

const size_t n_detectors = sizeof(detectors) / sizeof(detectors[0]);

const struct detector *detector__find(const char *id)
{
	for (size_t i = 0; id && i < n_detectors; i++)
		if (!strcmp(detectors[i].id, id))
			return &detectors[i];
	return NULL;
}

void detectors__on_object(const struct live_ctx *lc, const struct lg_object *o,
			  struct findings *out)
{
	for (size_t i = 0; i < n_detectors; i++)
		if (detectors[i].on_object)
			detectors[i].on_object(lc, o, out);
}

void detectors__on_event(const struct live_ctx *lc, const struct live_event *e,
			 struct findings *out)
{
	for (size_t i = 0; i < n_detectors; i++)
		if (detectors[i].on_event)
			detectors[i].on_event(lc, e, out);
}
