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

/* Exact names first, by their first letter so a 100k-symbol libtorch costs one switch each. */
static int scan_symbol(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct scan *s = ctx;

	switch (name[0]) {
	case 'G':
		if (!strcmp(name, "GOMP_parallel"))
			s->has[M_GOMP_PARALLEL] = true;
		break;
	case '_':
		if (!strcmp(name, "__kmpc_fork_call"))
			s->has[M_KMPC_FORK_CALL] = true;
		else if (!strcmp(name, "_ZNSt8ios_base4InitC1Ev"))
			s->has[M_STDCXX_IOS_INIT] = true;
		else if (!strcmp(name, "_ZNSt3__14coutE"))
			s->has[M_LIBCXX_COUT] = true;
		else if (!strcmp(name, "__libc_start_main"))
			s->has[M_LIBC_START] = true;
		else if (!strcmp(name, "_r_debug"))
			s->has[M_R_DEBUG] = true;
		break;
	case 'c':
		if (!strncmp(name, "cuModuleLoadData", 16))
			s->has[M_CU_MODULE_LOAD] = true;
		else if (!strcmp(name, "cudaMalloc"))
			s->has[M_CUDA_MALLOC] = true;
		else if (!strncmp(name, "cublasCreate", 12))
			s->has[M_CUBLAS] = true;
		else if (!strcmp(name, "cudnnCreate"))
			s->has[M_CUDNN] = true;
		else if (!strcmp(name, "cufftPlan1d"))
			s->has[M_CUFFT] = true;
		else if (!strcmp(name, "cusparseCreate"))
			s->has[M_CUSPARSE] = true;
		else if (!strcmp(name, "clGetPlatformIDs"))
			s->has[M_CL_PLATFORMS] = true;
		break;
	case 'r':
		if (!strcmp(name, "rocblas_create_handle"))
			s->has[M_ROCBLAS] = true;
		break;
	case 'z':
		if (!strcmp(name, "zelLoaderGetVersions"))
			s->has[M_ZE_LOADER] = true;
		else if (!strcmp(name, "zeGetDriverProcAddrTable"))
			s->has[M_ZE_DRIVER] = true;
		break;
	case 'd':
		if (!strcmp(name, "dgemm_"))
			s->has[M_DGEMM] = true;
		else if (!strcmp(name, "dgetrf_"))
			s->has[M_DGETRF] = true;
		else if (!strcmp(name, "dnnl_version"))
			s->has[M_DNNL] = true;
		break;
	case 'T':
		if (!strcmp(name, "TBB_runtime_interface_version"))
			s->has[M_TBB] = true;
		break;
	case 'm':
	case 'M':
		if (!strcmp(name, "mkl_get_version") || !strcmp(name, "MKL_Get_Version"))
			s->has[M_MKL_VERSION] = true;
		else if (!strcmp(name, "miopenCreate"))
			s->has[M_MIOPEN] = true;
		break;
	case 'b':
		if (!strcmp(name, "bli_info_get_version_str"))
			s->has[M_BLIS_VERSION] = true;
		break;
	case 'f':
		if (!strcmp(name, "flexiblas_get_version"))
			s->has[M_FLEXIBLAS] = true;
		break;
	case 'n':
		if (!strcmp(name, "nvrtcCompileProgram"))
			s->has[M_NVRTC] = true;
		else if (!strcmp(name, "nvJitLinkCreate"))
			s->has[M_NVJITLINK] = true;
		else if (!strcmp(name, "ncclCommInitRank"))
			s->has[M_NCCL] = true;
		break;
	case 'h':
		if (!strcmp(name, "hipModuleLoadData"))
			s->has[M_HIP_MODULE_LOAD] = true;
		break;
	case 'P':
		if (!strcmp(name, "Py_Initialize"))
			s->has[M_PY_INITIALIZE] = true;
		else if (!strncmp(name, "PyInit_", 7) && GELF_ST_TYPE(sym->st_info) == STT_FUNC) {
			s->has[M_PYINIT] = true;
			snprintf(s->pyinit, sizeof(s->pyinit), "%s", name + 7);
		}
		break;
	}
	/* Vendored BLAS copies rename with prefixes and suffixes: scipy_openblas_get_config64_. */
	if (strstr(name, "openblas_get_config"))
		s->has[M_OPENBLAS_CONFIG] = true;
	else if (strstr(name, "cblas_dgemm"))
		s->has[M_CBLAS_DGEMM] = true;
	else if (strstr(name, "IcdGetPlatformIDsKHR"))
		s->has[M_CL_ICD] = true;
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
static bool rodata_token(const struct elf_object *o, const char *needle, char *out, size_t len)
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
		return true;
	}
	return false;
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

