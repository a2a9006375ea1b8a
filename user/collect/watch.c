// SPDX-License-Identifier: GPL-2.0
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/openat2.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "activity.h"
#include "addrmap.h"
#include "detector.h"
#include "dlwatch.h"
#include "dlwatch.skel.h"
#include "elfobj.h"
#include "event.h"
#include "graph_export.h"
#include "job.h"
#include "libgraph.h"
#include "phase.h"
#include "sink.h"
#include "output.h"
#include "pkgowner.h"
#include "procfs.h"
#include "procmaps.h"
#include "pyimport.h"
#include "pystate.h"
#include "runtimes.h"
#include "target.h"
#include "termsafe.h"
#include "threadscan.h"
#include "unwind.h"
#include "version.h"
#include "watch.h"

/* Frames of a stack carried by an event: CPython's are about 180 bytes each, and the copy
 * holds at least 28 KiB. */
#define EVENT_MAX_FRAMES 256

/*
 * An event as the dispatcher handles it: typed (event.h), decoded from a kernel record or made
 * here (a thread sampled stuck inside dlopen), with what only the collector needs.
 */
struct watch_event {
	struct event ev;
	char comm[16];		     /* the thread's name as it set it (findings carry it so) */
	const struct dlw_event *raw; /* the kernel's record (registers, stack); NULL: made here */
	size_t size;		     /* its size */
};

/* An object of a process's graph that has been reported ("loaded" line and record). */
struct announced {
	uint64_t lm_addr, inode, base;
	unsigned int ns;
	bool dlopened; /* a dlopen seen here brought it in: the graph read next is told so */
};

struct proc_state {
	pid_t pid;
	struct libgraph *g;
	struct procmaps *maps;
	/*
	 * The model is read from the process, which runs ahead of the event stream: objects it
	 * already has are reported only when the event that brought them (its exec, the dlopen
	 * that returned them) is handled, so each arrival carries the right time and stack.
	 */
	struct announced *seen;
	size_t n_seen;
	bool seen_all; /* attached to a running process: what it had before is not news */
	/* Its exec (no stack): the cause of start-up objects first seen after it. */
	struct watch_event start;
	struct sample_unwinder *uw; /* its objects' CFI and symbols, for the stacks events carry */
	uint64_t uw_used;	    /* when uw last unwound (w->uw_clock), for UNWINDERS_MAX */
	/* Its CPython interpreter, once found among its objects: the kernel then reads the
	 * Python stack of each dlopen. */
	bool python;
	struct py_interp py;
	struct py_code_cache *codes; /* the code objects its dlopens' frames named */
	bool py_preset;	     /* found in the command's file before it ran: kept at its exec */
	bool oversubscribed; /* --hot: its live oversubscription finding was reported */
	/*
	 * Its pools' sizes seen so far (the most threads of each): a scan sees only the threads
	 * blocked at that moment, so each second that two pools are busy adds one, up to
	 * POOL_SCANS.
	 */
	struct pool_seen {
		const char *runtime;
		int most;
	} pools[8];
	size_t n_pools;
	unsigned int pool_scans;
};

struct attached_file {
	uint64_t inode;
	unsigned int what; /* bit per probe group */
};

enum probe_group {
	PROBE_LOADER = 1 << 0,
	PROBE_OPENMP = 1 << 1,
	PROBE_BLAS = 1 << 2,
	PROBE_GPU = 1 << 3,
	PROBE_LINKMAP = 1 << 4, /* the loader's r_brk: the hold before new objects run */
};

struct watch {
	const struct watch_opts *o;
	struct elf_cache *cache; /* every process's files, analysed once */
	struct pkg_cache *pkgs;	 /* the package databases of each root, read as objects need */
	struct watch_stats *st;
	struct dlwatch_bpf *skel;
	struct ring_buffer *rb;
	struct ring_buffer *hrb; /* the holds (DLW_HOLD), read before any other event */
	int epfd;		 /* both rings' */
	struct proc_state *procs;
	size_t n_procs;
	uint64_t uw_clock;
	struct attached_file *files;
	size_t n_files;
	int *links; /* uprobe_multi links (fds) */
	size_t n_links;
	size_t n_probes;	     /* the uprobes in them */
	struct activity_counts *act; /* --hot: the kernel's counts, read each second */
	unsigned long long last_activity;
	/* The runtimes that ran regions in the interval being read, per process. */
	struct busy_pool {
		pid_t pid;
		const char *runtime;
		unsigned long long n;
		pid_t starters[8];
		size_t n_starters;
	} busy[32];
	size_t n_busy;
	unsigned long long t0;
	pid_t command_pid;
	bool command_done;
	unsigned long long last_scan;
	/* When the batch being read must give the loop back (deadline, signals, the command). */
	unsigned long long batch_end;
	bool draining;	/* the last read, after the loop */
	bool drain_all; /* the targets ended by themselves: that read takes every event */
	bool counting;	/* past that read: what is left is counted, not handled */
	/*
	 * The holds' reader (hold_reader): a thread at real-time priority that waits on the holds'
	 * ring and answers them under @lock, which the loop holds but while it waits and between
	 * two records. Priority-inheriting: a loop started at nice 19 that holds it when a hold
	 * comes runs at the reader's priority until it lets go.
	 */
	pthread_mutex_t lock;
	pthread_t reader;
	bool reader_on, reader_stop;
	/* Time order (order.h): the horizon the sinks were given, the latest record read. */
	unsigned long long horizon, last_read;
	struct stuck {
		pid_t tid;
		unsigned long long since; /* the dlopen's start: one report per dlopen */
	} stuck[64];
	size_t n_stuck;
	/* The event being handled and the stack it carries, unwound once when first needed. */
	struct {
		const struct watch_event *we;
		const unsigned char *stack;
		size_t len;
		bool done;
		bool fresh; /* the model was read again for this event */
		struct thread_stack ts;
		char python[640]; /* its Python stack in short: "`import numpy` at train.py:3" */
	} cur;
};

/* The longest the loop reads events before it checks its deadline, signals and command. */
#define BATCH_NS (50ULL * 1000 * 1000)
#define BATCH_OVER (-ECANCELED)

/* The caller's stop flag: the collector installs no signal handler of its own. */
static bool stopping(const struct watch *w)
{
	return w->o->stop && *w->o->stop;
}

/* Call @cb of every sink that has one. */
#define SINKS(w, cb, ...)                                          \
	do {                                                       \
		for (size_t i_ = 0; i_ < (w)->o->n_sinks; i_++) {  \
			struct event_sink *s_ = (w)->o->sinks[i_]; \
			if (s_->cb)                                \
				s_->cb(s_, ##__VA_ARGS__);         \
		}                                                  \
	} while (0)

static bool sinks_want_stacks(const struct watch *w)
{
	for (size_t i = 0; i < w->o->n_sinks; i++)
		if (w->o->sinks[i]->wants_stacks)
			return true;
	return false;
}

static unsigned long long mono_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static struct proc_state *proc_find(struct watch *w, pid_t pid)
{
	for (size_t i = 0; i < w->n_procs; i++)
		if (w->procs[i].pid == pid)
			return &w->procs[i];
	return NULL;
}

static int add_link(struct watch *w, int fd)
{
	int *nl;

	/* The run is ending and its probes are off: none is added back. */
	if (w->draining) {
		close(fd);
		return 0;
	}
	nl = realloc(w->links, (w->n_links + 1) * sizeof(*nl));
	if (!nl) {
		close(fd);
		return -ENOMEM;
	}
	w->links = nl;
	w->links[w->n_links++] = fd;
	return 0;
}

/* The kernel's uprobe_multi link (6.6), which the system's linux/bpf.h and libbpf 1.1 lack. */
#define DLW_TRACE_UPROBE_MULTI 48
#define DLW_F_UPROBE_MULTI_RETURN 1U

struct uprobe_multi_attr {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, um_flags, pid, pad;
};

/*
 * @n probes of @prog in @path, at file offsets @offs with @cookies, as one link: attached
 * without the perf and trace-event layer (no event_mutex, which a detach elsewhere holds
 * while it waits for a held thread) and detached with one grace period for all of them.
 */
static int attach_multi(struct watch *w, struct bpf_program *prog, const char *path,
			const uint64_t *offs, const uint64_t *cookies, size_t n, bool ret)
{
	char buf[sizeof(struct uprobe_multi_attr) + 64] = { 0 };
	struct uprobe_multi_attr a = {
		.prog_fd = (uint32_t)bpf_program__fd(prog),
		.attach_type = DLW_TRACE_UPROBE_MULTI,
		.path = (uint64_t)(uintptr_t)path,
		.offsets = (uint64_t)(uintptr_t)offs,
		.cookies = (uint64_t)(uintptr_t)cookies,
		.cnt = (uint32_t)n,
		.um_flags = ret ? DLW_F_UPROBE_MULTI_RETURN : 0,
	};
	int fd;

	memcpy(buf, &a, sizeof(a));
	fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, buf, sizeof(a));
	if (fd < 0)
		return -errno;
	w->n_probes += n;
	return add_link(w, fd);
}

/* One uprobe by file offset: libbpf 1.1 refuses versioned names such as dlopen@GLIBC_2.2.5. */
static int attach_fn(struct watch *w, struct bpf_program *prog, const char *path,
		     const struct elf_object *elf, const char *fn, bool ret, uint64_t cookie)
{
	uint64_t off;
	int err;

	if (elfobj__func_offset(elf, fn, &off))
		return -ENOENT;
	err = attach_multi(w, prog, path, &off, &cookie, 1, ret);
	if (err)
		dls_warn("cannot attach to %s in %s: %s", fn, path, strerror(-err));
	return err;
}

/* The place in w->files of the entry whose mask is @mask. */
static size_t container_of_mask(const struct watch *w, const unsigned int *mask)
{
	return (size_t)((const struct attached_file *)((const char *)mask -
						       offsetof(struct attached_file, what)) -
			w->files);
}

static unsigned int *attached_mask(struct watch *w, uint64_t inode)
{
	struct attached_file *nf;

	for (size_t i = 0; i < w->n_files; i++)
		if (w->files[i].inode == inode)
			return &w->files[i].what;
	nf = realloc(w->files, (w->n_files + 1) * sizeof(*nf));
	if (!nf)
		return NULL;
	w->files = nf;
	w->files[w->n_files] = (struct attached_file){ inode, 0 };
	return &w->files[w->n_files++].what;
}

/*
 * The return of a loader call, probed at the function's ret instructions rather than by a
 * uretprobe: a uretprobe swaps the return address at entry for a trampoline, and dlopen and
 * dlsym read that address to find their caller (whose RUNPATH dlopen searches, after which
 * RTLD_NEXT looks). Every process calling them would get a wrong answer while we watch.
 */
static int attach_returns(struct watch *w, struct bpf_program *prog, const char *path,
			  const struct elf_object *elf, const char *fn)
{
	uint64_t offs[16], cookies[16];
	size_t n;
	int err = elfobj__func_returns(elf, path, fn, offs, 16, &n);

	if (err) {
		if (err != -ENOENT || !elfobj__func_offset(elf, fn, &offs[0]))
			dls_warn(
				"cannot find the ret instructions of %s in %s (%s): its results are "
				"not reported",
				fn, path, strerror(-err));
		return err;
	}
	for (size_t i = 0; i < n; i++)
		cookies[i] = DLW_AT_RET;
	err = attach_multi(w, prog, path, offs, cookies, n, false);
	if (err)
		dls_warn("cannot attach to %s's return in %s: %s", fn, path, strerror(-err));
	return err;
}

