// SPDX-License-Identifier: GPL-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "array.h"
#include "arch.h"
#include "elfobj.h"
#include "libgraph.h"
#include "pkgindex.h"
#include "procfs.h"
#include "runtimes.h"
#include "target.h"
#include "threadscan.h"
#include "tls.h"

/* Is @b in the DT_NEEDED closure of @a? */
static bool depends_on(const struct libgraph *g, unsigned int a, unsigned int b, bool *seen)
{
	const struct lg_object *o = g->objs[a];

	if (seen[a])
		return false;
	seen[a] = true;
	for (size_t i = 0; i < o->n_children; i++)
		if (o->children[i] == b || depends_on(g, o->children[i], b, seen))
			return true;
	return false;
}

static bool needs(const struct libgraph *g, unsigned int a, unsigned int b)
{
	bool *seen = calloc(g->n ? g->n : 1, sizeof(*seen));
	bool r;

	if (!seen)
		return false;
	r = depends_on(g, a, b, seen);
	free(seen);
	return r;
}

/*
 * The runtime of kind @kind whose pool thread @ti is, or UINT32_MAX: the object its start routine
 * lies in when that is such a runtime (its pool started it; the same whether the thread computes
 * or sleeps now), else the outermost frame of that kind on its stack. A running thread has no
 * stack read, so without glibc's thread list (a static program) it is nobody's.
 */
static unsigned int pool_owner(const struct libgraph *g, const struct thread_info *ti,
			       enum role_kind kind)
{
	if (ti->start_obj < g->n && obj_roles__find(lg_object__roles(g->objs[ti->start_obj]), kind))
		return ti->start_obj;
	for (size_t k = 0; k < ti->n_frames; k++)
		if (obj_roles__find(lg_object__roles(g->objs[ti->frames[k].obj]), kind))
			return ti->frames[k].obj;
	return UINT32_MAX;
}

/* The pool threads of @obj into @r: how many, and how many of them /proc says are running. */
static void pool_threads(const struct libgraph *g, const struct threadscan *ts, pid_t main_tid,
			 unsigned int obj, enum role_kind kind, struct runtime *r)
{
	r->pool_threads = r->pool_running = -1;
	if (!ts)
		return;
	r->pool_threads = r->pool_running = 0;
	for (size_t i = 0; i < ts->n; i++) {
		const struct thread_info *ti = &ts->t[i];

		if (ti->tid == main_tid || pool_owner(g, ti, kind) != obj)
			continue;
		r->pool_threads++;
		r->pool_running += ti->state == 'R';
	}
}

/* Names GPU runtimes give their threads (pthread_setname_np), the longest prefix first. */
static const struct {
	const char *prefix, *what;
} gpu_threads[] = {
	{ "cuda-EvtHandlr", "the CUDA driver's event handler thread" },
	{ "cuda-", "a CUDA driver thread" },
	{ "NCCL Service", "NCCL's proxy service thread" },
	{ "NCCL Progress", "NCCL's proxy progress thread" },
	{ "NCCL", "an NCCL thread" },
	{ "pt_nccl_watchdg", "PyTorch's NCCL watchdog (ProcessGroupNCCL)" },
	{ "pt_nccl_heartbt", "PyTorch's NCCL heartbeat monitor (ProcessGroupNCCL)" },
	{ "hip", "a HIP runtime thread" },
};

bool runtimes__gpu_thread(const struct libgraph *g, const struct thread_info *ti, char *buf,
			  size_t len)
{
	const struct obj_role *r;
	char label[160];

	for (size_t i = 0; i < sizeof(gpu_threads) / sizeof(gpu_threads[0]); i++)
		if (!strncmp(ti->comm, gpu_threads[i].prefix, strlen(gpu_threads[i].prefix))) {
			snprintf(buf, len, "%s", gpu_threads[i].what);
			return true;
		}
	if (!g || ti->start_obj >= g->n ||
	    !(r = obj_roles__find(lg_object__roles(g->objs[ti->start_obj]), ROLE_CUDA)))
		return false;
	obj_role__label(r, label, sizeof(label));
	snprintf(buf, len, "started by %s (%s)", label,
		 lg_object__basename(g->objs[ti->start_obj]));
	return true;
}

