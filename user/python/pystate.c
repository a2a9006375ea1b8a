// SPDX-License-Identifier: GPL-2.0
/*
 * CPython's state read out of another process. Every pointer is read with process_vm_readv, so
 * a bad one is an error, never a fault; every walk is bounded and checked for cycles.
 */
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "array.h"
#include "corefile.h"
#include "elfobj.h"
#include "idxmap.h"
#include "procfs.h"
#include "pylines.h"
#include "pystate.h"

/* Bounds on what one snapshot reads: a corrupt state cannot make it read without end. */
#define MAX_INTERPRETERS 64
#define MAX_THREADS 8192
#define MAX_FRAMES_HARD 8192
#define MAX_STRING 1024
#define MAX_LINETABLE (256 * 1024)

/* What one code object says about itself, read once per snapshot. */
struct py_code {
	uint64_t addr;
	struct py_code_info info;
	bool bad; /* not a code object, or unreadable */
};

struct py_strings {
	struct py_code *codes; /* in the order first read */
	size_t n, cap;
	struct idxmap index; /* by addr */
};

/* Set while py_snapshot__read_core reads: the memory is the core's, not a process's. */
static __thread const struct corefile *mem_core;

static int mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (!addr)
		return -EFAULT;
	if (mem_core)
		return corefile__read(mem_core, addr, buf, len) == len ? 0 : -EFAULT;
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static int read_ptr(pid_t pid, uint64_t addr, uint64_t *v)
{
	return mem_read(pid, addr, v, sizeof(*v));
}

