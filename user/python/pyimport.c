// SPDX-License-Identifier: GPL-2.0
/* A dlopen's Python stack, captured in the kernel, named in user space. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/uio.h>

#include "array.h"
#include "idxmap.h"
#include "pyimport.h"
#include "pylines.h"

/* PyASCIIObject.hash, after the object header and the length (3.9 to 3.15). */
#define STR_HASH 24

void py_import__cfg(const struct py_interp *pi, struct dlw_pycfg *cfg)
{
	const struct py_layout *l = pi->layout;

	*cfg = (struct dlw_pycfg){
		.runtime = pi->runtime,
		.interp_head = l->rt_interp_head,
		.rt_gil = l->rt_gil,
		.is_gil_ptr = l->is_gil_ptr,
		.is_tstate_head = l->is_tstate_head,
		.gil_last_holder = l->gil_last_holder,
		.ts_next = l->ts_next,
		.ts_thread_id = l->ts_thread_id,
		.ts_frame = l->ts_frame >= 0	     ? l->ts_frame :
			    l->ts_current_frame >= 0 ? l->ts_current_frame :
						       l->ts_cframe,
		.ts_frame2 = l->ts_frame < 0 && l->ts_current_frame < 0 ? l->cframe_current : -1,
		.fr_code = l->fr_code,
		.fr_previous = l->fr_previous,
		.fr_lasti = l->fr_lasti,
		.lasti_scale = l->lines == PY_LINETABLE_310 ? 2 : 1,
		.fr_instr = l->fr_instr,
		.co_code = l->co_code_adaptive,
		.fr_owner = l->fr_owner,
		.fr_local0 = l->fr_localsplus,
		.fr_tagged = l->fr_tagged,
		.co_filename = l->co_filename,
		.co_func = l->co_qualname >= 0 ? l->co_qualname : l->co_name,
		.str_hash = STR_HASH,
		.str_ascii = l->str_ascii_size,
		.str_compact = l->str_compact_size,
		.str_length = l->str_length,
		.str_state = l->str_state,
	};
}

int py_import__push(struct py_import *imp, const char *function, const char *file, int line)
{
	struct py_import_frame *nf;

	if (ARRAY_RESERVE(imp->f, imp->cap, imp->n + 1))
		return -ENOMEM;
	nf = imp->f;
	nf[imp->n] = (struct py_import_frame){ strdup(function), strdup(file), line };
	if (!nf[imp->n].function || !nf[imp->n].file) {
		free(nf[imp->n].function);
		free(nf[imp->n].file);
		return -ENOMEM;
	}
	imp->n++;
	return 0;
}

bool py_import__is_importlib(const struct py_import_frame *f)
{
	return !strncmp(f->file, "<frozen importlib.", 18);
}

void py_import__frame_text(const struct py_import_frame *f, char *buf, size_t len)
{
	if (f->line >= 0)
		snprintf(buf, len, "%s (%s:%d)", f->function, f->file, f->line);
	else
		snprintf(buf, len, "%s (%s:?)", f->function, f->file);
}

/* Append @text to the growing string *@s of @cap bytes. */
static void append(char **s, size_t *len, size_t *cap, const char *text)
{
	size_t n = strlen(text);

	if (!*s)
		return;
	if (ARRAY_RESERVE(*s, *cap, *len + n + 1)) {
		free(*s);
		*s = NULL;
		return;
	}
	memcpy(*s + *len, text, n + 1);
	*len += n;
}

char *py_import__lines(const struct py_import *imp, bool skip_importlib, const char *indent)
{
	char *s = strdup(""), line[1200];
	size_t len = 0, cap = 1, shown = 0;

	for (size_t i = 0; i < imp->n; i++) {
		char frame[1024];

		if (imp->gap && i == imp->gap_at) {
			snprintf(line, sizeof(line), "%s... %zu frames left out ...\n", indent,
				 imp->gap);
			append(&s, &len, &cap, line);
		}
		if (skip_importlib && py_import__is_importlib(&imp->f[i]))
			continue;
		py_import__frame_text(&imp->f[i], frame, sizeof(frame));
		snprintf(line, sizeof(line), "%spy#%zu %s\n", indent, i, frame);
		append(&s, &len, &cap, line);
		shown++;
	}
	if (imp->more) {
		snprintf(line, sizeof(line), "%s... more frames, not walked ...\n", indent);
		append(&s, &len, &cap, line);
	}
	if (imp->error) {
		snprintf(line, sizeof(line), "%s(%s)\n", indent, imp->error);
		append(&s, &len, &cap, line);
	}
	if (s && !len) {
		free(s);
		return NULL;
	}
	if (s && s[len - 1] == '\n')
		s[len - 1] = '\0';
	return s;
}