struct sym_lookup {
	const char *name;
	uint64_t value;
	bool found;
};

static int match_object(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct sym_lookup *l = ctx;

	if (GELF_ST_TYPE(sym->st_info) != STT_OBJECT || strcmp(name, l->name))
		return 0;
	l->value = sym->st_value;
	l->found = true;
	return 1;
}

/* An int variable the library exports, read live from the target. */
static bool read_exported_int(const struct target *t, const struct lg_object *o, const char *name,
			      int *out)
{
	struct sym_lookup l = { .name = name };

	if (!t || !o->elf)
		return false;
	elfobj__foreach_defined(o->elf, ELFOBJ_DYNSYM, match_object, &l);
	return l.found && !target__read(t, o->base + l.value, out, sizeof(*out));
}

/* CPUs in a "0-3,8,10-11" list (/proc/PID/status Cpus_allowed_list). */
static int count_cpu_list(const char *s)
{
	int n = 0;

	while (*s && !isspace((unsigned char)*s)) {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			return 0;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		n += b >= a ? (int)(b - a + 1) : 0;
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

/*
 * OpenMP's nthreads-var when the program has not changed it: the first value of
 * OMP_NUM_THREADS, else the CPUs the process may run on (what libgomp and libomp start with).
 */
static void openmp_threads(const struct target *t, struct runtime *r)
{
	char buf[64], cpus[4096];
	long v;

	if (!target__getenv(t, "OMP_NUM_THREADS", buf, sizeof(buf)) &&
	    (v = strtol(buf, NULL, 10)) > 0) {
		r->num_threads = (int)v;
		r->num_threads_from = "default, OMP_NUM_THREADS";
		return;
	}
	if (proc__status_field(t->pid, 0, "Cpus_allowed_list", cpus, sizeof(cpus)))
		return;
	if ((v = count_cpu_list(cpus)) > 0) {
		r->num_threads = (int)v;
		r->num_threads_from = "default, CPU affinity";
	}
}

/*
 * libgomp's omp_get_max_threads() in thread @tid, read the way the function itself reads it.
 * GCC's libgomp compiles it to: load the TPOFF of gomp_tls_data from the GOT, load the
 * thread's task (%fs:task_off), and return task->icv.nthreads_var, or gomp_global_icv's when
 * the thread has no task. The offsets are taken from that code; any other shape is left alone.
 */
static bool libgomp_max_threads(const struct libgraph *g, const struct target *t,
				const struct lg_object *o, pid_t tid, int *out)
{
	unsigned char c[48];
	struct arch_libgomp_icv d;
	uint64_t entry, tp, tpoff, task, icv;
	uint32_t v;

	if (!o->elf || elfobj__func_code(o->elf, "omp_get_max_threads", c, sizeof(c), &entry) ||
	    !arch_decode_libgomp_max_threads(c, sizeof(c), entry, &d))
		return false;
	if (target__read(t, o->base + d.got_slot, &tpoff, sizeof(tpoff)))
		return false;
	if (tls__thread_pointer(t, g, tid, &tp) ||
	    target__read(t, tp + tpoff + (uint64_t)d.task_off, &task, sizeof(task)))
		return false;
	icv = task ? task + (uint64_t)d.icv_off : o->base + d.global;
	if (target__read(t, icv, &v, sizeof(v)) || !v || v > 1u << 20)
		return false;
	*out = (int)v;
	return true;
}

static void live_values(const struct libgraph *g, const struct target *t, struct runtime *r)
{
	const struct lg_object *o = g->objs[r->obj];
	int64_t par;
	uint64_t unused;
	int v;

	switch (r->role.impl) {
	case IMPL_OPENBLAS:
		/* openblas_get_parallel() is a constant: 0 sequential, 1 pthreads, 2 OpenMP. */
		if (o->elf &&
		    elfobj__func_constant(o->elf, "openblas_get_parallel", &par, &unused) == 1)
			snprintf(r->threading, sizeof(r->threading), "%s",
				 par == 2 ? "openmp" :
				 par == 1 ? "pthreads" :
					    "disabled");
		/* What openblas_get_num_threads() returns. */
		if (read_exported_int(t, o, "blas_cpu_number", &v) && v > 0) {
			r->num_threads = v;
			r->num_threads_from = "OpenBLAS's blas_cpu_number";
		}
		break;
	case IMPL_GNU_LIBGOMP:
		/* What the main thread's next parallel region gets, omp_set_num_threads included. */
		if (t && libgomp_max_threads(g, t, o, t->pid, &v)) {
			r->num_threads = v;
			r->num_threads_from = "omp_get_max_threads() on the main thread";
			break;
		}
		/* fall through */
	case IMPL_LLVM_LIBOMP:
	case IMPL_INTEL_LIBIOMP5:
		if (t)
			openmp_threads(t, r);
		break;
	default: break;
	}
}

/*
 * The file behind the link-map name, as the target sees it: resolved inside the target's root
 * (RESOLVE_IN_ROOT), so a container's absolute links (/etc/alternatives/...) resolve in the
 * container, then named by the descriptor's path relative to that root.
 */
static char *real_path(const struct target *t, const struct lg_object *o)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT };
	char link[64], real[PATH_MAX], root[PATH_MAX];
	ssize_t n, rn;
	int fd;

	if (!t || t->root_fd < 0)
		return realpath(o->path, NULL) ?: strdup(o->path);
	fd = (int)syscall(SYS_openat2, t->root_fd, o->path, &how, sizeof(how));
	if (fd < 0)
		return strdup(o->path);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, real, sizeof(real) - 1);
	close(fd);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", t->root_fd);
	rn = readlink(link, root, sizeof(root) - 1);
	if (n <= 0 || rn <= 0)
		return strdup(o->path);
	real[n] = root[rn] = '\0';
	return strdup(rn > 1 ? proc__path_in_root(root, real) : real);
}

