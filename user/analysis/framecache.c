// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "cachefile.h"
#include "framecache.h"

#define SUBDIR "frames" /* of the cache folder (cachefile.h), a file per build-id */
#define MAGIC "dlscope frames 2"
#define MAX_ENTRIES 20000    /* per object: a bound on the file, not a limit anyone meets */
#define MAX_FILE (32u << 20) /* what is read of one: a larger file is damaged */

struct fc_entry {
	uint64_t off;
	bool activation;
	size_t n;
	struct fc_frame *frames;
};

struct fc_object {
	char id[129]; /* the build-id in hex */
	bool dirty;   /* gained entries, or its file was there but could not be used */
	struct fc_entry *e;
	size_t n, cap;
};

struct framecache {
	struct fc_object *o;
	size_t n, cap;
};

struct framecache *framecache__new(void)
{
	return calloc(1, sizeof(struct framecache));
}

static void free_entry(struct fc_entry *e)
{
	for (size_t k = 0; k < e->n; k++) {
		free(e->frames[k].function);
		free(e->frames[k].file);
	}
	free(e->frames);
}

static void free_entries(struct fc_object *o)
{
	for (size_t i = 0; i < o->n; i++)
		free_entry(&o->e[i]);
	free(o->e);
	o->e = NULL;
	o->n = o->cap = 0;
}

static int add_entry(struct fc_object *o, struct fc_entry *e)
{
	if (o->n == o->cap) {
		if (ARRAY_GROW(o->e, o->cap, 64))
			return -ENOMEM;
	}
	o->e[o->n++] = *e;
	return 0;
}

/* One "F inlined offset line has_function has_file\tfunction\tfile" line into @f. */
static int parse_frame(char *line, struct fc_frame *f)
{
	unsigned inl, hf, hs;
	char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;

	if (!tab2 ||
	    sscanf(line, "F %u %" SCNx64 " %d %u %u", &inl, &f->offset, &f->line, &hf, &hs) != 5 ||
	    inl > 1 || hf > 1 || hs > 1)
		return -EINVAL;
	*tab1 = *tab2 = '\0';
	tab2[1 + strcspn(tab2 + 1, "\n")] = '\0';
	f->inlined = inl;
	f->function = hf ? strdup(tab1 + 1) : NULL;
	f->file = hs ? strdup(tab2 + 1) : NULL;
	return (hf && !f->function) || (hs && !f->file) ? -ENOMEM : 0;
}

/*
 * The object's file, read whole (sealed: a file cut short or changed is refused before any of
 * it is used); anything unexpected in it and none of it is used, and it is written again.
 */
static void load(struct fc_object *o)
{
	struct fc_entry e = { 0 };
	size_t want = 0, len;
	bool bad = false;
	char *buf, *line, *end;
	int err;

	err = cachefile__read_sealed(SUBDIR, o->id, MAX_FILE, &buf, &len);
	if (err) {
		/* Absent, or not ours in a folder not ours (nothing can be written there). */
		o->dirty = err != -ENOENT && err != -EPERM;
		return;
	}
	line = buf;
	end = memchr(line, '\n', len);
	if (!end || strncmp(line, MAGIC " ", strlen(MAGIC " ")) ||
	    strncmp(line + strlen(MAGIC " "), o->id, strlen(o->id)) ||
	    line[strlen(MAGIC " ") + strlen(o->id)] != '\n')
		bad = true;
	/* Lines of the payload, each ended by a newline (the seal holds the end of the file). */
	while (!bad && (line = end + 1) < buf + len) {
		unsigned act;

		end = memchr(line, '\n', (size_t)(buf + len - line));
		if (!end || memchr(line, '\0', (size_t)(end - line))) {
			bad = true;
			break;
		}
		*end = '\0';
		if (line[0] == 'E') {
			if (e.n != want || o->n >= MAX_ENTRIES)
				bad = true;
			else if (e.frames && add_entry(o, &e))
				bad = true;
			else
				e = (struct fc_entry){ 0 };
			if (bad || sscanf(line, "E %" SCNx64 " %u %zu", &e.off, &act, &want) != 3 ||
			    act > 1 || !want || want > 4096 ||
			    !(e.frames = calloc(want, sizeof(*e.frames))))
				bad = true;
			else
				e.activation = act;
		} else if (line[0] == 'F' && e.frames && e.n < want) {
			bad = parse_frame(line, &e.frames[e.n++]) != 0;
		} else {
			bad = true;
		}
	}
	if (!bad && e.frames && (e.n != want || add_entry(o, &e)))
		bad = true;
	else if (!bad)
		e = (struct fc_entry){ 0 };
	free_entry(&e);
	if (bad) {
		free_entries(o);
		o->dirty = true;
	}
	free(buf);
}

