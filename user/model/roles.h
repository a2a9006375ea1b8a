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
	IMPL_CUFFT,
	IMPL_CUSPARSE,
	IMPL_NVJITLINK,
	IMPL_ROCBLAS,
	IMPL_MIOPEN,
	IMPL_RCCL,
	IMPL_OPENCL_LOADER,
	IMPL_POCL,
	IMPL_OPENCL_ICD,
	IMPL_LEVEL_ZERO,
	IMPL_LEVEL_ZERO_DRIVER,
	IMPL_TBB,
	IMPL_ONEDNN,
	IMPL_PYTHON_INTERP,
	IMPL_PYTHON_EXT,
	IMPL_GLIBC,
	IMPL_GLIBC_RTLD,
	IMPL_MUSL,
	IMPL_MUSL_LDSO,
	IMPL__COUNT,
};

/* What obj_role.version is: docs/libs-schema.md, ROLE's version_kind. */
enum version_kind {
	VERSION_NONE,
	VERSION_RELEASE, /* the library's own release: OpenBLAS's "0.3.21", oneTBB's "2021.8" */
	VERSION_NODE,	 /* its newest version node of one prefix: GOMP_5.1, GLIBCXX_3.4.30 */
	VERSION_KMP,	 /* libomp/libiomp5's "OMP version" banner: OpenMP level and a date */
};

/* Where obj_role.release was read. */
enum release_from {
	RELEASE_NONE,
	RELEASE_COMMENT, /* the compiler named in .comment ("GCC: (Debian 12.2.0-14) 12.2.0") */
	RELEASE_RODATA,	 /* the library's own version string in .rodata */
	RELEASE_SYMVER,	 /* its version definitions, through the table of the releases */
	RELEASE_BUILD_COMPILER, /* libomp's "build compiler: Clang 14.0" banner */
	RELEASE_FUNCTION,	/* a function of the library returning a constant */
	RELEASE_SONAME,		/* the major version its SONAME carries (libcudart.so.12) */
};

struct obj_role {
	enum role_kind kind;
	enum role_impl impl;
	char version[48]; /* "" when the object does not reveal it; what it is: version_kind */
	char detail[64];  /* e.g. the PyInit_ module name, OpenBLAS build options */
	unsigned char version_kind; /* enum version_kind */
	unsigned char release_from; /* enum release_from */
	char release_of[14];	    /* whose release: "GCC", "LLVM", "CUDA"; "" the library's */
	char release[32];	    /* "12.2.0", "12", "9.3 to 10"; "" unknown */
	char openmp[16];	    /* OpenMP runtimes: the newest OpenMP API level it exports */
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
int role_kind__parse(const char *id);		/* the kind of an id, or -1 */
const char *role_kind__label(enum role_kind k); /* "OpenMP runtime", ... (text) */
const char *role_impl__name(enum role_impl i);	/* "GNU libgomp", ... */
const char *role_impl__id(enum role_impl i);	/* "libgomp", ... */
int role_impl__parse(const char *id);		/* the implementation of an id, or -1 */
/* The roles an object's stored annotation (objcache's blob, this build's) holds: false when
 * the bytes are no such annotation. */
bool roles__from_blob(const void *blob, size_t len, struct obj_roles *out);
/* The kinds that are runtimes (not the interpreter, libc or the loader): inventories, --roles. */
bool role_kind__is_runtime(enum role_kind k);

/* The role of kind @k, or NULL. */
const struct obj_role *obj_roles__find(const struct obj_roles *r, enum role_kind k);
/* The role whose implementation is @impl, or NULL. */
const struct obj_role *obj_roles__find_impl(const struct obj_roles *r, enum role_impl impl);

/* Static libstdc++ carried inside @o, which is not libstdc++ itself; fills its GCC version. */
bool roles__static_libstdcxx(const struct elf_object *o, char *gcc, size_t gcclen);
/* Is @name a BLAS function's: cblas_dgemm, or Fortran's dgemm_, sgetrf_ (short, lower case,
 * its one '_' last)? */
bool roles__blas_symbol(const char *name);
/* An object's roles as the ROLE[] array of docs/libs-schema.md (new reference). */
json_t *obj_roles__to_json(const struct obj_roles *roles);
/* "OpenMP runtime: GNU libgomp (GCC 12), OpenMP 5.1", for text output. */
void obj_role__describe(const struct obj_role *r, char *buf, size_t len);
/*
 * The implementation with its versions, each named for what it is: "GNU libgomp (GCC 12),
 * OpenMP 5.1", "GNU libstdc++ GLIBCXX_3.4.30 (GCC 12)", "OpenBLAS 0.3.21 (64-bit integers)".
 * What every text output prints for a role (never the bare version node or KMP banner).
 */
void obj_role__label(const struct obj_role *r, char *buf, size_t len);
/* The versions alone, as the label words them: "GCC 12, OpenMP 5.1", "0.3.21"; "" none. */
void obj_role__version_text(const struct obj_role *r, char *buf, size_t len);
/* Adds the version fields of docs/libs-schema.md (ROLE) past version to @obj. */
void obj_role__json_versions(const struct obj_role *r, json_t *obj);

/* The pure parts of reading versions (roles_release.c), for the unit tests. */
/* The newest GCC and clang versions a .comment section names ("" when none). */
void roles__comment_compilers(const char *comment, size_t len, char *gcc, size_t gcclen,
			      char *clang, size_t clanglen);
/* The GCC release of a libstdc++ whose newest GLIBCXX_ node is @node ("3.4.30" -> "12"). */
const char *roles__glibcxx_gcc(const char *node);
/* The GCC release of a libgomp with version nodes @nodes[@n] ("GOMP_5.1" ...): "12". */
void roles__libgomp_gcc(const char *const *nodes, size_t n, char *out, size_t len);

/* Compare dotted version strings numerically ("3.4.30" > "3.4.9"). */
int version_cmp(const char *a, const char *b);
/* The next "X.Y.Z" at @p (digits and dots, at most @len - 1) into @out, or "". */
void roles__version_at(const char *p, const char *end, char *out, size_t len);

#endif