/* Does the first line of vendor file @file (in directory @dir) name object @o? */
static bool names_object(int dir, const char *file, const struct lg_object *o, const char *real)
{
	char line[PATH_MAX];
	const char *so = o->elf ? elfobj__soname(o->elf) : NULL;
	const char *base = strrchr(o->path, '/');
	size_t n;
	int fd = openat(dir, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t got;

	if (fd < 0)
		return false;
	got = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (got <= 0)
		return false;
	line[got] = '\0';
	n = strcspn(line, "\r\n");
	while (n && isspace((unsigned char)line[n - 1]))
		n--;
	line[n] = '\0';
	if (!n)
		return false;
	/* A path is opened as such; a bare name is found by the loader's search. */
	if (strchr(line, '/'))
		return !strcmp(line, o->path) || (real && !strcmp(line, real));
	base = base ? base + 1 : o->path;
	real = real && strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
	return !strcmp(line, base) || (so && !strcmp(line, so)) || (real && !strcmp(line, real));
}

/*
 * The vendor file that made the OpenCL ICD loader load driver @o: a *.icd file of
 * OCL_ICD_VENDORS (a directory, as ocl-icd reads it) or else /etc/OpenCL/vendors, in the
 * target's root, whose line names the driver. NULL when none does.
 */
static char *vendor_file(const struct target *t, const struct lg_object *o, const char *real)
{
	char env[PATH_MAX] = "", dirpath[PATH_MAX * 2], *found = NULL;
	const char *dirname = "/etc/OpenCL/vendors";
	struct dirent *de;
	DIR *d;
	int fd;

	if (t && !target__getenv(t, "OCL_ICD_VENDORS", env, sizeof(env)) && env[0] == '/')
		dirname = env;
	if (t)
		proc__file_path(dirpath, sizeof(dirpath), t->pid, dirname);
	else
		snprintf(dirpath, sizeof(dirpath), "%s", dirname);
	d = opendir(dirpath);
	if (!d)
		return NULL;
	fd = dirfd(d);
	while (!found && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n > 4 && !strcmp(de->d_name + n - 4, ".icd") &&
		    names_object(fd, de->d_name, o, real) &&
		    asprintf(&found, "%s/%s", dirname, de->d_name) < 0)
			found = NULL;
	}
	closedir(d);
	return found;
}