/*
 * The user's line that started the outermost import: from the outside in, the frame just
 * before the first of importlib's; without an import, the caller of the innermost frame.
 */
static void find_site(struct py_import *imp)
{
	imp->site = -1;
	for (size_t k = imp->n; k-- > 0;) {
		if (!py_import__is_importlib(&imp->f[k]))
			continue;
		if (k + 1 < imp->n)
			imp->site = (long)k + 1;
		return;
	}
	if (imp->n)
		imp->site = imp->n > 1 ? 1 : 0;
}

/* Did the kernel copy the function's name (an ASCII str)? */
static bool named(const struct dlw_pyframe *rf)
{
	size_t n = strnlen(rf->name, sizeof(rf->name));

	for (size_t i = 0; i < n; i++)
		if (rf->name[i] < 0x20 || rf->name[i] > 0x7e)
			return false;
	return n > 0;
}

/* Is @function what the kernel copied of the name (all of it, or the part it had room for)? */
static bool name_agrees(const struct dlw_pyframe *rf, const char *function)
{
	size_t n = strnlen(rf->name, sizeof(rf->name));

	if (!named(rf))
		return true; /* nothing copied to compare with */
	return n < sizeof(rf->name) - 1 ? !strcmp(function, rf->name) :
					  !strncmp(function, rf->name, n);
}

static bool mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return addr && process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* The next DLW_STR_PART bytes into *@h, as the kernel's str_part(): @n at @at, zero-padded. */
static bool str_part(pid_t pid, uint64_t *h, uint64_t at, uint64_t n)
{
	uint64_t part[DLW_STR_PART / 8] = { 0 };

	if (n > DLW_STR_PART)
		n = DLW_STR_PART;
	if (n && !mem_read(pid, at, part, n))
		return false;
	for (size_t i = 0; i < DLW_STR_PART / 8; i++)
		*h = dlw_str_mix(*h, part[i]);
	return true;
}

uint64_t py_import__str_digest(const struct py_interp *pi, pid_t pid, uint64_t addr)
{
	const struct py_layout *l = pi->layout;
	uint64_t len, bytes, data, h;
	uint32_t state, kind;

	if (!mem_read(pid, addr + (uint64_t)l->str_state, &state, sizeof(state)) ||
	    !mem_read(pid, addr + (uint64_t)l->str_length, &len, sizeof(len)))
		return 0;
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4) || len > (1ULL << 32))
		return 0;
	data = addr + (uint64_t)((state >> 6) & 1 ? l->str_ascii_size : l->str_compact_size);
	bytes = len * kind;
	h = dlw_str_start(len, state);
	if (!str_part(pid, &h, data, bytes) || !str_part(pid, &h, data + bytes - DLW_STR_PART,
							 bytes > DLW_STR_PART ? DLW_STR_PART : 0))
		return 0;
	return h ? h : 1;
}

/*
 * Is the str at @addr, read now, the one the kernel saw there? What it took then: @hash, the
 * str's cached hash (-1 when never computed), and @digest, its fingerprint (0: none). A freed
 * str's memory is soon another object's, often another str's; any str never hashed also has
 * -1 there, so -1 on both sides proves nothing. Only real evidence counts: a hash computed then
 * and equal now, and a fingerprint, when one was taken, equal to the str's now. Without either,
 * the str is refused.
 */
static bool same_str(const struct py_interp *pi, pid_t pid, uint64_t addr, uint64_t hash,
		     uint64_t digest)
{
	uint64_t now;

	if (!addr || (hash == (uint64_t)-1 && !digest) || !mem_read(pid, addr, &now, sizeof(now)) ||
	    !py_refcnt_live(pi->layout, now))
		return false;
	if (hash != (uint64_t)-1 &&
	    (!mem_read(pid, addr + STR_HASH, &now, sizeof(now)) || now != hash))
		return false;
	return !digest || py_import__str_digest(pi, pid, addr) == digest;
}

/* The str at @addr read now, when same_str() holds before and after the read; else NULL. */
static char *read_same_str(const struct py_interp *pi, pid_t pid, uint64_t addr, uint64_t hash,
			   uint64_t digest)
{
	char *s;

	if (!same_str(pi, pid, addr, hash, digest))
		return NULL;
	s = py_str__read(pi, pid, addr);
	if (s && !same_str(pi, pid, addr, hash, digest)) {
		free(s);
		return NULL;
	}
	return s;
}

#define CACHE_MAX 2048 /* codes kept: one more and the cache starts over */

