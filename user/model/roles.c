// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "roles.h"

/* Symbols whose definition marks an implementation. Renamed wheel copies keep these names. */
enum marker {
	M_GOMP_PARALLEL,
	M_KMPC_FORK_CALL,
	M_OPENBLAS_CONFIG, /* also scipy_openblas_get_config64_ and friends */
	M_CBLAS_DGEMM,
	M_DGEMM,
	M_DGETRF,
	M_TBB,
	M_DNNL,
	M_MKL_VERSION,
	M_BLIS_VERSION,
	M_FLEXIBLAS,
	M_STDCXX_IOS_INIT,
	M_LIBCXX_COUT,
	M_CU_MODULE_LOAD,
	M_CUDA_MALLOC,
	M_NVRTC,
	M_CUBLAS,
	M_NCCL,
	M_CUDNN,
	M_HIP_MODULE_LOAD,
	M_CUFFT,
	M_CUSPARSE,
	M_NVJITLINK,
	M_ROCBLAS,
	M_MIOPEN,
	M_CL_PLATFORMS, /* clGetPlatformIDs: the API an ICD loader exports */
	M_CL_ICD,	/* clIcdGetPlatformIDsKHR, or pocl's POclIcdGetPlatformIDsKHR: an ICD */
	M_ZE_LOADER,	/* zelLoaderGetVersions */
	M_ZE_DRIVER,	/* zeGetDriverProcAddrTable: what the Level Zero loader asks a driver */
	M_PY_INITIALIZE,
	M_PYINIT,
	M_LIBC_START,
	M_R_DEBUG,
	M_MUSL_DLS3,
	M__COUNT,
};

struct scan {
	bool has[M__COUNT];
	char pyinit[48];
};

static const struct {
	const char *id, *name;
	enum role_kind kind;
} impls[IMPL__COUNT] = {
	[IMPL_GNU_LIBGOMP] = { "libgomp", "GNU libgomp", ROLE_OPENMP },
	[IMPL_LLVM_LIBOMP] = { "libomp", "LLVM libomp", ROLE_OPENMP },
	[IMPL_INTEL_LIBIOMP5] = { "libiomp5", "Intel libiomp5", ROLE_OPENMP },
	[IMPL_OPENBLAS] = { "openblas", "OpenBLAS", ROLE_BLAS },
	[IMPL_MKL] = { "mkl", "Intel MKL", ROLE_BLAS },
	[IMPL_BLIS] = { "blis", "BLIS", ROLE_BLAS },
	[IMPL_FLEXIBLAS] = { "flexiblas", "FlexiBLAS", ROLE_BLAS },
	[IMPL_OTHER_BLAS] = { "blas", "BLAS (reference or unknown)", ROLE_BLAS },
	[IMPL_LAPACK] = { "lapack", "LAPACK", ROLE_BLAS },
	[IMPL_LIBSTDCXX] = { "libstdc++", "GNU libstdc++", ROLE_CXX_RUNTIME },
	[IMPL_LIBCXX] = { "libc++", "LLVM libc++", ROLE_CXX_RUNTIME },
	[IMPL_CUDA_DRIVER] = { "cuda-driver", "CUDA driver", ROLE_CUDA },
	[IMPL_CUDA_RUNTIME] = { "cuda-runtime", "CUDA runtime", ROLE_CUDA },
	[IMPL_NVRTC] = { "nvrtc", "NVRTC", ROLE_CUDA },
	[IMPL_CUBLAS] = { "cublas", "cuBLAS", ROLE_CUDA },
	[IMPL_NCCL] = { "nccl", "NCCL", ROLE_CUDA },
	[IMPL_CUDNN] = { "cudnn", "cuDNN", ROLE_CUDA },
	[IMPL_HIP] = { "hip", "HIP runtime", ROLE_CUDA },
	[IMPL_CUFFT] = { "cufft", "cuFFT", ROLE_CUDA },
	[IMPL_CUSPARSE] = { "cusparse", "cuSPARSE", ROLE_CUDA },
	[IMPL_NVJITLINK] = { "nvjitlink", "nvJitLink", ROLE_CUDA },
	[IMPL_ROCBLAS] = { "rocblas", "rocBLAS", ROLE_CUDA },
	[IMPL_MIOPEN] = { "miopen", "MIOpen", ROLE_CUDA },
	[IMPL_RCCL] = { "rccl", "RCCL", ROLE_CUDA },
	[IMPL_OPENCL_LOADER] = { "opencl-loader", "OpenCL ICD loader", ROLE_CUDA },
	[IMPL_POCL] = { "pocl", "PoCL OpenCL driver", ROLE_CUDA },
	[IMPL_OPENCL_ICD] = { "opencl-icd", "OpenCL ICD driver", ROLE_CUDA },
	[IMPL_LEVEL_ZERO] = { "level-zero", "Level Zero loader", ROLE_CUDA },
	[IMPL_LEVEL_ZERO_DRIVER] = { "level-zero-driver", "Level Zero driver", ROLE_CUDA },
	[IMPL_TBB] = { "tbb", "oneTBB", ROLE_TBB },
	[IMPL_ONEDNN] = { "onednn", "oneDNN", ROLE_ONEDNN },
	[IMPL_PYTHON_INTERP] = { "python", "Python interpreter", ROLE_PYTHON },
	[IMPL_PYTHON_EXT] = { "python-ext", "Python extension module", ROLE_PYTHON },
	[IMPL_GLIBC] = { "glibc", "GNU C library", ROLE_LIBC },
	[IMPL_GLIBC_RTLD] = { "ld.so", "glibc dynamic loader", ROLE_LOADER },
	[IMPL_MUSL] = { "musl", "musl C library", ROLE_LIBC },
	[IMPL_MUSL_LDSO] = { "ld-musl", "musl dynamic loader", ROLE_LOADER },
};

