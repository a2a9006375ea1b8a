// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF object and its probes: loaded and configured from the options, the uprobes each
 * object's roles call for (once per file), attached by uprobe_multi links; at the end every
 * program stopped at its first check and the links handed to a reaper (probes__stop).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/openat2.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/auxv.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "activity.h"
#include "array.h"
#include "dlwatch.skel.h"
#include "elfobj.h"
#include "fdreaper.h"
#include "objcache.h"
#include "output.h"
#include "permission.h"
#include "phase.h"
#include "procfs.h"
#include "roles.h"
#include "termsafe.h"
#include "target.h"
#include "watch_internal.h"

struct attached_file {
	pid_t pid; /* 0: the file's probes are every process's */
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

static int add_link(struct watch *w, int fd)
{
	/* The run is ending and its probes are off: none is added back. */
	if (w->loop.draining) {
		close(fd);
		return 0;
	}
	if (ARRAY_PUSH(w->probes.links, w->probes.n_links, w->probes.cap_links, fd)) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

/* The kernel's uprobe_multi link (6.6), which the system's linux/bpf.h and libbpf 1.1 lack. */
#define DLW_TRACE_UPROBE_MULTI 48
#define DLW_F_UPROBE_MULTI_RETURN 1U
/* The calls to _dl_debug_state a loader may have (glibc 2.36's ld.so: 6). */
#define LINKMAP_CALLS_MAX 32

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
		.pid = (uint32_t)w->probes.attach_pid,
	};
	int fd;

	memcpy(buf, &a, sizeof(a));
	fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, buf, sizeof(a));
	if (fd < 0)
		return -errno;
	w->probes.n_probes += n;
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

/* The place in w->probes.files of the entry whose mask is @mask. */
static size_t container_of_mask(const struct watch *w, const unsigned int *mask)
{
	return (size_t)((const struct attached_file *)((const char *)mask -
						       offsetof(struct attached_file, what)) -
			w->probes.files);
}

/* The probes in place in file @inode for process @pid (0: every process); NULL: none yet. */
static unsigned int *probed_mask(const struct watch *w, pid_t pid, uint64_t inode)
{
	for (size_t i = 0; i < w->probes.n_files; i++)
		if (w->probes.files[i].inode == inode && w->probes.files[i].pid == pid)
			return &w->probes.files[i].what;
	return NULL;
}

static unsigned int *attached_mask(struct watch *w, pid_t pid, uint64_t inode)
{
	unsigned int *mask = probed_mask(w, pid, inode);
	struct attached_file *nf;

	if (mask)
		return mask;
	nf = &(struct attached_file){ pid, inode, 0 };
	if (ARRAY_PUSH(w->probes.files, w->probes.n_files, w->probes.cap_files, *nf))
		return NULL;
	return &w->probes.files[w->probes.n_files - 1].what;
}

/*
 * The return of a loader call, probed at the function's ret instructions rather than by a
 * uretprobe: a uretprobe swaps the return address at entry for a trampoline, and dlopen and
 * dlsym read that address to find their caller (whose RUNPATH dlopen searches, after which
 * RTLD_NEXT looks). Every process calling them would get a wrong answer while we watch.
 * A function that never reads its return address (@caller_free: dlclose) gets a uretprobe where
 * no ret is found at the start of a CFI row (glibc 2.31's libdl pops its frame a few
 * instructions before its ret, and nothing short of decoding them finds it safely).
 */
static int attach_returns(struct watch *w, struct bpf_program *prog, const char *path,
			  const struct elf_object *elf, const char *fn, bool caller_free)
{
	uint64_t offs[ELFOBJ_EXITS_MAX], cookies[ELFOBJ_EXITS_MAX];
	struct elfobj_exit exits[ELFOBJ_EXITS_MAX];
	size_t n;
	int err = elfobj__func_exits(elf, path, fn, exits, ELFOBJ_EXITS_MAX, &n);

	if (err == -ENOENT && caller_free && !elfobj__func_offset(elf, fn, &offs[0]))
		return attach_fn(w, prog, path, elf, fn, true, 0);
	if (err) {
		if (err != -ENOENT || !elfobj__func_offset(elf, fn, &offs[0]))
			dls_warn(
				"cannot find the ret instructions of %s in %s (%s): its results are "
				"not reported",
				fn, path, strerror(-err));
		return err;
	}
	/* Where the stack protector checks its frame, the kernel emulates the probe; on the
	 * ret it single-steps it (13 us more a call on this VM). */
	for (size_t i = 0; i < n; i++) {
		offs[i] = exits[i].offset;
		cookies[i] = exits[i].early ? dlw_at_early(exits[i].value_reg, exits[i].in_slot,
							   exits[i].slot) :
					      DLW_AT_RET;
	}
	err = attach_multi(w, prog, path, offs, cookies, n, false);
	if (err)
		dls_warn("cannot attach to %s's return in %s: %s", fn, path, strerror(-err));
	return err;
}

/* The hold's cookie (DLW_LM_ONE_LIST): r_state at @state_at (0: unknown) from the probe at @at. */
static uint64_t linkmap_cookie(uint64_t state_at, uint64_t at, uint64_t flags)
{
	if (!state_at)
		return 0;
	return ((state_at - at) & ((1ULL << DLW_LM_DELTA_BITS) - 1)) | flags;
}