static int push(struct runtime_list *l, size_t *cap, const struct runtime *r)
{
	if (l->n == *cap) {
		if (ARRAY_GROW(l->r, *cap, 16))
			return -ENOMEM;
	}
	l->r[l->n++] = *r;
	return 0;
}

/*
 * A front forwards to another object of its kind: that one is the runtime, it its front. Only
 * BLAS/LAPACK and OpenMP have fronts; GPU libraries needing each other (cuBLAS needs cudart)
 * are different runtimes that work together.
 */
static bool front_of_another(const struct libgraph *g, unsigned int id, enum role_kind kind,
			     unsigned int *target)
{
	if (kind != ROLE_BLAS && kind != ROLE_OPENMP)
		return false;
	for (size_t j = 0; j < g->n; j++) {
		const struct lg_object *o = g->objs[j];

		if (j == id || o->gone || !obj_roles__find(lg_object__roles(o), kind))
			continue;
		if (needs(g, id, (unsigned int)j)) {
			*target = (unsigned int)j;
			return true;
		}
	}
	return false;
}

/* The object that implements what @id fronts for (itself when it is no front). */
static unsigned int implementation(const struct libgraph *g, unsigned int id, enum role_kind kind)
{
	unsigned int to;

	for (unsigned int hops = 0; hops < 8 && front_of_another(g, id, kind, &to); hops++)
		id = to;
	return id;
}

bool runtimes__is_front(const struct libgraph *g, unsigned int id, enum role_kind kind)
{
	return implementation(g, id, kind) != id;
}

int runtimes__front_of(const struct libgraph *g, unsigned int id)
{
	const struct obj_roles *r = lg_object__roles(g->objs[id]);

	for (unsigned k = 0; k < r->n; k++) {
		unsigned int impl = implementation(g, id, r->r[k].kind);

		if (impl != id)
			return (int)impl;
	}
	return -1;
}

void runtimes__describe_role(const struct libgraph *g, unsigned int id, unsigned int k, char *buf,
			     size_t len)
{
	const struct obj_role *r = &lg_object__roles(g->objs[id])->r[k];
	unsigned int impl = implementation(g, id, r->kind);
	const struct obj_role *ir;
	char label[256];

	if (impl == id || !(ir = obj_roles__find(lg_object__roles(g->objs[impl]), r->kind))) {
		obj_role__describe(r, buf, len);
		return;
	}
	obj_role__label(ir, label, sizeof(label));
	snprintf(buf, len, "%s: front of %s (%s)", role_kind__label(r->kind),
		 lg_object__basename(g->objs[impl]), label);
}

/* A libstdc++ linked into @o, as a role: released with the GCC its .comment names. */
static bool static_cxx_role(const struct lg_object *o, struct obj_role *r)
{
	if (!o->elf || !roles__static_libstdcxx(o->elf, NULL, 0))
		return false;
	*r = (struct obj_role){ .kind = ROLE_CXX_RUNTIME, .impl = IMPL_LIBSTDCXX };
	roles__static_libstdcxx(o->elf, r->release, sizeof(r->release));
	if (r->release[0]) {
		snprintf(r->release_of, sizeof(r->release_of), "GCC");
		r->release_from = RELEASE_COMMENT;
	}
	return true;
}

