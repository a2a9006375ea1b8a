// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "elf_cache.h"
#include "elfobj.h"
#include "heapwarm.h"
#include "idxmap.h"
#include "libgraph.h"
#include "linkmap.h"
#include "paths.h"
#include "permission.h"
#include "pkgowner.h"
#include "procfs.h"
#include "procmaps.h"
#include "pystate.h"
#include "target.h"

static const char *origin_ids[] = {
	[LG_EXECUTABLE] = "executable", [LG_INTERPRETER] = "interpreter", [LG_VDSO] = "vdso",
	[LG_PRELOAD] = "preload",	[LG_NEEDED] = "needed",		  [LG_DLOPEN] = "dlopen",
	[LG_MAPPED_ONLY] = "mapped",
};

const char *lg_origin__id(enum lg_origin o)
{
	return origin_ids[o];
}

const char *lg_object__basename(const struct lg_object *o)
{
	return path_base(o->path);
}

const struct obj_roles *lg_object__roles(const struct lg_object *o)
{
	static const struct obj_roles none;

	return o->elf ? roles__of(o->elf) : &none;
}

bool lg_object__is_loader(const struct lg_object *o)
{
	return obj_roles__find(lg_object__roles(o), ROLE_LOADER) != NULL;
}

bool lg_object__is_system(const struct lg_object *o)
{
	return lg_object__is_loader(o) || obj_roles__find(lg_object__roles(o), ROLE_LIBC) ||
	       o->origin == LG_VDSO;
}

static struct lg_object *new_object(struct libgraph *g)
{
	struct lg_object *o;

	if (ARRAY_RESERVE(g->objs, g->cap, g->n + 1))
		return NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->id = (unsigned int)g->n;
	g->objs[g->n++] = o;
	return o;
}

static void object_open_elf(struct libgraph *g, struct lg_object *o, const char *host_path,
			    const char *mapped_path)
{
	o->elf = elf_cache__open(g->cache, host_path, mapped_path, o->inode, &o->error);
	if (o->elf && elfobj__soname(o->elf))
		o->soname = strdup(elfobj__soname(o->elf));
}

struct lg_object *libgraph__add(struct libgraph *g, unsigned int ns, const char *path,
				const char *host_path, uint64_t base, uint64_t lm_addr,
				uint64_t l_ld)
{
	char *dup = strdup(path);
	struct lg_object *o = dup ? new_object(g) : NULL;

	if (!o) {
		free(dup);
		return NULL;
	}
	o->ns = ns;
	o->path = dup;
	o->base = base;
	o->lm_addr = lm_addr;
	o->l_ld = l_ld;
	o->in_link_map = lm_addr != 0;
	o->origin = LG_DLOPEN;
	o->seq = o->id;
	if (host_path)
		object_open_elf(g, o, host_path, NULL);
	return o;
}

void libgraph__remove(struct libgraph *g, uint64_t lm_addr)
{
	for (size_t i = 0; i < g->n; i++)
		if (!g->objs[i]->gone && g->objs[i]->lm_addr == lm_addr)
			g->objs[i]->gone = true;
}

/* An index from (namespace, name) to object, for DT_NEEDED matching. */
struct name_entry {
	const char *name;
	unsigned int ns;
	struct lg_object *o;
};

struct name_index {
	struct name_entry *e;
	size_t n, cap;
	struct idxmap map;
};

struct name_key {
	const struct name_entry *e;
	const char *name;
	unsigned int ns;
};

static uint64_t name_hash(const char *s, unsigned int ns)
{
	return idxmap__hash_bytes(s, strlen(s)) ^ idxmap__hash_u64(ns);
}

static bool name_is(size_t idx, const void *ctx)
{
	const struct name_key *k = ctx;

	return k->e[idx].ns == k->ns && !strcmp(k->e[idx].name, k->name);
}

/* 0 or -ENOMEM. */
static int index_put(struct name_index *ix, const char *name, unsigned int ns, struct lg_object *o)
{
	struct name_key k = { NULL, name, ns };
	int added;

	if (ARRAY_RESERVE(ix->e, ix->cap, ix->n + 1))
		return -ENOMEM;
	k.e = ix->e;
	/* The loader keeps the first object of a name: so do we. */
	added = idxmap__insert(&ix->map, name_hash(name, ns), ix->n, name_is, &k, NULL);
	if (added > 0)
		ix->e[ix->n++] = (struct name_entry){ name, ns, o };
	return added < 0 ? added : 0;
}