/*
 * The loader's r_brk (_dl_debug_state), where a thread is held until the probes of the objects
 * it just mapped are in place (bpf/dlwatch.bpf.c: linkmap_consistent). The cookie is where
 * _r_debug.r_state is from the function, so that the program holds at RT_CONSISTENT only.
 */
static void attach_linkmap(struct watch *w, const char *path, const struct elf_object *elf)
{
	GElf_Sym fn, rd;
	uint64_t delta = 0;

	if (elfobj__lookup(elf, "_dl_debug_state", ELFOBJ_DYNSYM | ELFOBJ_SYMTAB, &fn))
		return;
	/* struct r_debug: int r_version; struct link_map *r_map; ElfW(Addr) r_brk; r_state. */
	if (!elfobj__lookup(elf, "_r_debug", ELFOBJ_DYNSYM | ELFOBJ_SYMTAB, &rd))
		delta = rd.st_value + 24 - fn.st_value;
	attach_fn(w, w->skel->progs.linkmap_consistent, path, elf, "_dl_debug_state", false, delta);
}

/*
 * @path of process @pid opened through its root, its absolute links resolved in that root too
 * (RESOLVE_IN_ROOT: /lib64/ld-linux-x86-64.so.2 links to /lib/..., which /proc/PID/root/...
 * would resolve in dlscope's own root, another one in a chroot or container). The descriptor,
 * named in @out as /proc/self/fd/N, or -errno.
 */
static int open_in_root(pid_t pid, const char *path, char *out, size_t len)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT };
	char root[64];
	int rfd, fd;

	/* A relative name (dlopen("build/libx.so")) is the process's: from its working
	 * directory. */
	snprintf(root, sizeof(root), "/proc/%d/%s", pid, path[0] == '/' ? "root" : "cwd");
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return -errno;
	if (path[0] != '/')
		how.resolve = 0;
	fd = (int)syscall(SYS_openat2, rfd, path[0] == '/' ? path + 1 : path, &how, sizeof(how));
	if (fd < 0)
		fd = -errno;
	close(rfd);
	if (fd >= 0)
		snprintf(out, len, "/proc/self/fd/%d", fd);
	return fd;
}

/* Attach what an object's roles call for, once per file (uprobes are per inode, all pids). */
static void attach_object(struct watch *w, pid_t pid, const struct lg_object *o)
{
	static const struct {
		const char *fn;
		enum dlw_fork_entry entry;
	} omp_fns[] = { { "GOMP_parallel", DLW_ENTRY_GOMP_PARALLEL },
			{ "GOMP_parallel_start", DLW_ENTRY_GOMP_PARALLEL_START },
			{ "__kmpc_fork_call", DLW_ENTRY_KMPC_FORK_CALL } };
	static const struct {
		const char *fn;
		uint64_t cookie;
	} gpu_fns[] = {
		{ "cuModuleLoad", CUDA_MODULE_LOAD },
		{ "cuModuleLoadData", CUDA_MODULE_LOAD_DATA },
		{ "cuModuleLoadDataEx", CUDA_MODULE_LOAD_DATA_EX },
		{ "cuModuleLoadFatBinary", CUDA_MODULE_LOAD_FATBIN },
		{ "cuLibraryLoadData", CUDA_LIBRARY_LOAD_DATA },
		{ "cuLibraryLoadFromFile", CUDA_LIBRARY_LOAD_FILE },
		{ "hipModuleLoad", HIP_MODULE_LOAD },
		{ "hipModuleLoadData", HIP_MODULE_LOAD_DATA },
	};
	const struct obj_roles *r = lg_object__roles(o);
	struct dlwatch_bpf *s = w->skel;
	char path[PATH_MAX + 64];
	unsigned int *mask, want = 0, rt;
	int fd;

	if (!o->elf || o->gone || !s)
		return;
	if (obj_roles__find(r, ROLE_LIBC))
		want |= PROBE_LOADER;
	if (w->o->hot && obj_roles__find(r, ROLE_OPENMP))
		want |= PROBE_OPENMP;
	if (w->o->hot && obj_roles__find(r, ROLE_BLAS))
		want |= PROBE_BLAS;
	if (obj_roles__find(r, ROLE_CUDA))
		want |= PROBE_GPU;
	if (o->origin == LG_INTERPRETER)
		want |= PROBE_LINKMAP;
	mask = want ? attached_mask(w, elfobj__inode(o->elf)) : NULL;
	if (!mask || !(want & ~*mask))
		return;
	want &= ~*mask;
	*mask |= want;
	/* The runtime's id in the probes' cookies: its file's place in w->files. */
	rt = (unsigned int)(container_of_mask(w, mask) + 1);
	if ((want & (PROBE_OPENMP | PROBE_BLAS)) && w->act)
		activity_counts__name(w->act, rt, o->path, want & PROBE_BLAS ? "blas" : "openmp");
	fd = open_in_root(pid, o->path, path, sizeof(path));
	if (fd < 0)
		snprintf(path, sizeof(path), "/proc/%d/%s%s", pid,
			 o->path[0] == '/' ? "root" : "cwd/", o->path);
	if (want & PROBE_LOADER) {
		attach_fn(w, s->progs.dlopen_enter, path, o->elf, "dlopen", false, 0);
		attach_returns(w, s->progs.dlopen_exit, path, o->elf, "dlopen");
		attach_fn(w, s->progs.dlopen_enter, path, o->elf, "dlmopen", false, DLW_AT_DLMOPEN);
		attach_returns(w, s->progs.dlopen_exit, path, o->elf, "dlmopen");
		attach_fn(w, s->progs.dlclose_enter, path, o->elf, "dlclose", false, 0);
		attach_returns(w, s->progs.dlclose_exit, path, o->elf, "dlclose");
		attach_fn(w, s->progs.dlsym_enter, path, o->elf, "dlsym", false, 0);
		attach_returns(w, s->progs.dlsym_exit, path, o->elf, "dlsym");
		attach_fn(w, s->progs.dlsym_enter, path, o->elf, "dlvsym", false, 0);
		attach_returns(w, s->progs.dlsym_exit, path, o->elf, "dlvsym");
	}
	if (want & PROBE_LINKMAP)
		attach_linkmap(w, path, o->elf);
	for (size_t i = 0; (want & PROBE_OPENMP) && i < sizeof(omp_fns) / sizeof(omp_fns[0]); i++)
		attach_fn(w, s->progs.omp_fork_enter, path, o->elf, omp_fns[i].fn, false,
			  dlw_cookie(omp_fns[i].entry, rt));
	/* OpenBLAS's dispatch to its pool: a BLAS "region", counted like an OpenMP one. */
	if (want & PROBE_BLAS)
		attach_fn(w, s->progs.omp_fork_enter, path, o->elf, "exec_blas", false,
			  dlw_cookie(DLW_ENTRY_BLAS_DISPATCH, rt));
	if (want & PROBE_BLAS)
		attach_fn(w, s->progs.blas_thread_enter, path, o->elf, "blas_thread_server", false,
			  0);
	for (size_t i = 0; (want & PROBE_GPU) && i < sizeof(gpu_fns) / sizeof(gpu_fns[0]); i++)
		if (!attach_fn(w, s->progs.cuda_load_enter, path, o->elf, gpu_fns[i].fn, false,
			       gpu_fns[i].cookie))
			attach_fn(w, s->progs.cuda_load_exit, path, o->elf, gpu_fns[i].fn, true, 0);
	if (fd >= 0)
		close(fd);
}

/* "fn+0x12 (libfoo.so)" for an address of process @ps. */
static void symbolize(struct proc_state *ps, uint64_t addr, char *buf, size_t len)
{
	const struct mapping *mp = ps && ps->maps ? procmaps__find(ps->maps, addr) : NULL;
	const struct lg_object *best = NULL;
	const char *name;
	uint64_t off;

	for (size_t i = 0; mp && ps->g && i < ps->g->n; i++) {
		const struct lg_object *o = ps->g->objs[i];

		if (o->inode == mp->inode && o->base <= mp->start &&
		    (!best || o->base > best->base))
			best = o;
	}
	/* No mapping known (a forked child that died unread): the object whose file spans it. */
	for (size_t i = 0; !mp && ps && ps->g && i < ps->g->n; i++) {
		const struct lg_object *o = ps->g->objs[i];

		if (o->elf && !o->gone && o->base <= addr &&
		    addr - o->base < elfobj__size(o->elf) && (!best || o->base > best->base))
			best = o;
	}
	if (best && best->elf &&
	    !elfobj__symbol_at(best->elf, addr - best->base, true, &name, &off))
		snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", name, off, lg_object__basename(best));
	else if (best)
		snprintf(buf, len, "0x%" PRIx64 " (%s)", addr, lg_object__basename(best));
	else
		snprintf(buf, len, "0x%" PRIx64, addr);
}

/* The model's view of a process, for the unwinder: what is mapped executable, and file bytes. */
struct unwind_ctx {
	struct proc_state *ps;
	bool unknown_pc; /* a pc in no mapping the model knows: the model may be behind */
};

static const struct lg_object *object_at(const struct proc_state *ps, uint64_t addr)
{
	const struct lg_object *best = NULL;

	for (size_t i = 0; ps->g && i < ps->g->n; i++) {
		const struct lg_object *o = ps->g->objs[i];

		if (o->elf && !o->gone && o->base <= addr &&
		    addr - o->base < elfobj__size(o->elf) && (!best || o->base > best->base))
			best = o;
	}
	return best;
}

static bool uw_pc_ok(void *ctx, uint64_t pc)
{
	struct unwind_ctx *c = ctx;
	const struct mapping *mp = c->ps->maps ? procmaps__find(c->ps->maps, pc) : NULL;

	if (mp)
		return mp->perms[2] == 'x';
	/* Maps older than the object (read at exec, the process gone since): its image. */
	if (object_at(c->ps, pc))
		return true;
	c->unknown_pc = true;
	return false;
}

/* A word outside the stack copy: only from a read-only mapping of a file, as the file has it. */
static bool uw_read(void *ctx, uint64_t addr, uint64_t *word)
{
	struct unwind_ctx *c = ctx;
	const struct mapping *mp = c->ps->maps ? procmaps__find(c->ps->maps, addr) : NULL;
	const struct lg_object *o = object_at(c->ps, addr);

	if (!o || (mp && (mp->perms[1] == 'w' || !mapping__is_file(mp))))
		return false;
	return !elfobj__read_vaddr(o->elf, addr - o->base, word, sizeof(*word));
}

/*
 * Unwinders (libdwfl sessions, their objects' files and CFI) kept alive at once: beyond, the
 * one used least recently is let go, and read again if its process sends another stack. Names
 * are kept apart from them (unwind.h), so one read again costs its CFI only.
 */
#define UNWINDERS_MAX 32

/*
 * Unwind the stack of the event being handled into w->cur.ts, from the model as it is: naming
 * never changes the model. True when the stack has frames the model cannot place (it is behind).
 */
