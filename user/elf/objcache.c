// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachefile.h"
#include "array.h"
#include "idxmap.h"
#include "objcache.h"
#include "version.h"

/*
 * File image: a header, then the records. Integers are in the writer's byte order; the header's
 * order mark and sizes make a file from another machine or build foreign, hence ignored.
 */
#define OC_FILE "elf-v1.cache" /* in the cache folder (cachefile.h) */
#define OC_MAGIC "DLSOBJC\n"
#define OC_FORMAT 1u
#define OC_ORDER 0x01020304u
#define OC_MAX_FILE (32u << 20) /* bounds what is read, and what is written */
#define OC_MAX_RECS 4096u	/* records kept: those this run used first */
#define OC_MAX_STR 4096u
#define OC_MAX_LIST 4096u
#define OC_MAX_BLOB 4096u

struct oc_header {
	char magic[8];
	char producer[48]; /* the build-id of the dlscope that wrote it: another build's is foreign */
	uint32_t format, order;
	uint32_t n_recs, rec_size; /* rec_size: sizeof(struct objcache_key), a layout check */
	uint64_t payload_len, checksum;
};

static struct {
	bool enabled, loaded, dirty, atexit_set;
	pid_t owner; /* the process that enabled it: a forked child does not save */
	struct objcache_rec **recs;
	size_t n, cap;
	struct idxmap index; /* key_hash of a record's key -> its index in recs */
} oc;

uint64_t objcache__checksum(const void *p, size_t len)
{
	return cachefile__checksum(p, len);
}

static uint64_t key_hash(const struct objcache_key *k)
{
	return idxmap__hash_bytes(k, sizeof(*k));
}

static bool key_eq(const struct objcache_key *a, const struct objcache_key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* Is oc.recs[@idx] the record of key @ctx? */
static bool rec_is(size_t idx, const void *ctx)
{
	return key_eq(&oc.recs[idx]->key, ctx);
}

void objcache_rec__free(struct objcache_rec *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_needed; i++)
		free(r->needed[i]);
	for (size_t i = 0; i < r->n_verdefs; i++)
		free(r->verdefs[i]);
	free(r->needed);
	free(r->verdefs);
	free(r->soname);
	free(r->interp);
	free(r->blob);
	free(r);
}

/*
 * This build of dlscope, by the build-id of its executable (read from memory, no system call):
 * what a higher layer stores (the roles) depends on its code, so another build's file is foreign.
 */
static int producer_phdr(struct dl_phdr_info *info, size_t size, void *ctx)
{
	char *out = ctx;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		Elf_Data d = {
			.d_buf = (void *)(info->dlpi_addr + ph->p_vaddr),
			.d_type = ph->p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR,
			.d_size = ph->p_filesz,
		};
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;

		if (ph->p_type != PT_NOTE)
			continue;
		while ((off = gelf_getnote(&d, off, &nh, &name_off, &desc_off)) > 0) {
			const unsigned char *desc = (const unsigned char *)d.d_buf + desc_off;

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 || !nh.n_descsz)
				continue;
			for (size_t j = 0; j < nh.n_descsz && 2 * j + 2 < 48; j++)
				snprintf(out + 2 * j, 3, "%02x", desc[j]);
			return 1;
		}
	}
	return 1; /* the first entry is the executable */
}

void objcache__producer(char out[48])
{
	static char id[48];

	if (!id[0]) {
		snprintf(id, sizeof(id), "%s", DLSCOPE_VERSION);
		dl_iterate_phdr(producer_phdr, id);
	}
	memset(out, 0, 48);
	memcpy(out, id, strlen(id));
}

/* ---- encoding ---- */

static void put_u32(struct cache_wbuf *w, uint32_t v)
{
	cache_wbuf__put(w, &v, sizeof(v));
}

/* A string as its length + 1 (0: absent) and its bytes. */
static void put_str(struct cache_wbuf *w, const char *s)
{
	uint32_t len = s ? (uint32_t)strlen(s) : 0;

	put_u32(w, s ? len + 1 : 0);
	if (s)
		cache_wbuf__put(w, s, len);
}

