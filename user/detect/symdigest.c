// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "cachefile.h"
#include "elfdefects.h"
#include "elfobj.h"
#include "idxmap.h"
#include "objcache.h"
#include "static_identity.h"
#include "symdigest.h"

/*
 * File image: a header naming the file content it describes, then the payload. Integers in the
 * writer's byte order; another machine's or build's file is foreign (order mark, producer).
 */
#define SD_MAGIC "DLSSYMD\n"
/*
 * 3: each vague candidate carries its version and whether it is writable at run time; internal
 * linkage, a file's twice-defined hidden names and what static_identity__of says is harmless
 * are left out. 4: Boost.System's std::error_category bridge joined that table. 5: elf-defects'
 * verdict no longer counts empty sections (a cached verdict may say yes wrongly). Bump it
 * whenever what a digest holds changes (that table's ID_CONTENTS entries included): a record of
 * another format is refused and computed again.
 */
#define SD_FORMAT 5u
#define SD_ORDER 0x01020304u
#define SD_MAX_FILE (64u << 20)
#define SD_MAX_NAME (1u << 20) /* a bound on what a record may ask for; C++ names run long */

struct sd_header {
	char magic[8];
	char producer[48];
	uint32_t format, order;
	struct objcache_key key;
	uint64_t payload_len, checksum;
};

static uint64_t fnv1a_str(const char *s)
{
	return objcache__checksum(s, strlen(s));
}

uint64_t symdigest__entry(const char *name, const char *version, bool weak)
{
	uint64_t v = 0;

	if (version) {
		v = fnv1a_str(version) & 0x7fff;
		v = v ? v : 1;
	}
	return (fnv1a_str(name) & 0xffffffffffffull) << 16 | v << 1 | (weak ? 1 : 0);
}

/* Past one <source-name> (its length, then that many characters); NULL when malformed. */
static const char *skip_source_name(const char *p)
{
	size_t n = 0;

	while (*p >= '0' && *p <= '9') {
		n = n * 10 + (size_t)(*p++ - '0');
		if (n > SD_MAX_NAME)
			return NULL;
	}
	return n && strnlen(p, n) == n ? p + n : NULL;
}

static bool internal_mark(const char *p)
{
	return p[0] == 'L' && p[1] >= '1' && p[1] <= '9';
}

/*
 * The Itanium mangling as far as linkage shows: an entity's name is <source-name>s inside
 * N...E (after CV-qualifiers and substitutions), St<name>, or a bare <name>; a local name
 * Z<encoding>E<entity> has its function's linkage. GCC writes L before the source name of an
 * entity with internal linkage. Template arguments (I) end the walk: what follows them is a
 * class member, which never has internal linkage of its own.
 */
bool symdigest__internal_linkage(const char *name)
{
	const char *p = name + 2;

	if (strncmp(name, "_Z", 2))
		return false;
	if (strstr(name, "_GLOBAL__N_"))
		return true;
	while (*p == 'Z') /* a local entity: the function it is local to decides */
		p++;
	if (!strncmp(p, "St", 2))
		return internal_mark(p + 2);
	if (*p != 'N')
		return internal_mark(p);
	for (p++; *p && strchr("rVKRO", *p); p++)
		;
	while (p && *p) {
		if (internal_mark(p))
			return true;
		if (*p >= '1' && *p <= '9') {
			p = skip_source_name(p);
		} else if (*p == 'S' && p[1] && strchr("tabsiod", p[1])) {
			p += 2;
		} else if (*p == 'S') { /* S_, S<seq-id>_ */
			for (p++; (*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'Z'); p++)
				;
			p = *p == '_' ? p + 1 : NULL;
		} else {
			return false; /* I, E, operators, constructors: nothing more to learn */
		}
	}
	return false;
}

bool symdigest__vague_candidate(const char *name, const GElf_Sym *sym, bool hidden, bool typeinfo)
{
	unsigned bind = GELF_ST_BIND(sym->st_info);
	enum static_identity id;

	if (GELF_ST_TYPE(sym->st_info) != STT_OBJECT || !sym->st_size || strncmp(name, "_Z", 2))
		return false;
	/* Hidden definitions become local at link time. */
	if (hidden ? bind != STB_LOCAL : (bind != STB_WEAK && bind != STB_GNU_UNIQUE))
		return false;
	/*
	 * Internal linkage (one copy per translation unit, by the language), or a local the
	 * compiler renamed (LTO's "_ZL9moduledef.lto_priv.0", clones): never one per process.
	 */
	if (strchr(name, '.') || symdigest__internal_linkage(name))
		return false;
	id = static_identity__of(name, NULL);
	return id != ID_CONTENTS && (typeinfo || id != ID_ADDRESS_LIBCXX);
}

