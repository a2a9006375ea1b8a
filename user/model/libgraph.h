/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The library graph of one process: every loaded object, which namespace it lives in, how it came
 * in, its runtime roles, and the DT_NEEDED edges between objects. Built from a snapshot of the
 * loader's link maps, and updated in place by the event collector as objects come and go.
 */
#ifndef DLSCOPE_LIBGRAPH_H
#define DLSCOPE_LIBGRAPH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "elf_cache.h"
#include "roles.h"

struct target;
struct elf_object;
struct pkg_cache;
struct pkg_owner;

enum lg_origin {
	LG_EXECUTABLE,
	LG_INTERPRETER,
	LG_VDSO,
	LG_PRELOAD,
	LG_NEEDED,
	LG_DLOPEN,
	LG_MAPPED_ONLY, /* in /proc/PID/maps but in no link map */
};

struct lg_object {
	unsigned int id; /* index in libgraph.objs; stable, removed objects stay marked gone */
	unsigned int ns;
	char *path;	  /* as the target sees it */
	char *soname;	  /* NULL when it has none or could not be read */
	uint64_t base;	  /* l_addr: load bias */
	uint64_t lm_addr; /* its struct link_map in the target, 0 when not in a link map */
	uint64_t l_ld;
	uint64_t inode;
	enum lg_origin origin;
	bool in_link_map, in_maps, deleted, gone;
	/* path is the kernel's name of its mapping (a live process's /proc/PID/maps): no link
	 * in it, nothing to resolve before asking who installed the file. */
	bool kernel_path;
	/* A live collector saw the dlopen call that brought it in (libgraph__saw_dlopen). */
	bool dlopened;
	/*
	 * A live collector reported it (its "loaded" line); the collector carries the mark to
	 * the same load in its next snapshot (user/collect/reported.c). Clones keep it.
	 */
	bool reported;
	uint64_t reported_at; /* when: the time of the event that brought it (CLOCK_MONOTONIC) */
	/*
	 * Its place in the loader's order: the link map lists a namespace's objects as they
	 * arrived, and objects are added in that order, so this is its id; in a graph read from
	 * /proc/PID/maps alone (no link maps) it is the loader's walk replayed (libgraph__link).
	 */
	unsigned int seq;
	/* parents: every object whose DT_NEEDED resolves to it, before or after it, by id. */
	unsigned int *parents, *children;
	size_t n_parents, n_children, cap_parents, cap_children;
	char **unresolved; /* DT_NEEDED names no loaded object matched */
	size_t n_unresolved, cap_unresolved;
	struct elf_object *elf; /* shared between objects of one file; NULL when unreadable */
	char *error;		/* why elf is NULL */
	/* The installed distribution that owns the file; NULL: none, or not asked (find_packages). */
	struct pkg_owner *pkg;
};

#define LG_NONE UINT_MAX

struct linkmap;

struct libgraph {
	pid_t pid;
	char comm[64];
	char exe[PATH_MAX];
	/* Where it runs: its PID in its own PID namespace (0: the namespace is ours), and its
	 * container as its cgroup names it ("" for none). */
	pid_t ns_pid;
	char container[96];
	bool from_link_map; /* false: the link maps could not be read, objects come from maps */
	bool static_exe;    /* statically linked: no loader, no link map, the executable alone */
	bool consistent;    /* false: a dlopen was in progress during every read */
	/* Objects read from /proc/PID/maps alone: their ids follow addresses, not load order. */
	bool unordered;
	unsigned int n_namespaces;
	uint64_t r_debug, r_brk;
	struct lg_object **objs;
	size_t n, cap;
	struct elf_cache *cache;
	char *preload; /* LD_PRELOAD of the target, to tell preloaded objects from dlopened ones */
	struct linkmap *lm; /* the link maps as read (NULL: not read), for the next snapshot */
};

/*
 * Snapshot the library graph of @t without stopping it (of a statically linked program: its
 * executable and the vDSO, static_exe set). Returns 0 or -errno, with a one-line reason in @why.
 */
int libgraph__snapshot(const struct target *t, struct libgraph **out, char *why, size_t whylen);
void libgraph__free(struct libgraph *g);

/* libgraph__snapshot with a shared cache (NULL: a private one). */
int libgraph__snapshot_cached(const struct target *t, struct elf_cache *cache,
			      struct libgraph **out, char *why, size_t whylen);
struct procmaps;
/* The same from mappings the caller has read (@maps is only read here, not kept). */
int libgraph__snapshot_maps(const struct target *t, const struct procmaps *maps,
			    struct elf_cache *cache, struct libgraph **out, char *why,
			    size_t whylen);
/*
 * The same for a reader that kept @prev, the process's last snapshot: of the same image, what
 * does not change while it runs (its container, LD_PRELOAD, where its loader keeps r_debug) is
 * taken from it, and only new link-map entries are named (linkmap__read_again). @prev NULL, or
 * of another image: libgraph__snapshot_maps.
 */
int libgraph__snapshot_again(const struct target *t, const struct procmaps *maps,
			     struct elf_cache *cache, const struct libgraph *prev,
			     struct libgraph **out, char *why, size_t whylen);