static struct lg_object *index_get(const struct name_index *ix, const char *name, unsigned int ns)
{
	struct name_key k = { ix->e, name, ns };
	size_t at = idxmap__find(&ix->map, name_hash(name, ns), name_is, &k);

	return at == IDXMAP_NONE ? NULL : ix->e[at].o;
}

static int push_id(unsigned int **arr, size_t *n, size_t *cap, unsigned int id)
{
	for (size_t i = 0; i < *n; i++)
		if ((*arr)[i] == id)
			return 0;
	return ARRAY_PUSH(*arr, *n, *cap, id);
}

static bool is_preloaded(const struct libgraph *g, const struct lg_object *o)
{
	const char *p = g->preload, *base = lg_object__basename(o);
	size_t blen = strlen(base), plen = strlen(o->path);

	/* LD_PRELOAD lists paths or names separated by spaces or colons. */
	while (p && *p) {
		size_t len = strcspn(p, " :");

		if ((len == plen && !strncmp(p, o->path, len)) ||
		    (len == blen && !strncmp(p, base, len)))
			return true;
		p += len;
		p += strspn(p, " :");
	}
	return false;
}

/* Can @p have brought @o in: live, in @o's namespace, and in the loader's list before it? */
static bool came_before(const struct libgraph *g, const struct lg_object *o, unsigned int p)
{
	const struct lg_object *x = p < g->n ? g->objs[p] : NULL;

	return x && x != o && !x->gone && x->ns == o->ns && x->origin != LG_MAPPED_ONLY &&
	       x->seq < o->seq;
}

/* The first object in the loader's order whose DT_NEEDED names @o and that came before it. */
static unsigned int first_needer(const struct libgraph *g, const struct lg_object *o)
{
	unsigned int best = LG_NONE;

	for (size_t i = 0; i < o->n_parents; i++)
		if (came_before(g, o, o->parents[i]) &&
		    (best == LG_NONE || g->objs[o->parents[i]]->seq < g->objs[best]->seq))
			best = o->parents[i];
	return best;
}

unsigned int libgraph__loaded_by(const struct libgraph *g, unsigned int id)
{
	const struct lg_object *o = id < g->n ? g->objs[id] : NULL;

	/* The loader is placed in the search list where the first object needing it sits. */
	if (!o || o->gone || o->dlopened || (o->origin != LG_NEEDED && o->origin != LG_INTERPRETER))
		return LG_NONE;
	return first_needer(g, o);
}

unsigned int libgraph__root(const struct libgraph *g, unsigned int id)
{
	for (unsigned int hops = 0; libgraph__loaded_by(g, id) != LG_NONE && hops < 64; hops++)
		id = libgraph__loaded_by(g, id);
	return id;
}

bool libgraph__in_global_scope(const struct libgraph *g, unsigned int id)
{
	const struct lg_object *r = g->objs[libgraph__root(g, id)];

	return !r->ns && r->origin != LG_DLOPEN && r->origin != LG_MAPPED_ONLY;
}

const struct lg_object *libgraph__first_definer(const struct libgraph *g, const char *name)
{
	const struct lg_object *first = NULL;
	GElf_Sym sym;

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		if (!o->gone && o->elf && o->in_link_map && (!first || o->seq < first->seq) &&
		    libgraph__in_global_scope(g, o->id) &&
		    !elfobj__lookup(o->elf, name, ELFOBJ_DYNSYM, &sym))
			first = o;
	}
	return first;
}

const struct lg_object *libgraph__object_at(const struct libgraph *g, uint64_t addr)
{
	const struct lg_object *best = NULL;

	for (size_t i = 0; g && i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		if (o->elf && !o->gone && o->base <= addr &&
		    addr - o->base < elfobj__size(o->elf) && (!best || o->base > best->base))
			best = o;
	}
	return best;
}