static void put_list(struct cache_wbuf *w, char **v, size_t n)
{
	put_u32(w, (uint32_t)n);
	for (size_t i = 0; i < n; i++)
		put_str(w, v[i]);
}

static void put_rec(struct cache_wbuf *w, const struct objcache_rec *r)
{
	uint16_t type = r->type;
	uint8_t sym = r->symbolic;

	cache_wbuf__put(w, &r->key, sizeof(r->key));
	put_str(w, r->build_id);
	cache_wbuf__put(w, &r->bid_off, sizeof(r->bid_off));
	cache_wbuf__put(w, &type, sizeof(type));
	cache_wbuf__put(w, &sym, sizeof(sym));
	put_str(w, r->soname);
	put_str(w, r->interp);
	put_list(w, r->needed, r->n_needed);
	put_list(w, r->verdefs, r->n_verdefs);
	put_u32(w, (uint32_t)r->blob_len);
	if (r->blob_len)
		cache_wbuf__put(w, r->blob, r->blob_len);
}

int objcache__encode(struct objcache_rec *const *recs, size_t n, void **image, size_t *len)
{
	struct cache_wbuf w = { 0 };
	struct oc_header h = { .format = OC_FORMAT, .order = OC_ORDER };
	size_t kept = 0;

	memcpy(h.magic, OC_MAGIC, sizeof(h.magic));
	objcache__producer(h.producer);
	h.rec_size = sizeof(struct objcache_key);
	cache_wbuf__put(&w, &h, sizeof(h));
	for (size_t i = 0; i < n && kept < OC_MAX_RECS; i++) {
		size_t before = w.len;

		put_rec(&w, recs[i]);
		if (w.len > OC_MAX_FILE) { /* bounded: the rest stays out */
			w.len = before;
			break;
		}
		kept++;
	}
	if (w.oom) {
		free(w.p);
		return -ENOMEM;
	}
	h.n_recs = (uint32_t)kept;
	h.payload_len = w.len - sizeof(h);
	h.checksum = objcache__checksum(w.p + sizeof(h), w.len - sizeof(h));
	memcpy(w.p, &h, sizeof(h));
	*image = w.p;
	*len = w.len;
	return 0;
}

/* ---- decoding: every length is checked against what is left ---- */

static uint32_t get_u32(struct cache_rbuf *r)
{
	uint32_t v;

	cache_rbuf__get(r, &v, sizeof(v));
	return v;
}

static char *get_str(struct cache_rbuf *r, bool *absent)
{
	uint32_t len = get_u32(r);

	*absent = !len;
	if (r->bad || !len)
		return NULL;
	return cache_rbuf__str(r, len - 1, OC_MAX_STR);
}

static char **get_list(struct cache_rbuf *r, size_t *n)
{
	uint32_t count = get_u32(r);
	char **v;
	bool absent;

	*n = 0;
	if (r->bad || !count)
		return NULL;
	if (count > OC_MAX_LIST || count > r->left / 4) {
		r->bad = true;
		return NULL;
	}
	v = calloc(count, sizeof(*v));
	if (!v) {
		r->bad = true;
		return NULL;
	}
	for (; *n < count && !r->bad; (*n)++) {
		v[*n] = get_str(r, &absent);
		if (absent)
			r->bad = true;
	}
	return v;
}