json_t *runtimes__roles_json(const struct libgraph *g, unsigned int id)
{
	const struct obj_roles *r = lg_object__roles(g->objs[id]);
	struct obj_roles copy = { .n = 1 };
	json_t *arr = obj_roles__to_json(r), *v;
	size_t i;

	json_array_foreach (arr, i, v) {
		unsigned int impl = i < r->n ? implementation(g, id, r->r[i].kind) : id;

		if (impl != id)
			json_object_set_new(v, "front_of", json_string(g->objs[impl]->path));
	}
	/* A libstdc++ linked into the object: the C++ runtime of its own that check counts. */
	if (arr && !obj_roles__find(r, ROLE_CXX_RUNTIME) &&
	    static_cxx_role(g->objs[id], &copy.r[0])) {
		json_t *one = obj_roles__to_json(&copy);

		v = json_array_get(one, 0);
		if (v) {
			json_object_set_new(v, "static", json_true());
			json_array_append(arr, v);
		}
		json_decref(one);
	}
	return arr;
}

void runtimes__group(const struct rt_ref *refs, size_t n, size_t *owner)
{
	for (size_t i = 0; i < n; i++) {
		owner[i] = i;
		if (refs[i].impl == refs[i].self)
			continue;
		/* A front: the runtime of its kind on the object it forwards to. */
		for (size_t j = 0; j < n; j++)
			if (refs[j].kind == refs[i].kind && refs[j].self == refs[i].impl &&
			    refs[j].impl == refs[j].self) {
				owner[i] = j;
				break;
			}
	}
}

/*
 * Every runtime role of every object (of kind @only when >= 0), each with the object it forwards
 * to: @*refs and @*rs, @*n of them, grown here (kept for the caller to free, also on -ENOMEM).
 */
static int gather_roles(const struct libgraph *g, int only, struct rt_ref **refs,
			struct runtime **rs, size_t *n)
{
	size_t cap_refs = 0, cap_rs = 0;

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		const struct obj_roles *roles = lg_object__roles(o);
		bool cxx = false;

		if (o->gone)
			continue;
		for (unsigned k = 0; k <= roles->n; k++) {
			struct runtime r = { .obj = o->id,
					     .num_threads = -1,
					     .pool_threads = -1,
					     .pool_running = -1 };

			if (k < roles->n) {
				r.role = roles->r[k];
				if (!role_kind__is_runtime(r.role.kind))
					continue;
				cxx |= r.role.kind == ROLE_CXX_RUNTIME;
			} else {
				/* A libstdc++ linked into an extension is a C++ runtime of its own. */
				if (cxx || (only >= 0 && only != ROLE_CXX_RUNTIME) ||
				    !static_cxx_role(o, &r.role))
					continue;
				r.static_copy = true;
			}
			if (only >= 0 && r.role.kind != (enum role_kind)only)
				continue;
			if ((*n == cap_refs && ARRAY_GROW(*refs, cap_refs, 16)) ||
			    (*n == cap_rs && ARRAY_GROW(*rs, cap_rs, 16)))
				return -ENOMEM;
			(*refs)[*n] = (struct rt_ref){
				.kind = r.role.kind,
				.self = o->id,
				.impl = r.static_copy ? o->id :
							implementation(g, o->id, r.role.kind)
			};
			(*rs)[(*n)++] = r;
		}
	}
	return 0;
}

/*
 * The runtimes of @rs (those that own themselves in @owner) into @out, with their live values;
 * @at[i] is where runtime i went.
 */