size_t libgraph__needed_by(const struct libgraph *g, unsigned int id, unsigned int *out, size_t max)
{
	unsigned int by = libgraph__loaded_by(g, id);
	const struct lg_object *o = g->objs[id];
	size_t n = 0;

	if (by == LG_NONE)
		return 0;
	if (max)
		out[n] = by;
	n++;
	for (size_t i = 0; i < o->n_parents; i++) {
		if (o->parents[i] == by || !came_before(g, o, o->parents[i]))
			continue;
		if (n < max)
			out[n] = o->parents[i];
		n++;
	}
	return n;
}

void libgraph__saw_dlopen(struct lg_object *o)
{
	o->dlopened = true;
	if (o->origin == LG_NEEDED)
		o->origin = LG_DLOPEN;
}

/*
 * Without link maps the ids follow addresses: replay the loader's walk to order the objects, the
 * program's closure breadth-first in DT_NEEDED order, then each object nothing needs with its
 * closure, then what only a cycle reaches.
 */
static int replay_order(struct libgraph *g)
{
	unsigned int *queue = malloc((g->n ? g->n : 1) * sizeof(*queue)), next = 0;
	bool *placed = calloc(g->n ? g->n : 1, sizeof(*placed));
	size_t head = 0, tail = 0;

	if (!queue || !placed) {
		free(queue);
		free(placed);
		return -ENOMEM;
	}
	for (int pass = 0; pass < 3; pass++) {
		for (size_t i = 0; i < g->n; i++) {
			struct lg_object *o = g->objs[i];

			if (placed[i] || (pass == 0 && o->origin != LG_EXECUTABLE) ||
			    (pass == 1 && o->n_parents))
				continue;
			placed[i] = true;
			queue[tail++] = (unsigned int)i;
			while (head < tail) {
				struct lg_object *x = g->objs[queue[head++]];

				x->seq = next++;
				for (size_t k = 0; k < x->n_children; k++) {
					if (placed[x->children[k]])
						continue;
					placed[x->children[k]] = true;
					queue[tail++] = x->children[k];
				}
			}
		}
	}
	free(queue);
	free(placed);
	return 0;
}

/* Forget @o's edges and unresolved names: linking starts over. */
static void unlink_object(struct lg_object *o)
{
	free(o->parents);
	free(o->children);
	for (size_t j = 0; j < o->n_unresolved; j++)
		free(o->unresolved[j]);
	free(o->unresolved);
	o->parents = o->children = NULL;
	o->unresolved = NULL;
	o->n_parents = o->n_children = o->n_unresolved = 0;
	o->cap_parents = o->cap_children = o->cap_unresolved = 0;
}

/* An edge from @p to each object its DT_NEEDED names; the names no object answers kept. */
static int link_needed(const struct name_index *ix, struct lg_object *p)
{
	for (size_t k = 0; k < elfobj__n_needed(p->elf); k++) {
		const char *name = elfobj__needed(p->elf, k);
		struct lg_object *c = index_get(ix, name, p->ns);
		int err;

		if (c && c != p) {
			err = push_id(&p->children, &p->n_children, &p->cap_children, c->id) ?:
				      push_id(&c->parents, &c->n_parents, &c->cap_parents, p->id);
			if (err)
				return err;
			continue;
		}
		if (c)
			continue;
		if (ARRAY_RESERVE(p->unresolved, p->cap_unresolved, p->n_unresolved + 1) ||
		    !(p->unresolved[p->n_unresolved] = strdup(name)))
			return -ENOMEM;
		p->n_unresolved++;
	}
	return 0;
}

/* How a loaded object came in, from its edges: preloaded, needed, or dlopen'ed. */
static void set_origin(const struct libgraph *g, struct lg_object *o)
{
	unsigned int by;

	if (o->origin == LG_EXECUTABLE || o->origin == LG_INTERPRETER || o->origin == LG_VDSO ||
	    o->origin == LG_MAPPED_ONLY)
		return;
	by = first_needer(g, o);
	/* Preloads come right after the program, before anything it needs. */
	if (o->ns == 0 && is_preloaded(g, o) &&
	    (by == LG_NONE || g->objs[by]->origin == LG_EXECUTABLE || is_preloaded(g, g->objs[by])))
		o->origin = LG_PRELOAD;
	else if (by != LG_NONE && !o->dlopened)
		o->origin = LG_NEEDED;
	else
		o->origin = LG_DLOPEN;
}