static uint64_t word_at(const unsigned char *buf, int off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

static int parse_version_name(const char *path, unsigned int *major, unsigned int *minor)
{
	const char *base = strrchr(path, '/'), *p;

	base = base ? base + 1 : path;
	p = strstr(base, "python");
	return p && sscanf(p, "python%u.%u", major, minor) == 2 ? 0 : -ENOENT;
}

/*
 * No _PyRuntime: no CPython, or one older than 3.7, which has none. An object that defines
 * Py_Initialize, with a version in its name, is the latter, rather than no Python. 3.6 keeps
 * its interpreters' list head in a static variable that PyInterpreterState_Head returns: its
 * code names the variable.
 */
static int older_interpreter(const struct py_object_ref *objs, size_t n, struct py_interp *out,
			     char *why, size_t whylen)
{
	for (size_t i = 0; i < n; i++) {
		unsigned tables = ELFOBJ_DYNSYM | (i == 0 ? ELFOBJ_SYMTAB : 0);
		const char *name = strrchr(objs[i].path, '/');
		unsigned int major, minor;
		uint64_t head;
		int64_t unused;
		GElf_Sym sym;

		if (!objs[i].elf || elfobj__lookup(objs[i].elf, "Py_Initialize", tables, &sym) ||
		    parse_version_name(objs[i].path, &major, &minor))
			continue;
		name = name ? name + 1 : objs[i].path;
		if (major == 3 && minor == 6 &&
		    elfobj__func_constant(objs[i].elf, "PyInterpreterState_Head", &unused, &head) ==
			    3) {
			memset(out, 0, sizeof(*out));
			out->major = major;
			out->minor = minor;
			out->runtime = objs[i].bias + head;
			out->layout = py_layout__find(major, minor);
			snprintf(out->object, sizeof(out->object), "%s", name);
			if (!elfobj__lookup(objs[i].elf, "PyCode_Type", tables, &sym))
				out->code_type = objs[i].bias + sym.st_value;
			return 0;
		}
		snprintf(why, whylen,
			 "Python %u.%u (in %s): dlscope knows the frames of 3.6 to 3.%d only",
			 major, minor, name, PY_DEBUG_OFFSETS_LAST);
		return -ENOTSUP;
	}
	return -ENOENT;
}

int py_interp__find(const struct py_object_ref *objs, size_t n, struct py_interp *out, char *why,
		    size_t whylen)
{
	for (size_t i = 0; i < n; i++) {
		const struct elf_object *o = objs[i].elf;
		/* A program that embeds CPython statically may keep its symbols in .symtab only. */
		unsigned tables = ELFOBJ_DYNSYM | (i == 0 ? ELFOBJ_SYMTAB : 0);
		unsigned char ver[4], dbg[PY_DEBUG_OFFSETS_SIZE];
		uint64_t runtime_vaddr;
		uint32_t hex = 0;
		GElf_Sym sym;
		const char *name;

		if (!o || elfobj__lookup(o, "_PyRuntime", tables, &sym))
			continue;
		memset(out, 0, sizeof(*out));
		runtime_vaddr = sym.st_value;
		out->runtime = objs[i].bias + sym.st_value;
		name = strrchr(objs[i].path, '/');
		snprintf(out->object, sizeof(out->object), "%s", name ? name + 1 : objs[i].path);
		if (!elfobj__lookup(o, "PyCode_Type", tables, &sym))
			out->code_type = objs[i].bias + sym.st_value;
		/* Py_Version (3.11+) is PY_VERSION_HEX; older ones say it in their file name. */
		if (!elfobj__lookup(o, "Py_Version", tables, &sym) &&
		    !elfobj__read_vaddr(o, sym.st_value, ver, sizeof(ver))) {
			hex = (uint32_t)ver[3] << 24 | (uint32_t)ver[2] << 16 |
			      (uint32_t)ver[1] << 8 | ver[0];
			out->major = ver[3];
			out->minor = ver[2];
			out->micro = ver[1];
			out->micro_known = true;
		} else if (parse_version_name(objs[i].path, &out->major, &out->minor)) {
			snprintf(why, whylen,
				 "%s holds a Python interpreter whose version it does not say "
				 "(no Py_Version, no version in its name)",
				 out->object);
			return -ENOTSUP;
		}
		out->layout = py_layout__find(out->major, out->minor);
		if (!out->layout && out->major == 3 && out->minor >= PY_DEBUG_OFFSETS_FIRST &&
		    hex) {
			/* The runtime's initial value, in the file, starts with its offsets. */
			char reason[200] = "";

			if (elfobj__read_vaddr(o, runtime_vaddr, dbg, sizeof(dbg)))
				snprintf(reason, sizeof(reason),
					 "its _PyRuntime cannot be read from the file");
			else
				out->layout = py_layout__from_debug_offsets(
					out->minor, hex, dbg, sizeof(dbg), reason, sizeof(reason));
			if (!out->layout) {
				snprintf(why, whylen, "Python %u.%u.%u (in %s): %s", out->major,
					 out->minor, out->micro, out->object, reason);
				return -ENOTSUP;
			}
		}
		if (!out->layout) {
			snprintf(
				why, whylen,
				"Python %u.%u (in %s): dlscope knows the frames of 3.6 to 3.%d only",
				out->major, out->minor, out->object, PY_DEBUG_OFFSETS_LAST);
			return -ENOTSUP;
		}
		return 0;
	}
	return older_interpreter(objs, n, out, why, whylen);
}

/* A str object as UTF-8: compact ASCII, or compact UCS1/2/4 converted; NULL when unreadable. */
static char *read_str(pid_t pid, const struct py_layout *l, uint64_t addr)
{
	unsigned char head[128];
	uint64_t len;
	unsigned int state, kind;
	size_t hdr, chars, out = 0;
	unsigned char *raw;
	char *s;

	if (mem_read(pid, addr, head, (size_t)l->str_compact_size))
		return NULL;
	len = word_at(head, l->str_length);
	memcpy(&state, head + l->str_state, sizeof(state));
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return NULL; /* not compact: a legacy string, never a code object's name */
	hdr = (state >> 6) & 1 ? (size_t)l->str_ascii_size : (size_t)l->str_compact_size;
	chars = len > MAX_STRING ? MAX_STRING : (size_t)len;
	raw = malloc(chars * kind + 1);
	s = malloc(chars * 4 + 1);
	if (!raw || !s || (chars && mem_read(pid, addr + hdr, raw, chars * kind))) {
		free(raw);
		free(s);
		return NULL;
	}
	for (size_t i = 0; i < chars; i++) {
		uint32_t c = kind == 1 ? raw[i] :
			     kind == 2 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8 :
					 (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
						 (uint32_t)raw[4 * i + 2] << 16 |
						 (uint32_t)raw[4 * i + 3] << 24;

		if (c < 0x20 || c == 0x7f) {
			/* Names are shown, never run: a control character is written out. */
			out += (size_t)snprintf(s + out, 5, "\\x%02x", c);
		} else if (c < 0x80) {
			s[out++] = (char)c;
		} else if (c < 0x800) {
			s[out++] = (char)(0xc0 | c >> 6);
			s[out++] = (char)(0x80 | (c & 63));
		} else if (c < 0x10000) {
			s[out++] = (char)(0xe0 | c >> 12);
			s[out++] = (char)(0x80 | ((c >> 6) & 63));
			s[out++] = (char)(0x80 | (c & 63));
		} else if (c < 0x110000) {
			s[out++] = (char)(0xf0 | c >> 18);
			s[out++] = (char)(0x80 | ((c >> 12) & 63));
			s[out++] = (char)(0x80 | ((c >> 6) & 63));
			s[out++] = (char)(0x80 | (c & 63));
		} else {
			s[out++] = '?';
		}
	}
	s[out] = '\0';
	free(raw);
	return s;
}

/* A bytes object's contents (at most MAX_LINETABLE bytes); NULL when unreadable. */
static uint8_t *read_bytes(pid_t pid, const struct py_layout *l, uint64_t addr, size_t *len)
{
	uint64_t size;
	uint8_t *buf;

	if (read_ptr(pid, addr + (uint64_t)l->bytes_size, &size) || size > MAX_LINETABLE)
		return NULL;
	buf = malloc(size ? size : 1);
	if (!buf || (size && mem_read(pid, addr + (uint64_t)l->bytes_data, buf, size))) {
		free(buf);
		return NULL;
	}
	*len = size;
	return buf;
}

/* Bounds on the dicts walked for thread names. */
#define MAX_DICT_ENTRIES 65536
#define PY_TPFLAGS_INLINE_VALUES (1UL << 2)
#define PY_TPFLAGS_MANAGED_DICT (1UL << 4)

/* The entries of a dict's keys object: where they are, how many, and their size. */
struct dict_entries {
	uint64_t at;
	uint64_t n;
	unsigned int size;   /* 24: {hash, key, value}; 16: {key, value} (str keys, 3.11+) */
	unsigned int keyoff; /* of the key in an entry */
};

static int dict_entries(pid_t pid, const struct py_layout *l, uint64_t keys, struct dict_entries *e)
{
	unsigned char k[48];
	uint64_t size, index_bytes;

	if (mem_read(pid, keys, k, sizeof(k)))
		return -EFAULT;
	e->n = word_at(k, l->dk_nentries);
	if (l->dict_log2) {
		if (k[8] > 30 || k[9] > 33)
			return -EINVAL;
		index_bytes = 1ULL << k[9];
		e->size = k[10] ? 16 : 24; /* dk_kind: general, unicode, split */
		e->keyoff = k[10] ? 0 : 8;
	} else {
		size = word_at(k, 8);
		if (size > (1ULL << 30))
			return -EINVAL;
		index_bytes = size * (size <= 0xff	 ? 1 :
				      size <= 0xffff	 ? 2 :
				      size <= 0xffffffff ? 4 :
							   8);
		e->size = 24;
		e->keyoff = 8;
	}
	if (e->n > MAX_DICT_ENTRIES)
		return -EINVAL;
	e->at = keys + (uint64_t)l->dk_indices + index_bytes;
	return 0;
}

/* Index and entry value of str key @name among @keys' entries; -ENOENT when absent. */
static int keys_find(pid_t pid, const struct py_layout *l, uint64_t keys, const char *name,
		     uint64_t *index, uint64_t *value)
{
	struct dict_entries e;
	unsigned char ent[24];

	if (dict_entries(pid, l, keys, &e))
		return -EFAULT;
	for (uint64_t i = 0; i < e.n; i++) {
		char *key;
		bool match;

		if (mem_read(pid, e.at + i * e.size, ent, e.size))
			return -EFAULT;
		if (!word_at(ent, (int)e.keyoff) ||
		    !(key = read_str(pid, l, word_at(ent, (int)e.keyoff))))
			continue;
		match = !strcmp(key, name);
		free(key);
		if (match) {
			*index = i;
			*value = word_at(ent, (int)e.keyoff + 8);
			return 0;
		}
	}
	return -ENOENT;
}

/* dict[@name] for a str key; 0 when absent or unreadable. */
static uint64_t dict_get(pid_t pid, const struct py_layout *l, uint64_t dict, const char *name)
{
	uint64_t keys, values, index, value;

	if (read_ptr(pid, dict + (uint64_t)l->dict_keys, &keys) ||
	    read_ptr(pid, dict + (uint64_t)l->dict_values, &values) ||
	    keys_find(pid, l, keys, name, &index, &value))
		return 0;
	/* A split dict keeps its values apart from the shared keys. */
	if (values &&
	    read_ptr(pid,
		     values + (uint64_t)(l->dict_values_array > 0 ? l->dict_values_array : 0) +
			     8 * index,
		     &value))
		return 0;
	return value;
}

/* Attribute @name of instance @obj, from its dict or its inline values; 0 when unknown. */
static uint64_t attr_get(pid_t pid, const struct py_layout *l, uint64_t obj, const char *name)
{
	uint64_t type, flags, basicsize, cached, dict = 0, values = 0, index, value;
	int64_t dictoffset;

	if (read_ptr(pid, obj + (uint64_t)l->ob_type, &type) ||
	    read_ptr(pid, type + (uint64_t)l->tp_flags, &flags) ||
	    read_ptr(pid, type + (uint64_t)l->tp_basicsize, &basicsize) ||
	    read_ptr(pid, type + (uint64_t)l->tp_dictoffset, (uint64_t *)&dictoffset))
		return 0;
	switch (l->instance_dict) {
	case PY_DICT_AT_DICTOFFSET:
		if (dictoffset <= 0 || read_ptr(pid, obj + (uint64_t)dictoffset, &dict))
			return 0;
		break;
	case PY_MANAGED_311:
		if (!(flags & PY_TPFLAGS_MANAGED_DICT) || read_ptr(pid, obj - 24, &dict) ||
		    read_ptr(pid, obj - 32, &values))
			return 0;
		break;
	case PY_MANAGED_312:
		if (!(flags & PY_TPFLAGS_MANAGED_DICT) || read_ptr(pid, obj - 24, &dict))
			return 0;
		if (dict & 1) {
			values = dict + 1; /* stored as values - 1: bit 0 set */
			dict = 0;
		}
		break;
	case PY_MANAGED_313: {
		unsigned char valid;

		if (!(flags & PY_TPFLAGS_MANAGED_DICT) || read_ptr(pid, obj - 24, &dict))
			return 0;
		if (!dict && (flags & PY_TPFLAGS_INLINE_VALUES) &&
		    !mem_read(pid, obj + basicsize + 3, &valid, 1) && valid)
			values = obj + basicsize;
		break;
	}
	}
	if (dict)
		return dict_get(pid, l, dict, name);
	if (!values || read_ptr(pid, type + (uint64_t)l->ht_cached_keys, &cached) ||
	    keys_find(pid, l, cached, name, &index, &value) ||
	    read_ptr(pid, values + (uint64_t)l->dict_values_array + 8 * index, &value))
		return 0;
	return value;
}

/* A non-negative int that fits 64 bits (30-bit digits); -1 when it is none. */
static int64_t long_get(pid_t pid, const struct py_layout *l, uint64_t addr)
{
	uint64_t head, n;
	uint32_t digits[3] = { 0 };
	uint64_t v = 0;

	if (read_ptr(pid, addr + 16, &head))
		return -1;
	if (l->long_tagged) {
		if ((head & 3) == 2)
			return -1; /* negative */
		n = head >> 3;
	} else {
		if ((int64_t)head < 0)
			return -1;
		n = head;
	}
	if (n > 3 || (n && mem_read(pid, addr + (uint64_t)l->long_digits, digits, n * 4)))
		return -1;
	for (uint64_t i = n; i-- > 0;)
		v = v << 30 | (digits[i] & 0x3fffffff);
	return (int64_t)v;
}

/*
 * threading.Thread.name of each thread: sys.modules["threading"]._active maps each thread's
 * ident (pthread_self) to its Thread, whose name is its _name attribute.
 */
static void read_thread_names(struct py_snapshot *s, pid_t pid, uint64_t interp)
{
	const struct py_layout *l = s->interp->layout;
	uint64_t modules, threading, mdict, active, keys, values;
	struct dict_entries e;

	if (read_ptr(pid, interp + (uint64_t)l->is_modules, &modules) || !modules ||
	    !(threading = dict_get(pid, l, modules, "threading")) ||
	    read_ptr(pid, threading + (uint64_t)l->module_dict, &mdict) ||
	    !(active = dict_get(pid, l, mdict, "_active")) ||
	    read_ptr(pid, active + (uint64_t)l->dict_keys, &keys) ||
	    read_ptr(pid, active + (uint64_t)l->dict_values, &values) || values ||
	    dict_entries(pid, l, keys, &e) || e.size != 24)
		return;
	for (uint64_t i = 0; i < e.n; i++) {
		unsigned char ent[24];
		int64_t ident;
		uint64_t name;

		if (mem_read(pid, e.at + i * 24, ent, sizeof(ent)))
			return;
		if (!word_at(ent, 8) || (ident = long_get(pid, l, word_at(ent, 8))) < 0)
			continue;
		for (size_t k = 0; k < s->n; k++) {
			if (s->t[k].pthread_id != (uint64_t)ident || s->t[k].name)
				continue;
			if ((name = attr_get(pid, l, word_at(ent, 16), "_name")))
				s->t[k].name = read_str(pid, l, name);
		}
	}
}

static bool code_is(size_t idx, const void *ctx)
{
	const struct py_strings *st = ((const void *const *)ctx)[0];

	return st->codes[idx].addr == *(const uint64_t *)((const void *const *)ctx)[1];
}

/* The code object at @addr, read on first use. NULL only without memory. */
static const struct py_code *code_of(struct py_strings *st, const struct py_interp *pi, pid_t pid,
				     uint64_t addr)
{
	const void *key[2] = { st, &addr };
	struct py_code *c;
	size_t at;
	int added;

	if (ARRAY_RESERVE(st->codes, st->cap, st->n + 1))
		return NULL;
	added = idxmap__insert(&st->index, idxmap__hash_u64(addr), st->n, code_is, key, &at);
	if (added < 0)
		return NULL;
	if (!added)
		return &st->codes[at];
	c = &st->codes[st->n++];
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	c->bad = py_code__read(pi, pid, addr, 0, 0, &c->info) != 0;
	return c;
}

static int push_frame(struct py_thread *t, size_t *cap, const struct py_frame *f)
{
	if (t->n_frames == *cap) {
		if (ARRAY_GROW(t->frames, *cap, 32))
			return -ENOMEM;
	}
	t->frames[t->n_frames++] = *f;
	return 0;
}

/* Where the thread's frame chain starts: its innermost frame, or 0 when it runs none. */
static int first_frame(const struct py_interp *pi, pid_t pid, const unsigned char *ts,
		       uint64_t *frame)
{
	const struct py_layout *l = pi->layout;
	uint64_t cframe;

	if (l->ts_frame >= 0) {
		*frame = word_at(ts, l->ts_frame);
		return 0;
	}
	if (l->ts_current_frame >= 0) {
		*frame = word_at(ts, l->ts_current_frame);
		return 0;
	}
	cframe = word_at(ts, l->ts_cframe);
	if (!cframe) {
		*frame = 0;
		return 0;
	}
	return read_ptr(pid, cframe + (uint64_t)l->cframe_current, frame);
}

static void set_error(char **err, const char *msg)
{
	if (!*err)
		*err = strdup(msg);
}

/* The bytecode offset the frame in @buf is at, in its code object at @code. */
static uint64_t frame_offset(const struct py_layout *l, const unsigned char *buf, uint64_t code)
{
	uint64_t instr, start;

	if (l->fr_lasti >= 0) {
		int32_t lasti;

		memcpy(&lasti, buf + l->fr_lasti, sizeof(lasti));
		/* 3.10 counts code units, its table bytes. */
		return lasti < 0 ? 0 : (uint64_t)lasti * (l->lines == PY_LINETABLE_310 ? 2 : 1);
	}
	instr = word_at(buf, l->fr_instr);
	start = code + (uint64_t)l->co_code_adaptive;
	return instr >= start ? (instr - start) / 2 : 0;
}

/* The frame in @buf, running code object @c (at @code): its function, file and line. */
static struct py_frame python_frame(const struct py_layout *l, const unsigned char *buf,
				    uint64_t code, const struct py_code *c)
{
	return (struct py_frame){
		.code = code,
		.function = c->info.function,
		.file = c->info.file,
		.line = py_line_of(l->lines, c->info.lines, c->info.n_lines, c->info.firstlineno,
				   frame_offset(l, buf, code)),
		.eval_entry = l->frames == PY_FRAME_OBJECTS ||
			      (l->fr_is_entry >= 0 && buf[l->fr_is_entry]),
	};
}

/* Walk one thread's frames, innermost first, with Brent's cycle check. */
static int walk_frames(struct py_snapshot *s, pid_t pid, uint64_t frame, unsigned int max_frames,
		       struct py_thread *t)
{
	const struct py_interp *pi = s->interp;
	const struct py_layout *l = pi->layout;
	uint64_t tortoise = frame, power = 1, lambda = 0, steps = 0;
	size_t cap = 0;
	char msg[160];

	while (frame) {
		unsigned char buf[256];
		struct py_frame f;
		const struct py_code *c;
		uint64_t code;
		unsigned char owner = PY_OWNED_BY_THREAD;

		if (steps++ >= MAX_FRAMES_HARD) {
			set_error(&t->error, "the frame chain is longer than 8192 frames: corrupt");
			break;
		}
		if (mem_read(pid, frame, buf, (size_t)l->fr_size)) {
			snprintf(msg, sizeof(msg),
				 "frame at 0x%llx is unreadable: the interpreter changed it or it "
				 "is corrupt",
				 (unsigned long long)frame);
			set_error(&t->error, msg);
			break;
		}
		code = word_at(buf, l->fr_code);
		if (l->fr_tagged)
			code = py_stackref_ptr(code);
		if (l->fr_owner >= 0)
			owner = buf[l->fr_owner];
		if (owner >= PY_OWNED_BY_SHIM) {
			/* The shim an eval call pushes (3.12+): the frames above it were its own. */
			if (t->n_frames)
				t->frames[t->n_frames - 1].eval_entry = true;
		} else if (t->n_frames >= max_frames) {
			t->truncated = true;
			break;
		} else {
			if (!(c = code_of(s->strings, pi, pid, code)))
				return -ENOMEM;
			if (c->bad) {
				snprintf(
					msg, sizeof(msg),
					"frame at 0x%llx has no readable code object: corrupt, or not "
					"this Python's layout",
					(unsigned long long)frame);
				set_error(&t->error, msg);
				break;
			}
			f = python_frame(l, buf, code, c);
			if (push_frame(t, &cap, &f))
				return -ENOMEM;
		}
		frame = word_at(buf, l->fr_previous);
		/* Brent: the tortoise jumps to the hare at each power of two. */
		if (frame && frame == tortoise) {
			set_error(&t->error, "the frame chain loops back on itself: corrupt");
			break;
		}
		if (++lambda == power) {
			tortoise = frame;
			power *= 2;
			lambda = 0;
		}
	}
	if (t->n_frames)
		t->frames[t->n_frames - 1].eval_entry = true;
	return 0;
}

static int push_thread(struct py_snapshot *s, size_t *cap)
{
	if (s->n == *cap) {
		if (ARRAY_GROW(s->t, *cap, 16))
			return -ENOMEM;
	}
	memset(&s->t[s->n], 0, sizeof(s->t[0]));
	s->n++;
	return 0;
}

static void read_gil(struct py_snapshot *s, pid_t pid, uint64_t interp)
{
	const struct py_layout *l = s->interp->layout;
	unsigned char g[24];
	uint64_t gil = 0;
	int32_t locked;

	if (l->rt_gil >= 0)
		gil = s->interp->runtime + (uint64_t)l->rt_gil;
	else if (l->is_gil_ptr < 0 || read_ptr(pid, interp + (uint64_t)l->is_gil_ptr, &gil))
		return; /* 3.6: in static variables */
	if (mem_read(pid, gil, g, sizeof(g)))
		return;
	memcpy(&locked, g + l->gil_locked, sizeof(locked));
	s->gil = gil;
	s->gil_locked = locked != 0;
	s->gil_holder = word_at(g, l->gil_last_holder);
}

/*
 * Python's native_thread_id is the thread's id in its own PID namespace: a container's numbers.
 * Ours from here on, as the other threads' are (a thread not found keeps its number).
 */
static void tids_to_ours(struct py_snapshot *s, pid_t pid)
{
	struct ns_tid *map;
	size_t n = pid > 0 ? proc__ns_tids(pid, &map) : 0;

	for (size_t i = 0; i < s->n; i++)
		for (size_t k = 0; k < n; k++)
			if (s->t[i].tid && map[k].theirs == s->t[i].tid) {
				s->t[i].tid = map[k].ours;
				break;
			}
	if (n)
		free(map);
}

int py_snapshot__read(const struct py_interp *pi, pid_t pid, unsigned int max_frames,
		      struct py_snapshot **out)
{
	const struct py_layout *l = pi->layout;
	struct py_snapshot *s = calloc(1, sizeof(*s));
	uint64_t interp, finalizing = 0;
	size_t cap = 0;
	unsigned int n_interp = 0;
	int err = 0;

	if (!s || !(s->strings = calloc(1, sizeof(*s->strings)))) {
		free(s);
		return -ENOMEM;
	}
	s->interp = pi;
	*out = s;
	if (read_ptr(pid, pi->runtime + (uint64_t)l->rt_interp_head, &interp) ||
	    (l->rt_finalizing >= 0 &&
	     read_ptr(pid, pi->runtime + (uint64_t)l->rt_finalizing, &finalizing))) {
		set_error(&s->error, "the interpreter's runtime state is unreadable");
		return 0;
	}
	s->finalizing = finalizing != 0;
	if (!interp) {
		set_error(&s->error, s->finalizing ? "the interpreter is shutting down" :
						     "the interpreter is not initialized yet");
		return 0;
	}
	for (; interp && n_interp < MAX_INTERPRETERS; n_interp++) {
		uint64_t tstate, next_interp;
		size_t n_threads = 0;

		if (read_ptr(pid, interp + (uint64_t)l->is_tstate_head, &tstate) ||
		    read_ptr(pid, interp + (uint64_t)l->is_next, &next_interp)) {
			set_error(&s->error, "an interpreter state is unreadable");
			break;
		}
		if (n_interp == 0)
			read_gil(s, pid, interp);
		for (; tstate && n_threads < MAX_THREADS; n_threads++) {
			unsigned char ts[PY_STATE_READ];
			uint64_t frame;
			struct py_thread *t;

			if (mem_read(pid, tstate, ts, sizeof(ts))) {
				set_error(&s->error, "a thread state is unreadable");
				break;
			}
			/* A thread state names its interpreter: a wrong layout fails here first. */
			if (word_at(ts, l->ts_interp) != interp) {
				char msg[200];

				snprintf(
					msg, sizeof(msg),
					"thread state 0x%llx does not point back to its interpreter: "
					"not the layout of Python %u.%u (a modified build?)",
					(unsigned long long)tstate, pi->major, pi->minor);
				set_error(&s->error, msg);
				break;
			}
			if ((err = push_thread(s, &cap)))
				return err;
			t = &s->t[s->n - 1];
			t->tstate = tstate;
			t->pthread_id = word_at(ts, l->ts_thread_id);
			if (l->ts_native_thread_id >= 0)
				t->tid = (pid_t)word_at(ts, l->ts_native_thread_id);
			if (first_frame(pi, pid, ts, &frame))
				set_error(&t->error, "its current frame is unreadable");
			else if ((err = walk_frames(s, pid, frame, max_frames, t)))
				return err;
			tstate = word_at(ts, l->ts_next);
		}
		/* Names are only a label: the main interpreter's threading module has them. */
		if (n_interp == 0)
			read_thread_names(s, pid, interp);
		interp = next_interp;
	}
	tids_to_ours(s, pid);
	return 0;
}

int py_snapshot__read_core(const struct py_interp *pi, const struct corefile *core,
			   unsigned int max_frames, struct py_snapshot **out)
{
	int err;

	mem_core = core;
	err = py_snapshot__read(pi, 0, max_frames, out);
	mem_core = NULL;
	return err;
}

const struct py_thread *py_snapshot__thread(const struct py_snapshot *s, uint64_t tstate)
{
	for (size_t i = 0; s && tstate && i < s->n; i++)
		if (s->t[i].tstate == tstate)
			return &s->t[i];
	return NULL;
}

bool py_snapshot__is_gil_wait(const struct py_snapshot *s, uint64_t addr)
{
	const struct py_layout *l;

	if (!s || !s->gil)
		return false;
	l = s->interp->layout;
	return addr >= s->gil + (uint64_t)l->gil_cond && addr < s->gil + (uint64_t)l->gil_switch;
}

void py_snapshot__free(struct py_snapshot *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->t[i].frames);
		free(s->t[i].error);
		free(s->t[i].name);
	}
	free(s->t);
	if (s->strings) {
		for (size_t i = 0; i < s->strings->n; i++)
			py_code_info__clear(&s->strings->codes[i].info);
		free(s->strings->codes);
		idxmap__free(&s->strings->index);
		free(s->strings);
	}
	free(s->error);
	free(s);
}