static bool unwind_sample(struct watch *w, struct proc_state *ps, const struct dlw_event *e)
{
	struct stack_sample smp = {
		.ip = e->regs.ip,
		.sp = e->regs.sp,
		.bp = e->regs.bp,
		.bx = e->regs.bx,
		.r12 = e->regs.r12,
		.r13 = e->regs.r13,
		.r14 = e->regs.r14,
		.r15 = e->regs.r15,
		.stack = w->cur.stack,
		.stack_len = w->cur.len,
		.absent = e->stack_absent,
	};
	struct unwind_ctx c = { .ps = ps };
	struct sample_access acc = { .read = uw_read, .pc_ok = uw_pc_ok, .ctx = &c };
	struct sample_module *mods;
	char *files;
	size_t n = 0;
	const size_t flen = PATH_MAX + 32;

	mods = calloc(ps->g && ps->g->n ? ps->g->n : 1, sizeof(*mods));
	files = malloc((ps->g && ps->g->n ? ps->g->n : 1) * flen);
	if (!mods || !files)
		goto out;
	/* Each object through the process's root; the unwinder falls back to the path itself. */
	for (size_t i = 0; ps->g && i < ps->g->n; i++) {
		const struct lg_object *o = ps->g->objs[i];

		char *file = files + n * flen;

		/* Mapped where the link map says (an object judged after the process was gone
		 * has no known base). */
		if (!o->elf || o->gone || !o->in_maps || o->origin == LG_VDSO)
			continue;
		snprintf(file, flen, "/proc/%d/root%s", ps->pid, o->path);
		mods[n++] = (struct sample_module){ o->path, file, o->base };
	}
	/* An unwinder shared with processes laid out alike, while this one still is. */
	if (ps->uw && sample_unwinder__shared(ps->uw) &&
	    !sample_unwinder__serves(ps->uw, ps->pid, mods, n)) {
		sample_unwinder__free(ps->uw);
		ps->uw = NULL;
	}
	for (size_t i = 0; !ps->uw && n && i < w->n_procs; i++)
		if (w->procs[i].uw && sample_unwinder__serves(w->procs[i].uw, ps->pid, mods, n))
			ps->uw = sample_unwinder__share(w->procs[i].uw);
	/* The least recently used let go first: a few hundred processes, a bounded memory. */
	while (!ps->uw && sample_unwinder__live() >= UNWINDERS_MAX) {
		struct proc_state *lru = NULL;

		for (size_t i = 0; i < w->n_procs; i++)
			if (w->procs[i].uw && &w->procs[i] != ps &&
			    (!lru || w->procs[i].uw_used < lru->uw_used))
				lru = &w->procs[i];
		if (!lru)
			break;
		sample_unwinder__free(lru->uw);
		lru->uw = NULL;
	}
	if (!ps->uw)
		ps->uw = sample_unwinder__new(ps->pid);
	if (ps->uw)
		ps->uw_used = ++w->uw_clock;
	if (!ps->uw || sample_unwinder__set_modules(ps->uw, mods, n))
		goto out;
	sample_unwinder__unwind(ps->uw, &smp, &acc, EVENT_MAX_FRAMES, &w->cur.ts);
	w->cur.ts.tid = ps->pid;
out:
	free(mods);
	free(files);
	/* A frame in an object the model has not read yet (a constructor's library, inside
	 * dlopen; the libraries of a process read at its exec): the model is behind. */
	return c.unknown_pc ||
	       (w->cur.ts.n_frames && !w->cur.ts.frames[w->cur.ts.n_frames - 1].module);
}

/* "fn+0x12 (libfoo.so)": one frame of a stack. */
void watch__frame_text(const struct stack_frame *f, char *buf, size_t len)
{
	const char *mod = f->module ? strrchr(f->module, '/') : NULL;

	mod = mod ? mod + 1 : f->module;
	if (f->function && f->inlined)
		snprintf(buf, len, "%s (%s, inlined)", f->function, mod ? mod : "?");
	else if (f->function)
		snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", f->function, f->offset,
			 mod ? mod : "?");
	else if (mod)
		snprintf(buf, len, "0x%" PRIx64 " (%s)", f->pc, mod);
	else
		snprintf(buf, len, "0x%" PRIx64, f->pc);
}

/*
 * The stack @e carries, unwound once per event; NULL when it carries none. Read-only: the
 * dispatcher (name_stack) has made the model current first where it could be behind.
 */
static const struct thread_stack *event_stack(struct watch *w, struct proc_state *ps,
					      const struct watch_event *we)
{
	if (we != w->cur.we || !w->cur.stack || !ps)
		return NULL;
	if (!w->cur.done) {
		unwind_sample(w, ps, we->raw);
		w->cur.done = true;
	}
	return &w->cur.ts;
}

/*
 * The stack @e carries, unwound, as the event's frames (innermost first) and, when it ends
 * before the outermost frame, why. False when @e carries none.
 */
static bool stack_of(struct watch *w, struct proc_state *ps, const struct watch_event *we,
		     struct event_stack *out)
{
	const struct thread_stack *ts = event_stack(w, ps, we);

	if (!ts)
		return false;
	for (size_t i = 0; i < ts->n_frames; i++) {
		char frame[512];

		watch__frame_text(&ts->frames[i], frame, sizeof(frame));
		if (event_stack__push(out, frame, ts->frames[i].pc))
			break;
	}
	if (ts->error)
		out->end = strdup(ts->error);
	return true;
}

/*
 * A live finding: the detector's finding (check --json's shape: id, severity, title, evidence,
 * why, remedy) with the time, thread and stack of the event that raised it, to every sink.
 */
static void finding(struct watch *w, struct proc_state *ps, const struct watch_event *we,
		    const struct finding *f)
{
	struct event_stack stack = { 0 };
	struct live_finding lf = {
		.t = we->ev.t,
		.pid = we->ev.pid,
		.tid = we->ev.tid,
		.comm = we->comm,
		.f = f,
	};

	w->st->findings++;
	if (w->o->n_sinks && stack_of(w, ps, we, &stack))
		lf.stack = &stack;
	SINKS(w, finding, &lf);
	event_stack__clear(&stack);
}

/* The live detectors' view of @ps: reported objects are the present ones. */
static bool live_reported(const struct live_ctx *lc, const struct lg_object *o);

static struct live_ctx live_ctx_of(struct proc_state *ps)
{
	return (struct live_ctx){ .g = ps ? ps->g : NULL, .reported = live_reported, .arg = ps };
}

/* Report what the detectors found about @e, then forget it. */
static void findings_of(struct watch *w, struct proc_state *ps, const struct watch_event *we,
			struct findings *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		finding(w, ps, we, &fs->f[i]);
	findings__free(fs);
}

/*
 * One load of one object: its link map entry while it has one (a snapshot taken while the loader
 * is still mapping it knows neither its inode nor, sometimes, its base), else its file and base.
 */
static bool same_load(const struct announced *a, const struct lg_object *o)
{
	if (a->lm_addr || o->lm_addr)
		return a->lm_addr == o->lm_addr && a->ns == o->ns;
	return a->inode == o->inode && a->base == o->base;
}

static bool is_seen(const struct proc_state *ps, const struct lg_object *o)
{
	for (size_t i = 0; i < ps->n_seen; i++)
		if (same_load(&ps->seen[i], o))
			return true;
	return false;
}

static void mark_seen(struct proc_state *ps, const struct lg_object *o)
{
	struct announced *n;

	if (is_seen(ps, o))
		return;
	n = realloc(ps->seen, (ps->n_seen + 1) * sizeof(*n));
	if (!n)
		return;
	ps->seen = n;
	ps->seen[ps->n_seen++] =
		(struct announced){ o->lm_addr, o->inode, o->base, o->ns, o->dlopened };
}

static void forget_seen(struct proc_state *ps, const struct lg_object *o)
{
	for (size_t i = 0; i < ps->n_seen; i++)
		if (same_load(&ps->seen[i], o)) {
			ps->seen[i] = ps->seen[--ps->n_seen];
			return;
		}
}

static bool live_reported(const struct live_ctx *lc, const struct lg_object *o)
{
	return lc->arg && is_seen(lc->arg, o);
}

/* The detector table's hooks for an object the model gained (detector.h). */
static void detect_on_object(struct watch *w, struct proc_state *ps,
			     const struct watch_event *cause, const struct lg_object *o)
{
	struct live_ctx lc = live_ctx_of(ps);
	struct findings fs = { 0 };

	if (o->gone)
		return;
	if (cause == w->cur.we && w->cur.python[0])
		lc.arrived_through = w->cur.python;
	detectors__on_object(&lc, o, &fs);
	findings_of(w, ps, cause, &fs);
}

/* An object the model gained (or had when we attached: @baseline), to every sink. */
static void loaded(struct watch *w, const struct proc_state *ps, const struct lg_object *o,
		   unsigned long long ts, bool baseline)
{
	struct loaded_obj l = { .t = ts, .pid = ps->pid, .g = ps->g, .o = o, .baseline = baseline };

	SINKS(w, loaded, &l);
}

static struct libgraph *graph_empty(struct watch *w, pid_t pid, const char *comm)
{
	return libgraph__new_cached(pid, comm, w->cache);
}

/*
 * Is @ps a Python process (an interpreter among its objects: the executable, libpython, or a
 * program that embeds one)? Then the kernel learns where it is and how this version lays out
 * its frames, and captures the Python stack of every dlopen from then on.
 */
static void find_python(struct watch *w, struct proc_state *ps)
{
	struct dlw_pycfg cfg;
	uint32_t key = (uint32_t)ps->pid;
	char why[256];

	if (ps->python || !ps->g || !ps->g->n)
		return;
	ps->python = !libgraph__find_python(ps->g, &ps->py, why, sizeof(why));
	if (ps->python && !ps->codes)
		ps->codes = py_code_cache__new();
	if (!ps->python || !w->skel)
		return;
	py_import__cfg(&ps->py, &cfg);
	if (bpf_map__update_elem(w->skel->maps.pyprocs, &key, sizeof(key), &cfg, sizeof(cfg),
				 BPF_ANY))
		ps->python = false;
}

/* A new image, or gone: no interpreter to read any more. */
static void forget_python(struct watch *w, struct proc_state *ps, pid_t pid)
{
	uint32_t key = (uint32_t)pid;

	if (ps) {
		ps->python = false;
		py_code_cache__free(ps->codes);
		ps->codes = NULL;
	}
	if (w->skel)
		bpf_map__delete_elem(w->skel->maps.pyprocs, &key, sizeof(key), 0);
}

/*
 * The command's program, before it runs: an interpreter in a fixed-address executable (Debian's
 * python3.11) is known at once, so that its first dlopens, made while the collector is still
 * reading the process after its exec, carry their Python stacks too. A PIE or a shared
 * libpython is found at the first read of the process instead.
 */
static void python_of_command(struct watch *w, struct proc_state *ps, const char *argv0)
{
	char path[PATH_MAX], found[PATH_MAX];
	const char *dirs = getenv("PATH");
	struct elf_object *o = NULL;
	struct py_object_ref ref;
	struct dlw_pycfg cfg;
	uint32_t key = (uint32_t)ps->pid;
	char why[256];

	/* execvp's search: a name with a slash is a path, else each PATH entry in turn. */
	if (strchr(argv0, '/')) {
		snprintf(path, sizeof(path), "%s", argv0);
	} else {
		path[0] = '\0';
		for (const char *d = dirs ? dirs : "/usr/bin:/bin"; d && !path[0];) {
			const char *end = strchr(d, ':');
			int len = end ? (int)(end - d) : (int)strlen(d);

			snprintf(found, sizeof(found), "%.*s/%s", len, len ? d : ".", argv0);
			if (!access(found, X_OK))
				snprintf(path, sizeof(path), "%s", found);
			d = end ? end + 1 : NULL;
		}
	}
	if (!path[0] || !realpath(path, found) || !(o = elfobj__open(found)))
		return;
	ref = (struct py_object_ref){ found, o, 0 };
	if (elfobj__type(o) == ET_EXEC && !py_interp__find(&ref, 1, &ps->py, why, sizeof(why)) &&
	    (ps->codes = py_code_cache__new())) {
		py_import__cfg(&ps->py, &cfg);
		ps->python = ps->py_preset =
			w->skel && !bpf_map__update_elem(w->skel->maps.pyprocs, &key, sizeof(key),
							 &cfg, sizeof(cfg), BPF_ANY);
	}
	elfobj__free(o);
}