/* The libraries musl's libc stands in for (its loader's "reserved" names). */
static const char *const musl_names[] = { "libc.so",  "libpthread.so", "librt.so",  "libm.so",
					  "libdl.so", "libutil.so",    "libxnet.so" };

int libgraph__link(struct libgraph *g)
{
	struct name_index ix = { 0 };
	int err = 0;

	/* A SONAME, a path and a file name each. */
	if (ARRAY_RESERVE(ix.e, ix.cap, g->n * 3) || idxmap__reserve(&ix.map, g->n * 3)) {
		free(ix.e);
		return -ENOMEM;
	}
	/* The loader matches a DT_NEEDED name against SONAMEs and the names it opened. */
	for (size_t i = 0; i < g->n; i++) {
		struct lg_object *o = g->objs[i];

		unlink_object(o);
		if (o->gone || !o->in_link_map || err)
			continue;
		if (o->soname)
			err = index_put(&ix, o->soname, o->ns, o);
		err = err ? err : index_put(&ix, o->path, o->ns, o);
		err = err ? err : index_put(&ix, lg_object__basename(o), o->ns, o);
		/* musl's loader is its libc: it answers the names of the libraries it replaces
		 * (musl-gcc links libc.so, which no file of that name answers). */
		if (o->elf && obj_roles__find_impl(roles__of(o->elf), IMPL_MUSL))
			for (size_t k = 0; k < sizeof(musl_names) / sizeof(musl_names[0]) && !err;
			     k++)
				err = index_put(&ix, musl_names[k], o->ns, o);
	}
	for (size_t i = 0; i < g->n && !err; i++) {
		struct lg_object *p = g->objs[i];

		if (!p->gone && p->elf && p->in_link_map)
			err = link_needed(&ix, p);
	}
	free(ix.e);
	idxmap__free(&ix.map);
	if (!err && g->unordered)
		err = replay_order(g);
	for (size_t i = 0; i < g->n && !err; i++)
		set_origin(g, g->objs[i]);
	return err;
}

/*
 * Could @name be an l_name the loader wrote (a path as given to dlopen or found on the search
 * path)? An entry read while dlclose frees it has freed memory there: heap pointers' bytes.
 */
static bool plausible_name(const char *name)
{
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

/*
 * Does l_name @name name the file mapped at the entry's dynamic section (@mp, NULL when that is
 * unmapped already)? The same base name, or a path that exists in the target's root (a link:
 * libopenblas.so.0 for libopenblasp-r0.3.21.so). Else it is freed memory read during a
 * dlclose.
 */
static bool name_of_mapping(const struct target *t, const char *name, const struct mapping *mp)
{
	char host[PATH_MAX + 64];
	struct stat st;

	if (!plausible_name(name))
		return false;
	if (mp && mp->path && (mp->path[0] != '/' || !strcmp(path_base(name), path_base(mp->path))))
		return true;
	if (name[0] != '/')
		return false; /* relative to the target's working directory: only by its base name */
	target__host_path(t, name, host, sizeof(host));
	return !stat(host, &st);
}

/*
 * Is @mp the target's program? glibc names it "" in the link map; musl by the path it was run
 * by (argv[0], "./prog"), which is no path to open from here: the mapping's file is the
 * executable's.
 */
static bool is_program(const struct target *t, const struct mapping *mp)
{
	struct stat st;

	return mp && mp->inode && t->exe_fd >= 0 && !fstat(t->exe_fd, &st) &&
	       st.st_ino == mp->inode;
}

/* Objects the loader knows: pick each one's file, origin and mapping. */
static int add_link_map_objects(struct libgraph *g, const struct target *t,
				const struct linkmap *lm, const struct procmaps *maps)
{
	for (size_t i = 0; i < lm->n; i++) {
		const struct lm_entry *e = &lm->e[i];
		const struct mapping *mp = procmaps__find(maps, e->l_ld);
		char host[PATH_MAX + 64], mapped[96] = "";
		const char *path = e->name;
		struct lg_object *o;
		bool exe = i == 0 && e->ns == 0 && (!e->name[0] || is_program(t, mp));

		if (exe)
			path = t->exe;
		else if ((!path[0] || !name_of_mapping(t, path, mp)) && mp && mp->path)
			path = mp->path;
		else if (path[0] && !name_of_mapping(t, path, mp))
			continue; /* being unloaded, its mappings gone: no object any more */
		o = libgraph__add(g, e->ns, path, NULL, e->l_addr, e->lm_addr, e->l_ld);
		if (!o)
			return -ENOMEM;
		if (mp) {
			o->in_maps = true;
			o->inode = mp->inode;
			o->deleted = mp->deleted;
			o->kernel_path = !t->core && mp->path && !strcmp(path, mp->path);
		}
		if (exe) {
			o->origin = LG_EXECUTABLE;
			target__exe_path(t, host, sizeof(host));
		} else if (mp && mp->path && !strcmp(mp->path, "[vdso]")) {
			o->origin = LG_VDSO;
			continue;
		} else {
			if (lm->interp_base && e->l_addr == lm->interp_base)
				o->origin = LG_INTERPRETER;
			/* A relative l_name (dlopen("lib/x.so")) is relative to the target's working
			 * directory: the kernel's path of the mapping is the one to open. */
			target__host_path(t,
					  path[0] != '/' && mp && mp->path && mp->path[0] == '/' ?
						  mp->path :
						  path,
					  host, sizeof(host));
			if (mp && mapping__is_file(mp))
				proc__map_file_path(mapped, sizeof(mapped), t->task, mp->start,
						    mp->end);
		}
		object_open_elf(g, o, host, mapped[0] ? mapped : NULL);
	}
	return 0;
}

static bool inode_known(const struct libgraph *g, uint64_t inode)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->objs[i]->inode == inode)
			return true;
	return false;
}

