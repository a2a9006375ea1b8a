// SPDX-License-Identifier: GPL-2.0
/*
 * dup-proto: one .proto file compiled into two objects, each registering it with libprotobuf's
 * generated pool at load. The second registration aborts the process: "File already exists in
 * database: msg.proto" (protobuf #1489, #1941, #3469; libprotobuf linked statically into both
 * PyTorch and ONNX registers google/protobuf/descriptor.proto twice). protoc (3.8 and later)
 * gives each generated file a table named descriptor_table_<file> (FilenameIdentifier: every
 * character but a letter or digit as _ and its hex code), which its object defines.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
#include "target.h"

#define TABLE_PREFIX "descriptor_table_"
/* What a generated file's static initializer calls to register its table (3.21). */
#define RUNNER "_ZN6google8protobuf8internal20AddDescriptorsRunnerC1EPKNS1_15DescriptorTableE"
#define ADD "_ZN6google8protobuf8internal14AddDescriptorsEPKNS1_15DescriptorTableE"

/* The .proto file a table's name stands for: "msg_2eproto" is "msg.proto". */
static void proto_file(const char *table, char *out, size_t len)
{
	const char *p = table + strlen(TABLE_PREFIX);
	size_t n = 0;

	while (*p && n + 1 < len) {
		unsigned int c;

		if (p[0] == '_' && sscanf(p + 1, "%2x", &c) == 1 && p[1] && p[2]) {
			out[n++] = (char)c;
			p += 3;
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
}

/* One object's definition of one table. */
struct table_def {
	const char *name; /* in the object's string table */
	unsigned int obj; /* an index of the file list or graph */
	uint64_t addr;	  /* the definition (the object's own numbering) */
};

struct def_scan {
	struct table_def *d;
	size_t n, cap;
	unsigned int obj;
};

static int collect(const char *name, const GElf_Sym *sym, void *arg)
{
	struct def_scan *s = arg;

	if (strncmp(name, TABLE_PREFIX, strlen(TABLE_PREFIX)) ||
	    GELF_ST_TYPE(sym->st_info) != STT_OBJECT)
		return 0;
	for (size_t i = s->n; i-- > 0 && s->d[i].obj == s->obj;)
		if (!strcmp(s->d[i].name, name))
			return 0; /* .dynsym and .symtab both name it */
	if (s->n == s->cap && ARRAY_GROW(s->d, s->cap, 64))
		return -1;
	s->d[s->n++] = (struct table_def){ name, s->obj, sym->st_value };
	return 0;
}

static int by_name(const void *a, const void *b)
{
	const struct table_def *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->obj > y->obj) - (x->obj < y->obj);
}

/*
 * Whether @e has generated code to register: it needs the shared libprotobuf, or carries a
 * copy of it that exports the registration. Only those have their symbols read (a process's
 * whole .symtab is large).
 */
static bool uses_protobuf(const struct elf_object *e)
{
	GElf_Sym sym;

	for (size_t i = 0; i < elfobj__n_needed(e); i++)
		if (!strncmp(elfobj__needed(e, i), "libprotobuf.so", 14))
			return true;
	return !elfobj__lookup(e, RUNNER, ELFOBJ_DYNSYM, &sym) ||
	       !elfobj__lookup(e, ADD, ELFOBJ_DYNSYM, &sym);
}

/* The definitions of @n objects, each asked through @elf_of, sorted by table name. */
static int scan(size_t n, const struct elf_object *(*elf_of)(const void *ctx, size_t i),
		const void *ctx, struct def_scan *s)
{
	for (size_t i = 0; i < n; i++) {
		const struct elf_object *e = elf_of(ctx, i);

		s->obj = (unsigned int)i;
		if (e && uses_protobuf(e) &&
		    elfobj__foreach_defined(e, ELFOBJ_DYNSYM | ELFOBJ_SYMTAB, collect, s) < 0)
			return -1;
	}
	if (s->n)
		qsort(s->d, s->n, sizeof(*s->d), by_name);
	return 0;
}

static const char why[] =
	"Each object with generated protobuf code registers its .proto files with libprotobuf's "
	"generated pool when it loads; a file registered a second time through the same "
	"libprotobuf aborts the process (\"File already exists in database\"), at the import of "
	"the second object. The two need not be the same build: the same .proto compiled into "
	"two extensions, or libprotobuf itself linked statically into both, is enough.";
static const char fix[] =
	"Generate and compile each .proto into one shared library that both use (or depend on "
	"the package that ships it), and link libprotobuf dynamically; an object that must carry "
	"its own copy should hide it (-Wl,--exclude-libs,ALL) and be loaded RTLD_LOCAL.";

/* ---- lint: the files ---- */

static const struct elf_object *file_elf(const void *ctx, size_t i)
{
	return ((const struct lint_file *)ctx)[i].elf;
}

static bool same_build(const struct elf_object *a, const struct elf_object *b)
{
	return a == b || (elfobj__build_id(a) && elfobj__build_id(b) &&
			  !strcmp(elfobj__build_id(a), elfobj__build_id(b)));
}

void dup_proto__files(const struct lint_file *files, size_t n, struct findings *out)
{
	struct def_scan s = { 0 };

	if (scan(n, file_elf, files, &s))
		goto out;
	for (size_t i = 0; i < s.n;) {
		size_t j = i + 1, builds = 1;
		char proto[256];
		struct finding *f;

		while (j < s.n && !strcmp(s.d[j].name, s.d[i].name))
			j++;
		/* One build in several files is dup-library's. */
		for (size_t k = i + 1; k < j; k++) {
			bool seen = false;

			for (size_t m = i; m < k && !seen; m++)
				seen = same_build(files[s.d[k].obj].elf, files[s.d[m].obj].elf);
			builds += !seen;
		}
		if (builds < 2) {
			i = j;
			continue;
		}
		proto_file(s.d[i].name, proto, sizeof(proto));
		f = findings__add(
			out, "dup-proto", SEV_WARNING, 0,
			"%s is compiled into %zu objects: loaded into one process with one "
			"libprotobuf, the second aborts (\"File already exists in database: "
			"%s\")",
			proto, j - i, proto);
		for (size_t k = i; k < j; k++)
			finding__evidence(f, "%s defines %s", files[s.d[k].obj].path, s.d[k].name);
		finding__explain(f, why, fix);
		i = j;
	}
out:
	free(s.d);
}

/* ---- check: the loaded objects, and what their registrations are bound to ---- */

static const struct elf_object *graph_elf(const void *ctx, size_t i)
{
	const struct lg_object *o = ((const struct libgraph *)ctx)->objs[i];

	return !o->gone && o->in_link_map ? o->elf : NULL;
}

/* What one definer's registration used: its table and the libprotobuf it called. */
struct binding {
	const struct target *t;
	const struct lg_object *o;
	const char *table;
	uint64_t table_at; /* 0: its own (no relocation names it) */
	uint64_t runner;   /* 0: not known */
};

static int read_binding(const char *name, uint64_t offset, unsigned type, unsigned sym_type,
			void *arg)
{
	struct binding *b = arg;
	uint64_t v;

	(void)sym_type;
	if ((type != R_X86_64_GLOB_DAT && type != R_X86_64_JUMP_SLOT && type != R_X86_64_64) ||
	    target__read(b->t, b->o->base + offset, &v, sizeof(v)))
		return 0;
	if (!strcmp(name, b->table))
		b->table_at = v;
	/* A lazy slot not called yet points back into its own object: unknown. */
	else if ((!strcmp(name, RUNNER) || !strcmp(name, ADD)) &&
		 !(v >= b->o->base && v - b->o->base < elfobj__size(b->o->elf)))
		b->runner = v;
	return 0;
}

void dup_proto__process(const struct check_ctx *ctx, struct findings *out)
{
	const struct libgraph *g = ctx->g;
	struct def_scan s = { 0 };

	if (!ctx->t || scan(g->n, graph_elf, g, &s))
		goto out;
	for (size_t i = 0; i < s.n;) {
		size_t j = i + 1, tables = 0;
		int runner = -2; /* the libprotobuf every registration called; -1: not one */
		uint64_t first_table = 0;
		char proto[256];
		struct finding *f;

		while (j < s.n && !strcmp(s.d[j].name, s.d[i].name))
			j++;
		for (size_t k = i; k < j && j - i > 1; k++) {
			const struct lg_object *o = g->objs[s.d[k].obj];
			struct binding b = { ctx->t, o, s.d[k].name, 0, 0 };
			uint64_t used;

			elfobj__foreach_dynreloc(o->elf, read_binding, &b);
			used = b.table_at ? b.table_at : o->base + s.d[k].addr;
			tables += !first_table || used != first_table;
			if (!first_table)
				first_table = used;
			if (b.runner) {
				const struct lg_object *lib = libgraph__object_at(g, b.runner);
				int r = lib ? (int)lib->id : -1;

				runner = runner == -2 || runner == r ? r : -1;
			}
		}
		/* Registered once (the later ones bound to the first table), or into two
		 * libprotobufs' pools: no abort. */
		if (tables < 2 || runner < 0) {
			i = j;
			continue;
		}
		proto_file(s.d[i].name, proto, sizeof(proto));
		f = findings__add(
			out, "dup-proto", SEV_ERROR, g->pid,
			"%s is registered by %zu objects with one libprotobuf (%s): the "
			"second registration aborts (\"File already exists in database: %s\")",
			proto, j - i, lg_object__basename(g->objs[runner]), proto);
		for (size_t k = i; k < j; k++) {
			char origin[256];

			lg_object__describe_origin(g, s.d[k].obj, origin, sizeof(origin));
			finding__evidence(f, "#%u %s defines its own %s, loaded by %s", s.d[k].obj,
					  g->objs[s.d[k].obj]->path, s.d[k].name, origin);
		}
		finding__explain(f, why, fix);
		i = j;
	}
out:
	free(s.d);
}