/* Re-read the process's graph and maps; attach probes to any runtime it now has. */
static int refresh(struct watch *w, struct proc_state *ps)
{
	struct libgraph *old = ps->g, *g = NULL;
	struct target *t;
	char why[256];

	if (target__open(ps->pid, &t, why, sizeof(why)))
		return -ESRCH;
	if (libgraph__snapshot_cached(t, w->cache, &g, why, sizeof(why))) {
		target__free(t);
		return -ESRCH;
	}
	/* Objects seen before answer from the cache; out of memory only leaves owners out. */
	libgraph__find_packages(g, t, w->pkgs);
	target__free(t);
	procmaps__free(ps->maps);
	ps->maps = procmaps__read(ps->pid);
	ps->g = g;
	/* What a dlopen seen earlier brought in came by it, whatever the link map's order says. */
	for (size_t k = 0; k < ps->n_seen; k++)
		for (size_t i = 0; ps->seen[k].dlopened && i < g->n; i++)
			if (same_load(&ps->seen[k], g->objs[i]))
				libgraph__saw_dlopen(g->objs[i]);
	for (size_t i = 0; i < g->n; i++)
		attach_object(w, ps->pid, g->objs[i]);
	find_python(w, ps);
	if (!old && !ps->seen_all) {
		/* Attached to a running process: its present objects are the baseline, in a
		 * trace too, so that a replay starts from the whole graph. */
		unsigned long long now = mono_ns(CLOCK_MONOTONIC);

		ps->seen_all = true;
		w->st->attached_running++;
		for (size_t i = 0; i < g->n; i++) {
			mark_seen(ps, g->objs[i]);
			loaded(w, ps, g->objs[i], now, true);
		}
	}
	for (size_t k = 0; old && k < old->n; k++) {
		bool still = false;

		struct announced was = { old->objs[k]->lm_addr, old->objs[k]->inode,
					 old->objs[k]->base, old->objs[k]->ns, false };

		for (size_t i = 0; i < g->n && !still; i++)
			still = same_load(&was, g->objs[i]);
		if (still || !is_seen(ps, old->objs[k]))
			continue;
		forget_seen(ps, old->objs[k]);
		if (old->objs[k]->origin != LG_VDSO)
			SINKS(w, unloaded, ps->pid, old->objs[k]->path);
	}
	libgraph__free(old);
	return 0;
}

static void announce_one(struct watch *w, struct proc_state *ps, const struct lg_object *o,
			 const struct watch_event *cause)
{
	mark_seen(ps, o);
	loaded(w, ps, o, cause->ev.t, false);
	detect_on_object(w, ps, cause, o);
}

/* Report @o and what it needs that is not reported yet, depth first in DT_NEEDED order. */
static void announce_closure(struct watch *w, struct proc_state *ps, const struct lg_object *o,
			     const struct watch_event *cause, unsigned int depth)
{
	if (o->gone || is_seen(ps, o) || depth > 64)
		return;
	announce_one(w, ps, o, cause);
	for (size_t c = 0; c < o->n_children; c++)
		announce_closure(w, ps, ps->g->objs[o->children[c]], cause, depth + 1);
}

/*
 * Report what @cause brought into the model: at exec, the start-up objects (the executable,
 * the loader, preloads and their DT_NEEDED closure); at a dlopen's return, the object it
 * returned and its closure; at exit, whatever no event claimed. Returns false when a dlopen's
 * object is not in the model.
 */
static bool announce(struct watch *w, struct proc_state *ps, const struct watch_event *cause)
{
	const struct event *ev = &cause->ev;
	uint64_t handle = ev->kind == EVENT_DLOPEN ? ev->u.dlopen.handle : 0;
	struct libgraph *g = ps->g;
	bool found = false, by_handle = false;

	if (!g)
		return false;
	for (size_t i = 0; handle && i < g->n; i++)
		by_handle = by_handle || g->objs[i]->lm_addr == handle;
	/* The exec was handled while the loader was still mapping the start-up objects. */
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		if (o->origin == LG_EXECUTABLE || o->origin == LG_INTERPRETER ||
		    o->origin == LG_VDSO || o->origin == LG_PRELOAD)
			announce_closure(w, ps, o, ps->start.ev.kind ? &ps->start : cause, 0);
	}
	for (size_t i = 0; i < g->n; i++) {
		struct lg_object *o = g->objs[i];

		switch (ev->kind) {
		case EVENT_EXEC: break;
		case EVENT_DLOPEN:
			if ((handle && o->lm_addr == handle) ||
			    (ev->u.dlopen.file[0] && !strcmp(o->path, ev->u.dlopen.file))) {
				found = true;
				/*
				 * New at its dlopen's return: that dlopen brought it, even where
				 * something loaded since (read in the same snapshot) needs it.
				 */
				if (!o->gone && !is_seen(ps, o) &&
				    (!by_handle || o->lm_addr == handle))
					libgraph__saw_dlopen(o);
				announce_closure(w, ps, o, cause, 0);
			}
			break;
		default: announce_closure(w, ps, o, cause, 0);
		}
	}
	return found;
}

/*
 * The process exited before we could read it: judge the object dlopen returned from its file
 * alone (the path comes from the link map, read in the kernel at dlopen's return).
 */
static void loaded_after_exit(struct watch *w, struct proc_state *ps, const struct watch_event *we)
{
	const char *file = we->ev.u.dlopen.file;
	uint64_t handle = we->ev.u.dlopen.handle;
	struct lg_object *o;
	char host[PATH_MAX + 64], note[PATH_MAX + 128];

	if (!file[0] || !(ps->g = ps->g ?: graph_empty(w, ps->pid, we->comm)))
		return;
	snprintf(host, sizeof(host), "/proc/%d/root%s", we->ev.pid, file);
	if (access(host, R_OK))
		snprintf(host, sizeof(host), "%s", file);
	o = libgraph__add(ps->g, 0, file, host, handle, handle, 0);
	if (!o || !o->elf)
		return;
	o->inode = elfobj__inode(o->elf);
	libgraph__saw_dlopen(o);
	snprintf(note, sizeof(note),
		 "        %d: the process is gone; %s's dependencies are unknown", ps->pid, file);
	SINKS(w, note, note);
	announce_one(w, ps, o, we);
}

/* A process caught at its exec (a command, --comm): everything it loads is news. */
static int add_proc_empty(struct watch *w, pid_t pid, const char *comm)
{
	uint32_t key = (uint32_t)pid;
	uint8_t one = 1;
	struct proc_state *np = realloc(w->procs, (w->n_procs + 1) * sizeof(*np));

	if (!np)
		return -ENOMEM;
	w->procs = np;
	w->procs[w->n_procs++] = (struct proc_state){
		.pid = pid,
		.g = graph_empty(w, pid, comm),
		.seen_all = true,
	};
	/* Offline (tests): no BPF map to tell. */
	return w->skel ? bpf_map__update_elem(w->skel->maps.targets, &key, sizeof(key), &one,
					      sizeof(one), BPF_ANY) :
			 0;
}

/*
 * Watch @pid from now on. A forked child (@parent > 0) that exits before it can be read keeps
 * a copy of its parent's model: fork copied the parent's objects, which are not news.
 */