struct libgraph *libgraph__new_cached(pid_t pid, const char *comm, struct elf_cache *cache);
/* A deep copy for @pid, sharing the ELF cache: a forked child starts with its parent's objects. */
struct libgraph *libgraph__clone(const struct libgraph *g, pid_t pid);

/* An empty graph for @pid, to be filled by libgraph__add (live collectors, tests). */
struct libgraph *libgraph__new(pid_t pid, const char *comm);

/*
 * Live updates. add: an object the loader just linked (path as the target sees it, opened
 * through @host_path). remove: an object dlclose unmapped. Call libgraph__link after a batch.
 */
struct lg_object *libgraph__add(struct libgraph *g, unsigned int ns, const char *path,
				const char *host_path, uint64_t base, uint64_t lm_addr,
				uint64_t l_ld);
void libgraph__remove(struct libgraph *g, uint64_t lm_addr);
/* Recompute parents, children and origins from DT_NEEDED names. */
int libgraph__link(struct libgraph *g);

/*
 * Who loaded each object: the one rule that the tree of `libs`, the origins in findings and the
 * trace's needed_by all follow.
 *
 * Within a namespace the link map is in load order: the program, its preloads and their
 * DT_NEEDED closure breadth-first, then each dlopen's object followed by those of its
 * dependencies not loaded yet, breadth-first in DT_NEEDED order. An object X can therefore have
 * been brought in by the DT_NEEDED of Y only if Y came before X; the loader walks the new objects
 * in the order it appended them, so of those earlier objects that need X the first one is the
 * one that mapped it. An object that no earlier object needs came by its own dlopen (or
 * LD_PRELOAD), whatever loaded later needs it too: libopenblas needing libgfortran does not make
 * it the loader of the libgfortran a ctypes.CDLL had opened before. A dlopen a live collector saw
 * bring an object in (libgraph__saw_dlopen) outranks the order.
 *
 * The id of the object that loaded object @id, or LG_NONE: a root (the executable, the vDSO, a
 * preload, a dlopen), or an object gone or only mapped.
 */
unsigned int libgraph__loaded_by(const struct libgraph *g, unsigned int id);
/* The root of @id's chain of loaders (libgraph__loaded_by): itself when it is a root. */
unsigned int libgraph__root(const struct libgraph *g, unsigned int id);
/* Is @id in its process's global scope: a start-up object of namespace 0, not one a dlopen
 * (or only a mapping) brought? */
bool libgraph__in_global_scope(const struct libgraph *g, unsigned int id);
/*
 * The object the loader's global scope finds @name in first (.dynsym, the loader's order), as
 * it binds a reference that no object of its own defines; NULL when none.
 */
const struct lg_object *libgraph__first_definer(const struct libgraph *g, const char *name);
/* The object whose file spans address @addr (the highest base, when several would), or NULL. */
const struct lg_object *libgraph__object_at(const struct libgraph *g, uint64_t addr);
/*
 * The objects whose DT_NEEDED named object @id when it arrived, the one that loaded it first, then
 * the other parents that came before it: at most @max ids in @out, their number returned (0 for a
 * root, whatever needs it later).
 */
size_t libgraph__needed_by(const struct libgraph *g, unsigned int id, unsigned int *out,
			   size_t max);
/*
 * Evidence from a live collector: the dlopen call it saw returned @o, new to the process. @o came
 * by that dlopen, and is a root from now on (its origin becomes dlopen unless it is the program,
 * the loader, the vDSO or a preload).
 */
void libgraph__saw_dlopen(struct lg_object *o);

/*
 * Name the package that owns each object not asked about yet (pkgowner.h), through @t's root.
 * Deleted files, the vDSO and gone objects are skipped. 0 or -ENOMEM.
 */
int libgraph__find_packages(struct libgraph *g, const struct target *t, struct pkg_cache *pc);

struct py_interp;
/*
 * The CPython interpreter among @g's live objects, the executable first as the loader orders
 * them (py_interp__find). 0; -ENOENT, not Python; -ENOTSUP with a reason in @why; -ENOMEM.
 */
/*
 * The C library of the process: IMPL_GLIBC or IMPL_MUSL, by what its libc object defines, or
 * for a static program by its own symbols (musl's __init_libc, glibc's __libc_setup_tls);
 * IMPL__COUNT when neither says.
 */
enum role_impl libgraph__libc(const struct libgraph *g);

int libgraph__find_python(const struct libgraph *g, struct py_interp *out, char *why,
			  size_t whylen);

/* The file name part of the path ("libgomp.so.1"). */
const char *lg_object__basename(const struct lg_object *o);
const struct obj_roles *lg_object__roles(const struct lg_object *o);
/* The dynamic loader (ld.so), by its role. */
bool lg_object__is_loader(const struct lg_object *o);
/* The system's own code in a stack: the loader, the C library, the vDSO. */
bool lg_object__is_system(const struct lg_object *o);
const char *lg_origin__id(enum lg_origin o);
/* How object @id came, for evidence lines: "DT_NEEDED of two_omp, libfoo.so" or "dlopen". */
void lg_object__describe_origin(const struct libgraph *g, unsigned int id, char *buf, size_t len);

#endif