static const struct {
	const char *id, *label;
} kinds[ROLE__COUNT] = {
	[ROLE_OPENMP] = { "openmp", "OpenMP runtime" },
	[ROLE_BLAS] = { "blas", "BLAS/LAPACK" },
	[ROLE_CXX_RUNTIME] = { "cxx-runtime", "C++ runtime" },
	[ROLE_CUDA] = { "cuda", "GPU" },
	[ROLE_TBB] = { "tbb", "TBB runtime" },
	[ROLE_ONEDNN] = { "onednn", "oneDNN" },
	[ROLE_PYTHON] = { "python", "Python" },
	[ROLE_LIBC] = { "libc", "C library" },
	[ROLE_LOADER] = { "loader", "dynamic loader" },
};

const char *role_kind__id(enum role_kind k)
{
	return k < ROLE__COUNT ? kinds[k].id : "?";
}

int role_kind__parse(const char *id)
{
	for (int k = 0; id && k < ROLE__COUNT; k++)
		if (!strcmp(kinds[k].id, id))
			return k;
	return -1;
}

const char *role_kind__label(enum role_kind k)
{
	return k < ROLE__COUNT ? kinds[k].label : "?";
}

const char *role_impl__name(enum role_impl i)
{
	return i < IMPL__COUNT ? impls[i].name : "?";
}

const char *role_impl__id(enum role_impl i)
{
	return i < IMPL__COUNT ? impls[i].id : "?";
}

int role_impl__parse(const char *id)
{
	for (int i = 0; id && i < IMPL__COUNT; i++)
		if (!strcmp(impls[i].id, id))
			return i;
	return -1;
}

bool role_kind__is_runtime(enum role_kind k)
{
	return k < ROLE__COUNT && k != ROLE_LIBC && k != ROLE_LOADER && k != ROLE_PYTHON;
}

const struct obj_role *obj_roles__find(const struct obj_roles *r, enum role_kind k)
{
	for (unsigned i = 0; i < r->n; i++)
		if (r->r[i].kind == k)
			return &r->r[i];
	return NULL;
}

const struct obj_role *obj_roles__find_impl(const struct obj_roles *r, enum role_impl impl)
{
	for (unsigned i = 0; i < r->n; i++)
		if (r->r[i].impl == impl)
			return &r->r[i];
	return NULL;
}

/*
 * The marker symbols: a name (or a name's start, when @prefix) each implementation defines.
 * Compared only when the first letters agree: a 100k-symbol libtorch costs little per symbol.
 */
static const struct {
	const char *name;
	enum marker marker;
	bool prefix;
} marker_names[] = {
	{ "GOMP_parallel", M_GOMP_PARALLEL, false },
	{ "__kmpc_fork_call", M_KMPC_FORK_CALL, false },
	{ "_ZNSt8ios_base4InitC1Ev", M_STDCXX_IOS_INIT, false },
	{ "_ZNSt3__14coutE", M_LIBCXX_COUT, false },
	{ "__libc_start_main", M_LIBC_START, false },
	{ "_r_debug", M_R_DEBUG, false },
	{ "__dls3", M_MUSL_DLS3, false },
	{ "cuModuleLoadData", M_CU_MODULE_LOAD, true },
	{ "cudaMalloc", M_CUDA_MALLOC, false },
	{ "cublasCreate", M_CUBLAS, true },
	{ "cudnnCreate", M_CUDNN, false },
	{ "cufftPlan1d", M_CUFFT, false },
	{ "cusparseCreate", M_CUSPARSE, false },
	{ "clGetPlatformIDs", M_CL_PLATFORMS, false },
	{ "rocblas_create_handle", M_ROCBLAS, false },
	{ "zelLoaderGetVersions", M_ZE_LOADER, false },
	{ "zeGetDriverProcAddrTable", M_ZE_DRIVER, false },
	{ "dgemm_", M_DGEMM, false },
	{ "dgetrf_", M_DGETRF, false },
	{ "dnnl_version", M_DNNL, false },
	{ "TBB_runtime_interface_version", M_TBB, false },
	{ "mkl_get_version", M_MKL_VERSION, false },
	{ "MKL_Get_Version", M_MKL_VERSION, false },
	{ "miopenCreate", M_MIOPEN, false },
	{ "bli_info_get_version_str", M_BLIS_VERSION, false },
	{ "flexiblas_get_version", M_FLEXIBLAS, false },
	{ "nvrtcCompileProgram", M_NVRTC, false },
	{ "nvJitLinkCreate", M_NVJITLINK, false },
	{ "ncclCommInitRank", M_NCCL, false },
	{ "hipModuleLoadData", M_HIP_MODULE_LOAD, false },
	{ "Py_Initialize", M_PY_INITIALIZE, false },
};