static int add_proc(struct watch *w, pid_t pid, pid_t parent)
{
	struct proc_state *np, *ps, *pp;
	uint8_t one = 1;
	uint32_t key = (uint32_t)pid;
	int err;

	if (proc_find(w, pid))
		return 0;
	np = realloc(w->procs, (w->n_procs + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	w->procs = np;
	w->procs[w->n_procs] = (struct proc_state){ .pid = pid };
	w->n_procs++;
	if (w->skel)
		bpf_map__update_elem(w->skel->maps.targets, &key, sizeof(key), &one, sizeof(one),
				     BPF_ANY);
	ps = &w->procs[w->n_procs - 1];
	pp = parent > 0 ? proc_find(w, parent) : NULL;
	if (pp && pp->g) {
		ps->g = libgraph__clone(pp->g, pid);
		ps->seen = pp->n_seen ? malloc(pp->n_seen * sizeof(*ps->seen)) : NULL;
		if (ps->seen) {
			memcpy(ps->seen, pp->seen, pp->n_seen * sizeof(*ps->seen));
			ps->n_seen = pp->n_seen;
		}
		ps->seen_all = true;
		ps->start = pp->start;
	}
	err = refresh(w, ps);
	return err && ps->g ? 0 : err;
}

static void drop_proc(struct watch *w, pid_t pid)
{
	uint32_t key = (uint32_t)pid;

	for (size_t i = 0; i < w->n_procs; i++) {
		if (w->procs[i].pid != pid)
			continue;
		libgraph__free(w->procs[i].g);
		procmaps__free(w->procs[i].maps);
		free(w->procs[i].seen);
		sample_unwinder__free(w->procs[i].uw);
		py_code_cache__free(w->procs[i].codes);
		w->procs[i] = w->procs[--w->n_procs];
		break;
	}
	if (w->skel)
		bpf_map__delete_elem(w->skel->maps.targets, &key, sizeof(key), 0);
	forget_python(w, NULL, pid);
}

/*
 * A string of the target that the kernel could not read (its page was not present): read it
 * now, when the process is still there, faulting the page in as the process itself would.
 */
static void read_target_str(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;

	while (got + 1 < len) {
		size_t chunk = 4096 - ((addr + got) & 4095);
		struct iovec local, remote;
		ssize_t n;

		if (chunk > len - 1 - got)
			chunk = len - 1 - got;
		local = (struct iovec){ buf + got, chunk };
		remote = (struct iovec){ (void *)(uintptr_t)(addr + got), chunk };
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n <= 0)
			break;
		if (memchr(buf + got, '\0', (size_t)n))
			return;
		got += (size_t)n;
	}
	snprintf(buf, len, "%s", got + 1 >= len ? buf : "<unreadable>");
	buf[len - 1] = '\0';
}

/* An event whose string was not read in the kernel, with it read here (or "<unreadable>"). */
static const struct dlw_event *with_str(const struct dlw_event *e, size_t size,
					struct dlw_event *copy)
{
	uint64_t addr;

	if (e->str_state != DLW_STR_UNREAD)
		return e;
	memcpy(copy, e, size < sizeof(*copy) ? size : sizeof(*copy));
	memcpy(&addr, e->str, sizeof(addr));
	read_target_str((pid_t)e->pid, addr, copy->str, sizeof(copy->str));
	copy->str_state = DLW_STR_READ;
	return copy;
}

/* The event's fields that only the model can name: a signal's fault address and pc. */
static void name_signal(struct watch *w, struct proc_state *ps, struct watch_event *we)
{
	const struct thread_stack *ts = event_stack(w, ps, we);
	struct event *ev = &we->ev;
	char *at = ev->u.signal.at;
	size_t atlen = sizeof(ev->u.signal.at);

	symbolize(ps, ev->u.signal.address, ev->u.signal.where, sizeof(ev->u.signal.where));
	snprintf(at, atlen, "?");
	/* The faulting pc: the stack's first frame, else the pc named from the model. */
	if (ts && ts->n_frames) {
		size_t k = 0, n;

		/* Code inlined into a function: both, as "inlined (...) in caller". */
		watch__frame_text(&ts->frames[0], at, atlen);
		while (k + 1 < ts->n_frames && ts->frames[k].inlined)
			k++;
		n = strlen(at);
		if (k && n + 4 < atlen) {
			memcpy(at + n, " in ", 4);
			watch__frame_text(&ts->frames[k], at + n + 4, atlen - n - 4);
		}
	} else if (ps && we->raw && we->size >= sizeof(*we->raw)) {
		symbolize(ps, we->raw->regs.ip, at, atlen);
	}
}

/* The model follows the event: processes come and go, their graphs are read again. */
static struct proc_state *update_model(struct watch *w, struct proc_state *ps,
				       const struct watch_event *we)
{
	const struct event *ev = &we->ev;

	/* add_proc may move w->procs: @ps is found again. */
	if (ev->kind == EVENT_FORK && !ev->u.fork.thread && w->o->follow) {
		add_proc(w, ev->u.fork.child, ev->pid);
		ps = proc_find(w, ev->pid);
	}
	if (!ps && ev->kind == EVENT_EXEC && w->o->comm && !add_proc_empty(w, ev->pid, ev->comm))
		ps = proc_find(w, ev->pid);
	if (ps && ev->kind == EVENT_EXEC) {
		/* A new image: everything it has is news, nothing of the old one "left". */
		libgraph__free(ps->g);
		ps->g = graph_empty(w, ps->pid, ev->comm);
		if (!ps->py_preset)
			forget_python(w, ps, ps->pid);
		ps->py_preset = false;
		ps->n_seen = 0;
		ps->seen_all = true;
		/* Its time, thread and name: an exec carries no stack. */
		ps->start = (struct watch_event){
			.ev = { .kind = ev->kind, .t = ev->t, .pid = ev->pid, .tid = ev->tid }
		};
		memcpy(ps->start.ev.comm, ev->comm, sizeof(ev->comm));
		memcpy(ps->start.comm, we->comm, sizeof(we->comm));
	}
	if (ps && ((ev->kind == EVENT_DLOPEN && ev->u.dlopen.handle) || ev->kind == EVENT_DLCLOSE ||
		   ev->kind == EVENT_EXEC)) {
		if (ev->kind != EVENT_DLOPEN)
			refresh(w, ps);
		if (ev->kind != EVENT_DLCLOSE && !announce(w, ps, we) && ev->kind == EVENT_DLOPEN)
			loaded_after_exit(w, ps, we);
	}
	if (ps && ev->kind == EVENT_EXIT)
		announce(w, ps, we);
	return ps;
}

/* The detector table's hooks for an event: a parallel region or a wait inside dlopen. */
static void detect_on_event(struct watch *w, struct proc_state *ps, const struct event *ev,
			    struct findings *fs)
{
	bool futex = ev->kind == EVENT_FUTEX_WAIT &&
		     (ev->u.futex.what == EVENT_FUTEX_BEGINS ||
		      ev->u.futex.what == EVENT_FUTEX_BLOCKED_DLOPEN);
	struct live_ctx lc;
	struct live_event le = {
		.kind = futex ? LIVE_FUTEX_IN_DLOPEN : LIVE_PARALLEL_IN_DLOPEN,
		.pid = ev->pid,
		.tid = ev->tid,
		.comm = ev->comm,
		.entry = ev->kind == EVENT_OMP_FORK ? (unsigned int)ev->u.omp_fork.entry : 0,
		.dlopen_file = futex && ev->u.futex.what == EVENT_FUTEX_BLOCKED_DLOPEN ?
				       ev->u.futex.call :
				       NULL,
	};

	/* A region outside dlopen is sent only as its runtime's first: nothing to flag. */
	if ((ev->kind != EVENT_OMP_FORK || !ev->in_dlopen) && !futex)
		return;
	lc = live_ctx_of(ps);
	detectors__on_event(&lc, &le, fs);
}

/*
 * A thread held at its loader's consistent link map (bpf/dlwatch.bpf.c: linkmap_consistent):
 * its link map read now, the probes its new objects call for attached, then the thread let go.
 * The model is not touched: the exec or the dlopen that brought the objects reports them, in
 * the stream's order. The kernel made the process a target, even one not in the model yet.
 */
static int read_hold(void *ctx, void *data, size_t size)
{
	struct watch *w = ctx;
	const struct dlw_event *e = data;
	uint32_t tid = e->tid;
	uint64_t seq = e->arg0;
	struct target *t;
	struct libgraph *g;
	char why[128];
	double ms;

	struct sched_param rt = { .sched_priority = 1 }, was_param;
	int was = sched_getscheduler(0);
	bool boosted;

	if (size < offsetof(struct dlw_event, path) || e->type != DLW_HOLD)
		return 0;
	/*
	 * The held thread waits busily on its CPU: this work runs at the lowest real-time
	 * priority, so that a collector started at nice 19 on that CPU is not held back by the
	 * very thread waiting for it; then back to what it was (its nice value too).
	 */
	boosted = was == SCHED_OTHER && !sched_getparam(0, &was_param) &&
		  !sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &rt);
	if (!w->draining && !target__open((pid_t)e->pid, &t, why, sizeof(why))) {
		if (!libgraph__snapshot_cached(t, w->cache, &g, why, sizeof(why))) {
			for (size_t i = 0; i < g->n; i++)
				attach_object(w, (pid_t)e->pid, g->objs[i]);
			libgraph__free(g);
		}
		target__free(t);
	}
	if (w->skel)
		bpf_map__update_elem(w->skel->maps.released, &tid, sizeof(tid), &seq, sizeof(seq),
				     BPF_ANY);
	if (boosted)
		sched_setscheduler(0, was, &was_param);
	ms = (double)(mono_ns(CLOCK_MONOTONIC) - e->ts_ns) / 1e6;
	w->st->holds++;
	w->st->hold_ms_total += ms;
	if (ms > w->st->hold_ms_max)
		w->st->hold_ms_max = ms;
	return 0;
}

/*
 * Name the stack of the event being handled now, while the model may still be read again: a
 * frame in an object the model has not read yet (a constructor's library, inside dlopen; the
 * libraries of a process read at its exec) has the process read again, once, and the stack
 * unwound anew. Naming itself (event_stack, symbolize) only reads the model.
 */
static void name_stack(struct watch *w, struct proc_state *ps)
{
	const struct watch_event *we = w->cur.we;

	if (!we || !w->cur.stack || !ps || w->cur.done)
		return;
	w->cur.done = true;
	if (!unwind_sample(w, ps, we->raw) || w->cur.fresh)
		return;
	w->cur.fresh = true;
	if (!refresh(w, ps)) {
		thread_stack__clear(&w->cur.ts);
		unwind_sample(w, ps, we->raw);
	}
}

/*
 * One event, typed: update the model, run the live detectors, tell the sinks. w->cur.stack is
 * the stack bytes it carries (or NULL).
 */
static void dispatch(struct watch *w, struct watch_event *we)
{
	struct event *ev = &we->ev;
	struct proc_state *ps = proc_find(w, ev->pid);
	struct findings fs = { 0 };

	w->cur.we = we;
	w->cur.done = w->cur.fresh = false;
	/* The objects a dlopen brought: in the model before its stack is named (frames of a
	 * constructor's library) and before it is announced. */
	if (ps && ev->kind == EVENT_DLOPEN && ev->u.dlopen.handle) {
		refresh(w, ps);
		w->cur.fresh = true;
	}
	if (ev->kind == EVENT_SIGNAL) {
		name_stack(w, ps);
		name_signal(w, ps, we);
	}
	w->cur.python[0] = '\0';
	if (ev->kind == EVENT_DLOPEN && ps && ps->python && we->raw &&
	    we->size >= offsetof(struct dlw_event, regs) && we->raw->py.status != DLW_PY_NONE &&
	    !py_import__resolve(&ps->py, ps->pid, &we->raw->py, ps->codes, &ev->py)) {
		ev->has_python = true;
		py_import__describe(&ev->py, w->cur.python, sizeof(w->cur.python));
	}
	/* A record says it carried a stack even when the stack could not be unwound. A
	 * runtime's first region (or BLAS dispatch) shows its stack in the text too. */
	if (w->cur.stack && (sinks_want_stacks(w) || ev->kind == EVENT_OMP_FORK)) {
		ev->has_stack = true;
		name_stack(w, ps);
		stack_of(w, ps, we, &ev->stack);
	}
	SINKS(w, event, ev);
	ps = update_model(w, ps, we);
	detect_on_event(w, ps, ev, &fs);
	/* Findings carry the stack: named before they go out (a dlopen's already was, from the
	 * model read at its return, which is what its objects' findings name). */
	if (fs.n && w->o->n_sinks)
		name_stack(w, ps);
	findings_of(w, ps, we, &fs);
	if (ev->kind == EVENT_EXIT) {
		if (ev->pid == w->command_pid)
			w->command_done = true;
		drop_proc(w, ev->pid);
	}
	event__clear(ev);
	thread_stack__clear(&w->cur.ts);
	w->cur.python[0] = '\0';
	w->cur.we = NULL;
	w->cur.stack = NULL;
}

/* One raw record of the kernel's: decoded, then dispatched. */
static void handle_event(struct watch *w, const void *data, size_t size)
{
	const struct dlw_stack_event *se = data;
	struct watch_event we;
	struct dlw_event copy;
	const struct dlw_event *e;
	char why[128];

	if (size < offsetof(struct dlw_event, path))
		return;
	w->st->events++;
	e = with_str(data, size, &copy);
	if (event__decode(&we.ev, e, size, why, sizeof(why)))
		return;
	memcpy(we.comm, e->comm, sizeof(we.comm));
	we.raw = e;
	we.size = size;
	if (we.ev.kind == EVENT_OMP_FORK && w->act) {
		const char *rt = activity_counts__path(w->act, we.ev.u.omp_fork.runtime_id);

		snprintf(we.ev.u.omp_fork.runtime, sizeof(we.ev.u.omp_fork.runtime), "%s",
			 rt ? rt : "");
	}
	w->cur.stack = NULL;
	/* The copy starts at the page of sp: the frames are above sp. The record holds the
	 * event and the stack_size bytes copied. */
	if (size >= sizeof(*e) && e->stack_size <= sizeof(se->stack) &&
	    size - sizeof(*e) >= e->stack_size && e->stack_size > (e->regs.sp & 4095)) {
		w->cur.stack = se->stack + (e->regs.sp & 4095);
		w->cur.len = e->stack_size - (e->regs.sp & 4095);
	}
	dispatch(w, &we);
}

/*
 * libbpf's reader: a producer faster than we are would keep libbpf reading for ever, so past
 * the batch's time (the event is handled and counts as read) the loop gets control back to
 * look at its deadline, signals and command. After the loop, with the probes off, the rest
 * is read whole when the targets ended by themselves, else for one more batch.
 */
static int read_event(void *ctx, void *data, size_t size)
{
	struct watch *w = ctx;
	bool stop = stopping(w);

	if (w->counting) {
		w->st->lost_unread++;
		return 0;
	}
	/* A thread waits for each hold: none waits behind the stream. */
	if (w->reader_on) {
		pthread_mutex_unlock(&w->lock);
		pthread_mutex_lock(&w->lock);
	}
	ring_buffer__consume(w->hrb);
	if (size >= offsetof(struct dlw_event, path)) {
		const struct dlw_event *e = data;

		/* When it was sent: a call's record is stamped with the call's entry. */
		if (e->ts_ns + e->duration_ns > w->last_read)
			w->last_read = e->ts_ns + e->duration_ns;
	}
	handle_event(w, data, size);
	if (w->draining && w->drain_all)
		return stop ? BATCH_OVER : 0;
	if (mono_ns(CLOCK_MONOTONIC) >= w->batch_end || (!w->draining && stop))
		return BATCH_OVER;
	return 0;
}

/*
 * Threads that stay inside dlopen, found without a per-syscall probe: every 50 ms, the calls in
 * progress (the BPF calls map) are scanned for outermost dlopens older than STUCK_NS, and such a
 * thread's current system call is read from /proc. One blocked in futex holds the loader lock
 * while it waits for another thread: the seed-002 hazard, reported once per dlopen.
 */
#define STUCK_NS 50000000ULL