static bool has_elf_magic(const char *path)
{
	char magic[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool elf;

	if (fd < 0)
		return false;
	elf = pread(fd, magic, 4, 0) == 4 && !memcmp(magic, "\177ELF", 4);
	close(fd);
	return elf;
}

/* Objects mapped in the process that no link map lists: loaded by hand, or a dlopen under way. */
static int add_mapped_only(struct libgraph *g, const struct target *t, const struct procmaps *maps)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct mapping *mp = &maps->maps[i];
		char host[PATH_MAX + 64];
		struct lg_object *o;

		if (!mapping__is_file(mp) || mp->offset != 0 || inode_known(g, mp->inode))
			continue;
		target__host_path(t, mp->path, host, sizeof(host));
		if (!has_elf_magic(host)) {
			proc__map_file_path(host, sizeof(host), t->task, mp->start, mp->end);
			if (!has_elf_magic(host))
				continue;
		}
		o = libgraph__add(g, 0, mp->path, NULL, mp->start, 0, 0);
		if (!o)
			return -ENOMEM;
		o->origin = g->from_link_map ? LG_MAPPED_ONLY : LG_DLOPEN;
		o->in_maps = true;
		o->inode = mp->inode;
		o->deleted = mp->deleted;
		o->kernel_path = !t->core;
		if (!g->from_link_map && !strcmp(mp->path, t->exe))
			o->origin = LG_EXECUTABLE;
		object_open_elf(g, o, host, NULL);
		/* Without link maps, ld.so's objects still carry their DT_NEEDED edges. */
		if (!g->from_link_map)
			o->in_link_map = true;
	}
	return 0;
}

static struct libgraph *graph_new(pid_t pid, const char *comm, struct elf_cache *cache)
{
	struct libgraph *g = calloc(1, sizeof(*g));

	if (g)
		g->cache = cache ? elf_cache__get(cache) : elf_cache__new();
	if (!g || !g->cache) {
		free(g);
		errno = ENOMEM;
		return NULL;
	}
	g->pid = pid;
	g->n_namespaces = 1;
	g->consistent = true;
	snprintf(g->comm, sizeof(g->comm), "%s", comm);
	return g;
}

struct libgraph *libgraph__new(pid_t pid, const char *comm)
{
	return graph_new(pid, comm, NULL);
}