/*
 * Markers found anywhere in a name, the first that matches: vendored BLAS copies rename with
 * prefixes and suffixes (scipy_openblas_get_config64_).
 */
static const struct {
	const char *part;
	enum marker marker;
} marker_parts[] = {
	{ "openblas_get_config", M_OPENBLAS_CONFIG },
	{ "cblas_dgemm", M_CBLAS_DGEMM },
	{ "IcdGetPlatformIDsKHR", M_CL_ICD },
};

static bool marker_matches(const char *name, const char *marker, bool prefix)
{
	return name[0] == marker[0] &&
	       (prefix ? !strncmp(name, marker, strlen(marker)) : !strcmp(name, marker));
}

static int scan_symbol(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct scan *s = ctx;
	size_t i;

	for (i = 0; i < sizeof(marker_names) / sizeof(marker_names[0]); i++) {
		if (marker_matches(name, marker_names[i].name, marker_names[i].prefix)) {
			s->has[marker_names[i].marker] = true;
			break;
		}
	}
	/* An extension module's init function names the module. */
	if (i == sizeof(marker_names) / sizeof(marker_names[0]) && !strncmp(name, "PyInit_", 7) &&
	    GELF_ST_TYPE(sym->st_info) == STT_FUNC) {
		s->has[M_PYINIT] = true;
		snprintf(s->pyinit, sizeof(s->pyinit), "%s", name + 7);
	}
	for (i = 0; i < sizeof(marker_parts) / sizeof(marker_parts[0]); i++) {
		if (strstr(name, marker_parts[i].part)) {
			s->has[marker_parts[i].marker] = true;
			break;
		}
	}
	return 0;
}

/* Highest version node starting with @prefix followed by a digit: "GLIBCXX_" -> "3.4.30". */
static void highest_verdef(const struct elf_object *o, const char *prefix, char *out, size_t len)
{
	size_t plen = strlen(prefix);
	const char *best = NULL;

	for (size_t i = 0; i < elfobj__n_verdefs(o); i++) {
		const char *v = elfobj__verdef(o, i);

		if (strncmp(v, prefix, plen) || !isdigit((unsigned char)v[plen]))
			continue;
		if (!best || version_cmp(v + plen, best) > 0)
			best = v + plen;
	}
	if (best)
		snprintf(out, len, "%s", best);
}

/* Copy the token that follows @needle in .rodata ("OpenBLAS 0.3.21" -> "0.3.21"). */
static bool rodata_token_at(const struct elf_object *o, const char *needle, char *out, size_t len,
			    const char **at, const char **end_of_data)
{
	size_t size, nlen = strlen(needle);
	const char *data = elfobj__section(o, ".rodata", &size);
	const char *hit, *end;
	size_t n = 0;

	if (!data)
		return false;
	for (const char *p = data; (hit = memmem(p, size - (size_t)(p - data), needle, nlen));
	     p = hit + 1) {
		const char *v = hit + nlen;

		end = data + size;
		if (v >= end || !isdigit((unsigned char)*v))
			continue;
		while (v + n < end && n < len - 1 && (isalnum((unsigned char)v[n]) || v[n] == '.'))
			n++;
		/* "stable release version 2.36." ends a sentence. */
		while (n && v[n - 1] == '.')
			n--;
		memcpy(out, v, n);
		out[n] = '\0';
		if (at) {
			*at = hit;
			*end_of_data = end;
		}
		return true;
	}
	return false;
}

static bool rodata_token(const struct elf_object *o, const char *needle, char *out, size_t len)
{
	return rodata_token_at(o, needle, out, len, NULL, NULL);
}

static bool rodata_has(const struct elf_object *o, const char *needle)
{
	size_t size;
	const char *data = elfobj__section(o, ".rodata", &size);

	return data && memmem(data, size, needle, strlen(needle));
}

/*
 * The version a library reports about itself through a function returning a constant:
 * TBB_runtime_version() returns "2021.8", dnnl_version() a struct of three ints.
 */
static void constant_version(const struct elf_object *o, const char *func, bool ints, char *out,
			     size_t len)
{
	uint64_t at;
	int64_t imm;
	char s[24];
	int32_t v[3];

	if (elfobj__func_constant(o, func, &imm, &at) != 2)
		return;
	if (ints) {
		if (!elfobj__read_vaddr(o, at, v, sizeof(v)) && v[0] >= 0 && v[0] < 1000 &&
		    v[1] >= 0 && v[2] >= 0)
			snprintf(out, len, "%d.%d.%d", v[0], v[1], v[2]);
		return;
	}
	if (elfobj__read_vaddr(o, at, s, sizeof(s)))
		return;
	s[sizeof(s) - 1] = '\0';
	for (size_t i = 0; s[i]; i++)
		if (!isdigit((unsigned char)s[i]) && s[i] != '.')
			return;
	snprintf(out, len, "%s", s);
}

static void set_release(struct obj_role *r, const char *of, const char *release,
			enum release_from from)
{
	size_t n;

	if (!release || !release[0])
		return;
	/* @release may be r->version: a copy of bytes, not snprintf between members. */
	n = strnlen(release, sizeof(r->release) - 1);
	memmove(r->release, release, n);
	r->release[n] = '\0';
	snprintf(r->release_of, sizeof(r->release_of), "%s", of);
	r->release_from = (unsigned char)from;
}