static bool is_hex(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

static struct objcache_rec *get_rec(struct cache_rbuf *r)
{
	struct objcache_rec *rec = calloc(1, sizeof(*rec));
	char *bid;
	uint8_t sym;
	bool absent;

	if (!rec) {
		r->bad = true;
		return NULL;
	}
	cache_rbuf__get(r, &rec->key, sizeof(rec->key));
	bid = get_str(r, &absent);
	if (!bid || strlen(bid) >= sizeof(rec->build_id) || !is_hex(bid))
		r->bad = true;
	else
		strcpy(rec->build_id, bid);
	free(bid);
	cache_rbuf__get(r, &rec->bid_off, sizeof(rec->bid_off));
	cache_rbuf__get(r, &rec->type, sizeof(rec->type));
	cache_rbuf__get(r, &sym, sizeof(sym));
	rec->symbolic = sym == 1;
	if (sym > 1)
		r->bad = true;
	rec->soname = get_str(r, &absent);
	rec->interp = get_str(r, &absent);
	rec->needed = get_list(r, &rec->n_needed);
	rec->verdefs = get_list(r, &rec->n_verdefs);
	rec->blob_len = get_u32(r);
	if (!r->bad && rec->blob_len) {
		if (rec->blob_len > OC_MAX_BLOB || !(rec->blob = malloc(rec->blob_len)))
			r->bad = true;
		else
			cache_rbuf__get(r, rec->blob, rec->blob_len);
	}
	if (r->bad) {
		objcache_rec__free(rec);
		return NULL;
	}
	return rec;
}

int objcache__decode(const void *image, size_t len, struct objcache_rec ***recs, size_t *n)
{
	struct oc_header h;
	struct cache_rbuf r = { (const unsigned char *)image + sizeof(h), 0, false };
	char self[48];
	struct objcache_rec **v = NULL;
	size_t got = 0;

	*recs = NULL;
	*n = 0;
	if (len < sizeof(h) || len > OC_MAX_FILE)
		return -EINVAL;
	memcpy(&h, image, sizeof(h));
	objcache__producer(self);
	if (memcmp(h.magic, OC_MAGIC, sizeof(h.magic)) || memcmp(h.producer, self, sizeof(self)) ||
	    h.format != OC_FORMAT || h.order != OC_ORDER ||
	    h.rec_size != sizeof(struct objcache_key) || h.payload_len != len - sizeof(h) ||
	    h.n_recs > OC_MAX_RECS || objcache__checksum(r.p, h.payload_len) != h.checksum)
		return -EINVAL;
	r.left = h.payload_len;
	if (h.n_recs && !(v = calloc(h.n_recs, sizeof(*v))))
		return -ENOMEM;
	for (; got < h.n_recs && !r.bad; got++)
		v[got] = get_rec(&r);
	if (r.bad || r.left) { /* short, long or inconsistent: nothing of it is trusted */
		for (size_t i = 0; i < got; i++)
			objcache_rec__free(v[i]);
		free(v);
		return -EINVAL;
	}
	*recs = v;
	*n = got;
	return 0;
}

/* ---- the process's cache ---- */

static ssize_t find_index(const struct objcache_key *key)
{
	size_t at = idxmap__find(&oc.index, key_hash(key), rec_is, key);

	return at == IDXMAP_NONE ? -1 : (ssize_t)at;
}

/* Append @rec (owned from now on); replaces a record of the same key. */
static struct objcache_rec *adopt(struct objcache_rec *rec)
{
	ssize_t at = find_index(&rec->key);

	if (at >= 0) {
		objcache_rec__free(oc.recs[at]);
		oc.recs[at] = rec;
		return rec;
	}
	if (oc.n == oc.cap && ARRAY_GROW(oc.recs, oc.cap, 256))
		goto fail;
	oc.recs[oc.n] = rec;
	if (idxmap__insert(&oc.index, key_hash(&rec->key), oc.n, rec_is, &rec->key, NULL) < 0)
		goto fail;
	oc.n++;
	return rec;
fail:
	objcache_rec__free(rec);
	return NULL;
}

static void load(void)
{
	struct objcache_rec **recs;
	size_t n = 0, len;
	char *buf;

	oc.loaded = true;
	if (cachefile__read(NULL, OC_FILE, OC_MAX_FILE, &buf, &len))
		return;
	if (!objcache__decode(buf, len, &recs, &n)) {
		for (size_t i = 0; i < n; i++)
			adopt(recs[i]);
		free(recs);
	}
	free(buf);
}

static void at_exit(void)
{
	objcache__save();
	for (size_t i = 0; i < oc.n; i++)
		objcache_rec__free(oc.recs[i]);
	free(oc.recs);
	idxmap__free(&oc.index);
	oc.recs = NULL;
	oc.n = oc.cap = 0;
	oc.enabled = false;
}

void objcache__enable(void)
{
	char root[PATH_MAX];

	/* The same folder as the debug and frame caches (DLSCOPE_CACHE_DIR, XDG, HOME). */
	if (!cachefile__enabled() || cachefile__root(root, sizeof(root)))
		return;
	oc.enabled = true;
	oc.owner = getpid();
	if (!oc.atexit_set && !atexit(at_exit))
		oc.atexit_set = true;
}

bool objcache__enabled(void)
{
	return oc.enabled;
}

struct objcache_rec *objcache__find(const struct objcache_key *key)
{
	ssize_t at;

	if (!oc.enabled)
		return NULL;
	if (!oc.loaded)
		load();
	at = find_index(key);
	if (at < 0)
		return NULL;
	oc.recs[at]->used = true;
	return oc.recs[at];
}

void objcache__for_each(void (*fn)(const struct objcache_rec *rec, void *arg), void *arg)
{
	if (!oc.enabled)
		return;
	if (!oc.loaded)
		load();
	for (size_t i = 0; i < oc.n; i++)
		fn(oc.recs[i], arg);
}

static char *dup_or(const char *s, bool *oom)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*oom = true;
	return d;
}