bool symdigest__ref_candidate(const char *name, unsigned type, unsigned sym_type)
{
	GElf_Sym as_def = { .st_info = GELF_ST_INFO(STB_WEAK, STT_OBJECT), .st_size = 1 };

	if (type != R_X86_64_GLOB_DAT && type != R_X86_64_64 && type != R_X86_64_COPY)
		return false;
	if (sym_type != STT_OBJECT && sym_type != STT_NOTYPE)
		return false;
	return symdigest__vague_candidate(name, &as_def, false, false);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

bool symdigest__has(const uint64_t *v, size_t n, uint64_t e, bool version)
{
	size_t lo = 0, hi = n;
	uint64_t name = SYMD_NAME(e);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (SYMD_NAME(v[mid]) < name)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && SYMD_NAME(v[lo]) == name; lo++)
		if (!version || SYMD_VERSION(v[lo]) == SYMD_VERSION(e))
			return true;
	return false;
}

void symdigest__free(struct symdigest *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_vague; i++) {
		free(d->vague[i].name);
		free(d->vague[i].version);
	}
	for (size_t i = 0; i < d->n_hidden; i++) {
		free(d->hidden[i].name);
		free(d->hidden[i].version);
	}
	for (size_t i = 0; i < d->n_verneed; i++) {
		free(d->verneed[i].file);
		free(d->verneed[i].version);
	}
	free(d->refs);
	free(d->vague);
	free(d->hidden);
	free(d->verneed);
	free(d->defs);
	free(d->undefs);
	free(d);
}

/* ---- computing a digest from the object's tables ---- */

struct build {
	struct symdigest *d;
	const struct elf_object *o;
	size_t cap_defs, cap_undefs, cap_vague, cap_hidden, cap_verneed, cap_refs;
	bool hidden, oom;
};

static int add_def(const char *name, const char *version, const GElf_Sym *sym, void *ctx)
{
	struct build *b = ctx;

	if (b->d->n_defs == b->cap_defs && ARRAY_GROW(b->d->defs, b->cap_defs, 64))
		return b->oom = true, -1;
	b->d->defs[b->d->n_defs++] = symdigest__entry(name, version, false);
	return 0;
}

static int add_undef(const char *name, const char *version, bool weak, void *ctx)
{
	struct build *b = ctx;

	if (b->d->n_undefs == b->cap_undefs && ARRAY_GROW(b->d->undefs, b->cap_undefs, 64))
		return b->oom = true, -1;
	b->d->undefs[b->d->n_undefs++] = symdigest__entry(name, version, weak);
	return 0;
}

static int add_vague_versioned(const char *name, const char *version, const GElf_Sym *sym,
			       void *ctx)
{
	struct build *b = ctx;
	struct symd_vague **v = b->hidden ? &b->d->hidden : &b->d->vague;
	size_t *n = b->hidden ? &b->d->n_hidden : &b->d->n_vague;
	size_t *cap = b->hidden ? &b->cap_hidden : &b->cap_vague;
	struct symd_vague *e;

	if (!symdigest__vague_candidate(name, sym, b->hidden, false) ||
	    strlen(name) > SD_MAX_NAME || (version && strlen(version) > SD_MAX_NAME))
		return 0;
	if (*n == *cap && ARRAY_GROW(*v, *cap, 64))
		return b->oom = true, -1;
	e = &(*v)[*n];
	*e = (struct symd_vague){
		.name = strdup(name),
		.version = version ? strdup(version) : NULL,
		.value = sym->st_value,
		.size = sym->st_size,
		.binds_own = GELF_ST_VISIBILITY(sym->st_other) == STV_PROTECTED,
		.writable = elfobj__writable_at(b->o, sym->st_value),
	};
	(*n)++;
	if (!e->name || (version && !e->version))
		return b->oom = true, -1;
	return 0;
}

static int add_vague(const char *name, const GElf_Sym *sym, void *ctx)
{
	return add_vague_versioned(name, NULL, sym, ctx);
}