/* The compilers .comment names: the GCC and clang that built the object (crt files included). */
static void comment_compilers(const struct elf_object *o, char *gcc, size_t gcclen, char *clang,
			      size_t clanglen)
{
	size_t size;
	const char *c = elfobj__section(o, ".comment", &size);

	gcc[0] = '\0';
	if (clang)
		clang[0] = '\0';
	if (c)
		roles__comment_compilers(c, size, gcc, gcclen, clang, clanglen);
}

/* GCC's runtimes: built by the GCC they ship with; else what their version nodes tell. */
static void gcc_release(const struct elf_object *o, struct obj_role *r)
{
	char gcc[32];

	comment_compilers(o, gcc, sizeof(gcc), NULL, 0);
	if (gcc[0]) {
		set_release(r, "GCC", gcc, RELEASE_COMMENT);
	} else if (r->impl == IMPL_LIBSTDCXX) {
		set_release(r, "GCC", roles__glibcxx_gcc(r->version), RELEASE_SYMVER);
	} else if (r->impl == IMPL_GNU_LIBGOMP) {
		const char *nodes[128];
		size_t n = 0;

		for (size_t i = 0; i < elfobj__n_verdefs(o) && n < 128; i++)
			nodes[n++] = elfobj__verdef(o, i);
		roles__libgomp_gcc(nodes, n, gcc, sizeof(gcc));
		set_release(r, "GCC", gcc, RELEASE_SYMVER);
	}
}

/* The library's own release: the version it reports is its release. */
static void own_release(struct obj_role *r, enum release_from from)
{
	if (!r->version[0])
		return;
	r->version_kind = VERSION_RELEASE;
	set_release(r, "", r->version, from);
}

/* The major version a SONAME carries ("libcudart.so.12" -> "12"), when it is @stem's. */
static void soname_release(const struct elf_object *o, struct obj_role *r, const char *stem,
			   const char *of)
{
	const char *so = elfobj__soname(o);
	size_t n = strlen(stem);
	char v[32];

	if (r->release[0] || !so || strncmp(so, stem, n) || !isdigit((unsigned char)so[n]))
		return;
	roles__version_at(so + n, so + strlen(so), v, sizeof(v));
	set_release(r, of, v, RELEASE_SONAME);
}

static struct obj_role *add(struct obj_roles *out, enum role_impl impl)
{
	struct obj_role *r;

	if (out->n >= OBJ_ROLES_MAX)
		return NULL;
	r = &out->r[out->n++];
	memset(r, 0, sizeof(*r));
	r->impl = impl;
	r->kind = impls[impl].kind;
	return r;
}

static void classify_openmp(const struct elf_object *o, const struct scan *s, struct obj_roles *out)
{
	struct obj_role *r;

	if (s->has[M_KMPC_FORK_CALL]) {
		/* libomp and libiomp5 share one code base; their banners tell them apart. */
		bool intel = rodata_has(o, "Intel(R) OMP") && !rodata_has(o, "LLVM OMP");

		r = add(out, intel ? IMPL_INTEL_LIBIOMP5 : IMPL_LLVM_LIBOMP);
		if (!r)
			return;
		/* "5.0.20140926": the OpenMP level and a date LLVM has not changed since 2014. */
		if (rodata_token(o, intel ? "Intel(R) OMP version: " : "LLVM OMP version: ",
				 r->version, sizeof(r->version)))
			r->version_kind = VERSION_KMP;
		if (!rodata_token(o,
				  intel ? "Intel(R) OMP API version: " : "LLVM OMP API version: ",
				  r->openmp, sizeof(r->openmp)))
			highest_verdef(o, "OMP_", r->openmp, sizeof(r->openmp));
		if (!intel) {
			char gcc[32], clang[32];

			/* LLVM builds libomp with the clang of its own release. */
			comment_compilers(o, gcc, sizeof(gcc), clang, sizeof(clang));
			if (clang[0])
				set_release(r, "LLVM", clang, RELEASE_COMMENT);
			else if (rodata_token(o, "LLVM OMP build compiler: Clang ", clang,
					      sizeof(clang)))
				set_release(r, "LLVM", clang, RELEASE_BUILD_COMPILER);
		}
	} else if (s->has[M_GOMP_PARALLEL]) {
		r = add(out, IMPL_GNU_LIBGOMP);
		if (!r)
			return;
		highest_verdef(o, "GOMP_", r->version, sizeof(r->version));
		if (r->version[0])
			r->version_kind = VERSION_NODE;
		highest_verdef(o, "OMP_", r->openmp, sizeof(r->openmp));
		gcc_release(o, r);
	}
}