struct libgraph *libgraph__new_cached(pid_t pid, const char *comm, struct elf_cache *cache)
{
	return graph_new(pid, comm, cache);
}

static char *strdup_or_null(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*oom = true;
	return d;
}

static unsigned int *ids_dup(const unsigned int *ids, size_t n, bool *oom)
{
	unsigned int *d = n ? malloc(n * sizeof(*d)) : NULL;

	if (n && !d)
		*oom = true;
	else if (n)
		memcpy(d, ids, n * sizeof(*d));
	return d;
}

/* Where live process @g->pid runs: its own PID namespace's number, its container. */
static void read_where(struct libgraph *g)
{
	pid_t ns = proc__ns_tid(g->pid, 0);

	g->ns_pid = ns && ns != g->pid ? ns : 0;
	if (proc__container(g->pid, g->container, sizeof(g->container)))
		g->container[0] = '\0';
}

struct libgraph *libgraph__clone(const struct libgraph *src, pid_t pid)
{
	struct libgraph *g = graph_new(pid, src->comm, src->cache);
	bool oom = !g;

	/* A fork's child is in its parent's cgroup; its own PID number matters only where the
	 * parent's namespace is not ours (the next snapshot reads both again): two /proc reads
	 * less per fork, which a node's shell loops make hundreds of a second. */
	if (g) {
		memcpy(g->container, src->container, sizeof(g->container));
		if (src->ns_pid) {
			pid_t ns = proc__ns_tid(g->pid, 0);

			g->ns_pid = ns && ns != g->pid ? ns : 0;
		}
	}

	for (size_t i = 0; !oom && i < src->n; i++) {
		const struct lg_object *so = src->objs[i];
		struct lg_object *o = new_object(g);

		if (!o) {
			oom = true;
			break;
		}
		*o = *so;
		elfobj__ref(o->elf);
		o->path = strdup_or_null(so->path, &oom);
		o->soname = strdup_or_null(so->soname, &oom);
		o->error = strdup_or_null(so->error, &oom);
		o->parents = ids_dup(so->parents, so->n_parents, &oom);
		o->children = ids_dup(so->children, so->n_children, &oom);
		o->unresolved = so->n_unresolved ? calloc(so->n_unresolved, sizeof(char *)) : NULL;
		/* The copies are of the sizes they hold, not of the room @so kept. */
		o->cap_parents = o->parents ? so->n_parents : 0;
		o->cap_children = o->children ? so->n_children : 0;
		o->cap_unresolved = o->unresolved ? so->n_unresolved : 0;
		if (so->n_unresolved && !o->unresolved) {
			o->n_unresolved = 0;
			oom = true;
		}
		for (size_t k = 0; o->unresolved && k < so->n_unresolved; k++)
			o->unresolved[k] = strdup_or_null(so->unresolved[k], &oom);
		if (so->pkg && !(o->pkg = pkg_owner__dup(so->pkg)))
			oom = true;
	}
	if (!oom && g) {
		snprintf(g->exe, sizeof(g->exe), "%s", src->exe);
		g->from_link_map = src->from_link_map;
		g->consistent = src->consistent;
		g->unordered = src->unordered;
		g->n_namespaces = src->n_namespaces;
		g->r_debug = src->r_debug;
		g->r_brk = src->r_brk;
		g->preload = strdup_or_null(src->preload, &oom);
	}
	if (oom) {
		libgraph__free(g);
		errno = ENOMEM;
		return NULL;
	}
	return g;
}

int libgraph__snapshot(const struct target *t, struct libgraph **out, char *why, size_t whylen)
{
	return libgraph__snapshot_cached(t, NULL, out, why, whylen);
}

int libgraph__snapshot_cached(const struct target *t, struct elf_cache *cache,
			      struct libgraph **out, char *why, size_t whylen)
{
	struct procmaps *maps;
	int err;

	/* The maps' text (some 500 bytes an object) and what is parsed from it, then what the
	 * objects' analyses and names take: 512 bytes a mapping left 500 objects no fault more
	 * (perf stat: 107 faults with 512, 1280 or 256; 200 without). */
	heap__warm(1u << 20);
	maps = t->core ? procmaps__from_core(t->core) : procmaps__read(t->pid);
	*out = NULL;
	if (!maps) {
		err = -errno;
		snprintf(why, whylen, "process %d (%s) exited while being read", t->pid, t->comm);
		return err;
	}
	heap__warm(maps->n * 512);
	err = libgraph__snapshot_maps(t, maps, cache, out, why, whylen);
	procmaps__free(maps);
	return err;
}