struct cached_code {
	uint64_t code, func, file; /* as captured: all equal, the same code object */
	uint64_t file_digest;	   /* the file name's fingerprint when it was read */
	struct py_code_info info;
};

struct py_code_cache {
	struct cached_code *e; /* in the order first read */
	size_t n, cap;
	struct idxmap index; /* by code */
};

struct py_code_cache *py_code_cache__new(void)
{
	return calloc(1, sizeof(struct py_code_cache));
}

static void cache_clear(struct py_code_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		py_code_info__clear(&c->e[i].info);
	c->n = 0;
	idxmap__clear(&c->index);
}

void py_code_cache__free(struct py_code_cache *c)
{
	if (!c)
		return;
	cache_clear(c);
	free(c->e);
	idxmap__free(&c->index);
	free(c);
}

static bool code_is(size_t idx, const void *ctx)
{
	const struct py_code_cache *c = ((const void *const *)ctx)[0];

	return c->e[idx].code == *(const uint64_t *)((const void *const *)ctx)[1];
}

/* The entry of @rf's code, or NULL. */
static struct cached_code *cache_find(struct py_code_cache *c, const struct dlw_pyframe *rf)
{
	const void *key[2] = { c, &rf->code };
	size_t at = idxmap__find(&c->index, idxmap__hash_u64(rf->code), code_is, key);

	return at == IDXMAP_NONE ? NULL : &c->e[at];
}

/* A new entry for @rf's code (not in @c), starting over when full; NULL without memory. */
static struct cached_code *cache_add(struct py_code_cache *c, const struct dlw_pyframe *rf)
{
	const void *key[2] = { c, &rf->code };

	if (c->n >= CACHE_MAX)
		cache_clear(c);
	if (ARRAY_RESERVE(c->e, c->cap, c->n + 1) ||
	    idxmap__insert(&c->index, idxmap__hash_u64(rf->code), c->n, code_is, key, NULL) < 0)
		return NULL;
	return &c->e[c->n++];
}

/*
 * The code of @rf, from @cache or read now (and kept): 0, or py_code__read's error (-ESTALE: the
 * code at that address now is another, or freed). A module's top-level code is freed once the
 * module has run, often before the event is read, and freed memory keeps its old fields until
 * reused: the code is the one captured when it is alive (a reference count), its name and file
 * are the str objects captured, the name says what the kernel copied, and the file still has
 * the fingerprint taken with the frame.
 */
static int code_info(const struct py_interp *pi, pid_t pid, struct py_code_cache *cache,
		     const struct dlw_pyframe *rf, struct py_code_info *tmp,
		     const struct py_code_info **info)
{
	struct cached_code *slot = NULL;
	int err;

	if (cache) {
		slot = cache_find(cache, rf);
		if (slot && slot->func == rf->func && slot->file == rf->file &&
		    slot->file_digest == rf->file_digest && name_agrees(rf, slot->info.function)) {
			*info = &slot->info;
			return 0;
		}
	}
	err = py_code__read(pi, pid, rf->code, rf->func, rf->file, tmp);
	/* Checked after the read: the name read is the one the kernel copied, and the file str
	 * the one that still has the fingerprint. */
	if (!err && (!name_agrees(rf, tmp->function) ||
		     ((rf->file_digest || rf->file_hash != (uint64_t)-1) &&
		      !same_str(pi, pid, rf->file, rf->file_hash, rf->file_digest)))) {
		py_code_info__clear(tmp);
		err = -ESTALE;
	}
	*info = tmp;
	if (err || !cache)
		return err;
	if (slot)
		py_code_info__clear(&slot->info);
	else if (!(slot = cache_add(cache, rf)))
		return 0; /* not kept: *@info is @tmp, the caller's */
	*slot = (struct cached_code){ rf->code, rf->func, rf->file, rf->file_digest, *tmp };
	memset(tmp, 0, sizeof(*tmp));
	*info = &slot->info;
	return 0;
}

/* Frame k of the walk (innermost first) in the captured slots. */
static const struct dlw_pyframe *raw_frame(const struct dlw_pystack *raw, unsigned int k)
{
	if (k < DLW_PY_INNER || raw->n <= DLW_PY_FRAMES)
		return &raw->f[k];
	return &raw->f[DLW_PY_INNER + (k - DLW_PY_INNER) % DLW_PY_OUTER];
}

/*
 * The function, file and line of captured frame @rf: from its code object, else (the code is
 * gone) from what was copied with the frame, counted in *@freed. 0, -ENOMEM, or code_info's
 * error when the frame has no name either.
 */