static int list_runtimes(const struct libgraph *g, const struct target *t,
			 const struct threadscan *ts, struct runtime *rs, const size_t *owner,
			 size_t *at, size_t n, struct runtime_list *out)
{
	size_t rcap = 0;

	for (size_t i = 0; i < n; i++) {
		struct runtime *r = &rs[i];
		const struct lg_object *o = g->objs[r->obj];

		if (owner[i] != i)
			continue;
		if (!r->static_copy) {
			pool_threads(g, ts, t ? t->pid : 0, o->id, r->role.kind, r);
			live_values(g, t, r);
		}
		r->real_path = real_path(t, o);
		if (r->real_path && (r->role.impl == IMPL_POCL || r->role.impl == IMPL_OPENCL_ICD))
			r->vendor_file = vendor_file(t, o, r->real_path);
		if (!r->real_path || push(out, &rcap, r)) {
			free(r->real_path);
			free(r->vendor_file);
			return -ENOMEM;
		}
		at[i] = out->n - 1;
	}
	return 0;
}

/* The inventory, or with @only >= 0 its runtimes of that kind alone (no other kind's cost). */
static int collect(const struct libgraph *g, const struct target *t, const struct threadscan *ts,
		   int only, struct runtime_list *out)
{
	struct rt_ref *refs = NULL;
	struct runtime *rs = NULL;
	size_t n = 0, *owner = NULL, *at = NULL;

	memset(out, 0, sizeof(*out));
	if (gather_roles(g, only, &refs, &rs, &n))
		goto nomem;
	owner = calloc(n ? n : 1, sizeof(*owner));
	at = calloc(n ? n : 1, sizeof(*at));
	if (!owner || !at)
		goto nomem;
	runtimes__group(refs, n, owner);
	/* The runtimes, with their live values; then each front with its runtime. */
	if (list_runtimes(g, t, ts, rs, owner, at, n, out))
		goto nomem;
	for (size_t i = 0; i < n; i++) {
		struct runtime *r;

		if (owner[i] == i)
			continue;
		r = &out->r[at[owner[i]]];
		if (ARRAY_PUSH(r->fronts, r->n_fronts, r->cap_fronts, rs[i].obj))
			goto nomem;
	}
	free(refs);
	free(rs);
	free(owner);
	free(at);
	return 0;
nomem:
	free(refs);
	free(rs);
	free(owner);
	free(at);
	runtimes__free(out);
	return -ENOMEM;
}

int runtimes__collect(const struct libgraph *g, const struct target *t, const struct threadscan *ts,
		      struct runtime_list *out)
{
	return collect(g, t, ts, -1, out);
}

int runtimes__collect_kind(const struct libgraph *g, enum role_kind kind, struct runtime_list *out)
{
	return collect(g, NULL, NULL, (int)kind, out);
}

void runtimes__free(struct runtime_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->r[i].real_path);
		free(l->r[i].vendor_file);
		free(l->r[i].fronts);
	}
	free(l->r);
	memset(l, 0, sizeof(*l));
}

size_t runtimes__of_kind(const struct runtime_list *l, enum role_kind k, size_t *idx, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++)
		if (l->r[i].role.kind == k) {
			if (n < max)
				idx[n] = i;
			n++;
		}
	return n;
}

/* Kinds in display order: the ones that must be alone first. */
static const enum role_kind kind_order[] = { ROLE_OPENMP, ROLE_BLAS,   ROLE_CXX_RUNTIME,
					     ROLE_TBB,	  ROLE_ONEDNN, ROLE_CUDA };