/* The next "X.Y.Z" at @p (digits and dots, at most @len - 1), or "". */
static void version_at(const char *p, const char *end, char *out, size_t len)
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
			version_at(p, e, v, sizeof(v));
			if (strchr(v, '.'))
				keep_newest(gcc, gcclen, v);
		}
		/* "Debian clang version 14.0.6", "clang version 17.0.6 (https://...)". */
		if (clang && (p = memmem(s, (size_t)(e - s), "clang version ", 14))) {
			version_at(p + 14, e, v, sizeof(v));
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
	version_at(so + n, so + strlen(so), v, sizeof(v));
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
		r = add(out, IMPL_OPENBLAS);
		if (r && rodata_token(o, "OpenBLAS ", r->version, sizeof(r->version))) {
			size_t size;
			const char *data = elfobj__section(o, ".rodata", &size);
			const char *cfg = data ? memmem(data, size, "OpenBLAS ", 9) : NULL;

			/* Keep the build options that matter for pool clashes (64-bit ints). */
			if (cfg && memmem(cfg, strnlen(cfg, (size_t)(data + size - cfg)),
					  "USE64BITINT", 11))
				snprintf(r->detail, sizeof(r->detail), "64-bit integers");
		}
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
		version_at(d + n, d + strlen(d), v, sizeof(v));
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
			version_at(v, end, out, len);
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
				version_at(cu + 5, data + size, ver, sizeof(ver));
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
	if (s.has[M_LIBC_START]) {
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
	struct obj_roles roles;
	int static_cxx; /* -1 not looked for yet, else roles__static_libstdcxx's answer */
	char gcc[64];
};

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
	size_t len = sizeof(struct role_blob) + c->roles.n * sizeof(struct obj_role);
	struct role_blob *b = calloc(1, len);

	if (!b)
		return;
	b->static_cxx = c->static_cxx;
	b->n = c->roles.n;
	memcpy(b->gcc, c->gcc, sizeof(b->gcc));
	memcpy(b->r, c->roles.r, c->roles.n * sizeof(struct obj_role));
	elfobj__cache_annotation(o, b, len);
	free(b);
}

/* Bytes from the cache file, checked as if hostile: any flaw means classifying again. */
static bool load(const struct elf_object *o, struct role_cache *c)
{
	struct role_blob b;
	size_t len;
	const unsigned char *p = elfobj__cached_annotation(o, &len);

	if (!p || len < sizeof(b))
		return false;
	memcpy(&b, p, sizeof(b));
	if (b.n > OBJ_ROLES_MAX || len != sizeof(b) + b.n * sizeof(struct obj_role) ||
	    b.static_cxx < -1 || b.static_cxx > 1 || !terminated(b.gcc, sizeof(b.gcc)))
		return false;
	memcpy(c->roles.r, p + sizeof(b), b.n * sizeof(struct obj_role));
	for (unsigned i = 0; i < b.n; i++) {
		const struct obj_role *r = &c->roles.r[i];

		if ((unsigned)r->kind >= ROLE__COUNT || (unsigned)r->impl >= IMPL__COUNT ||
		    impls[r->impl].kind != r->kind || !terminated(r->version, sizeof(r->version)) ||
		    !terminated(r->detail, sizeof(r->detail)) || r->version_kind > VERSION_KMP ||
		    r->release_from > RELEASE_SONAME ||
		    !terminated(r->release_of, sizeof(r->release_of)) ||
		    !terminated(r->release, sizeof(r->release)) ||
		    !terminated(r->openmp, sizeof(r->openmp)))
			return false;
	}
	c->roles.n = b.n;
	c->static_cxx = b.static_cxx;
	memcpy(c->gcc, b.gcc, sizeof(c->gcc));
	return true;
}

static struct role_cache *cache_of(const struct elf_object *o)
{
	struct role_cache *c = elfobj__annotation(o, ELFOBJ_NOTE_ROLES);

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (!load(o, c)) {
		memset(c, 0, sizeof(*c));
		c->static_cxx = -1;
		roles__classify(o, &c->roles);
		store(o, c);
	}
	elfobj__annotate(o, ELFOBJ_NOTE_ROLES, c, free);
	return c;
}

const struct obj_roles *roles__of(const struct elf_object *o)
{
	static const struct obj_roles none;
	struct role_cache *c = cache_of(o);

	return c ? &c->roles : &none;
}

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

static bool find_static_libstdcxx(const struct elf_object *o, char *gcc, size_t gcclen)
{
	static const char *markers[] = { "locale::_S_normalize_category",
					 "_S_create_c_locale name not valid" };
	const struct obj_role *r = obj_roles__find(roles__of(o), ROLE_CXX_RUNTIME);
	const char *data;
	bool found = false;
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
			found = memmem(data, size, markers[i], strlen(markers[i])) != NULL;
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