static int cmp_vague_name(const void *a, const void *b)
{
	return strcmp(((const struct symd_vague *)a)->name, ((const struct symd_vague *)b)->name);
}

/*
 * A name one file defines twice as a local is two translation units' own statics (internal
 * linkage the name does not show): the linker merges vague-linkage copies into one.
 */
static void drop_twice_defined(struct symd_vague *v, size_t *n)
{
	size_t out = 0;

	if (*n > 1)
		qsort(v, *n, sizeof(*v), cmp_vague_name);
	for (size_t i = 0, j; i < *n; i = j) {
		for (j = i + 1; j < *n && !strcmp(v[j].name, v[i].name); j++)
			;
		if (j - i == 1) {
			v[out++] = v[i];
			continue;
		}
		for (size_t k = i; k < j; k++) {
			free(v[k].name);
			free(v[k].version);
		}
	}
	*n = out;
}

static int add_verneed(const char *file, const char *version, void *ctx)
{
	struct build *b = ctx;
	struct symd_verneed *v;

	if (strlen(file) > SD_MAX_NAME || strlen(version) > SD_MAX_NAME)
		return 0;
	if (b->d->n_verneed == b->cap_verneed && ARRAY_GROW(b->d->verneed, b->cap_verneed, 64))
		return b->oom = true, -1;
	v = &b->d->verneed[b->d->n_verneed];
	v->file = strdup(file);
	v->version = strdup(version);
	b->d->n_verneed++;
	return v->file && v->version ? 0 : (b->oom = true, -1);
}

static int add_ref(const char *name, uint64_t offset, unsigned type, unsigned sym_type, void *ctx)
{
	struct build *b = ctx;

	if (!symdigest__ref_candidate(name, type, sym_type))
		return 0;
	if (b->d->n_refs == b->cap_refs && ARRAY_GROW(b->d->refs, b->cap_refs, 64))
		return b->oom = true, -1;
	b->d->refs[b->d->n_refs++] =
		(struct symd_ref){ symdigest__entry(name, NULL, false), offset << 8 | type };
	return 0;
}

static struct symdigest *compute(const struct elf_object *o)
{
	struct build b = { .d = calloc(1, sizeof(*b.d)), .o = o };

	if (!b.d)
		return NULL;
	elfobj__foreach_defined_versioned(o, add_def, &b);
	if (!b.oom)
		elfobj__foreach_undefined(o, add_undef, &b);
	if (!b.oom)
		elfobj__foreach_defined_versioned(o, add_vague_versioned, &b);
	b.hidden = true;
	if (!b.oom)
		elfobj__foreach_defined(o, ELFOBJ_SYMTAB, add_vague, &b);
	if (!b.oom)
		drop_twice_defined(b.d->hidden, &b.d->n_hidden);
	if (!b.oom)
		elfobj__foreach_verneed(o, add_verneed, &b);
	if (!b.oom)
		elfobj__foreach_dynreloc(o, add_ref, &b);
	if (b.oom) {
		symdigest__free(b.d);
		return NULL;
	}
	if (b.d->n_defs)
		qsort(b.d->defs, b.d->n_defs, sizeof(uint64_t), cmp_u64);
	if (b.d->n_undefs)
		qsort(b.d->undefs, b.d->n_undefs, sizeof(uint64_t), cmp_u64);
	/* Whether the file has layout defects, so that a sound one is not opened again. */
	b.d->elf_defects = elfdefects__scan(o, NULL, NULL) > 0;
	return b.d;
}

/* ---- the file image ---- */

static void put_str(struct cache_wbuf *w, const char *s)
{
	uint32_t len = (uint32_t)strlen(s);

	cache_wbuf__put(w, &len, sizeof(len));
	cache_wbuf__put(w, s, len);
}

/* A candidate's flags byte in the image. */
#define SDV_OWN 1u
#define SDV_WRITABLE 2u
#define SDV_VERSION 4u /* a version string follows the name */

static void put_vague(struct cache_wbuf *w, const struct symd_vague *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t flags = (v[i].binds_own ? SDV_OWN : 0) |
				(v[i].writable ? SDV_WRITABLE : 0) |
				(v[i].version ? SDV_VERSION : 0);

		cache_wbuf__put(w, &v[i].value, sizeof(v[i].value));
		cache_wbuf__put(w, &v[i].size, sizeof(v[i].size));
		cache_wbuf__put(w, &flags, sizeof(flags));
		put_str(w, v[i].name);
		if (v[i].version)
			put_str(w, v[i].version);
	}
}