static struct fc_object *object(struct framecache *fc, const unsigned char *bid, int bidlen)
{
	char id[129];
	struct fc_object *no;

	if (bidlen <= 0 || bidlen > 64)
		return NULL;
	for (int i = 0; i < bidlen; i++)
		snprintf(id + 2 * i, 3, "%02x", bid[i]);
	for (size_t i = 0; i < fc->n; i++)
		if (!strcmp(fc->o[i].id, id))
			return &fc->o[i];
	if (ARRAY_RESERVE(fc->o, fc->cap, fc->n + 1))
		return NULL;
	no = &fc->o[fc->n++];
	memset(no, 0, sizeof(*no));
	memcpy(no->id, id, sizeof(id));
	load(no);
	return no;
}

const struct fc_frame *framecache__get(struct framecache *fc, const unsigned char *bid, int bidlen,
				       uint64_t off, bool activation, size_t *n)
{
	struct fc_object *o = fc ? object(fc, bid, bidlen) : NULL;

	*n = 0;
	for (size_t i = 0; o && i < o->n; i++)
		if (o->e[i].off == off && o->e[i].activation == activation) {
			*n = o->e[i].n;
			return o->e[i].frames;
		}
	return NULL;
}

static bool storable(const char *s)
{
	return !s || !s[strcspn(s, "\t\n")];
}

int framecache__put(struct framecache *fc, const unsigned char *bid, int bidlen, uint64_t off,
		    bool activation, const struct fc_frame *f, size_t n)
{
	struct fc_object *o = fc ? object(fc, bid, bidlen) : NULL;
	struct fc_entry e = { .off = off, .activation = activation, .n = n };

	if (!o || !n || n > 4096 || o->n >= MAX_ENTRIES)
		return 0;
	for (size_t k = 0; k < n; k++)
		if (!storable(f[k].function) || !storable(f[k].file))
			return 0;
	e.frames = calloc(n, sizeof(*e.frames));
	if (!e.frames)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		e.frames[k] = f[k];
		e.frames[k].function = f[k].function ? strdup(f[k].function) : NULL;
		e.frames[k].file = f[k].file ? strdup(f[k].file) : NULL;
		if ((f[k].function && !e.frames[k].function) || (f[k].file && !e.frames[k].file)) {
			free_entry(&e);
			return -ENOMEM;
		}
	}
	if (add_entry(o, &e)) {
		free_entry(&e);
		return -ENOMEM;
	}
	o->dirty = true;
	return 0;
}

/* Written whole and sealed, under a temporary name renamed: a concurrent run reads one whole
 * file or another. */
static void save(const struct fc_object *o)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return;
	fprintf(f, MAGIC " %s\n", o->id);
	for (size_t i = 0; i < o->n; i++) {
		const struct fc_entry *e = &o->e[i];

		fprintf(f, "E %" PRIx64 " %u %zu\n", e->off, e->activation, e->n);
		for (size_t k = 0; k < e->n; k++) {
			const struct fc_frame *fr = &e->frames[k];

			fprintf(f, "F %u %" PRIx64 " %d %u %u\t%s\t%s\n", fr->inlined, fr->offset,
				fr->line, fr->function != NULL, fr->file != NULL,
				fr->function ? fr->function : "", fr->file ? fr->file : "");
		}
	}
	if (!fclose(f) && len <= MAX_FILE)
		cachefile__write_sealed(SUBDIR, o->id, out, len);
	free(out);
}

void framecache__close(struct framecache *fc)
{
	if (!fc)
		return;
	for (size_t i = 0; i < fc->n; i++) {
		if (fc->o[i].dirty)
			save(&fc->o[i]);
		free_entries(&fc->o[i]);
	}
	free(fc->o);
	free(fc);
}