/*
 * The loader's r_brk (_dl_debug_state), where a thread is held until the probes of the objects
 * it just mapped are in place (bpf/dlwatch/holds.bpf.h: linkmap_consistent). The cookie is where
 * _r_debug.r_state is from the probed address, so that the program holds at RT_CONSISTENT only.
 * The function is a bare ret, which the kernel single-steps (two traps, some 25 us a hit on a
 * nested VM, four hits a dlopen and dlclose): its callers' call instructions, which the kernel
 * emulates, are probed instead wherever they can all be found.
 */
static void attach_linkmap(struct watch *w, const char *path, const struct elf_object *elf)
{
	uint64_t sites[LINKMAP_CALLS_MAX], offs[LINKMAP_CALLS_MAX], cookies[LINKMAP_CALLS_MAX];
	uint64_t state_at = 0, flags = 0;
	GElf_Sym fn, rd;
	size_t n;

	if (elfobj__lookup(elf, "_dl_debug_state", ELFOBJ_DYNSYM | ELFOBJ_SYMTAB, &fn))
		return;
	/* struct r_debug: int r_version; struct link_map *r_map; ElfW(Addr) r_brk; r_state. */
	if (!elfobj__lookup(elf, "_r_debug", ELFOBJ_DYNSYM | ELFOBJ_SYMTAB, &rd)) {
		state_at = rd.st_value + 24;
	} else if (!elfobj__lookup(elf, "_dl_debug_addr", ELFOBJ_DYNSYM, &rd) &&
		   !elfobj__relative_target(elf, rd.st_value, &state_at)) {
		/* musl: its static struct debug, laid out as r_debug, through the pointer it
		 * exports. Without it each of its dlopens was held twice (RT_ADD too). */
		state_at += 24;
		flags = DLW_LM_ONE_LIST;
	}
	if (!elfobj__calls_to(elf, path, "_dl_debug_state", sites, offs, LINKMAP_CALLS_MAX, &n)) {
		for (size_t i = 0; i < n; i++)
			cookies[i] = linkmap_cookie(state_at, sites[i], flags);
		if (!attach_multi(w, w->skel->progs.linkmap_consistent, path, offs, cookies, n,
				  false))
			return;
	}
	attach_fn(w, w->skel->progs.linkmap_consistent, path, elf, "_dl_debug_state", false,
		  linkmap_cookie(state_at, fn.st_value, flags));
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
	proc__path(root, sizeof(root), pid, 0, path[0] == '/' ? "root" : "cwd");
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

/*
 * The loader's calls in C library @elf: dlopen, dlmopen, dlclose, dlsym, dlvsym, each returning.
 * musl's dlopen never reads its return address (its dlsym does, for RTLD_NEXT): where its
 * library, built without unwind tables, shows no ret instruction, a uretprobe is safe there.
 */
static void attach_loader(struct watch *w, const char *path, const struct elf_object *elf,
			  bool musl)
{
	struct dlwatch_bpf *s = w->skel;

	/* Returns before entries: a call entered between the two would count one level of
	 * dlopen that no return ever takes back (every later dlclose held, false findings). */
	attach_returns(w, s->progs.dlopen_exit, path, elf, "dlopen", musl);
	attach_returns(w, s->progs.dlopen_exit, path, elf, "dlmopen", false);
	attach_returns(w, s->progs.dlclose_exit, path, elf, "dlclose", true);
	attach_fn(w, s->progs.dlopen_enter, path, elf, "dlopen", false, 0);
	attach_fn(w, s->progs.dlopen_enter, path, elf, "dlmopen", false, DLW_AT_DLMOPEN);
	attach_fn(w, s->progs.dlclose_enter, path, elf, "dlclose", false, 0);
	if (musl) {
		/* Its entry alone reports nothing: a dlsym is shown on its return. */
		dls_warn("musl's dlsym finds its caller by its return address, which a return "
			 "probe would change: its calls are not shown");
		return;
	}
	/* Their returns only when asked: a probe on a ret instruction costs ten at an entry. */
	if (w->o->dlsym) {
		attach_returns(w, s->progs.dlsym_exit, path, elf, "dlsym", false);
		attach_returns(w, s->progs.dlsym_exit, path, elf, "dlvsym", false);
	}
	attach_fn(w, s->progs.dlsym_enter, path, elf, "dlsym", false, 0);
	attach_fn(w, s->progs.dlsym_enter, path, elf, "dlvsym", false, 0);
}

/* The GPU module loads and program builds that GPU object @elf (roles @r) defines. */
static void attach_gpu(struct watch *w, const char *path, const struct elf_object *elf,
		       const struct obj_roles *r)
{
	/* OpenCL's and Level Zero's API in their loaders only: an ICD driver or a layer that
	 * defined the same names would report each call twice. */
	static const struct {
		const char *fn;
		uint64_t cookie;
		int impl; /* only in an object of this implementation; -1: any GPU one */
	} gpu_fns[] = {
		{ "cuModuleLoad", CUDA_MODULE_LOAD, -1 },
		{ "cuModuleLoadData", CUDA_MODULE_LOAD_DATA, -1 },
		{ "cuModuleLoadDataEx", CUDA_MODULE_LOAD_DATA_EX, -1 },
		{ "cuModuleLoadFatBinary", CUDA_MODULE_LOAD_FATBIN, -1 },
		{ "cuLibraryLoadData", CUDA_LIBRARY_LOAD_DATA, -1 },
		{ "cuLibraryLoadFromFile", CUDA_LIBRARY_LOAD_FILE, -1 },
		{ "hipModuleLoad", HIP_MODULE_LOAD, -1 },
		{ "hipModuleLoadData", HIP_MODULE_LOAD_DATA, -1 },
		{ "clCreateProgramWithSource", CL_CREATE_PROGRAM_WITH_SOURCE, IMPL_OPENCL_LOADER },
		{ "clCreateProgramWithBinary", CL_CREATE_PROGRAM_WITH_BINARY, IMPL_OPENCL_LOADER },
		{ "clCreateProgramWithIL", CL_CREATE_PROGRAM_WITH_IL, IMPL_OPENCL_LOADER },
		{ "clBuildProgram", CL_BUILD_PROGRAM, IMPL_OPENCL_LOADER },
		{ "clCompileProgram", CL_COMPILE_PROGRAM, IMPL_OPENCL_LOADER },
		{ "clLinkProgram", CL_LINK_PROGRAM, IMPL_OPENCL_LOADER },
		{ "zeModuleCreate", ZE_MODULE_CREATE, IMPL_LEVEL_ZERO },
	};
	struct dlwatch_bpf *s = w->skel;

	/* The return first, as the loader's (attach_loader). */
	for (size_t i = 0; i < sizeof(gpu_fns) / sizeof(gpu_fns[0]); i++)
		if ((gpu_fns[i].impl < 0 ||
		     obj_roles__find_impl(r, (enum role_impl)gpu_fns[i].impl)) &&
		    !attach_fn(w, s->progs.cuda_load_exit, path, elf, gpu_fns[i].fn, true, 0))
			attach_fn(w,
				  gpu_fns[i].cookie >= CL_CREATE_PROGRAM_WITH_SOURCE ?
					  s->progs.gpu_build_enter :
					  s->progs.cuda_load_enter,
				  path, elf, gpu_fns[i].fn, false, gpu_fns[i].cookie);
}

/*
 * Where glibc's dlopen, dlsym and dlclose are: libc.so.6 from 2.34 on, libdl.so.2 before (Debian
 * 11's 2.31, RHEL 8's 2.28), told apart by what they define, not by name: a GLIBC_ version node
 * and dlopen (a sanitizer runtime's interceptors have no GLIBC_ node).
 */
static bool defines_glibc_dlopen(const struct elf_object *elf)
{
	bool glibc = false;
	GElf_Sym sym;

	/* The version nodes first: they are in the analysis, a symbol lookup reads the file. */
	for (size_t i = 0; i < elfobj__n_verdefs(elf) && !glibc; i++)
		glibc = !strncmp(elfobj__verdef(elf, i), "GLIBC_", 6);
	return glibc && !elfobj__lookup(elf, "dlopen", ELFOBJ_DYNSYM, &sym);
}

/*
 * A static glibc program with dlopen linked in (libc.a's): it is its own loader, with
 * _dl_debug_state and _r_debug in its symbol table (a stripped one cannot be probed).
 */
static bool static_glibc_loader(const struct elf_object *elf)
{
	GElf_Sym sym;

	return !elfobj__interp(elf) && !elfobj__lookup(elf, "dlopen", ELFOBJ_SYMTAB, &sym) &&
	       !elfobj__lookup(elf, "_dl_debug_state", ELFOBJ_SYMTAB, &sym) &&
	       !elfobj__lookup(elf, "_r_debug", ELFOBJ_SYMTAB, &sym);
}

/* Whether @o is a process's loader: its interpreter, or a static program that is its own. */
static bool is_loader(const struct lg_object *o)
{
	return o->elf && (o->origin == LG_INTERPRETER ||
			  (o->origin == LG_EXECUTABLE && static_glibc_loader(o->elf)));
}

/*
 * The probes this watch puts in an object of roles @r (PROBE_*; @dlopen: its file defines
 * glibc's dlopen), the loader's PROBE_LINKMAP aside: the one rule for what is attached
 * (probes__attach_object) and for which files' dlopens the kernel lets go unheld, as they have
 * nothing to wait for (probes__note_no_probes, holds.bpf.h).
 */
static unsigned int probes_for(const struct watch *w, const struct obj_roles *r, bool dlopen)
{
	unsigned int want = 0;

	if (obj_roles__find(r, ROLE_LIBC) || dlopen)
		want |= PROBE_LOADER;
	if (w->o->hot && obj_roles__find(r, ROLE_OPENMP))
		want |= PROBE_OPENMP;
	if (w->o->hot && obj_roles__find(r, ROLE_BLAS))
		want |= PROBE_BLAS;
	if (obj_roles__find(r, ROLE_CUDA))
		want |= PROBE_GPU;
	return want;
}

static bool glibc_node(const char *verdef)
{
	return !strncmp(verdef, "GLIBC_", 6);
}

/* @k's file has no probe to put in place: in every process (@pid 0), or in process @pid,
 * begun at @start (clock ticks after boot). */
static void note_no_probes(struct watch *w, const struct objcache_key *k, pid_t pid,
			   unsigned long long start)
{
	struct dlw_file_key key = { .ino = k->ino,
				    .size = k->size,
				    .mtime_ns = k->mtime_ns,
				    .ctime_ns = k->ctime_ns,
				    /* the kernel's dev_t: MKDEV, not the one stat gives */
				    .dev = (uint32_t)(major(k->dev) << 20 | minor(k->dev)),
				    .pid = (uint32_t)pid,
				    .start = start };
	uint8_t yes = 1;

	/* Full: that file's dlopen is held, as before. */
	bpf_map_update_elem(bpf_map__fd(w->skel->maps.no_probe_files), &key, &yes, BPF_ANY);
}

/* Loader @elf's r_brk probed (or a static program with no loader), in every process (@pid 0)
 * or in @pid's: an exec into it needs nothing of the holds' reader (lifecycle.bpf.h:
 * exec_to_reader). */
static void note_probed_loader(struct watch *w, const struct elf_object *elf, pid_t pid)
{
	const struct objcache_key *k = elfobj__content_key(elf);
	struct dlw_loader_key key = { .ino = k->ino,
				      .dev = (uint32_t)(major(k->dev) << 20 | minor(k->dev)),
				      .pid = (uint32_t)pid };
	uint8_t yes = 1;

	/* Full: that loader's execs go to the reader, which finds it probed. */
	bpf_map_update_elem(bpf_map__fd(w->skel->maps.probed_loaders), &key, &yes, BPF_ANY);
}

void probes__note_no_probes(struct watch *w, pid_t pid, const struct lg_object *o)
{
	unsigned int want, *mask;
	pid_t owner = w->probes.pid_filter ? pid : 0;
	unsigned long long start = 0;

	if (!o->elf || !w->skel || o->origin == LG_INTERPRETER)
		return;
	/* Here the symbols are at hand: of glibc's libraries only the one with dlopen is held. */
	want = probes_for(w, lg_object__roles(o), defines_glibc_dlopen(o->elf));
	if (!want) {
		note_no_probes(w, elfobj__content_key(o->elf), 0, 0);
		return;
	}
	/* Its probes in place (probes__attach_object marks them so, and none is ever taken
	 * out): its next dlopen, in every process or in this one, has nothing to wait for. */
	mask = probed_mask(w, owner, elfobj__inode(o->elf));
	if (!mask || (*mask & want) != want ||
	    (owner && proc__ppid_start(owner, NULL, NULL, &start)))
		return;
	note_no_probes(w, elfobj__content_key(o->elf), owner, start);
}

/* The ELF cache keeps no symbols: from it, every file with a GLIBC_ version node may define
 * glibc's dlopen, and is held the first time (the analysis in the hold then knows). */
static void note_cached(const struct objcache_rec *rec, void *arg)
{
	struct obj_roles r;
	bool glibc = false;

	for (size_t i = 0; i < rec->n_verdefs; i++)
		glibc = glibc || glibc_node(rec->verdefs[i]);
	if (roles__from_blob(rec->blob, rec->blob_len, &r) && !probes_for(arg, &r, glibc))
		note_no_probes(arg, &rec->key, 0, 0);
}

bool probes__is_loader(const struct lg_object *o)
{
	return is_loader(o);
}

bool probes__loader_probed(struct watch *w, pid_t pid, const struct lg_object *o)
{
	const unsigned int *mask =
		o->elf ? probed_mask(w, w->probes.pid_filter ? pid : 0, elfobj__inode(o->elf)) :
			 NULL;

	return mask && (*mask & PROBE_LINKMAP);
}

/* glibc's GOT slot of __libc_dlerror_result's thread-pointer offset (a TPOFF64 relocation). */
static int dlerror_reloc(const char *name, uint64_t offset, unsigned type, unsigned sym_type,
			 void *ctx)
{
	(void)sym_type;
	if (type != R_X86_64_TPOFF64 || strcmp(name, "__libc_dlerror_result"))
		return 0;
	*(uint64_t *)ctx = offset;
	return 1;
}

bool probes__note_dlerror(struct watch *w, pid_t pid, const struct lg_object *o)
{
	uint32_t key = (uint32_t)pid;
	uint64_t off = 0, slot;
	GElf_Sym sym;

	if (!w->skel || !o->elf || o->gone || o->ns ||
	    !obj_roles__find(lg_object__roles(o), ROLE_LIBC) ||
	    elfobj__lookup(o->elf, "__libc_dlerror_result", ELFOBJ_DYNSYM, &sym) ||
	    elfobj__foreach_dynreloc(o->elf, dlerror_reloc, &off) <= 0)
		return false;
	slot = o->base + off;
	return !bpf_map__update_elem(w->skel->maps.dlerror_slot, &key, sizeof(key), &slot,
				     sizeof(slot), BPF_ANY);
}

/* Attach what an object's roles call for, once per file (uprobes are per inode), and per
 * process when only the watched processes pay (w->probes.pid_filter). */
void probes__attach_object(struct watch *w, pid_t pid, const struct lg_object *o)
{
	static const struct {
		const char *fn;
		enum dlw_fork_entry entry;
	} omp_fns[] = { { "GOMP_parallel", DLW_ENTRY_GOMP_PARALLEL },
			{ "GOMP_parallel_start", DLW_ENTRY_GOMP_PARALLEL_START },
			{ "__kmpc_fork_call", DLW_ENTRY_KMPC_FORK_CALL } };
	const struct obj_roles *r = lg_object__roles(o);
	struct dlwatch_bpf *s = w->skel;
	char path[PATH_MAX + 64];
	unsigned int *mask, want = 0, rt;
	int fd;

	if (!o->elf || o->gone || !s)
		return;
	want = probes_for(w, r, defines_glibc_dlopen(o->elf));
	if (is_loader(o))
		want |= PROBE_LINKMAP | (o->origin == LG_EXECUTABLE ? PROBE_LOADER : 0);
	mask = want ? attached_mask(w, w->probes.pid_filter ? pid : 0, elfobj__inode(o->elf)) :
		      NULL;
	if (!mask || !(want & ~*mask))
		return;
	want &= ~*mask;
	fd = open_in_root(pid, o->path, path, sizeof(path));
	/*
	 * Gone already (a short-lived process, often the first of a new root: its umount): the
	 * file is left unmarked, for the next process that maps it, rather than marked probed
	 * with every probe refused.
	 */
	if (fd < 0 && kill(pid, 0) && errno == ESRCH)
		return;
	if (fd < 0)
		proc__file_path(path, sizeof(path), pid, o->path);
	/* Nor through /proc (a process exiting, a zombie already: its root is gone): left
	 * unmarked too, not marked probed with every probe refused. */
	if (fd < 0 && access(path, R_OK))
		return;
	*mask |= want;
	/* The runtime's id in the probes' cookies: its file's place in w->probes.files. */
	rt = (unsigned int)(container_of_mask(w, mask) + 1);
	if ((want & (PROBE_OPENMP | PROBE_BLAS)) && w->hot.counts)
		activity_counts__name(w->hot.counts, rt, o->path,
				      want & PROBE_BLAS ? "blas" : "openmp");
	w->probes.attach_pid = w->probes.pid_filter ? pid : 0;
	if (want & PROBE_LOADER)
		attach_loader(w, path, o->elf, obj_roles__find_impl(r, IMPL_MUSL) != NULL);
	/* Its only use is the hold: without holds, two single-stepped traps a call saved. */
	if ((want & PROBE_LINKMAP) && !w->o->no_holds) {
		attach_linkmap(w, path, o->elf);
		note_probed_loader(w, o->elf, w->probes.attach_pid);
	}
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
	if (want & PROBE_GPU)
		attach_gpu(w, path, o->elf, r);
	w->probes.attach_pid = 0;
	if (fd >= 0)
		close(fd);
	/* Attached outside a hold too (a process's read after its dlopen): its next arrival has
	 * nothing to wait for either. Once, here, where its probes are new. */
	probes__note_no_probes(w, pid, o);
}

int probes__check_capabilities(char *why, size_t len)
{
	const char *still = "libs, check, lint and stacks still work";

	char caps[400];

	if (permission__can_trace(caps, sizeof(caps))) {
		snprintf(why, len, "%s; %s", caps, still);
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
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/* Our own objects, as the loader lists them: the path each was loaded by, and the loader's. */
struct own_objects {
	char paths[64][PATH_MAX];
	bool interp[64];
	size_t n;
};

static int own_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct own_objects *own = arg;

	(void)size;
	if (own->n < 64 && info->dlpi_name && info->dlpi_name[0] == '/') {
		own->interp[own->n] = info->dlpi_addr == getauxval(AT_BASE);
		snprintf(own->paths[own->n++], PATH_MAX, "%s", info->dlpi_name);
	}
	return 0;
}

/*
 * Probe our own libc for @pid, our held command's child (every process for --comm): a
 * command, or a program started later, runs the same one unless it changes root. Listed by
 * our loader, not read from /proc/self: a dlscope given capabilities with setcap is not
 * dumpable, and its /proc/self/mem is root's to open.
 */
void probes__attach_own_libc(struct watch *w, pid_t pid)
{
	struct own_objects *own = calloc(1, sizeof(*own));

	if (!own)
		return;
	dl_iterate_phdr(own_object, own);
	for (size_t i = 0; i < own->n; i++) {
		struct elf_object *elf = elfobj__open(own->paths[i]);
		struct lg_object o = { .path = own->paths[i],
				       .elf = elf,
				       .origin = own->interp[i] ? LG_INTERPRETER : LG_NEEDED };

		if (elf) {
			probes__attach_object(w, pid, &o);
			elfobj__free(elf);
		}
	}
	free(own);
}

void probes__attach_command_loader(struct watch *w, pid_t pid, const char *argv0)
{
	char exe[PATH_MAX], loader[PATH_MAX];
	struct elf_object *prog, *ld;
	const char *interp;

	if (spawn__resolve(argv0, exe, sizeof(exe)) || !(prog = elfobj__open(exe)))
		return;
	interp = elfobj__interp(prog);
	if (static_glibc_loader(prog)) {
		struct lg_object o = { .path = exe, .elf = prog, .origin = LG_EXECUTABLE };

		probes__attach_object(w, pid, &o);
	}
	/* Ours is probed already (probes__attach_own_libc): the mask skips it by its inode. */
	if (interp && realpath(interp, loader) && (ld = elfobj__open(loader))) {
		struct lg_object o = { .path = loader, .elf = ld, .origin = LG_INTERPRETER };

		probes__attach_object(w, pid, &o);
		elfobj__free(ld);
	}
	elfobj__free(prog);
}

/*
 * Loader @o of process @pid probed now, its window noted in @late (the loader's name, whether it
 * is the program itself, when its probes went in; 0: they could not, the process gone). false:
 * it was probed already.
 */
static bool probe_loader_now(struct watch *w, pid_t pid, const struct lg_object *o,
			     struct late_loader *late)
{
	if (probes__loader_probed(w, pid, o))
		return false;
	probes__attach_object(w, pid, o);
	late->own = o->origin == LG_EXECUTABLE;
	snprintf(late->loader, sizeof(late->loader), "%s", o->path);
	late->probed_ns = probes__loader_probed(w, pid, o) ? mono_ns(CLOCK_MONOTONIC) : 0;
	return true;
}

/*
 * A static program @prog (process @pid's, its /proc link @exe) that is its own loader, probed
 * as one: by its name in its root, when that names the same file (a process of dlscope's own
 * root; another one's is probed at its exec's read).
 */
static void probe_static_exec(struct watch *w, pid_t pid, const char *exe,
			      const struct elf_object *prog, struct late_loader *late)
{
	char name[PATH_MAX], path[PATH_MAX + 64];
	struct stat a, b;
	ssize_t n = readlink(exe, name, sizeof(name) - 1);
	int fd;

	if (n <= 0 || stat(exe, &a))
		return;
	name[n] = '\0';
	fd = name[0] == '/' ? open_in_root(pid, name, path, sizeof(path)) : -1;
	if (fd >= 0 && !fstat(fd, &b) && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
		struct lg_object o = { .path = name,
				       .elf = (struct elf_object *)prog,
				       .origin = LG_EXECUTABLE };

		probe_loader_now(w, pid, &o, late);
	}
	if (fd >= 0)
		close(fd);
}

/*
 * A new image's loader, probed at its exec by the holds' reader (DLW_HOLD_EXEC) when it has no
 * probe yet: a program of another root runs its own ld.so, unheld and its dlopens unseen until
 * then. The window from its exec to its probes is kept for the process's exec to say.
 */
void probes__probe_exec_loader(struct watch *w, pid_t pid, uint64_t first_ino,
			       unsigned long long exec_ns)
{
	const unsigned int *mask =
		first_ino ? probed_mask(w, w->probes.pid_filter ? pid : 0, first_ino) : NULL;
	char exe[64], path[PATH_MAX + 64], *error = NULL;
	struct late_loader late = { .pid = pid, .exec_ns = exec_ns };
	struct elf_object *prog;
	const char *interp;
	struct stat st;
	int fd = -1;

	/* The common case: the loader it starts in was probed before (its own root's). */
	if (!w->skel || w->o->no_holds || (mask && (*mask & PROBE_LINKMAP)))
		return;
	proc__path(exe, sizeof(exe), pid, 0, "exe");
	prog = elfobj__open(exe);
	interp = prog ? elfobj__interp(prog) : NULL;
	/* Static: its own loader when it has glibc's dlopen, else none. */
	if (prog && !interp) {
		if (static_glibc_loader(prog))
			probe_static_exec(w, pid, exe, prog, &late);
		else /* nothing to probe: its next execs wake nobody */
			note_probed_loader(w, prog, 0);
		elfobj__free(prog);
		if (late.loader[0])
			ARRAY_PUSH(w->probes.late, w->probes.n_late, w->probes.cap_late, late);
		return;
	}
	if (interp && (fd = open_in_root(pid, interp, path, sizeof(path))) >= 0 &&
	    !fstat(fd, &st)) {
		struct lg_object o = { .path = (char *)interp, .origin = LG_INTERPRETER };

		o.elf = elf_cache__open(w->cache, path, NULL, st.st_ino, &error);
		/* Probed after all (by inode: a copy under another name): nothing to say. */
		if (o.elf && !probe_loader_now(w, pid, &o, &late))
			late.pid = 0;
		elfobj__free(o.elf);
		free(error);
	}
	if (fd >= 0)
		close(fd);
	elfobj__free(prog);
	/* Kept until its exec is read (probes__late_loader), even when it could not be probed:
	 * gone before it, nothing it did was seen. */
	if (late.pid)
		ARRAY_PUSH(w->probes.late, w->probes.n_late, w->probes.cap_late, late);
}

bool probes__late_loader(struct watch *w, pid_t pid, unsigned long long exec_ns,
			 struct late_loader *out)
{
	for (size_t i = 0; i < w->probes.n_late; i++) {
		const struct late_loader *l = &w->probes.late[i];

		/* A later exec's (this one read late): kept for it. */
		if (l->pid != pid || l->exec_ns > exec_ns + 1000000)
			continue;
		*out = *l;
		w->probes.late[i] = w->probes.late[--w->probes.n_late];
		/* An earlier exec's, whose read never came: dropped. */
		if (out->exec_ns + 1000000 < exec_ns)
			return probes__late_loader(w, pid, exec_ns, out);
		return true;
	}
	return false;
}

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

void probes__detach_all(struct watch *w)
{
	struct closer c[CLOSERS];
	pthread_t t[CLOSERS];
	bool started[CLOSERS] = { false };
	/* With a reaper (probes__stop), no close here is the last: no thread needed. */
	size_t n = w->reader.reaper_fd >= 0    ? 0 :
		   w->probes.n_links < CLOSERS ? w->probes.n_links :
						 CLOSERS;

	if (!n)
		close_some(&(struct closer){ w->probes.links, w->probes.n_links, 0, 1 });
	for (size_t i = 0; i < n; i++) {
		c[i] = (struct closer){ w->probes.links, w->probes.n_links, i, n };
		started[i] = !pthread_create(&t[i], NULL, close_some, &c[i]);
		if (!started[i])
			close_some(&c[i]);
	}
	for (size_t i = 0; i < n; i++)
		if (started[i])
			pthread_join(t[i], NULL);
	free(w->probes.links);
	w->probes.links = NULL;
	w->probes.n_links = w->probes.cap_links = 0;
}

/* The sum over the CPUs of per-CPU array @map's value at @key, added to *@sum: 0 or -1. */
static int percpu_sum(const struct bpf_map *map, uint32_t key, unsigned long long *sum)
{
	int ncpu = libbpf_num_possible_cpus();
	unsigned long long *vals = ncpu > 0 ? calloc((size_t)ncpu, sizeof(*vals)) : NULL;
	int err = !vals || bpf_map__lookup_elem(map, &key, sizeof(key), vals,
						(size_t)ncpu * sizeof(*vals), 0);

	for (int c = 0; !err && c < ncpu; c++)
		*sum += vals[c];
	free(vals);
	return err ? -1 : 0;
}

/* How many programs run now (bpf/dlwatch/ring.bpf.h: `running`), all CPUs; -1 when unreadable. */
static long long programs_running(struct watch *w)
{
	unsigned long long n = 0;

	return percpu_sum(w->skel->maps.running, 0, &n) ? -1 : (long long)n;
}

/*
 * Every program's check off, then no program running (a held thread is let go meanwhile):
 * nothing more will reach the rings or the counts. False past @wait_ms.
 */
static bool programs_quiet(struct watch *w, int wait_ms, void (*waiting)(struct watch *w))
{
	unsigned long long end = mono_ns(CLOCK_MONOTONIC) + (unsigned long long)wait_ms * 1000000;
	long long n;

	if (!w->skel || !w->skel->bss)
		return false;
	__atomic_store_n(&w->skel->bss->stopping, true, __ATOMIC_SEQ_CST);
	while ((n = programs_running(w)) > 0 && mono_ns(CLOCK_MONOTONIC) < end) {
		/*
		 * A held thread is in a program: answered here when no reader thread runs, else
		 * by the reader, which may wait for the loop's lock to answer (draining: at once).
		 * Kept from it, the hold and this wait both ran to their end (3 s).
		 */
		if (w->reader.on)
			waiting(w);
		else
			ring_buffer__consume(w->ring.hrb);
		usleep(200);
	}
	return n == 0;
}

/*
 * The links to hand over: the uprobes' and copies of the skeleton's tracepoint links (the
 * skeleton's own close, at destroy, is then not the last). NULL when out of memory.
 */
static int *links_to_hand_over(struct watch *w, size_t *n)
{
	const struct bpf_object_skeleton *sk = w->skel->skeleton;
	int *fds = malloc((w->probes.n_links + (size_t)sk->prog_cnt) * sizeof(*fds));

	*n = 0;
	if (!fds)
		return NULL;
	for (size_t i = 0; i < w->probes.n_links; i++)
		fds[(*n)++] = w->probes.links[i];
	for (int i = 0; i < sk->prog_cnt; i++) {
		struct bpf_link *l = *sk->progs[i].link;
		int fd = l ? fcntl(bpf_link__fd(l), F_DUPFD_CLOEXEC, 0) : -1;

		if (fd >= 0)
			fds[(*n)++] = fd;
	}
	return fds;
}

/*
 * The probes off for good. Once no program runs, the links go to a reaper too (fdreaper.h):
 * their last close, a grace period each, is paid after dlscope has gone on or ended, when
 * watch_release closes @w->reader.reaper_fd. Otherwise (a program still running, no reaper) the
 * closes here wait for those programs.
 */
void probes__stop(struct watch *w, void (*waiting)(struct watch *w))
{
	size_t n = 0;
	int *fds = programs_quiet(w, 1000, waiting) ? links_to_hand_over(w, &n) : NULL;

	w->reader.reaper_fd = fds ? fd_reaper__start(fds, n) : -1;
	for (size_t i = w->probes.n_links; i < n; i++)
		close(fds[i]);
	free(fds);
	probes__detach_all(w);
}

/* Where @o would go among the busiest outsiders so far (n of them, most hits first). */
static void outside_rank(struct watch_stats *st, const struct outside_proc *o)
{
	const size_t cap = sizeof(st->outside_top) / sizeof(st->outside_top[0]);
	size_t i = st->n_outside_top < cap ? st->n_outside_top++ : cap;

	while (i > 0 && st->outside_top[i - 1].hits < o->hits) {
		if (i < cap)
			st->outside_top[i] = st->outside_top[i - 1];
		i--;
	}
	if (i < cap)
		st->outside_top[i] = *o;
}

/* The processes outside the watch whose calls ran its programs (the BPF map outside). */
static void probes__count_outside(struct watch *w, struct watch_stats *st)
{
	const struct bpf_map *m = w->skel->maps.outside;
	uint32_t key, next, *prev = NULL;
	struct dlw_outside v;

	st->probes_everywhere = !w->probes.pid_filter;
	while (!bpf_map__get_next_key(m, prev, &next, sizeof(next))) {
		struct outside_proc o = { .pid = (int)next };

		key = next;
		prev = &key;
		if (bpf_map__lookup_elem(m, &key, sizeof(key), &v, sizeof(v), 0))
			continue;
		st->outside_procs++;
		st->outside_hits += v.hits;
		o.hits = v.hits;
		termsafe__escape(v.comm, strnlen(v.comm, sizeof(v.comm)), o.comm, sizeof(o.comm));
		outside_rank(st, &o);
	}
}

/*
 * Every event lost, by cause: what the BPF programs counted per CPU (ring buffer full, call
 * table full), and the probe hits the kernel did not run a program for. Nothing generated goes
 * uncounted: generated = recorded + lost. Counted afresh at each call (live_counts: each second).
 */

void probes__count_lost(struct watch *w, struct watch_stats *st)
{
	unsigned long long *by[DLW_LOST__COUNT] = { &st->lost_ring, &st->lost_calls,
						    &st->activity_uncounted, &st->holds_late };
	struct bpf_program *prog;

	st->lost_ring = st->lost_calls = st->activity_uncounted = st->holds_late = 0;
	st->lost_skipped = st->outside_procs = st->outside_hits = 0;
	st->n_outside_top = 0;
	for (uint32_t k = 0; k < DLW_LOST__COUNT; k++)
		percpu_sum(w->skel->maps.lost, k, by[k]);
	bpf_object__for_each_program (prog, w->skel->obj) {
		struct bpf_prog_info info = { 0 };
		uint32_t len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			st->lost_skipped += info.recursion_misses;
	}
	/* The holds as the held threads saw them. */
	if (w->skel->bss) {
		const struct dlwatch_bpf__bss *h = w->skel->bss;

		st->holds = h->hold_held;
		st->hold_ms_total = (double)h->hold_ns_total / 1e6;
		st->hold_ms_max = (double)h->hold_ns_max / 1e6;
		st->holds_abandoned = h->hold_abandoned;
		st->holds_not_held = h->hold_not_held;
		st->holds_signalled = h->hold_signalled;
		st->holds_stale_age_ns = h->hold_stale_age_max;
		st->holds_no_probes = h->hold_no_probes;
	}
	probes__count_outside(w, st);
	/* Uncounted regions are no events: not part of lost. */
	st->lost = st->lost_ring + st->lost_calls + st->lost_skipped + st->lost_unread;
}

/* --cgroup: the directory the exec filter tests each new process against (cgroup v2 only). */
static int set_target_cgroup(struct watch *w, const char *dir, char *why, size_t whylen)
{
	uint32_t key = 0;
	struct statfs sfs;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

	if (fd < 0) {
		err = -errno;
		snprintf(why, whylen, "--cgroup %s: %s", dir, strerror(errno));
		return err;
	}
	if (fstatfs(fd, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC) {
		close(fd);
		snprintf(why, whylen,
			 "--cgroup %s: not a cgroup v2 directory (the unified hierarchy, where "
			 "/proc/PID/cgroup says 0::PATH)",
			 dir);
		return -EINVAL;
	}
	err = bpf_map__update_elem(w->skel->maps.target_cgroup, &key, sizeof(key), &fd, sizeof(fd),
				   BPF_ANY);
	close(fd);
	if (err)
		snprintf(why, whylen, "--cgroup %s: %s", dir, strerror(-err));
	return err;
}

/* The BPF object configured from the options, loaded, its tracepoints attached. */
int probes__load(struct watch *w, char *why, size_t whylen)
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
	w->probes.pid_filter = !o->follow && !watch__by_exec(o);
	/*
	 * In a PID namespace below the host's (a debug container sharing its target's, kubectl
	 * debug --target), the kernel's IDs are not ours: the probes report every ID in this
	 * namespace's numbers instead, and ignore what runs outside it.
	 */
	if (proc__in_child_pidns()) {
		struct stat ns;

		if (stat("/proc/self/ns/pid", &ns)) {
			err = -errno;
			snprintf(why, whylen,
				 "dlscope runs in a PID namespace below the host's and cannot read "
				 "/proc/self/ns/pid (%s), which its probes need to report this "
				 "namespace's process IDs",
				 strerror(errno));
			return err;
		}
		w->skel->rodata->pidns_dev = ns.st_dev;
		w->skel->rodata->pidns_ino = ns.st_ino;
	}
	w->skel->rodata->hold_arrivals = !o->no_holds;
	/* A signal that stops or ends this process lets the holds go at once (holds.bpf.h). */
	if (o->no_holds)
		bpf_program__set_autoload(w->skel->progs.handle_collector_signal, false);
	else
		w->skel->rodata->collector_tgid = (uint32_t)getpid();
	w->skel->rodata->copy_stacks = !o->no_stacks;
	if (watch__by_exec(o)) {
		w->skel->rodata->comm_mode = true;
		w->skel->rodata->comm_any = o->every_process;
		if (o->comm)
			strncpy((char *)w->skel->rodata->comm_filter, o->comm,
				sizeof(w->skel->rodata->comm_filter) - 1);
	}
	if (watch__by_exec(o) && o->env_entry) {
		size_t len = strlen(o->env_entry) + 1;

		if (len > sizeof(w->skel->rodata->env_filter)) {
			snprintf(why, whylen, "the environment entry '%s' is over %zu characters",
				 o->env_entry, sizeof(w->skel->rodata->env_filter) - 1);
			return -ENAMETOOLONG;
		}
		memcpy((char *)w->skel->rodata->env_filter, o->env_entry, len);
		w->skel->rodata->env_filter_len = (uint32_t)len;
		w->skel->rodata->env_filter_on = true;
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
	w->skel->rodata->cgroup_filter = o->cgroup != NULL;
	err = dlwatch_bpf__load(w->skel);
	phase__mark("watch: BPF object loaded");
	if (err) {
		snprintf(why, whylen, "cannot load the BPF programs: %s", strerror(-err));
		return err;
	}
	if (o->cgroup && (err = set_target_cgroup(w, o->cgroup, why, whylen)))
		return err;
	/* What the ELF cache knows needs no probes: those dlopens go unheld from the start. */
	if (!o->no_holds)
		objcache__for_each(note_cached, w);
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
	return 0;
}