static void classify_blas(const struct elf_object *o, const struct scan *s, struct obj_roles *out)
{
	struct obj_role *r = NULL;

	if (s->has[M_OPENBLAS_CONFIG]) {
		const char *cfg, *end;

		r = add(out, IMPL_OPENBLAS);
		/* The build's configuration, "OpenBLAS 0.3.21  USE64BITINT DYNAMIC_ARCH ...": keep
		 * what matters for pool clashes (64-bit ints). Other strings start "OpenBLAS : ". */
		if (r &&
		    rodata_token_at(o, "OpenBLAS ", r->version, sizeof(r->version), &cfg, &end) &&
		    memmem(cfg, strnlen(cfg, (size_t)(end - cfg)), "USE64BITINT", 11))
			snprintf(r->detail, sizeof(r->detail), "64-bit integers");
		if (r)
			own_release(r, RELEASE_RODATA);
	} else if (s->has[M_MKL_VERSION]) {
		/* "Intel(R) oneAPI Math Kernel Library Version 2023.1-Product Build 20230303". */
		r = add(out, IMPL_MKL);
		if (r &&
		    rodata_token(o, "Math Kernel Library Version ", r->version, sizeof(r->version)))
			own_release(r, RELEASE_RODATA);
	} else if (s->has[M_BLIS_VERSION]) {
		r = add(out, IMPL_BLIS);
		if (r) {
			constant_version(o, "bli_info_get_version_str", false, r->version,
					 sizeof(r->version));
			own_release(r, RELEASE_FUNCTION);
		}
	} else if (s->has[M_FLEXIBLAS]) {
		add(out, IMPL_FLEXIBLAS);
	} else if (s->has[M_CBLAS_DGEMM] || s->has[M_DGEMM]) {
		add(out, IMPL_OTHER_BLAS);
	} else if (s->has[M_DGETRF]) {
		/* LAPACK alone: it calls whichever BLAS the loader binds dgemm_ to. */
		add(out, IMPL_LAPACK);
	}
}

/*
 * The major version a GPU library's symbols are versioned with ("libcudart.so.12" -> "12"):
 * its version definitions keep the name a wheel's renamed copy (libcudart-8a0bfc3c.so.12) lost;
 * else its SONAME's.
 */
static void library_major(const struct elf_object *o, struct obj_role *r, const char *stem,
			  const char *of)
{
	size_t n = strlen(stem);
	char v[32];

	if (r->release[0])
		return;
	for (size_t i = 0; i < elfobj__n_verdefs(o); i++) {
		const char *d = elfobj__verdef(o, i);

		if (strncmp(d, stem, n) || !isdigit((unsigned char)d[n]))
			continue;
		/* The major alone: every CUDA 11 runtime's node is libcudart.so.11.0. */
		roles__version_at(d + n, d + strlen(d), v, sizeof(v));
		v[strcspn(v, ".")] = '\0';
		set_release(r, of, v, RELEASE_SYMVER);
		return;
	}
	soname_release(o, r, stem, of);
}

/*
 * The constant a version getter stores through its pointer argument, read off its code:
 * cudaRuntimeGetVersion(int *v) and cuDriverGetVersion(int *v) are "movl $imm32, (%rdi)",
 * after an endbr64 and a NULL test at most. False for any other shape.
 */
static bool stored_constant(const struct elf_object *o, const char *func, int32_t *out)
{
	unsigned char c[32];
	uint64_t at;
	size_t i = 0;

	if (elfobj__func_code(o, func, c, sizeof(c), &at))
		return false;
	if (!memcmp(c, "\xf3\x0f\x1e\xfa", 4)) /* endbr64 */
		i += 4;
	if (!memcmp(c + i, "\x48\x85\xff", 3) && (c[i + 3] == 0x74 || c[i + 3] == 0x75))
		i += 5; /* test %rdi,%rdi; je/jne rel8 */
	if (c[i] != 0xc7 || c[i + 1] != 0x07)
		return false;
	memcpy(out, c + i + 2, sizeof(*out));
	return *out > 0;
}

