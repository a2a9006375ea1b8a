// SPDX-License-Identifier: GPL-2.0
/*
 * shadowed-soname: a library whose own search path (DT_RUNPATH, DT_RPATH) names one file for a
 * SONAME it needs, given another file of that SONAME that the process had loaded first. The
 * loader matches a DT_NEEDED name against the objects already loaded before it searches any
 * directory, so the first file of a SONAME serves every later object that needs it, whatever
 * their RUNPATH says (a wheel's libnccl.so.2 beside the system's: cugraph #4465, pytorch
 * #119072). Which one wins depends on import order; the loser's users get code built as another
 * file, or fail with "undefined symbol" where it lacks what they call.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
#include "owners.h"
#include "target.h"

#define MISSING_SHOWN 5

/* What a dependent's own search finds for a name, before the process-wide search. */
struct own_find {
	char file[PATH_MAX]; /* as the target sees it */
	const char *from;    /* "RUNPATH", "RPATH" or "LD_LIBRARY_PATH" */
	char list[1024];     /* that search path, as written */
};

/*
 * One directory of a search path: @dir with $ORIGIN expanded to @origin. False for a token
 * this cannot expand ($LIB, $PLATFORM: the loader's own choices).
 */
static bool expand_dir(const char *dir, size_t n, const char *origin, char *out, size_t len)
{
	size_t used = 0;

	for (size_t i = 0; i < n && used < len; i++) {
		if (dir[i] != '$') {
			out[used++] = dir[i];
			continue;
		}
		if (!strncmp(dir + i, "$ORIGIN", 7) && i + 7 <= n)
			i += 6;
		else if (!strncmp(dir + i, "${ORIGIN}", 9) && i + 9 <= n)
			i += 8;
		else
			return false;
		used += (size_t)snprintf(out + used, len - used, "%s", origin);
	}
	if (used >= len)
		return false;
	out[used] = '\0';
	return true;
}

/*
 * The first file called @name in the directories of @list (":"-separated), as the target sees
 * it: 0, -ENOENT for none, -EAGAIN when a directory before it cannot be expanded (then what
 * the loader finds is not known).
 */
static int search_list(const struct target *t, const char *list, const char *origin,
		       const char *name, char *out, size_t len)
{
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, ":");
		char dir[PATH_MAX], host[PATH_MAX + 64];
		struct stat st;

		if (n && !expand_dir(p, n, origin, dir, sizeof(dir)))
			return -EAGAIN;
		/* An empty entry is the working directory: not a place a library is meant to be. */
		if (n && dir[0] == '/' && strlen(dir) + strlen(name) + 2 <= len) {
			size_t dl = strlen(dir);

			memcpy(out, dir, dl);
			out[dl] = '/';
			memcpy(out + dl + 1, name, strlen(name) + 1);
			target__host_path(t, out, host, sizeof(host));
			if (!stat(host, &st) && S_ISREG(st.st_mode))
				return 0;
		}
		p += n + (p[n] == ':');
	}
	return -ENOENT;
}

/*
 * Where dependent @dpath (ELF @d) would find @name by its own search: RPATH, then
 * LD_LIBRARY_PATH, or LD_LIBRARY_PATH, then RUNPATH (ld.so(8)). 0 and @f, -ENOENT when the
 * process-wide search (ld.so.cache, the default directories) would decide, which is the same
 * for every object; -EAGAIN when unknown.
 */
static int own_search(const struct target *t, const char *dpath, const struct elf_object *d,
		      const char *name, struct own_find *f)
{
	char sp[1024], ldlp[1024] = "", origin[PATH_MAX];
	const char *slash = strrchr(dpath, '/');
	bool runpath;
	int err;

	if (elfobj__search_path(d, sp, sizeof(sp), &runpath) || !sp[0] || !slash)
		return -ENOENT;
	snprintf(origin, sizeof(origin), "%.*s", (int)(slash - dpath), dpath);
	target__getenv(t, "LD_LIBRARY_PATH", ldlp, sizeof(ldlp));
	for (int k = 0; k < 2; k++) {
		bool own = (k == 0) != runpath;

		err = search_list(t, own ? sp : ldlp, origin, name, f->file, sizeof(f->file));
		if (err != -ENOENT) {
			f->from = !own ? "LD_LIBRARY_PATH" : runpath ? "RUNPATH" : "RPATH";
			snprintf(f->list, sizeof(f->list), "%s", own ? sp : ldlp);
			return err;
		}
	}
	return -ENOENT;
}