int libgraph__snapshot_maps(const struct target *t, const struct procmaps *maps,
			    struct elf_cache *cache, struct libgraph **out, char *why,
			    size_t whylen)
{
	return libgraph__snapshot_again(t, maps, cache, NULL, out, why, whylen);
}

/* What @prev, the same image's last snapshot, read that does not change while it runs. */
static bool same_image(const struct libgraph *prev, const struct target *t)
{
	return prev && prev->pid == t->pid && prev->lm && !t->core && !t->image &&
	       !strcmp(prev->exe, t->exe);
}

int libgraph__snapshot_again(const struct target *t, const struct procmaps *maps,
			     struct elf_cache *cache, const struct libgraph *prev,
			     struct libgraph **out, char *why, size_t whylen)
{
	struct linkmap *lm = NULL;
	struct libgraph *g;
	bool again = same_image(prev, t);
	int err;

	*out = NULL;
	g = graph_new(t->pid, t->comm, cache);
	if (!g) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	snprintf(g->exe, sizeof(g->exe), "%s", t->exe);
	if (again) {
		/* Its container and PID namespace, as a fork's child takes its parent's. */
		g->ns_pid = prev->ns_pid;
		memcpy(g->container, prev->container, sizeof(g->container));
	} else if (!t->core && !t->image) {
		read_where(g);
	}

	err = linkmap__read_again(t, maps, again ? prev->lm : NULL, &lm);
	if (err == -ESRCH || (err && !target__alive(t))) {
		err = -ESRCH;
		snprintf(why, whylen, "process %d (%s) exited while being read", t->pid, t->comm);
		goto err_free;
	}
	if (err == -EPERM) {
		char reason[512];

		permission__explain(t->pid, ACCESS_ATTACH, reason, sizeof(reason));
		snprintf(why, whylen, "permission denied reading the memory of process %d (%s): %s",
			 t->pid, t->comm, reason);
		goto err_free;
	}
	if (again) {
		/* The environment it started with (/proc/PID/environ) is read once an image. */
		g->preload = prev->preload ? strdup(prev->preload) : NULL;
	} else {
		char preload[4096];

		if (!target__getenv(t, "LD_PRELOAD", preload, sizeof(preload)))
			g->preload = strdup(preload);
	}
	if (!err) {
		g->from_link_map = true;
		g->consistent = lm->consistent;
		g->n_namespaces = lm->n_namespaces;
		g->r_debug = lm->r_debug;
		g->r_brk = lm->r_brk;
		err = add_link_map_objects(g, t, lm, maps);
		if (err)
			goto err_oom;
	} else if (err == -ENOEXEC) {
		/* Statically linked (Go, Rust-musl, busybox): no loader, the executable alone. */
		g->static_exe = true;
		g->n_namespaces = 1;
		g->consistent = true;
	} else {
		/* No usable r_debug (not yet initialized, or damaged): the kernel's view only. */
		g->n_namespaces = 1;
		g->consistent = true;
		g->unordered = true;
	}
	err = add_mapped_only(g, t, maps);
	if (err)
		goto err_oom;
	err = libgraph__link(g);
	if (err)
		goto err_oom;
	/* Kept for the next snapshot of this image (libgraph__snapshot_again). */
	g->lm = lm;
	*out = g;
	return 0;

err_oom:
	snprintf(why, whylen, "out of memory");
err_free:
	linkmap__free(lm);
	libgraph__free(g);
	return err;
}