static bool blocked_in_futex(pid_t pid, pid_t tid, unsigned long long *uaddr)
{
	char path[64], buf[256];
	long nr;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	if (proc__read_small(path, buf, sizeof(buf)) <= 0)
		return false;
	return sscanf(buf, "%ld %llx", &nr, uaddr) == 2 && nr == SYS_futex;
}

/* Report once per call: a (thread, start time) pair remembered in a small ring. */
static bool first_report(struct watch *w, pid_t tid, unsigned long long since)
{
	const size_t cap = sizeof(w->stuck) / sizeof(w->stuck[0]);

	for (size_t i = 0; i < w->n_stuck && i < cap; i++)
		if (w->stuck[i].tid == tid && w->stuck[i].since == since)
			return false;
	w->stuck[w->n_stuck++ % cap] = (struct stuck){ tid, since };
	return true;
}

/*
 * The event of a thread found blocked in a futex inside the call @c (its outermost dlopen, or a
 * dlsym) of type @type: made here, in the model's terms, as no kernel record says it.
 */
static void stuck_event(struct watch_event *we, const struct dlw_call *c, unsigned int type,
			pid_t tid, unsigned long long uaddr, unsigned long long now)
{
	char path[64];

	memset(we, 0, sizeof(*we));
	we->ev = (struct event){ .kind = EVENT_FUTEX_WAIT,
				 .t = now,
				 .pid = (pid_t)c->pid,
				 .tid = tid,
				 .in_dlopen = type == DLW_DLOPEN };
	we->ev.u.futex.what = type == DLW_DLOPEN ? EVENT_FUTEX_BLOCKED_DLOPEN :
						   EVENT_FUTEX_BLOCKED_DLSYM;
	we->ev.u.futex.futex = uaddr;
	we->ev.u.futex.duration_ns = now - c->ts;
	memcpy(we->ev.u.futex.call, c->str, sizeof(we->ev.u.futex.call));
	/* Blocked before it read the name (dlsym waits for the loader lock first). */
	if (c->str_state == DLW_STR_UNREAD)
		read_target_str((pid_t)c->pid, c->strptr, we->ev.u.futex.call,
				sizeof(we->ev.u.futex.call));
	we->ev.u.futex.call[sizeof(we->ev.u.futex.call) - 1] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/task/%d/comm", c->pid, tid);
	if (proc__read_small(path, we->comm, sizeof(we->comm)) > 0)
		we->comm[strcspn(we->comm, "\n")] = '\0';
	/* The thread names itself (prctl): shown escaped, as event__decode shows it. */
	termsafe__escape(we->comm, sizeof(we->comm), we->ev.comm, sizeof(we->ev.comm));
}

/* A thread waits inside dlopen while another waits in dlsym for the lock it holds. */
static void loader_lock_cycle(struct watch *w, const struct watch_event *holder,
			      const struct watch_event *waiter)
{
	struct proc_state *ps = proc_find(w, holder->ev.pid);
	struct live_ctx lc = live_ctx_of(ps);
	struct findings fs = { 0 };
	struct live_event le = {
		.kind = LIVE_LOADER_LOCK_CYCLE,
		.pid = holder->ev.pid,
		.tid = holder->ev.tid,
		.comm = holder->comm,
		.dlopen_file = holder->ev.u.futex.call,
		.waiter_tid = waiter->ev.tid,
		.waiter_symbol = waiter->ev.u.futex.call,
	};

	detectors__on_event(&lc, &le, &fs);
	findings_of(w, ps, waiter, &fs);
}

static void scan_stuck_in_dlopen(struct watch *w)
{
	const struct bpf_map *calls = w->skel->maps.calls;
	unsigned long long key, next, now = mono_ns(CLOCK_MONOTONIC), uaddr;
	unsigned long long *prev = NULL;
	struct watch_event holder = { 0 }, waiter = { 0 }, we;
	struct dlw_call c;

	if (w->o->futex_ms || now - w->last_scan < STUCK_NS / 2)
		return;
	w->last_scan = now;
	while (!bpf_map__get_next_key(calls, prev, &next, sizeof(next))) {
		unsigned int type = (next >> 8) & 0xff;
		pid_t tid = (pid_t)(next >> 16);

		key = next;
		prev = &key;
		/* The outermost dlopen of a thread (it holds the loader lock), or a dlsym. */
		if ((type != DLW_DLOPEN && type != DLW_DLSYM) || (key & 0xff) ||
		    bpf_map__lookup_elem(calls, &key, sizeof(key), &c, sizeof(c), 0) ||
		    now - c.ts < STUCK_NS || !blocked_in_futex((pid_t)c.pid, tid, &uaddr))
			continue;
		stuck_event(&we, &c, type, tid, uaddr, now);
		if (type == DLW_DLOPEN)
			holder = we;
		else if (!waiter.ev.pid || waiter.ev.pid != holder.ev.pid)
			waiter = we;
		if (first_report(w, tid, c.ts)) {
			w->st->events++;
			w->cur.stack = NULL;
			dispatch(w, &we);
		}
	}
	if (holder.ev.pid && holder.ev.pid == waiter.ev.pid && first_report(w, -holder.ev.tid, 0))
		loader_lock_cycle(w, &holder, &waiter);
}

static double cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static int check_capabilities(char *why, size_t len)
{
	const char *still = "libs, check, lint and stacks still work";

	if (geteuid() != 0) {
		snprintf(why, len,
			 "watch needs root (CAP_BPF and CAP_PERFMON) to load its BPF "
			 "programs; %s",
			 still);
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(why, len,
			 "watch needs kernel BTF (/sys/kernel/btf/vmlinux is missing); %s", still);
		return -ENOTSUP;
	}
	if (access("/sys/bus/event_source/devices/uprobe", F_OK)) {
		snprintf(why, len, "watch needs uprobe support (no uprobe PMU in this kernel); %s",
			 still);
		return -ENOTSUP;
	}
	/* Its probes would see the host's PIDs, which match none here: an empty stream. */
	if (proc__in_child_pidns()) {
		snprintf(
			why, len,
			"dlscope runs in a PID namespace below the host's (a container): its probes "
			"report the host's process IDs, which this namespace cannot match; run "
			"dlscope in the host's PID namespace (nsenter -t 1 -p, or the container "
			"with --pid=host); %s",
			still);
		return -ENOTSUP;
	}
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/* Start the command stopped before exec, so probes are in place from its first instruction. */
static pid_t spawn_held(char **argv, const int *stdio, int *release_fd)
{
	pid_t pid, parent = getpid();
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid == 0) {
		char c;

		/*
		 * A dlscope killed (SIGKILL) must not leave its command running under init, as
		 * check -- CMD does not; a parent already gone ends it here.
		 */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(127);
		close(p[1]);
		if (stdio) {
			/* dup2 clears CLOEXEC on 0-2; the originals close at exec. */
			if (setsid() < 0)
				_exit(127);
			for (int fd = 0; fd < 3; fd++)
				if (stdio[fd] != fd && dup2(stdio[fd], fd) < 0)
					_exit(127);
		}
		if (read(p[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "dlscope: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	*release_fd = p[1];
	return pid;
}

/* Probe our own libc: a command, or a program started later, runs the same one unless it
 * changes root. */
static void attach_own_libc(struct watch *w)
{
	struct target *self;
	struct libgraph *g;
	char r[128];

	if (target__open(getpid(), &self, r, sizeof(r)))
		return;
	if (!libgraph__snapshot_cached(self, w->cache, &g, r, sizeof(r))) {
		for (size_t i = 0; i < g->n; i++)
			attach_object(w, getpid(), g->objs[i]);
		libgraph__free(g);
	}
	target__free(self);
}

/* --comm: the processes already running under that name (threads' own names do not count). */
static void add_by_comm(struct watch *w, const char *comm)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char path[64], name[32];
		pid_t pid;

		if (parse_pid(de->d_name, &pid) || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		if (proc__read_small(path, name, sizeof(name)) <= 0)
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (!strcmp(name, comm) && add_proc(w, pid, 0))
			drop_proc(w, pid); /* exited, a zombie, or a kernel thread */
	}
	if (d)
		closedir(d);
}

static void write_header(struct watch *w)
{
	struct trace_header h = {
		.t0 = w->t0,
		.realtime_minus_monotonic_ns =
			(int64_t)(mono_ns(CLOCK_REALTIME) - mono_ns(CLOCK_MONOTONIC)),
		.targets = w->o->pids,
		.n_targets = w->o->n_pids,
		.follow = w->o->follow,
		.hot = w->o->hot,
	};

	SINKS(w, header, &h);
}

/*
 * Every event lost, by cause: what the BPF programs counted per CPU (ring buffer full, call
 * table full), and the probe hits the kernel did not run a program for. Nothing generated goes
 * uncounted: generated = recorded + lost.
 */
/* The links a closing thread takes: fds[i] for i = first, first + step, ... */
struct closer {
	const int *fds;
	size_t n, first, step;
};

static void *close_some(void *arg)
{
	const struct closer *c = arg;

	for (size_t i = c->first; i < c->n; i += c->step)
		close(c->fds[i]);
	return NULL;
}

/*
 * Every probe off; the program and its maps stay until the end, for the counts. Each link's
 * close waits for an RCU-tasks-trace grace period (handlers in progress), some 20-100 ms: the
 * closes run on CLOSERS threads at once and share their grace periods.
 */
#define CLOSERS 32

static void detach_all(struct watch *w)
{
	struct closer c[CLOSERS];
	pthread_t t[CLOSERS];
	bool started[CLOSERS] = { false };
	size_t n = w->n_links < CLOSERS ? w->n_links : CLOSERS;

	for (size_t i = 0; i < n; i++) {
		c[i] = (struct closer){ w->links, w->n_links, i, n };
		started[i] = !pthread_create(&t[i], NULL, close_some, &c[i]);
		if (!started[i])
			close_some(&c[i]);
	}
	for (size_t i = 0; i < n; i++)
		if (started[i])
			pthread_join(t[i], NULL);
	free(w->links);
	w->links = NULL;
	w->n_links = 0;
}

static void count_lost(struct watch *w, struct watch_stats *st)
{
	int ncpu = libbpf_num_possible_cpus();
	unsigned long long *vals = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*vals)) : NULL;
	unsigned long long *by[DLW_LOST__COUNT] = { &st->lost_ring, &st->lost_calls,
						    &st->activity_uncounted, &st->holds_late };
	struct bpf_program *prog;

	for (uint32_t k = 0; vals && k < DLW_LOST__COUNT; k++)
		if (!bpf_map__lookup_elem(w->skel->maps.lost, &k, sizeof(k), vals,
					  (size_t)ncpu * sizeof(*vals), 0))
			for (int c = 0; c < ncpu; c++)
				*by[k] += vals[c];
	free(vals);
	bpf_object__for_each_program (prog, w->skel->obj) {
		struct bpf_prog_info info = { 0 };
		uint32_t len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			st->lost_skipped += info.recursion_misses;
	}
	/* Uncounted regions are no events: not part of lost. */
	st->lost = st->lost_ring + st->lost_calls + st->lost_skipped + st->lost_unread;
}

/* Everything the run holds; the probes first. */
static void watch_release(struct watch *w)
{
	detach_all(w);
	free(w->files);
	for (size_t i = 0; i < w->n_procs; i++) {
		libgraph__free(w->procs[i].g);
		procmaps__free(w->procs[i].maps);
		free(w->procs[i].seen);
		sample_unwinder__free(w->procs[i].uw);
		py_code_cache__free(w->procs[i].codes);
	}
	free(w->procs);
	activity_counts__free(w->act);
	ring_buffer__free(w->rb);
	ring_buffer__free(w->hrb);
	if (w->epfd > 0)
		close(w->epfd);
	dlwatch_bpf__destroy(w->skel);
	elf_cache__put(w->cache);
	pkg_cache__free(w->pkgs);
}

/*
 * Whether the command has ended, without taking anything from the wait queue. A stop of it may
 * be waiting there too: the TUI's snapshot seizes it from another thread of ours, and ptrace
 * reports a tracee's stops to every thread of the tracer's process. That stop is the
 * snapshot's to collect (to let the thread go): a wait for the exit must not consume it.
 */
static bool command_ended(pid_t pid)
{
	siginfo_t si = { 0 };

	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT))
		return errno == ECHILD;
	return si.si_pid == pid &&
	       (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED);
}