/* CUDA's version numbers: 12010 is 12.1 (cudaRuntimeGetVersion, cuDriverGetVersion). */
static void cuda_version_text(int32_t v, char *out, size_t len)
{
	snprintf(out, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* The string that follows the string @label in .rodata, when it is a version: ocl-icd's
 * "OpenCL ICD Loader\0" "2.3.1\0". */
static bool rodata_after(const struct elf_object *o, const char *label, char *out, size_t len)
{
	size_t size, n = strlen(label) + 1;
	const char *data = elfobj__section(o, ".rodata", &size);
	const char *hit;

	if (!data)
		return false;
	for (const char *p = data; (hit = memmem(p, size - (size_t)(p - data), label, n));
	     p = hit + 1) {
		const char *v = hit + n, *end = data + size;

		if (hit > data && hit[-1] != '\0')
			continue;
		while (v < end && !*v) /* alignment padding */
			v++;
		if (v < end && isdigit((unsigned char)*v)) {
			roles__version_at(v, end, out, len);
			return strchr(out, '.') != NULL;
		}
	}
	return false;
}

static void classify_cuda(const struct elf_object *o, const struct scan *s, struct obj_roles *out)
{
	struct obj_role *r;
	int32_t v;
	int64_t imm;
	uint64_t unused;
	char ver[32];

	/* libcuda's own SONAME major (1) is no CUDA's: the CUDA it provides is its getter's. */
	if (s->has[M_CU_MODULE_LOAD] && (r = add(out, IMPL_CUDA_DRIVER))) {
		if (stored_constant(o, "cuDriverGetVersion", &v)) {
			cuda_version_text(v, ver, sizeof(ver));
			set_release(r, "CUDA", ver, RELEASE_FUNCTION);
		}
	} else if (s->has[M_CUDA_MALLOC] && (r = add(out, IMPL_CUDA_RUNTIME))) {
		if (stored_constant(o, "cudaRuntimeGetVersion", &v)) {
			cuda_version_text(v, ver, sizeof(ver));
			set_release(r, "CUDA", ver, RELEASE_FUNCTION);
		}
		library_major(o, r, "libcudart.so.", "CUDA");
	}
	if (s->has[M_NVRTC] && (r = add(out, IMPL_NVRTC)))
		library_major(o, r, "libnvrtc.so.", "CUDA");
	if (s->has[M_NVJITLINK] && (r = add(out, IMPL_NVJITLINK)))
		library_major(o, r, "libnvJitLink.so.", "CUDA");
	if (s->has[M_CUBLAS] && (r = add(out, IMPL_CUBLAS)))
		library_major(o, r, "libcublas.so.", "");
	if (s->has[M_CUFFT] && (r = add(out, IMPL_CUFFT)))
		library_major(o, r, "libcufft.so.", "");
	if (s->has[M_CUSPARSE] && (r = add(out, IMPL_CUSPARSE)))
		library_major(o, r, "libcusparse.so.", "");
	if (s->has[M_NCCL]) {
		/* RCCL is NCCL's API built for ROCm: "RCCL version" is its banner. */
		bool rccl = rodata_has(o, "RCCL version");

		r = add(out, rccl ? IMPL_RCCL : IMPL_NCCL);
		/* "NCCL version 2.18.1+cuda12.1": its release and the CUDA it was built for. */
		if (r && rodata_token(o, rccl ? "RCCL version " : "NCCL version ", r->version,
				      sizeof(r->version))) {
			size_t size;
			const char *data = elfobj__section(o, ".rodata", &size);
			const char *b = data ? memmem(data, size, "NCCL version ", 13) : NULL;
			const char *cu =
				b ? memmem(b, strnlen(b, (size_t)(data + size - b)), "+cuda", 5) :
				    NULL;

			own_release(r, RELEASE_RODATA);
			if (cu) {
				roles__version_at(cu + 5, data + size, ver, sizeof(ver));
				snprintf(r->detail, sizeof(r->detail), "built for CUDA %s", ver);
			}
		}
		if (r)
			library_major(o, r, rccl ? "librccl.so." : "libnccl.so.", "");
	}
	if (s->has[M_CUDNN] && (r = add(out, IMPL_CUDNN))) {
		/* cudnnGetVersion() returns CUDNN_VERSION: 8902 is 8.9.2, 90100 is 9.1.0. */
		if (elfobj__func_constant(o, "cudnnGetVersion", &imm, &unused) == 1 && imm > 0) {
			if (imm >= 90000)
				snprintf(r->version, sizeof(r->version), "%d.%d.%d",
					 (int)(imm / 10000), (int)(imm % 10000 / 100),
					 (int)(imm % 100));
			else
				snprintf(r->version, sizeof(r->version), "%d.%d.%d",
					 (int)(imm / 1000), (int)(imm % 1000 / 100),
					 (int)(imm % 100));
			own_release(r, RELEASE_FUNCTION);
		}
		library_major(o, r, "libcudnn.so.", "");
	}
}

static void classify_gpu(const struct elf_object *o, const struct scan *s, struct obj_roles *out)
{
	struct obj_role *r;

	classify_cuda(o, s, out);
	/* HIP's symbols are versioned by release: hip_5.2 is the newest node of ROCm 5.2's. */
	if (s->has[M_HIP_MODULE_LOAD] && (r = add(out, IMPL_HIP))) {
		highest_verdef(o, "hip_", r->version, sizeof(r->version));
		if (r->version[0]) {
			r->version_kind = VERSION_NODE;
			set_release(r, "", r->version, RELEASE_SYMVER);
		}
		soname_release(o, r, "libamdhip64.so.", "");
	}
	if (s->has[M_ROCBLAS] && (r = add(out, IMPL_ROCBLAS)))
		library_major(o, r, "librocblas.so.", "");
	if (s->has[M_MIOPEN] && (r = add(out, IMPL_MIOPEN)))
		library_major(o, r, "libMIOpen.so.", "");
	/* An ICD loader exports the OpenCL API and reads the vendor files; an ICD driver is what
	 * it finds there (some drivers export the API too). */
	if (s->has[M_CL_ICD]) {
		bool pocl = rodata_has(o, "PoCL ") || rodata_has(o, "pocl ");

		r = add(out, pocl ? IMPL_POCL : IMPL_OPENCL_ICD);
		/* "OpenCL 3.0 PoCL 3.1+debian Linux, ..." */
		if (r && pocl &&
		    (rodata_token(o, "PoCL ", r->version, sizeof(r->version)) ||
		     rodata_token(o, "pocl ", r->version, sizeof(r->version))))
			own_release(r, RELEASE_RODATA);
	} else if (s->has[M_CL_PLATFORMS] && rodata_has(o, "OpenCL/vendors") &&
		   (r = add(out, IMPL_OPENCL_LOADER))) {
		char api[16] = "";

		/* ocl-icd's name and release: "OpenCL ICD Loader\0" "2.3.1\0". */
		if (rodata_after(o, "OpenCL ICD Loader", r->version, sizeof(r->version)))
			own_release(r, RELEASE_RODATA);
		highest_verdef(o, "OPENCL_", api, sizeof(api));
		if (api[0])
			snprintf(r->detail, sizeof(r->detail), "OpenCL %s", api);
		soname_release(o, r, "libOpenCL.so.", "");
	}
	if (s->has[M_ZE_LOADER] && (r = add(out, IMPL_LEVEL_ZERO)))
		library_major(o, r, "libze_loader.so.", "");
	else if (s->has[M_ZE_DRIVER])
		add(out, IMPL_LEVEL_ZERO_DRIVER);
}

static void roles__classify(const struct elf_object *o, struct obj_roles *out)
{
	struct scan s = { 0 };
	struct obj_role *r;

	memset(out, 0, sizeof(*out));
	elfobj__foreach_defined(o, ELFOBJ_DYNSYM, scan_symbol, &s);

	classify_openmp(o, &s, out);
	classify_blas(o, &s, out);
	if (s.has[M_STDCXX_IOS_INIT]) {
		r = add(out, IMPL_LIBSTDCXX);
		if (r) {
			highest_verdef(o, "GLIBCXX_", r->version, sizeof(r->version));
			if (r->version[0])
				r->version_kind = VERSION_NODE;
			gcc_release(o, r);
		}
	} else if (s.has[M_LIBCXX_COUT]) {
		add(out, IMPL_LIBCXX);
	}
	classify_gpu(o, &s, out);
	if (s.has[M_TBB] && (r = add(out, IMPL_TBB))) {
		constant_version(o, "TBB_runtime_version", false, r->version, sizeof(r->version));
		own_release(r, RELEASE_FUNCTION);
	}
	if (s.has[M_DNNL] && (r = add(out, IMPL_ONEDNN))) {
		constant_version(o, "dnnl_version", true, r->version, sizeof(r->version));
		own_release(r, RELEASE_FUNCTION);
	}
	if (s.has[M_PY_INITIALIZE]) {
		add(out, IMPL_PYTHON_INTERP);
	} else if (s.has[M_PYINIT]) {
		r = add(out, IMPL_PYTHON_EXT);
		if (r)
			snprintf(r->detail, sizeof(r->detail), "%s", s.pyinit);
	}
	/* musl's libc.so is its loader too: __dls3 is the loader's last start-up stage. */
	if (s.has[M_LIBC_START] && s.has[M_MUSL_DLS3]) {
		add(out, IMPL_MUSL);
		add(out, IMPL_MUSL_LDSO);
	} else if (s.has[M_LIBC_START]) {
		r = add(out, IMPL_GLIBC);
		if (r) {
			char rel[32];

			highest_verdef(o, "GLIBC_", r->version, sizeof(r->version));
			if (r->version[0])
				r->version_kind = VERSION_NODE;
			/* "GNU C Library (Debian GLIBC 2.36-9) stable release version 2.36." */
			if (rodata_token(o, "release version ", rel, sizeof(rel)))
				set_release(r, "", rel, RELEASE_RODATA);
		}
	}
	if (s.has[M_R_DEBUG])
		add(out, IMPL_GLIBC_RTLD);
}

/*
 * What is kept with each object (elfobj's annotation): computed once per file, and stored in the
 * persistent cache as these bytes (that cache is written by this one build of dlscope only).
 */
struct role_cache {
	/* Most objects have no role: they share no_roles, and the cache stays some 80 bytes
	 * (tcache's sizes) where a whole struct obj_roles took 1.1 KiB per object, 550 KiB and
	 * a tenth of libs' time for 500 of them. */
	const struct obj_roles *roles;
	int static_cxx; /* -1 not looked for yet, else roles__static_libstdcxx's answer */
	char gcc[64];
};

static const struct obj_roles no_roles;

/* @found kept with @c: shared when empty, else a copy. false: out of memory. */
static bool keep_roles(struct role_cache *c, const struct obj_roles *found)
{
	struct obj_roles *copy;

	if (!found->n) {
		c->roles = &no_roles;
		return true;
	}
	copy = malloc(sizeof(*copy));
	if (!copy)
		return false;
	*copy = *found;
	c->roles = copy;
	return true;
}

static void role_cache_free(void *p)
{
	struct role_cache *c = p;

	if (c && c->roles != &no_roles)
		free((void *)c->roles);
	free(c);
}

static bool terminated(const char *s, size_t len)
{
	return memchr(s, '\0', len) != NULL;
}

/* The bytes stored: what role_cache holds, with only the roles the object has. */
struct role_blob {
	int32_t static_cxx;
	uint32_t n;
	char gcc[64];
	struct obj_role r[];
};

static void store(const struct elf_object *o, const struct role_cache *c)
{
	size_t len = sizeof(struct role_blob) + c->roles->n * sizeof(struct obj_role);
	struct role_blob *b = calloc(1, len);

	if (!b)
		return;
	b->static_cxx = c->static_cxx;
	b->n = c->roles->n;
	memcpy(b->gcc, c->gcc, sizeof(b->gcc));
	memcpy(b->r, c->roles->r, c->roles->n * sizeof(struct obj_role));
	elfobj__cache_annotation(o, b, len);
	free(b);
}

/* Bytes from the cache file, checked as if hostile: any flaw means classifying again. The
 * roles into @roles, the rest into @c. */
static bool decode(const unsigned char *p, size_t len, struct role_cache *c,
		   struct obj_roles *roles)
{
	struct role_blob b;

	if (!p || len < sizeof(b))
		return false;
	memcpy(&b, p, sizeof(b));
	if (b.n > OBJ_ROLES_MAX || len != sizeof(b) + b.n * sizeof(struct obj_role) ||
	    b.static_cxx < -1 || b.static_cxx > 1 || !terminated(b.gcc, sizeof(b.gcc)))
		return false;
	memcpy(roles->r, p + sizeof(b), b.n * sizeof(struct obj_role));
	for (unsigned i = 0; i < b.n; i++) {
		const struct obj_role *r = &roles->r[i];

		if ((unsigned)r->kind >= ROLE__COUNT || (unsigned)r->impl >= IMPL__COUNT ||
		    impls[r->impl].kind != r->kind || !terminated(r->version, sizeof(r->version)) ||
		    !terminated(r->detail, sizeof(r->detail)) || r->version_kind > VERSION_KMP ||
		    r->release_from > RELEASE_SONAME ||
		    !terminated(r->release_of, sizeof(r->release_of)) ||
		    !terminated(r->release, sizeof(r->release)) ||
		    !terminated(r->openmp, sizeof(r->openmp)))
			return false;
	}
	roles->n = b.n;
	c->static_cxx = b.static_cxx;
	memcpy(c->gcc, b.gcc, sizeof(c->gcc));
	return true;
}

static bool load(const struct elf_object *o, struct role_cache *c, struct obj_roles *roles)
{
	size_t len;
	const unsigned char *p = elfobj__cached_annotation(o, &len);

	return decode(p, len, c, roles);
}

bool roles__from_blob(const void *blob, size_t len, struct obj_roles *out)
{
	struct role_cache c;

	out->n = 0;
	return decode(blob, len, &c, out);
}

static struct role_cache *cache_of(const struct elf_object *o)
{
	struct role_cache *c = elfobj__annotation(o, ELFOBJ_NOTE_ROLES);
	struct obj_roles found;

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	found.n = 0;
	if (!load(o, c, &found)) {
		memset(c, 0, sizeof(*c));
		c->static_cxx = -1;
		roles__classify(o, &found);
		if (!keep_roles(c, &found)) {
			free(c);
			return NULL;
		}
		store(o, c);
	} else if (!keep_roles(c, &found)) {
		free(c);
		return NULL;
	}
	elfobj__annotate(o, ELFOBJ_NOTE_ROLES, c, role_cache_free);
	return c;
}

const struct obj_roles *roles__of(const struct elf_object *o)
{
	struct role_cache *c = cache_of(o);

	return c ? c->roles : &no_roles;
}

/*
 * libstdc++'s own messages, each byte's case swapped: dlscope keeps them in its .rodata so, and
 * would otherwise find a copy of libstdc++ in itself (check of a dlscope process).
 */
static const char *const static_cxx_markers[] = { "LOCALE::_s_NORMALIZE_CATEGORY",
						  "_s_CREATE_C_LOCALE NAME NOT VALID" };

/* @marker (static_cxx_markers') as libstdc++ has it, into @buf. Returns its length. */
static size_t unswap_marker(const char *marker, char *buf, size_t len)
{
	static volatile char flip = 0x20; /* volatile: not folded back into a .rodata string */
	size_t n = 0;

	for (; marker[n] && n + 1 < len; n++)
		buf[n] = isalpha((unsigned char)marker[n]) ? marker[n] ^ flip : marker[n];
	buf[n] = '\0';
	return n;
}

static bool find_static_libstdcxx(const struct elf_object *o, char *gcc, size_t gcclen)
{
	const struct obj_role *r = obj_roles__find(roles__of(o), ROLE_CXX_RUNTIME);
	const char *data;
	bool found = false;
	char marker[64];
	size_t size;

	/* libstdc++ itself defines the GLIBCXX_ version nodes; a copy linked in does not. */
	for (size_t i = 0; i < elfobj__n_verdefs(o); i++)
		if (!strncmp(elfobj__verdef(o, i), "GLIBCXX_3.4", 11))
			return false;
	if (r && r->impl == IMPL_LIBSTDCXX) {
		found = true;
	} else {
		data = elfobj__section(o, ".rodata", &size);
		for (size_t i = 0; data && i < 2 && !found; i++)
			found = memmem(data, size, marker,
				       unswap_marker(static_cxx_markers[i], marker,
						     sizeof(marker))) != NULL;
	}
	if (found && gcc) {
		/* The copy's GCC: the newest that .comment names. */
		const char *c = elfobj__section(o, ".comment", &size);

		gcc[0] = '\0';
		if (c)
			roles__comment_compilers(c, size, gcc, gcclen, NULL, 0);
	}
	return found;
}

bool roles__static_libstdcxx(const struct elf_object *o, char *gcc, size_t gcclen)
{
	struct role_cache *c = cache_of(o);

	/* A scan of .rodata per object: the collector asks for every object it meets. */
	if (!c)
		return find_static_libstdcxx(o, gcc, gcclen);
	if (c->static_cxx < 0) {
		c->static_cxx = find_static_libstdcxx(o, c->gcc, sizeof(c->gcc));
		store(o, c);
	}
	if (gcc)
		snprintf(gcc, gcclen, "%s", c->static_cxx ? c->gcc : "");
	return c->static_cxx;
}

bool roles__blas_symbol(const char *name)
{
	size_t len = strlen(name);

	return !strncmp(name, "cblas_", 6) ||
	       (len >= 4 && len <= 8 && name[len - 1] == '_' && islower((unsigned char)name[0]) &&
		!memchr(name, '_', len - 1));
}