static void describe(const struct runtime *r, const struct libgraph *g, char *buf, size_t len)
{
	const struct lg_object *o = g->objs[r->obj];
	size_t used;

	obj_role__label(&r->role, buf, len);
	used = strlen(buf);
	if (r->static_copy)
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0,
					 ", linked statically into %s", o->path);
	else
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0, ": %s", o->path);
	if (!r->static_copy && r->real_path && strcmp(r->real_path, o->path))
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0, " -> %s",
					 r->real_path);
	if (r->threading[0])
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0, ", threading %s",
					 r->threading);
	if (r->num_threads > 0)
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0,
					 ", %d thread%s (%s)", r->num_threads,
					 r->num_threads == 1 ? "" : "s", r->num_threads_from);
	if (r->pool_threads >= 0 && role_kind__is_runtime(r->role.kind) &&
	    (r->role.kind == ROLE_OPENMP || r->role.kind == ROLE_BLAS || r->role.kind == ROLE_TBB))
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0,
					 ", %d pool thread%s (%d running)", r->pool_threads,
					 r->pool_threads == 1 ? "" : "s", r->pool_running);
	if (r->vendor_file && used < len)
		used += (size_t)snprintf(buf + used, len - used, "; named by %s", r->vendor_file);
	for (size_t f = 0; f < r->n_fronts && used < len; f++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", f ? ", " : "; front: ",
					 lg_object__basename(g->objs[r->fronts[f]]));
	if (o->pkg && used < len) {
		char pkg[256];

		pkg_owner__describe(o->pkg, pkg, sizeof(pkg));
		snprintf(buf + used, len - used, "; package %s", pkg);
	}
}

void runtimes__print(const struct runtime_list *l, const struct libgraph *g, const char *indent,
		     FILE *f)
{
	char line[PATH_MAX * 2 + 512];

	/* Kinds with more than one runtime first: they are what a reader looks for. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t k = 0; k < sizeof(kind_order) / sizeof(kind_order[0]); k++) {
			size_t n = runtimes__of_kind(l, kind_order[k], NULL, 0);

			if (!n || (pass == 0) != (n > 1 && kind_order[k] != ROLE_CUDA))
				continue;
			for (size_t i = 0; i < l->n; i++) {
				if (l->r[i].role.kind != kind_order[k])
					continue;
				describe(&l->r[i], g, line, sizeof(line));
				fprintf(f, "%s%-14s %s%s\n", indent,
					role_kind__label(kind_order[k]), line,
					pass == 0 ? "  [more than one]" : "");
			}
		}
}

json_t *runtimes__to_json(const struct runtime_list *l, const struct libgraph *g)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < l->n; i++) {
		const struct runtime *r = &l->r[i];
		const struct lg_object *o = g->objs[r->obj];
		json_t *fronts = json_array(), *one;

		for (size_t f = 0; fronts && f < r->n_fronts; f++)
			json_array_append_new(fronts, json_string(g->objs[r->fronts[f]]->path));
		one = json_pack(
			"{s:s, s:s, s:s, s:s?, s:I, s:s, s:s?, s:b, s:s?, s:o, s:o, s:o, s:o, s:o, s:o}",
			"kind", role_kind__id(r->role.kind), "impl", role_impl__id(r->role.impl),
			"name", role_impl__name(r->role.impl), "version",
			r->role.version[0] ? r->role.version : NULL, "object", (json_int_t)o->id,
			"path", o->path, "real_path", r->real_path, "static", r->static_copy,
			"threading_layer", r->threading[0] ? r->threading : NULL, "num_threads",
			r->num_threads > 0 ? json_integer(r->num_threads) : json_null(),
			"num_threads_from",
			r->num_threads_from ? json_string(r->num_threads_from) : json_null(),
			"pool_threads",
			r->pool_threads >= 0 ? json_integer(r->pool_threads) : json_null(),
			"pool_threads_running",
			r->pool_running >= 0 ? json_integer(r->pool_running) : json_null(),
			"fronts", fronts ? fronts : json_array(), "package",
			pkg_owner__to_json(o->pkg));
		json_object_set_new(one, "vendor_file",
				    r->vendor_file ? json_string(r->vendor_file) : json_null());
		obj_role__json_versions(&r->role, one);
		/* Which build of it: what a maintainer matches debug symbols with. */
		if (one && o->elf && elfobj__build_id(o->elf))
			json_object_set_new(one, "build_id", json_string(elfobj__build_id(o->elf)));
		json_array_append_new(arr, one);
	}
	return arr;
}