/* The BPF object configured from the options, loaded, its tracepoints attached, its ring open. */
static int load_programs(struct watch *w, char *why, size_t whylen)
{
	const struct watch_opts *o = w->o;
	int ncpu = libbpf_num_possible_cpus(), err;
	struct bpf_program *prog;

	libbpf_set_print(libbpf_quiet);
	w->skel = dlwatch_bpf__open();
	if (!w->skel) {
		err = -errno;
		snprintf(why, whylen, "cannot open the BPF programs: %s", strerror(errno));
		return err;
	}
	w->skel->rodata->follow_children = o->follow;
	if (o->comm) {
		w->skel->rodata->comm_mode = true;
		strncpy((char *)w->skel->rodata->comm_filter, o->comm,
			sizeof(w->skel->rodata->comm_filter) - 1);
	}
	w->skel->rodata->futex_threshold_ns = (unsigned long long)o->futex_ms * 1000000ULL;
	if (o->ring_mb)
		bpf_map__set_max_entries(w->skel->maps.events, o->ring_mb << 20);
	/* What the options leave out is not loaded (nor verified): the start is that much faster. */
	if (!o->futex_ms) {
		bpf_program__set_autoload(w->skel->progs.handle_futex_enter, false);
		bpf_program__set_autoload(w->skel->progs.handle_futex_exit, false);
		bpf_map__set_autocreate(w->skel->maps.futex_start, false);
	}
	if (!o->hot) {
		bpf_program__set_autoload(w->skel->progs.omp_fork_enter, false);
		bpf_program__set_autoload(w->skel->progs.blas_thread_enter, false);
	}
	/* Every uprobe program goes through uprobe_multi links (attach_multi). */
	bpf_object__for_each_program (prog, w->skel->obj)
		if (bpf_program__type(prog) == BPF_PROG_TYPE_KPROBE)
			bpf_program__set_expected_attach_type(prog, DLW_TRACE_UPROBE_MULTI);
	/* Two scratch records (an event and its stack, 33 KiB) per CPU. */
	bpf_map__set_max_entries(w->skel->maps.scratch, 2 * (ncpu > 0 ? ncpu : 1));
	phase__mark("watch: BPF object opened");
	err = dlwatch_bpf__load(w->skel);
	phase__mark("watch: BPF object loaded");
	if (err) {
		snprintf(why, whylen, "cannot load the BPF programs: %s", strerror(-err));
		return err;
	}
	/*
	 * The futex tracepoints put every syscall of the machine on the slow path: only when
	 * asked. They need tracefs; root may mount it. Without it, futex waits are left out
	 * and everything else still works.
	 */
	if (!o->futex_ms) {
		/* Not loaded. */
	} else if (access("/sys/kernel/tracing/events/syscalls", F_OK) &&
		   mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL)) {
		dls_warn(
			"tracefs is not mounted at /sys/kernel/tracing and mounting it failed (%s): "
			"futex waits are not reported",
			strerror(errno));
		bpf_program__set_autoattach(w->skel->progs.handle_futex_enter, false);
		bpf_program__set_autoattach(w->skel->progs.handle_futex_exit, false);
	}
	err = dlwatch_bpf__attach(w->skel);
	if (err) {
		snprintf(why, whylen, "cannot attach the tracepoints: %s", strerror(-err));
		return err;
	}
	w->rb = ring_buffer__new(bpf_map__fd(w->skel->maps.events), read_event, w, NULL);
	w->hrb = ring_buffer__new(bpf_map__fd(w->skel->maps.holds), read_hold, w, NULL);
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->rb && w->hrb && w->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN };

		if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(w->rb), &ev) ||
		    epoll_ctl(w->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(w->hrb), &ev)) {
			ring_buffer__free(w->rb);
			w->rb = NULL;
		}
	}
	if (!w->rb || !w->hrb || w->epfd < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot open the ring buffer: %s", strerror(errno));
		return err;
	}
	return 0;
}

/* The processes to watch, the command started (held until @release_fd is written), by name. */
static int add_targets(struct watch *w, int *release_fd, char *why, size_t whylen)
{
	const struct watch_opts *o = w->o;

	for (size_t i = 0; i < o->n_pids; i++) {
		struct target *t;
		int err;

		/* What is no process to watch says why: none, a kernel thread, a zombie. */
		err = target__open(o->pids[i], &t, why, whylen);
		if (err)
			return err;
		target__free(t);
		err = add_proc(w, o->pids[i], 0);
		if (err) {
			snprintf(why, whylen,
				 "cannot watch process %d: it does not exist or exited",
				 o->pids[i]);
			return err;
		}
	}
	if (o->command) {
		w->command_pid = spawn_held(o->command, o->command_stdio, release_fd);
		if (w->command_pid < 0) {
			int err = -errno;

			snprintf(why, whylen, "cannot start '%s': %s", o->command[0],
				 strerror(errno));
			return err;
		}
		attach_own_libc(w);
		if (!add_proc_empty(w, w->command_pid, o->command[0]))
			python_of_command(w, proc_find(w, w->command_pid), o->command[0]);
	}
	if (o->comm) {
		attach_own_libc(w);
		add_by_comm(w, o->comm);
	}
	return 0;
}

/* Whether the run is over by itself: the command ended, or every process given by PID. */
static bool targets_done(struct watch *w)
{
	int status;

	if (w->command_pid > 0) {
		if (command_ended(w->command_pid) &&
		    waitpid(w->command_pid, &status, WNOHANG) == w->command_pid) {
			w->st->command_status = WIFEXITED(status) ? WEXITSTATUS(status) :
								    128 + WTERMSIG(status);
			w->command_done = true;
		}
		return w->command_done && w->st->command_status >= 0;
	}
	return !w->n_procs && w->o->n_pids;
}

/* --hot: how often the kernel's counts are read and sent as activity records. */
#define ACTIVITY_NS 1000000000ULL

static void emit_activity(void *ctx, const struct activity *a)
{
	struct watch *w = ctx;
	struct busy_pool *b = &w->busy[w->n_busy];

	SINKS(w, activity, a);
	if (w->n_busy == sizeof(w->busy) / sizeof(w->busy[0]))
		return;
	*b = (struct busy_pool){ .pid = a->pid, .runtime = a->runtime, .n = a->n };
	for (size_t i = 0; i < a->n_threads && b->n_starters < 8; i++)
		b->starters[b->n_starters++] = a->threads[i].tid;
	w->n_busy++;
}

/* Scans of a process's threads for its pool sizes, one a second while two pools are busy. */
#define POOL_SCANS 10

/* The most threads seen in @runtime's pool, @n now among them. */
static int pool_most(struct proc_state *ps, const char *runtime, int n)
{
	for (size_t i = 0; i < ps->n_pools; i++)
		if (ps->pools[i].runtime == runtime) {
			if (n > ps->pools[i].most)
				ps->pools[i].most = n;
			return ps->pools[i].most;
		}
	if (ps->n_pools < sizeof(ps->pools) / sizeof(ps->pools[0]))
		ps->pools[ps->n_pools++] = (struct pool_seen){ runtime, n };
	return n;
}

/* A pool's threads: those its runtime started (or parked in it), found without stopping them. */
static int pool_of(const struct runtime_list *rl, const struct libgraph *g, const char *path)
{
	for (size_t i = 0; i < rl->n; i++)
		if (!strcmp(g->objs[rl->r[i].obj]->path, path))
			return rl->r[i].pool_threads > 0 ? rl->r[i].pool_threads : 0;
	return 0;
}

static bool seen_tid(const pid_t *tids, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/*
 * Pools @b[0..n) of one process ran regions in the same second: count their threads (a scan of
 * its threads' stacks, which does not stop it) against the CPUs it may use. Once per process.
 */
static void check_pools(struct watch *w, const struct busy_pool *b, size_t n)
{
	struct proc_state *ps = proc_find(w, b[0].pid);
	struct runtime_list rl = { 0 };
	struct live_pool lp[8];
	struct findings fs = { 0 };
	struct threadscan *ts = NULL;
	struct addrmap *am = NULL;
	struct procmaps *maps = NULL;
	struct target *t = NULL;
	pid_t starters[64];
	size_t n_starters = 0;
	char list[256], comm[32] = "?", why[256], path[64];
	cpu_set_t cpus;

	if (!ps || !ps->g || !ps->maps || ps->oversubscribed || ps->pool_scans >= POOL_SCANS ||
	    n < 2 || job__cpus_allowed(b[0].pid, &cpus, list, sizeof(list)) ||
	    target__open(b[0].pid, &t, why, sizeof(why)))
		return;
	ps->pool_scans++;
	/* Maps read now: the pools' thread stacks are younger than the collector's copy. */
	maps = procmaps__read(b[0].pid);
	am = maps ? addrmap__build(maps, ps->g) : NULL;
	if (am && !threadscan__scan(t, ps->g, am, &ts) && !runtimes__collect(ps->g, t, ts, &rl)) {
		if (n > 8)
			n = 8;
		for (size_t i = 0; i < n; i++) {
			lp[i] = (struct live_pool){ b[i].runtime, b[i].n,
						    pool_most(ps, b[i].runtime,
							      pool_of(&rl, ps->g, b[i].runtime)) };
			for (size_t k = 0; k < b[i].n_starters && n_starters < 64; k++)
				if (!seen_tid(starters, n_starters, b[i].starters[k]))
					starters[n_starters++] = b[i].starters[k];
		}
		snprintf(path, sizeof(path), "/proc/%d/comm", b[0].pid);
		if (proc__read_small(path, comm, sizeof(comm)) > 0)
			comm[strcspn(comm, "\n")] = '\0';
		oversubscription__live(&(struct live_pools){ .pid = b[0].pid,
							     .comm = comm,
							     .p = lp,
							     .n = n,
							     .starters = (int)n_starters,
							     .ncpu = CPU_COUNT(&cpus),
							     .cpus_list = list },
				       &fs);
	}
	for (size_t i = 0; i < fs.n; i++) {
		struct live_finding lf = { .t = w->last_activity,
					   .pid = b[0].pid,
					   .tid = b[0].pid,
					   .comm = comm,
					   .f = &fs.f[i] };

		ps->oversubscribed = true;
		w->st->findings++;
		SINKS(w, finding, &lf);
	}
	findings__free(&fs);
	runtimes__free(&rl);
	threadscan__free(ts);
	addrmap__free(am);
	procmaps__free(maps);
	target__free(t);
}

/*
 * The counts since the last read, as activity records stamped @t. @last: the read after the run
 * ended (the probes are off), stamped with the run's end, not the later moment of the read, and
 * without the scan of the busy pools' threads (a finding after the end would be news to no one).
 */
static void read_activity(struct watch *w, unsigned long long t, bool last)
{
	w->last_activity = t;
	w->n_busy = 0;
	if (activity_counts__read(w->act, bpf_map__fd(w->skel->maps.activity), w->last_activity,
				  emit_activity, w))
		dls_warn("cannot read the activity counts: out of memory");
	/* The busy runtimes come grouped by process. */
	for (size_t i = 0, j; i < w->n_busy && !last; i = j) {
		for (j = i + 1; j < w->n_busy && w->busy[j].pid == w->busy[i].pid; j++)
			;
		if (j - i >= 2)
			check_pools(w, &w->busy[i], j - i);
	}
}

/*
 * Time order. The ring is in the order records were sent, each stamped when its program ran,
 * a few microseconds before (ORDER_SKEW_NS is a wide margin); but a call's record (dlopen,
 * dlsym, a GPU load) is sent at its return, stamped with its entry, after what happened inside
 * it (a constructor's thread). So nothing older than the oldest call in progress can come yet,
 * nor than the moment before the read, less the margin; a call in progress longer than
 * ORDER_WAIT_NS (one stuck, a thread killed in it) holds nothing back any more.
 */
#define ORDER_SKEW_NS (10ULL * 1000 * 1000)
#define ORDER_WAIT_NS (2ULL * 1000 * 1000 * 1000)

static unsigned long long oldest_call(struct watch *w, unsigned long long now)
{
	const struct bpf_map *calls = w->skel->maps.calls;
	unsigned long long key, next, *prev = NULL, oldest = now;
	struct dlw_call c;

	while (!bpf_map__get_next_key(calls, prev, &next, sizeof(next))) {
		key = next;
		prev = &key;
		if (!bpf_map__lookup_elem(calls, &key, sizeof(key), &c, sizeof(c), 0) &&
		    c.ts < oldest && now - c.ts < ORDER_WAIT_NS)
			oldest = c.ts;
	}
	return oldest;
}

/* The sinks told what can go out: @before, read before the batch; @whole: the ring was read
 * to its end (else no later than the last record read). */
static void release_ordered(struct watch *w, unsigned long long before, bool whole)
{
	unsigned long long h = before > ORDER_SKEW_NS ? before - ORDER_SKEW_NS : 0;

	if (!whole && w->last_read < h + ORDER_SKEW_NS)
		h = w->last_read > ORDER_SKEW_NS ? w->last_read - ORDER_SKEW_NS : 0;
	if (h > w->horizon) {
		w->horizon = h;
		SINKS(w, horizon, h);
	}
}

/*
 * The holds' reader. A held thread spins on its CPU until it is answered; the loop, started at
 * nice 19 beside 1000 runnable threads, could take seconds to be scheduled at all, and the hold
 * ran out (3 s). This thread sleeps in epoll at SCHED_FIFO 1 (it costs nothing while no hold
 * comes) and answers at once; it takes no signal (they are the loop's).
 */
static void *hold_reader(void *arg)
{
	struct watch *w = arg;
	struct sched_param rt = { .sched_priority = 1 };
	struct epoll_event ev;

	pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt);
	while (!__atomic_load_n(&w->reader_stop, __ATOMIC_ACQUIRE)) {
		if (epoll_wait(ring_buffer__epoll_fd(w->hrb), &ev, 1, 50) <= 0)
			continue;
		pthread_mutex_lock(&w->lock);
		ring_buffer__consume(w->hrb);
		pthread_mutex_unlock(&w->lock);
	}
	return NULL;
}