int symdigest__encode(const struct symdigest *d, const struct objcache_key *key, void **image,
		      size_t *len)
{
	struct cache_wbuf w = { 0 };
	struct sd_header h = { .format = SD_FORMAT, .order = SD_ORDER, .key = *key };
	uint32_t counts[6] = { (uint32_t)d->n_defs,   (uint32_t)d->n_undefs,  (uint32_t)d->n_vague,
			       (uint32_t)d->n_hidden, (uint32_t)d->n_verneed, (uint32_t)d->n_refs };
	uint8_t defects = d->elf_defects;

	memcpy(h.magic, SD_MAGIC, sizeof(h.magic));
	objcache__producer(h.producer);
	cache_wbuf__put(&w, &h, sizeof(h));
	cache_wbuf__put(&w, counts, sizeof(counts));
	cache_wbuf__put(&w, &defects, sizeof(defects));
	cache_wbuf__put(&w, d->defs, d->n_defs * sizeof(uint64_t));
	cache_wbuf__put(&w, d->undefs, d->n_undefs * sizeof(uint64_t));
	put_vague(&w, d->vague, d->n_vague);
	put_vague(&w, d->hidden, d->n_hidden);
	for (size_t i = 0; i < d->n_verneed; i++) {
		put_str(&w, d->verneed[i].file);
		put_str(&w, d->verneed[i].version);
	}
	cache_wbuf__put(&w, d->refs, d->n_refs * sizeof(*d->refs));
	if (w.oom || w.len > SD_MAX_FILE) {
		free(w.p);
		return w.oom ? -ENOMEM : -EFBIG;
	}
	h.payload_len = w.len - sizeof(h);
	h.checksum = objcache__checksum(w.p + sizeof(h), h.payload_len);
	memcpy(w.p, &h, sizeof(h));
	*image = w.p;
	*len = w.len;
	return 0;
}

static char *get_str(struct cache_rbuf *r)
{
	uint32_t len;

	cache_rbuf__get(r, &len, sizeof(len));
	return cache_rbuf__str(r, len, SD_MAX_NAME);
}

/* @n entries of @size bytes each, bounded by what is left (a count cannot ask for more). */
static void *get_array(struct cache_rbuf *r, size_t n, size_t size, size_t min_each)
{
	void *v;

	if (r->bad || !n)
		return NULL;
	if (n > r->left / min_each || !(v = calloc(n, size))) {
		r->bad = true;
		return NULL;
	}
	return v;
}

static bool sorted(const uint64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (v[i - 1] > v[i])
			return false;
	return true;
}

static struct symd_vague *get_vague(struct cache_rbuf *r, size_t n)
{
	struct symd_vague *v = get_array(r, n, sizeof(*v), 21);

	for (size_t i = 0; v && i < n && !r->bad; i++) {
		uint8_t flags;

		cache_rbuf__get(r, &v[i].value, sizeof(v[i].value));
		cache_rbuf__get(r, &v[i].size, sizeof(v[i].size));
		cache_rbuf__get(r, &flags, sizeof(flags));
		v[i].binds_own = flags & SDV_OWN;
		v[i].writable = flags & SDV_WRITABLE;
		r->bad |= (flags & ~(SDV_OWN | SDV_WRITABLE | SDV_VERSION)) != 0;
		v[i].name = get_str(r);
		if (flags & SDV_VERSION) {
			v[i].version = get_str(r);
			r->bad |= !v[i].version;
		}
	}
	return v;
}

int symdigest__decode(const void *image, size_t len, const struct objcache_key *key,
		      struct symdigest **out)
{
	struct sd_header h;
	struct cache_rbuf r = { (const unsigned char *)image + sizeof(h), 0, false };
	struct symdigest *d;
	char self[48];
	uint32_t counts[6];
	uint8_t defects;

