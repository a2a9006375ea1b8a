/* SPDX-License-Identifier: GPL-2.0 */
/* Runtime roles: what an object is, judged by the symbols it defines, never by its file name. */
#ifndef DLSCOPE_ROLES_H
#define DLSCOPE_ROLES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum role_kind {
	ROLE_OPENMP,
	ROLE_BLAS,
	ROLE_CXX_RUNTIME,
	ROLE_CUDA,
	ROLE_TBB,
	ROLE_ONEDNN,
	ROLE_PYTHON,
	ROLE_LIBC,
	ROLE_LOADER,
	ROLE__COUNT,
};

/* The implementations we tell apart; each belongs to one kind. */
enum role_impl {
	IMPL_GNU_LIBGOMP,
	IMPL_LLVM_LIBOMP,
	IMPL_INTEL_LIBIOMP5,
	IMPL_OPENBLAS,
	IMPL_MKL,
	IMPL_BLIS,
	IMPL_FLEXIBLAS,
	IMPL_OTHER_BLAS,
	IMPL_LAPACK,
	IMPL_LIBSTDCXX,
	IMPL_LIBCXX,
	IMPL_CUDA_DRIVER,
	IMPL_CUDA_RUNTIME,
	IMPL_NVRTC,
	IMPL_CUBLAS,
	IMPL_NCCL,
	IMPL_CUDNN,
	IMPL_HIP,
	IMPL_TBB,
	IMPL_ONEDNN,
	IMPL_PYTHON_INTERP,
	IMPL_PYTHON_EXT,
	IMPL_GLIBC,
	IMPL_GLIBC_RTLD,
	IMPL__COUNT,
};

struct obj_role {
	enum role_kind kind;
	enum role_impl impl;
	char version[48]; /* "" when the object does not reveal it */
	char detail[64];  /* e.g. the PyInit_ module name, OpenBLAS build options */
};

#define OBJ_ROLES_MAX 6
struct obj_roles {
	unsigned int n;
	struct obj_role r[OBJ_ROLES_MAX];
};

struct elf_object;

/*
 * @o's roles, from its defined symbols, version definitions and read-only strings: classified
 * on first use and kept with the object (never NULL).
 */
const struct obj_roles *roles__of(const struct elf_object *o);

const char *role_kind__id(enum role_kind k);	/* "openmp", "blas", ... (JSON, CLI) */
const char *role_kind__label(enum role_kind k); /* "OpenMP runtime", ... (text) */
const char *role_impl__name(enum role_impl i);	/* "GNU libgomp", ... */
const char *role_impl__id(enum role_impl i);	/* "libgomp", ... */
enum role_kind role_impl__kind(enum role_impl i);
/* The kinds that are runtimes (not the interpreter, libc or the loader): inventories, --roles. */
bool role_kind__is_runtime(enum role_kind k);

/* The role of kind @k, or NULL. */
const struct obj_role *obj_roles__find(const struct obj_roles *r, enum role_kind k);

/* Static libstdc++ carried inside @o, which is not libstdc++ itself; fills its GCC version. */
bool roles__static_libstdcxx(const struct elf_object *o, char *gcc, size_t gcclen);
/* An object's roles as the ROLE[] array of docs/libs-schema.md (new reference). */
json_t *obj_roles__to_json(const struct obj_roles *roles);
/* "OpenMP runtime: GNU libgomp 5.0.1", for text output. */
void obj_role__describe(const struct obj_role *r, char *buf, size_t len);

/* Compare dotted version strings numerically ("3.4.30" > "3.4.9"). */
int version_cmp(const char *a, const char *b);

#endif