int libgraph__find_packages(struct libgraph *g, const struct target *t, struct pkg_cache *pc)
{
	const struct pkg_owner **owners = calloc(g->n ? g->n : 1, sizeof(*owners));
	const char **paths = calloc(g->n ? g->n : 1, sizeof(*paths));
	bool *real = calloc(g->n ? g->n : 1, sizeof(*real));
	char root[64];
	int fd = t->root_fd, err = -ENOMEM;

	if (!owners || !paths || !real)
		goto out;
	/* A target without its root held (an image, a fuzz input) may still have /proc/PID/root. */
	if (fd < 0) {
		proc__path(root, sizeof(root), t->task, 0, "root");
		fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		if (!o->pkg && !o->gone && !o->deleted && o->origin != LG_VDSO)
			paths[i] = o->path;
		real[i] = o->kernel_path;
	}
	err = pkg_cache__lookup_many(pc, fd, paths, real, g->n, owners);
	for (size_t i = 0; !err && i < g->n; i++)
		if (owners[i] && !(g->objs[i]->pkg = pkg_owner__dup(owners[i])))
			err = -ENOMEM;
	if (fd >= 0 && fd != t->root_fd)
		close(fd);
out:
	free(owners);
	free(paths);
	free(real);
	return err;
}

void libgraph__free(struct libgraph *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++) {
		struct lg_object *o = g->objs[i];

		free(o->path);
		free(o->soname);
		free(o->parents);
		free(o->children);
		for (size_t j = 0; j < o->n_unresolved; j++)
			free(o->unresolved[j]);
		free(o->unresolved);
		free(o->error);
		pkg_owner__free(o->pkg);
		elfobj__free(o->elf);
		free(o);
	}
	elf_cache__put(g->cache);
	linkmap__free(g->lm);
	free(g->preload);
	free(g->objs);
	free(g);
}

enum role_impl libgraph__libc(const struct libgraph *g)
{
	GElf_Sym sym;

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];
		const struct obj_roles *r = o->gone || !o->elf ? NULL : roles__of(o->elf);

		if (r && obj_roles__find_impl(r, IMPL_MUSL))
			return IMPL_MUSL;
		if (r && obj_roles__find_impl(r, IMPL_GLIBC))
			return IMPL_GLIBC;
	}
	if (g->static_exe && g->n && g->objs[0]->elf) {
		if (!elfobj__lookup(g->objs[0]->elf, "__init_libc", ELFOBJ_SYMTAB, &sym))
			return IMPL_MUSL;
		if (!elfobj__lookup(g->objs[0]->elf, "__libc_setup_tls", ELFOBJ_SYMTAB, &sym))
			return IMPL_GLIBC;
	}
	return IMPL__COUNT;
}

int libgraph__find_python(const struct libgraph *g, struct py_interp *out, char *why, size_t whylen)
{
	struct py_object_ref *refs = calloc(g->n ? g->n : 1, sizeof(*refs));
	size_t n = 0;
	int err;

	if (!refs)
		return -ENOMEM;
	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *o = g->objs[i];

		/*
		 * Only the interpreter defines _PyRuntime, and it defines Py_Initialize too (its
		 * role): other objects are not asked, so their symbol tables are not read. The
		 * first object stays (a static embedding may keep its symbols in .symtab only).
		 */
		if (!o->gone && o->elf && (!n || obj_roles__find(roles__of(o->elf), ROLE_PYTHON)))
			refs[n++] = (struct py_object_ref){ o->path, o->elf, o->base };
	}
	err = py_interp__find(refs, n, out, why, whylen);
	free(refs);
	return err;
}

void lg_object__describe_origin(const struct libgraph *g, unsigned int id, char *buf, size_t len)
{
	const struct lg_object *o = g->objs[id];
	unsigned int by[16];
	size_t used, n;

	switch (o->origin) {
	case LG_NEEDED:
		/* The objects that needed it when it came, the one that loaded it first. */
		n = libgraph__needed_by(g, id, by, sizeof(by) / sizeof(by[0]));
		if (!n) {
			snprintf(buf, len, "DT_NEEDED of an object unloaded since");
			break;
		}
		used = (size_t)snprintf(buf, len, "DT_NEEDED of ");
		for (size_t i = 0; i < n && i < sizeof(by) / sizeof(by[0]) && used < len; i++)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
						 lg_object__basename(g->objs[by[i]]));
		break;
	case LG_DLOPEN:
		snprintf(buf, len, o->ns ? "dlmopen into namespace %u" : "dlopen", o->ns);
		break;
	default: snprintf(buf, len, "%s", lg_origin__id(o->origin)); break;
	}
}