	*out = NULL;
	if (len < sizeof(h) || len > SD_MAX_FILE)
		return -EINVAL;
	memcpy(&h, image, sizeof(h));
	objcache__producer(self);
	if (memcmp(h.magic, SD_MAGIC, sizeof(h.magic)) || memcmp(h.producer, self, sizeof(self)) ||
	    h.format != SD_FORMAT || h.order != SD_ORDER || memcmp(&h.key, key, sizeof(*key)) ||
	    h.payload_len != len - sizeof(h) ||
	    objcache__checksum(r.p, h.payload_len) != h.checksum)
		return -EINVAL;
	r.left = h.payload_len;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	cache_rbuf__get(&r, counts, sizeof(counts));
	cache_rbuf__get(&r, &defects, sizeof(defects));
	d->elf_defects = defects == 1;
	r.bad |= defects > 1;
	d->defs = get_array(&r, counts[0], sizeof(uint64_t), sizeof(uint64_t));
	cache_rbuf__get(&r, d->defs, (size_t)counts[0] * sizeof(uint64_t) * !!d->defs);
	d->n_defs = d->defs ? counts[0] : 0;
	d->undefs = get_array(&r, counts[1], sizeof(uint64_t), sizeof(uint64_t));
	cache_rbuf__get(&r, d->undefs, (size_t)counts[1] * sizeof(uint64_t) * !!d->undefs);
	d->n_undefs = d->undefs ? counts[1] : 0;
	d->vague = get_vague(&r, counts[2]);
	d->n_vague = d->vague ? counts[2] : 0;
	d->hidden = get_vague(&r, counts[3]);
	d->n_hidden = d->hidden ? counts[3] : 0;
	d->verneed = get_array(&r, counts[4], sizeof(*d->verneed), 8);
	d->n_verneed = d->verneed ? counts[4] : 0;
	for (size_t i = 0; i < d->n_verneed && !r.bad; i++) {
		d->verneed[i].file = get_str(&r);
		d->verneed[i].version = get_str(&r);
	}
	d->refs = get_array(&r, counts[5], sizeof(*d->refs), sizeof(*d->refs));
	cache_rbuf__get(&r, d->refs, (size_t)counts[5] * sizeof(*d->refs) * !!d->refs);
	d->n_refs = d->refs ? counts[5] : 0;
	/* Short, long, unsorted or inconsistent: nothing of it is trusted. */
	if (r.bad || r.left || !sorted(d->defs, d->n_defs) || !sorted(d->undefs, d->n_undefs)) {
		symdigest__free(d);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

/* ---- the store: every digest in one file, $cache/symbols-v1.cache ---- */

/*
 * One file, not one per object: creating a file costs a third of a millisecond on this kind of
 * VM, and a cold check of 500 objects spent more on that than on reading their tables. The file
 * is a header and records, each a digest image as above (which checks itself: magic, producer,
 * key, checksum), read once per run when check first asks, and written once at exit when this
 * run computed a digest: the records this run used first, then the others up to SD_MAX_STORE.
 */
#define SD_STORE_FILE "symbols-v1.cache" /* in the cache folder (cachefile.h) */
#define SD_STORE_MAGIC "DLSSYMS\n"
#define SD_MAX_STORE (32u << 20)

struct store_header {
	char magic[8];
	char producer[48];
	uint32_t order, n_recs;
};

struct store_rec {
	struct objcache_key key;
	const unsigned char *image; /* in the file as read, or in @own */
	size_t len;
	unsigned char *own; /* an image this run encoded */
	bool used;
};

static struct {
	bool loaded, dirty;
	pid_t owner;
	char *file;
	struct store_rec *recs;
	size_t n, cap;
	struct idxmap index; /* the hash of a record's key -> its index in recs */
} store;

static uint64_t key_hash(const struct objcache_key *key)
{
	return idxmap__hash_bytes(key, sizeof(*key));
}

/* Is store.recs[@idx] the record of key @ctx? */
static bool rec_is(size_t idx, const void *ctx)
{
	return !memcmp(&store.recs[idx].key, ctx, sizeof(store.recs[idx].key));
}

static struct store_rec *store_find(const struct objcache_key *key)
{
	size_t at = idxmap__find(&store.index, key_hash(key), rec_is, key);

	return at == IDXMAP_NONE ? NULL : &store.recs[at];
}

/* Add a record (replacing one of the same key); false when out of memory. */
static bool store_add(const struct store_rec *r)
{
	struct store_rec *old = store_find(&r->key);

	if (old) {
		free(old->own);
		*old = *r;
		return true;
	}
	if (store.n == store.cap) {
		if (ARRAY_GROW(store.recs, store.cap, 512))
			return false;
	}
	if (idxmap__insert(&store.index, key_hash(&r->key), store.n, rec_is, &r->key, NULL) < 0)
		return false;
	store.recs[store.n++] = *r;
	return true;
}

static void store_save(void)
{
	struct store_header h = { .order = SD_ORDER };
	FILE *f;
	char *out = NULL;
	size_t len = 0, total = sizeof(h);

	if (!store.dirty || store.owner != getpid())
		return;
	store.dirty = false;
	f = open_memstream(&out, &len);
	if (!f)
		return;
	memcpy(h.magic, SD_STORE_MAGIC, sizeof(h.magic));
	objcache__producer(h.producer);
	fwrite(&h, sizeof(h), 1, f);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < store.n; i++) {
			const struct store_rec *r = &store.recs[i];
			uint64_t rl = r->len;

			if (r->used != !pass || total + sizeof(rl) + r->len > SD_MAX_STORE)
				continue;
			fwrite(&rl, sizeof(rl), 1, f);
			fwrite(r->image, r->len, 1, f);
			total += sizeof(rl) + r->len;
			h.n_recs++;
		}
	if (!fclose(f)) {
		memcpy(out, &h, sizeof(h));
		cachefile__write(NULL, SD_STORE_FILE, out, len);
	}
	free(out);
}

static void store_close(void)
{
	store_save();
	for (size_t i = 0; i < store.n; i++)
		free(store.recs[i].own);
	free(store.recs);
	idxmap__free(&store.index);
	free(store.file);
	memset(&store, 0, sizeof(store));
	store.loaded = true; /* a digest asked for after exit is computed, not stored */
}

/* Read the store on first use; records are checked one by one when decoded. */
static void store_load(void)
{
	struct store_header h;
	char self[48];
	size_t len, at = sizeof(h);

	store.loaded = true;
	if (!objcache__enabled())
		return;
	store.owner = getpid();
	atexit(store_close);
	if (cachefile__read(NULL, SD_STORE_FILE, SD_MAX_STORE, &store.file, &len) ||
	    len < sizeof(h))
		return;
	memcpy(&h, store.file, sizeof(h));
	objcache__producer(self);
	if (memcmp(h.magic, SD_STORE_MAGIC, sizeof(h.magic)) ||
	    memcmp(h.producer, self, sizeof(self)) || h.order != SD_ORDER)
		return;
	for (uint32_t i = 0; i < h.n_recs; i++) {
		struct store_rec r = { 0 };
		struct sd_header rh;
		uint64_t rl;

		if (len - at < sizeof(rl))
			break;
		memcpy(&rl, store.file + at, sizeof(rl));
		at += sizeof(rl);
		if (rl < sizeof(rh) || rl > len - at)
			break;
		memcpy(&rh, store.file + at, sizeof(rh));
		r.key = rh.key;
		r.image = (const unsigned char *)store.file + at;
		r.len = rl;
		at += rl;
		if (!store_add(&r))
			break;
	}
}

static struct symdigest *from_store(const struct objcache_key *key)
{
	struct store_rec *r = store_find(key);
	struct symdigest *d = NULL;