/* ---- one code object named from outside a snapshot (the collector's dlopen stacks) ---- */

int py_code__read(const struct py_interp *pi, pid_t pid, uint64_t code, uint64_t name_check,
		  uint64_t file_check, struct py_code_info *out)
{
	const struct py_layout *l = pi->layout;
	unsigned char buf[PY_STATE_READ];
	int32_t first;

	memset(out, 0, sizeof(*out));
	if (mem_read(pid, code, buf, sizeof(buf)) ||
	    (pi->code_type && word_at(buf, l->ob_type) != pi->code_type))
		return -EFAULT;
	/* The name the code had when captured: another code object at a reused address fails. */
	if ((name_check &&
	     word_at(buf, l->co_qualname >= 0 ? l->co_qualname : l->co_name) != name_check) ||
	    (file_check && word_at(buf, l->co_filename) != file_check))
		return -ESTALE;
	/* A freed object whose memory nothing reused yet keeps its fields, and a reference count
	 * of 0 (or, in a pymalloc pool, the next free block's address there): not the code. */
	if ((name_check || file_check) && !py_refcnt_live(l, word_at(buf, 0)))
		return -ESTALE;
	memcpy(&first, buf + l->co_firstlineno, sizeof(first));
	out->firstlineno = first;
	out->file = read_str(pid, l, word_at(buf, l->co_filename));
	out->function =
		read_str(pid, l, word_at(buf, l->co_qualname >= 0 ? l->co_qualname : l->co_name));
	out->lines = read_bytes(pid, l, word_at(buf, l->co_linetable), &out->n_lines);
	if (!out->file || !out->function) {
		py_code_info__clear(out);
		return -EFAULT;
	}
	return 0;
}

void py_code_info__clear(struct py_code_info *c)
{
	free(c->function);
	free(c->file);
	free(c->lines);
	memset(c, 0, sizeof(*c));
}

char *py_str__read(const struct py_interp *pi, pid_t pid, uint64_t addr)
{
	const struct py_layout *l = pi->layout;
	uint64_t type, name;
	char tp[4];

	/* Only a str: its type's tp_name is "str". */
	if (read_ptr(pid, addr + (uint64_t)l->ob_type, &type) ||
	    read_ptr(pid, type + (uint64_t)l->tp_name, &name) || mem_read(pid, name, tp, 4) ||
	    memcmp(tp, "str", 4))
		return NULL;
	return read_str(pid, l, addr);
}