static void reader_start(struct watch *w)
{
	pthread_mutexattr_t a;
	sigset_t all, was;

	if (pthread_mutexattr_init(&a) || pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT) ||
	    pthread_mutex_init(&w->lock, &a))
		return;
	pthread_mutexattr_destroy(&a);
	pthread_mutex_lock(&w->lock);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	w->reader_on = !pthread_create(&w->reader, NULL, hold_reader, w);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (!w->reader_on) {
		pthread_mutex_unlock(&w->lock);
		pthread_mutex_destroy(&w->lock);
	}
}

static void reader_stop(struct watch *w)
{
	if (!w->reader_on)
		return;
	__atomic_store_n(&w->reader_stop, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->reader, NULL);
	pthread_mutex_destroy(&w->lock);
	w->reader_on = false;
}

/* Read batch after batch until the deadline (0: none), a stop, or the targets' end. */
static int read_until_done(struct watch *w, unsigned long long deadline, char *why, size_t whylen)
{
	while (!stopping(w)) {
		int n;

		struct epoll_event ev;

		unsigned long long before;
		int wait_ms;

		/* Either ring, at most 100 ms (20 while records wait for their turn); the holds
		 * first, then a batch of the stream. Events submitted without a wake-up (dlsym)
		 * wait for this. */
		wait_ms = w->last_read > w->horizon ? 20 : 100;
		if (w->reader_on)
			pthread_mutex_unlock(&w->lock);
		n = epoll_wait(w->epfd, &ev, 1, wait_ms) < 0 ? -errno : 0;
		if (w->reader_on)
			pthread_mutex_lock(&w->lock);
		ring_buffer__consume(w->hrb);
		if (n >= 0) {
			/* The calls in progress first, then the ring: a call that ended before
			 * the look is in the ring, read below. */
			before = oldest_call(w, mono_ns(CLOCK_MONOTONIC));
			w->batch_end = mono_ns(CLOCK_MONOTONIC) + BATCH_NS;
			n = ring_buffer__consume(w->rb);
			if (n >= 0 || n == -EINTR || n == BATCH_OVER)
				release_ordered(w, before, n != BATCH_OVER);
		}
		if (n < 0 && n != -EINTR && n != BATCH_OVER) {
			snprintf(why, whylen, "reading events failed: %s", strerror(-n));
			return n;
		}
		/* The end first: past it, no second's activity read (nor its pool scan) delays
		 * the stop; the last read after the drain has the rest. */
		if (deadline && mono_ns(CLOCK_MONOTONIC) >= deadline)
			break;
		if (targets_done(w)) {
			w->drain_all = true;
			break;
		}
		if (w->act && mono_ns(CLOCK_MONOTONIC) - w->last_activity >= ACTIVITY_NS)
			read_activity(w, mono_ns(CLOCK_MONOTONIC), false);
		/* A trace being written can be followed (tail -f) batch by batch. */
		SINKS(w, flush);
		SINKS(w, tick, mono_ns(CLOCK_MONOTONIC));
		scan_stuck_in_dlopen(w);
	}
	return 0;
}

/*
 * The probes go first, so the ring holds a known rest: handled (see read_event), and what is
 * left after that counted lost (generated = events + lost stays exact).
 */
static void drain(struct watch *w)
{
	/* Threads held now go at once (nothing more is attached), before the detach, which
	 * waits for every uprobe handler in progress. */
	w->draining = true;
	ring_buffer__consume(w->hrb);
	detach_all(w);
	w->batch_end = mono_ns(CLOCK_MONOTONIC) + BATCH_NS;
	if (ring_buffer__consume(w->rb) == BATCH_OVER) {
		w->counting = true;
		ring_buffer__consume(w->rb);
	}
}

/*
 * A command still running when the run ends goes with it, and so does every process below it
 * (torchrun's ranks outlived their launcher): all are stopped first, so that none forks past
 * the walk, then killed. Only processes below the command dlscope started are touched.
 */
static void end_command(struct watch *w)
{
	pid_t *below = NULL;
	size_t n = 0;
	int status;

	if (w->command_pid <= 0 || w->st->command_status >= 0)
		return;
	kill(w->command_pid, SIGSTOP);
	for (int round = 0; round < 2; round++) {
		free(below);
		if (job__descendants(w->command_pid, &below, &n))
			break;
		for (size_t i = 0; i < n; i++)
			kill(below[i], SIGSTOP);
	}
	for (size_t i = 0; i < n; i++)
		kill(below[i], SIGKILL);
	free(below);
	kill(w->command_pid, SIGKILL);
	/* A ptrace stop (see command_ended) may come before its end. */
	while (waitpid(w->command_pid, &status, __WALL) == w->command_pid && !WIFEXITED(status) &&
	       !WIFSIGNALED(status))
		;
}

int watch__run(const struct watch_opts *o, struct watch_stats *st, char *why, size_t whylen)
{
	struct watch w = { .o = o, .st = st };
	unsigned long long deadline = 0, t_attach, t_end;
	int err, release_fd = -1;

	memset(st, 0, sizeof(*st));
	st->command_status = -1;
	err = check_capabilities(why, whylen);
	if (err)
		return err;
	/* "Attached in": until events can flow, the BPF object's load and verification too. */
	t_attach = mono_ns(CLOCK_MONOTONIC);
	w.cache = elf_cache__new();
	w.pkgs = pkg_cache__new();
	if (!w.cache || !w.pkgs) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (o->hot && !(w.act = activity_counts__new())) {
		snprintf(why, whylen, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	phase__mark("watch: caches");
	err = load_programs(&w, why, whylen);
	if (err)
		goto out;
	reader_start(&w);
	phase__mark("watch: BPF object loaded and attached");
	w.t0 = mono_ns(CLOCK_MONOTONIC);
	write_header(&w);
	err = add_targets(&w, &release_fd, why, whylen);
	if (err)
		goto out;
	phase__mark("watch: targets added");
	st->attach_ms = (double)(mono_ns(CLOCK_MONOTONIC) - t_attach) / 1e6;
	/* Tests and scripts wait for this line before they make the target act. */
	fprintf(stderr,
		"dlscope: watching %zu process%s%s%s%s; probes attached in %.1f ms (%zu uprobes)\n",
		w.n_procs, w.n_procs == 1 ? "" : "es", o->comm ? " named " : "",
		o->comm ? o->comm : "", o->comm ? " and those that start" : "", st->attach_ms,
		w.n_probes);
	if (release_fd >= 0) {
		if (write(release_fd, "g", 1) != 1)
			dls_warn("cannot release '%s'", o->command[0]);
		close(release_fd);
	}
	/* --duration counts from the moment events can flow (the window is whole however long
	 * the start took); no activity record is stamped past its end. */
	if (o->duration_s > 0)
		deadline = mono_ns(CLOCK_MONOTONIC) + (unsigned long long)(o->duration_s * 1e9);
	st->cpu_s = -cpu_seconds();
	err = read_until_done(&w, deadline, why, whylen);
	t_end = mono_ns(CLOCK_MONOTONIC);
	if (deadline && t_end > deadline)
		t_end = deadline;
	phase__mark("watch: run");
	drain(&w);
	phase__mark("watch: drained");
	/* The probes are off: this read has the run's last regions. */
	if (w.act) {
		read_activity(&w, t_end, true);
		st->activity = activity_counts__totals(w.act, w.last_activity, &st->n_activity);
	}
	st->cpu_s += cpu_seconds();
	count_lost(&w, st);
	SINKS(&w, summary, st);
	phase__mark("watch: summary");
out:
	reader_stop(&w);
	end_command(&w);
	watch_release(&w);
	phase__mark("watch: released");
	return err;
}

struct watch *watch__offline_new(const struct watch_opts *o, struct watch_stats *st)
{
	struct watch *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	*w = (struct watch){ .o = o, .st = st, .t0 = mono_ns(CLOCK_MONOTONIC) };
	memset(st, 0, sizeof(*st));
	st->command_status = -1;
	w->cache = elf_cache__new();
	w->pkgs = pkg_cache__new();
	if (!w->cache || !w->pkgs) {
		elf_cache__put(w->cache);
		pkg_cache__free(w->pkgs);
		free(w);
		return NULL;
	}
	write_header(w);
	return w;
}

int watch__offline_add(struct watch *w, pid_t pid, const char *comm)
{
	return add_proc_empty(w, pid, comm);
}

void watch__offline_feed(struct watch *w, const void *raw, size_t size)
{
	handle_event(w, raw, size);
}

void watch__offline_end(struct watch *w)
{
	SINKS(w, summary, w->st);
	watch_release(w);
	free(w);
}