static int frame_names(const struct py_interp *pi, pid_t pid, struct py_code_cache *cache,
		       const struct dlw_pyframe *rf, char **function, char **file, int *line,
		       unsigned int *freed)
{
	struct py_code_info tmp = { 0 };
	const struct py_code_info *info;
	int err = code_info(pi, pid, cache, rf, &tmp, &info);

	if (!err) {
		*function = strdup(info->function);
		*file = strdup(info->file);
		*line = info->lines ? py_line_of(pi->layout->lines, info->lines, info->n_lines,
						 info->firstlineno, rf->offset) :
				      -1;
		err = *function && *file ? 0 : -ENOMEM;
	} else if (named(rf)) {
		/* The code is gone (a module's top-level code, once the module has run, or the
		 * process): the name copied with the frame, the file when its str is provably
		 * still the same. */
		*function = strndup(rf->name, sizeof(rf->name));
		*file = read_same_str(pi, pid, rf->file, rf->file_hash, rf->file_digest);
		if (!*file)
			*file = strdup("?");
		err = *function && *file ? 0 : -ENOMEM;
		*line = -1;
		(*freed)++;
	}
	py_code_info__clear(&tmp);
	return err;
}

int py_import__resolve(const struct py_interp *pi, pid_t pid, const struct dlw_pystack *raw,
		       struct py_code_cache *cache, struct py_import *out)
{
	unsigned int n = raw->n, freed = 0, bad = 0;
	char msg[160];

	memset(out, 0, sizeof(*out));
	out->site = -1;
	if (raw->status == DLW_PY_NO_THREAD) {
		out->error = strdup("the thread has no Python thread state (not a Python thread)");
		return out->error ? 0 : -ENOMEM;
	}
	if (raw->status != DLW_PY_OK) {
		out->error = strdup("the interpreter's state could not be read at dlopen's entry");
		return out->error ? 0 : -ENOMEM;
	}
	out->more = raw->more;
	if (n > DLW_PY_FRAMES) {
		out->gap_at = DLW_PY_INNER;
		out->gap = n - DLW_PY_FRAMES;
	}
	for (unsigned int k = 0; k < n; k++) {
		const struct dlw_pyframe *rf;
		char *function = NULL, *file = NULL;
		int line = -1, err;

		if (out->gap && k == DLW_PY_INNER)
			k += (unsigned int)out->gap;
		rf = raw_frame(raw, k);
		err = frame_names(pi, pid, cache, rf, &function, &file, &line, &freed);
		bad += err != 0;
		if (py_import__push(out, err ? "?" : function, err ? "?" : file, err ? -1 : line)) {
			free(function);
			free(file);
			return -ENOMEM;
		}
		/* importlib's _find_and_load(name, import_): the outermost names the import. */
		if (!err && !strcmp(function, "_find_and_load") &&
		    !strcmp(file, "<frozen importlib._bootstrap>")) {
			/* The name was looked up in sys.modules, so hashed, by then: the hash
			 * taken with the frame must be the str's now (else it is freed). */
			char *mod = read_same_str(pi, pid, rf->local0, rf->local0_hash, 0);

			if (mod) {
				free(out->module);
				out->module = mod;
			}
		}
		free(function);
		free(file);
	}
	find_site(out);
	if (freed || bad) {
		snprintf(msg, sizeof(msg),
			 "%u frame%s without a line (code freed before it was read), %u without a "
			 "name",
			 freed, freed == 1 ? "" : "s", bad);
		out->error = strdup(msg);
	}
	return 0;
}

void py_import__describe(const struct py_import *imp, char *buf, size_t len)
{
	const struct py_import_frame *s;
	const char *base;

	buf[0] = '\0';
	if (!imp->n || imp->site < 0 || (size_t)imp->site >= imp->n)
		return;
	s = &imp->f[imp->site];
	base = strrchr(s->file, '/');
	base = base ? base + 1 : s->file;
	if (imp->module)
		snprintf(buf, len, "`import %s` at %s:%d", imp->module, base, s->line);
	else if (imp->site > 0 && py_import__is_importlib(&imp->f[imp->site - 1]))
		snprintf(buf, len, "an import at %s:%d", base, s->line); /* its name was gone */
	else
		snprintf(buf, len, "`%s` called at %s:%d", imp->f[0].function, base, s->line);
}

void py_import__clear(struct py_import *imp)
{
	for (size_t i = 0; i < imp->n; i++) {
		free(imp->f[i].function);
		free(imp->f[i].file);
	}
	free(imp->f);
	free(imp->module);
	free(imp->error);
	memset(imp, 0, sizeof(*imp));
	imp->site = -1;
}