static char **dup_list(char **v, size_t n, bool *oom)
{
	char **d = n ? calloc(n, sizeof(*d)) : NULL;

	if (n && !d)
		*oom = true;
	for (size_t i = 0; d && i < n; i++)
		d[i] = dup_or(v[i], oom);
	return d;
}

struct objcache_rec *objcache__put(const struct objcache_rec *rec)
{
	struct objcache_rec *c;
	bool oom = false;

	if (!oc.enabled)
		return NULL;
	if (!oc.loaded)
		load();
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->key = rec->key;
	memcpy(c->build_id, rec->build_id, sizeof(c->build_id));
	c->bid_off = rec->bid_off;
	c->build_id[sizeof(c->build_id) - 1] = '\0';
	c->type = rec->type;
	c->symbolic = rec->symbolic;
	c->soname = dup_or(rec->soname, &oom);
	c->interp = dup_or(rec->interp, &oom);
	c->needed = dup_list(rec->needed, rec->n_needed, &oom);
	c->n_needed = c->needed ? rec->n_needed : 0;
	c->verdefs = dup_list(rec->verdefs, rec->n_verdefs, &oom);
	c->n_verdefs = c->verdefs ? rec->n_verdefs : 0;
	c->used = true;
	if (oom) {
		objcache_rec__free(c);
		return NULL;
	}
	oc.dirty = true;
	return adopt(c);
}

void objcache__set_blob(const struct objcache_key *key, const void *blob, size_t len)
{
	ssize_t at = oc.enabled ? find_index(key) : -1;
	struct objcache_rec *r;
	void *copy;

	if (at < 0 || len > OC_MAX_BLOB)
		return;
	r = oc.recs[at];
	if (r->blob_len == len && !memcmp(r->blob, blob, len))
		return;
	copy = malloc(len ? len : 1);
	if (!copy)
		return;
	memcpy(copy, blob, len);
	free(r->blob);
	r->blob = copy;
	r->blob_len = len;
	oc.dirty = true;
}

int objcache__save(void)
{
	struct objcache_rec **order;
	size_t n = 0, len;
	void *image;
	int err;

	if (!oc.enabled || !oc.dirty || oc.owner != getpid())
		return 0;
	oc.dirty = false;
	/* Records this run used first: trimming to OC_MAX_RECS drops the long-unused ones. */
	order = malloc((oc.n ? oc.n : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < oc.n; i++)
			if (oc.recs[i]->used == !pass)
				order[n++] = oc.recs[i];
	err = objcache__encode(order, n, &image, &len);
	free(order);
	if (err)
		return err;
	err = cachefile__write(NULL, OC_FILE, image, len);
	free(image);
	return err;
}