/* Whether the host paths of two files of the target are one file. */
static bool same_file(const struct target *t, const char *a, const char *b)
{
	char ha[PATH_MAX + 64], hb[PATH_MAX + 64];
	struct stat sa, sb;

	target__host_path(t, a, ha, sizeof(ha));
	target__host_path(t, b, hb, sizeof(hb));
	return !stat(ha, &sa) && !stat(hb, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The symbols @user needs that @own defines and @got lacks. */
struct missing {
	const struct elf_object *own, *got;
	const struct libgraph *g; /* batch: a symbol another loaded object defines is no loss */
	const char *only;	  /* NULL: any; else just this one */
	char names[MISSING_SHOWN][128];
	size_t n;
};

static int find_missing(const char *name, const char *version, bool weak, void *arg)
{
	struct missing *m = arg;
	GElf_Sym sym;

	(void)version;
	if (weak || (m->only && strcmp(name, m->only)) ||
	    elfobj__lookup(m->own, name, ELFOBJ_DYNSYM, &sym) ||
	    !elfobj__lookup(m->got, name, ELFOBJ_DYNSYM, &sym))
		return 0;
	for (size_t i = 0; m->g && i < m->g->n; i++) {
		const struct lg_object *o = m->g->objs[i];

		if (!o->gone && o->elf && o->in_link_map && !o->ns &&
		    !elfobj__lookup(o->elf, name, ELFOBJ_DYNSYM, &sym))
			return 0;
	}
	if (m->n < MISSING_SHOWN)
		snprintf(m->names[m->n], sizeof(m->names[m->n]), "%s", name);
	m->n++;
	return 0;
}

static const char why[] =
	"The loader matches a DT_NEEDED name against the objects already loaded before it "
	"searches any directory: the first file of a SONAME (loaded by another package, an "
	"earlier import) serves every later object that needs it, whatever their own RUNPATH "
	"says. Which file wins depends on the import order; the other one's users run code built "
	"as another file, and fail with \"undefined symbol\" where it lacks what they call.";
static const char fix[] =
	"Make both packages use one file of that library: install the versions that match, or "
	"remove the stray copy; until then, load the package whose copy is the newer one first "
	"(import it before the other), or LD_PRELOAD that file.";

/* The evidence both rules give: the two files, and what the loaded one lacks. */
static void shadow_evidence(struct finding *f, const struct target *t, const struct libgraph *g,
			    const char *dpath, const char *name, const struct own_find *own,
			    const struct elf_object *own_elf, const struct lg_object *got,
			    const struct missing *m)
{
	char origin[256], real[PATH_MAX] = "";

	/* The file behind a link (Debian's alternatives: /lib/.../libblas.so.3), where the
	 * target's root is ours and the host's name is its name. */
	if (t && t->root_is_ours && !realpath(got->path, real))
		real[0] = '\0';
	const char *ob = elfobj__build_id(own_elf),
		   *gb = got->elf ? elfobj__build_id(got->elf) : NULL;

	finding__evidence(f, "%s needs %s; its %s (%s) finds %s", dpath, name, own->from, own->list,
			  own->file);
	lg_object__describe_origin(g, got->id, origin, sizeof(origin));
	if (real[0] && strcmp(real, got->path))
		finding__evidence(f, "the process had %s from %s (the file %s), loaded by %s", name,
				  got->path, real, origin);
	else
		finding__evidence(f, "the process had %s from %s, loaded by %s", name, got->path,
				  origin);
	finding__evidence(f, "%s: build-id %s; %s: build-id %s", own->file, ob ? ob : "none",
			  got->path, gb ? gb : "none");
	if (m->n) {
		char list[MISSING_SHOWN * 130] = "";
		size_t used = 0;

		for (size_t i = 0; i < m->n && i < MISSING_SHOWN; i++)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
						 i ? ", " : "", m->names[i]);
		finding__evidence(f, "%zu symbol%s it uses %s defined by %s and not by %s: %s%s",
				  m->n, m->n == 1 ? "" : "s", m->n == 1 ? "is" : "are", own->file,
				  got->path, list, m->n > MISSING_SHOWN ? ", ..." : "");
	}
}

/* The object of @g that dependent @d was given for DT_NEEDED @name; NULL when none. */
static const struct lg_object *given(const struct libgraph *g, const struct lg_object *d,
				     const char *name)
{
	for (size_t c = 0; c < d->n_children; c++) {
		const struct lg_object *o = d->children[c] < g->n ? g->objs[d->children[c]] : NULL;

		if (o && !o->gone &&
		    ((o->soname && !strcmp(o->soname, name)) ||
		     !strcmp(lg_object__basename(o), name)))
			return o;
	}
	return NULL;
}

void shadowed__process(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;

	/* The files are read through the process's root. */
	if (!ctx->t)
		return;

	for (size_t i = 0; i < g->n; i++) {
		const struct lg_object *d = g->objs[i];
		/* The executable's link map names it "": its $ORIGIN is its file's directory. */
		const char *dpath = d->origin == LG_EXECUTABLE && ctx->t ? ctx->t->exe : d->path;

		for (size_t k = 0;
		     !d->gone && d->elf && d->in_link_map && k < elfobj__n_needed(d->elf); k++) {
			const char *name = elfobj__needed(d->elf, k);
			const struct lg_object *got = strchr(name, '/') ? NULL : given(g, d, name);
			struct own_find own;
			struct elf_object *own_elf;
			char host[PATH_MAX + 64];
			struct missing m = { 0 };
			struct finding *f;

			if (!got || own_search(ctx->t, dpath, d->elf, name, &own) ||
			    same_file(ctx->t, own.file, got->path))
				continue;
			target__host_path(ctx->t, own.file, host, sizeof(host));
			own_elf = elfobj__open(host);
			/* The loader skips a file it cannot load (another class, not ELF). */
			if (!own_elf || !got->elf)
				goto next;
			/* One build in two places: the same code either way. */
			if (elfobj__build_id(own_elf) && elfobj__build_id(got->elf) &&
			    !strcmp(elfobj__build_id(own_elf), elfobj__build_id(got->elf)))
				goto next;
			m.own = own_elf;
			m.got = got->elf;
			m.g = g;
			elfobj__foreach_undefined(d->elf, find_missing, &m);
			f = findings__add(
				out, "shadowed-soname", m.n ? SEV_ERROR : SEV_WARNING, g->pid,
				"%s is given the %s the process had loaded first (%s), not "
				"the one its %s names (%s)",
				lg_object__basename(d), name, got->path, own.from, own.file);
			shadow_evidence(f, ctx->t, g, dpath, name, &own, own_elf, got, &m);
			finding__explain(f, why, fix);
		next:
			elfobj__free(own_elf);
		}
	}
}

/*
 * Live: a dlopen that failed on "undefined symbol: NAME", explained when the file it opened,
 * or one it needs directly, finds by its own search path a file of a SONAME the process had
 * loaded from another file, which lacks NAME while its own defines it.
 */
static bool explain_undefined(const struct live_ctx *lc, const struct live_event *e,
			      const char *dpath, const struct elf_object *d, const char *symbol,
			      int depth, struct findings *out)
{
	const struct libgraph *g = lc->g;

	for (size_t k = 0; k < elfobj__n_needed(d); k++) {
		const char *name = elfobj__needed(d, k);
		const struct lg_object *got = NULL;
		struct own_find own;
		struct elf_object *own_elf = NULL;
		char host[PATH_MAX + 64];
		struct missing m = { 0 };
		bool done = false;

		for (size_t i = 0; !strchr(name, '/') && i < g->n && !got; i++)
			if (!g->objs[i]->gone && !g->objs[i]->ns && g->objs[i]->soname &&
			    !strcmp(g->objs[i]->soname, name) && g->objs[i]->elf)
				got = g->objs[i];
		if (own_search(e->t, dpath, d, name, &own))
			continue;
		target__host_path(e->t, own.file, host, sizeof(host));
		own_elf = elfobj__open(host);
		if (own_elf && got && !same_file(e->t, own.file, got->path)) {
			m.own = own_elf;
			m.got = got->elf;
			m.only = symbol;
			elfobj__foreach_undefined(d, find_missing, &m);
		}
		if (m.n) {
			struct finding *f = findings__add(
				out, "shadowed-soname", SEV_ERROR, e->pid,
				"dlopen(\"%s\") failed: undefined symbol %s, defined by the %s its %s "
				"names (%s), not by the one the process had loaded first (%s)",
				e->dlopen_file, symbol, name, own.from, own.file, got->path);

			shadow_evidence(f, e->t, g, dpath, name, &own, own_elf, got, &m);
			finding__explain(f, why, fix);
			done = true;
		} else if (own_elf && depth == 0) {
			done = explain_undefined(lc, e, own.file, own_elf, symbol, 1, out);
		}
		elfobj__free(own_elf);
		if (done)
			return true;
	}
	return false;
}

void shadowed__on_event(const struct live_ctx *lc, const struct live_event *e, struct findings *out)
{
	const char *sym = e->error ? strstr(e->error, "undefined symbol: ") : NULL;
	char symbol[256], host[PATH_MAX + 64];
	struct elf_object *d;

	/* Only a file named by its path (a bare name is found by the caller's own search), read
	 * while the process lives. */
	if (e->kind != LIVE_DLOPEN_FAILED || !sym || !lc->g || !e->file || !e->t)
		return;
	snprintf(symbol, sizeof(symbol), "%s", sym + strlen("undefined symbol: "));
	symbol[strcspn(symbol, " ,")] = '\0';
	target__host_path(e->t, e->file, host, sizeof(host));
	d = elfobj__open(host);
	if (!d)
		return;
	explain_undefined(lc, e, e->file, d, symbol, 0, out);
	elfobj__free(d);
}
