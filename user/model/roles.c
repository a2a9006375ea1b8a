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

enum role_kind role_impl__kind(enum role_impl i)
{
	return impls[i].kind;
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
		if (r)
			rodata_token(o, intel ? "Intel(R) OMP version: " : "LLVM OMP version: ",
				     r->version, sizeof(r->version));
	} else if (s->has[M_GOMP_PARALLEL]) {
		r = add(out, IMPL_GNU_LIBGOMP);
		if (r)
			highest_verdef(o, "GOMP_", r->version, sizeof(r->version));
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
	} else if (s->has[M_MKL_VERSION]) {
		add(out, IMPL_MKL);
	} else if (s->has[M_BLIS_VERSION]) {
		add(out, IMPL_BLIS);
	} else if (s->has[M_FLEXIBLAS]) {
		add(out, IMPL_FLEXIBLAS);
	} else if (s->has[M_CBLAS_DGEMM] || s->has[M_DGEMM]) {
		add(out, IMPL_OTHER_BLAS);
	} else if (s->has[M_DGETRF]) {
		/* LAPACK alone: it calls whichever BLAS the loader binds dgemm_ to. */
		add(out, IMPL_LAPACK);
	}
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
		if (r)
			highest_verdef(o, "GLIBCXX_", r->version, sizeof(r->version));
	} else if (s.has[M_LIBCXX_COUT]) {
		add(out, IMPL_LIBCXX);
	}
	if (s.has[M_CU_MODULE_LOAD])
		add(out, IMPL_CUDA_DRIVER);
	else if (s.has[M_CUDA_MALLOC])
		add(out, IMPL_CUDA_RUNTIME);
	if (s.has[M_NVRTC])
		add(out, IMPL_NVRTC);
	if (s.has[M_CUBLAS])
		add(out, IMPL_CUBLAS);
	if (s.has[M_NCCL])
		add(out, IMPL_NCCL);
	if (s.has[M_CUDNN])
		add(out, IMPL_CUDNN);
	if (s.has[M_HIP_MODULE_LOAD])
		add(out, IMPL_HIP);
	if (s.has[M_TBB] && (r = add(out, IMPL_TBB)))
		constant_version(o, "TBB_runtime_version", false, r->version, sizeof(r->version));
	if (s.has[M_DNNL] && (r = add(out, IMPL_ONEDNN)))
		constant_version(o, "dnnl_version", true, r->version, sizeof(r->version));
	if (s.has[M_PY_INITIALIZE]) {
		add(out, IMPL_PYTHON_INTERP);
	} else if (s.has[M_PYINIT]) {
		r = add(out, IMPL_PYTHON_EXT);
		if (r)
			snprintf(r->detail, sizeof(r->detail), "%s", s.pyinit);
	}
	if (s.has[M_LIBC_START]) {
		r = add(out, IMPL_GLIBC);
		if (r)
			highest_verdef(o, "GLIBC_", r->version, sizeof(r->version));
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
		    !terminated(r->detail, sizeof(r->detail)))
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

void obj_role__describe(const struct obj_role *r, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s: %s", role_kind__label(r->kind), role_impl__name(r->impl));

	if (r->version[0] && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " %s", r->version);
	if (r->detail[0] && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " (%s)", r->detail);
}

json_t *obj_roles__to_json(const struct obj_roles *roles)
{
	json_t *arr = json_array();

	for (unsigned i = 0; arr && i < roles->n; i++) {
		const struct obj_role *r = &roles->r[i];

		json_array_append_new(
			arr,
			json_pack("{s:s, s:s, s:s, s:o, s:o, s:b}", "kind", role_kind__id(r->kind),
				  "impl", role_impl__id(r->impl), "name", role_impl__name(r->impl),
				  "version", r->version[0] ? json_string(r->version) : json_null(),
				  "detail", r->detail[0] ? json_string(r->detail) : json_null(),
				  "runtime", role_kind__is_runtime(r->kind)));
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
		/* The copy's GCC: the last "GCC: (...) X.Y.Z" of .comment. */
		const char *c = elfobj__section(o, ".comment", &size), *p, *best = NULL;

		gcc[0] = '\0';
		for (p = c; p && (p = memmem(p, size - (size_t)(p - c), "GCC: ", 5)); p += 5)
			best = p;
		if (best) {
			const char *end = memchr(best, '\0', size - (size_t)(best - c));
			const char *sp = end ? end : best;

			while (sp > best && sp[-1] != ' ')
				sp--;
			snprintf(gcc, gcclen, "%.*s", end ? (int)(end - sp) : 0, sp);
		}
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