	if (r && !symdigest__decode(r->image, r->len, key, &d))
		r->used = true;
	return d;
}

static void to_store(const struct symdigest *d, const struct objcache_key *key)
{
	struct store_rec r = { .key = *key, .used = true };
	void *image;

	if (!store.owner || symdigest__encode(d, key, &image, &r.len))
		return;
	r.image = r.own = image;
	if (store_add(&r))
		store.dirty = true;
	else
		free(image);
}

static void free_digest(void *d)
{
	symdigest__free(d);
}

/* The store and the objects' notes are process-wide: one lock, should two threads ask at once. */
static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;

const struct symdigest *symdigest__of(const struct elf_object *o)
{
	const struct objcache_key *key = elfobj__content_key(o);
	struct symdigest *d;

	pthread_mutex_lock(&store_lock);
	d = elfobj__annotation(o, ELFOBJ_NOTE_SYMBOLS);
	if (d) {
		pthread_mutex_unlock(&store_lock);
		return d;
	}
	if (!store.loaded)
		store_load();
	d = from_store(key);
	/* Computed only from a file that opens as the one analysed: nothing to say otherwise. */
	if (!d && elfobj__elf(o)) {
		d = compute(o);
		if (d)
			to_store(d, key);
	}
	if (d)
		elfobj__annotate(o, ELFOBJ_NOTE_SYMBOLS, d, free_digest);
	pthread_mutex_unlock(&store_lock);
	return d;
}
