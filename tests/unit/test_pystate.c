// SPDX-License-Identifier: GPL-2.0
/*
 * CPython's line tables decoded, and a Python state laid out in this process's own memory (as
 * 3.11 lays it out) read back: good, cyclic, cut and too deep frame chains; layouts made from
 * _Py_DebugOffsets, and refused when they describe something else. With "--dump BINARY" it
 * prints the layout dlscope takes for the interpreter in BINARY (an executable or libpython) for
 * tests/e2e/test_python.py to check against the interpreter's DWARF.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfobj.h"
#include "pylines.h"
#include "pystate.h"
#include "tap.h"

static void test_line_tables(void)
{
	/* 3.11+: no-column (+1, 2 units), one-line (+0, 1), none (1), long form (-3, 3 units). */
	static const uint8_t loc[] = { 0x80 | 13 << 3 | 1,
				       0x02,
				       0x80 | 10 << 3,
				       0,
				       4,
				       0x80 | 15 << 3,
				       0x80 | 14 << 3 | 2,
				       0x07,
				       0,
				       0,
				       0 };
	static const uint8_t t310[] = { 6, 1, 4, 0x80, 2, 2 };
	static const uint8_t lnotab[] = { 6, 1, 4, 2 };
	static const uint8_t corrupt[] = { 0x80 | 14 << 3, 0x41 };

	CHECK(py_line_of(PY_LOCATIONS, loc, sizeof(loc), 10, 0) == 11, "3.11: first entry");
	CHECK(py_line_of(PY_LOCATIONS, loc, sizeof(loc), 10, 1) == 11, "3.11: its second unit");
	CHECK(py_line_of(PY_LOCATIONS, loc, sizeof(loc), 10, 2) == 11, "3.11: one-line form");
	CHECK(py_line_of(PY_LOCATIONS, loc, sizeof(loc), 10, 3) == -1, "3.11: no location");
	CHECK(py_line_of(PY_LOCATIONS, loc, sizeof(loc), 10, 6) == 8, "3.11: long form, backwards");
	CHECK(py_line_of(PY_LOCATIONS, loc, sizeof(loc), 10, 7) == -1, "3.11: past the table");
	CHECK(py_line_of(PY_LOCATIONS, corrupt, sizeof(corrupt), 10, 0) == -1,
	      "3.11: a varint cut short gives no line");
	CHECK(py_line_of(PY_LINETABLE_310, t310, sizeof(t310), 5, 5) == 6, "3.10: first range");
	CHECK(py_line_of(PY_LINETABLE_310, t310, sizeof(t310), 5, 7) == -1, "3.10: -128, no line");
	CHECK(py_line_of(PY_LINETABLE_310, t310, sizeof(t310), 5, 11) == 8, "3.10: third range");
	CHECK(py_line_of(PY_LINETABLE_310, t310, sizeof(t310), 5, 12) == -1, "3.10: past the end");
	CHECK(py_line_of(PY_LNOTAB, lnotab, sizeof(lnotab), 5, 5) == 5,
	      "3.9: before the first step");
	CHECK(py_line_of(PY_LNOTAB, lnotab, sizeof(lnotab), 5, 6) == 6, "3.9: after it");
	CHECK(py_line_of(PY_LNOTAB, lnotab, sizeof(lnotab), 5, 40) == 8, "3.9: after the last");
	CHECK(py_line_of(PY_LOCATIONS, NULL, 0, 5, 0) == -1, "no table, no line");
}

/* A compact ASCII str as 3.11 lays it out: header of 48 bytes, then the characters. */
static void *make_str(const char *s)
{
	size_t n = strlen(s);
	unsigned char *o = calloc(1, 48 + n + 1);
	uint64_t len = n;
	uint32_t state = 1 << 2 | 1 << 5 | 1 << 6; /* kind 1, compact, ascii */

	memcpy(o + 16, &len, 8);
	memcpy(o + 32, &state, 4);
	memcpy(o + 48, s, n);
	return o;
}

static void put(void *base, int off, uint64_t v)
{
	memcpy((char *)base + off, &v, 8);
}

struct fake {
	unsigned char runtime[512], interp[256], tstate[256], cframe[16];
	unsigned char frames[3][80];
	unsigned char code[256];
	unsigned char linetable[40];
	void *file, *name;
};

/* One thread, three frames of one code object whose table puts every unit on line 7. */
static void fake_build(struct fake *f, const struct py_layout *l)
{
	memset(f, 0, sizeof(*f));
	f->file = make_str("/srv/train.py");
	f->name = make_str("step");
	put(f->runtime, l->rt_interp_head, (uintptr_t)f->interp);
	put(f->interp, l->is_tstate_head, (uintptr_t)f->tstate);
	put(f->tstate, l->ts_interp, (uintptr_t)f->interp);
	put(f->tstate, l->ts_native_thread_id, 4242);
	put(f->tstate, l->ts_cframe, (uintptr_t)f->cframe);
	put(f->cframe, l->cframe_current, (uintptr_t)f->frames[0]);
	for (int i = 0; i < 3; i++) {
		put(f->frames[i], l->fr_code, (uintptr_t)f->code);
		put(f->frames[i], l->fr_previous, i < 2 ? (uintptr_t)f->frames[i + 1] : 0);
		put(f->frames[i], l->fr_instr, (uintptr_t)f->code + (uint64_t)l->co_code_adaptive);
	}
	put(f->code, l->co_filename, (uintptr_t)f->file);
	put(f->code, l->co_qualname, (uintptr_t)f->name);
	put(f->code, l->co_firstlineno, 6);
	put(f->code, l->co_linetable, (uintptr_t)f->linetable);
	put(f->linetable, l->bytes_size, 2);
	f->linetable[32] = 0x80 | 13 << 3 | 7;
	f->linetable[33] = 0x02;
}

static struct py_snapshot *fake_read(struct fake *f, struct py_interp *pi, unsigned max)
{
	struct py_snapshot *s = NULL;

	pi->runtime = (uintptr_t)f->runtime;
	CHECK(py_snapshot__read(pi, getpid(), max, &s) == 0 && s, "the fake state reads");
	return s;
}

static void test_fake_states(void)
{
	struct py_interp pi = { .major = 3, .minor = 11, .layout = py_layout__find(3, 11) };
	const struct py_layout *l = pi.layout;
	struct py_snapshot *s;
	struct fake f;

	fake_build(&f, l);
	s = fake_read(&f, &pi, 100);
	CHECK(s->n == 1 && s->t[0].tid == 4242 && s->t[0].n_frames == 3 && !s->t[0].error,
	      "one thread, three frames");
	CHECK(s->t[0].n_frames && !strcmp(s->t[0].frames[0].function, "step") &&
		      !strcmp(s->t[0].frames[0].file, "/srv/train.py") &&
		      s->t[0].frames[0].line == 7,
	      "function, file and line");
	py_snapshot__free(s);

	s = fake_read(&f, &pi, 2);
	CHECK(s->t[0].n_frames == 2 && s->t[0].truncated, "max_frames cuts the chain, said so");
	py_snapshot__free(s);

	/* frames[2] -> frames[1]: a cycle, found and said, never walked for ever. */
	put(f.frames[2], l->fr_previous, (uintptr_t)f.frames[1]);
	s = fake_read(&f, &pi, 100000);
	CHECK(s->t[0].error && strstr(s->t[0].error, "loops back"), "a cyclic chain is named");
	CHECK(s->t[0].n_frames < 8, "and walked only until the cycle shows");
	py_snapshot__free(s);

	put(f.frames[1], l->fr_previous, 0x10);
	s = fake_read(&f, &pi, 100);
	CHECK(s->t[0].n_frames == 2 && s->t[0].error && strstr(s->t[0].error, "unreadable"),
	      "an unreadable frame ends the chain with a reason");
	py_snapshot__free(s);

	/* A thread state of another layout does not point back to its interpreter. */
	put(f.tstate, l->ts_interp, 0x1234);
	s = fake_read(&f, &pi, 100);
	CHECK(s->n == 0 && s->error && strstr(s->error, "not the layout of Python 3.11"),
	      "a wrong layout is refused, not followed");
	py_snapshot__free(s);

	put(f.runtime, l->rt_interp_head, 0);
	put(f.runtime, l->rt_finalizing, (uintptr_t)f.tstate);
	s = fake_read(&f, &pi, 100);
	CHECK(s->finalizing && s->error && strstr(s->error, "shutting down"),
	      "an interpreter shutting down says so");
	py_snapshot__free(s);
	free(f.file);
	free(f.name);
}

static int dump(const char *binary)
{
	struct elf_object *o = elfobj__open(binary);
	struct py_object_ref ref = { binary, o, 0 };
	const struct py_layout *l;
	struct py_interp pi;
	char why[256];

	if (!o || py_interp__find(&ref, 1, &pi, why, sizeof(why))) {
		fprintf(stderr, "%s: %s\n", binary, o ? why : "not an ELF file");
		return 2;
	}
	l = pi.layout;
#define F(x) printf("%s=%d\n", #x, l->x)
	F(rt_finalizing), F(rt_interp_head), F(rt_gil), F(is_next), F(is_tstate_head);
	F(is_gil_ptr), F(ts_next), F(ts_interp), F(ts_thread_id), F(ts_native_thread_id);
	F(ts_frame), F(ts_cframe), F(cframe_current), F(ts_current_frame), F(fr_code);
	F(fr_previous), F(fr_lasti), F(fr_instr), F(fr_owner), F(fr_is_entry), F(fr_localsplus);
	F(co_filename), F(co_name), F(co_qualname), F(co_firstlineno), F(co_linetable);
	F(co_code_adaptive), F(gil_last_holder), F(gil_locked), F(gil_cond), F(gil_switch);
	F(gil_size), F(str_length), F(str_state), F(str_ascii_size), F(str_compact_size);
	F(bytes_size), F(bytes_data), F(ob_type), F(tp_name), F(tp_basicsize), F(tp_flags);
	F(tp_dictoffset), F(ht_cached_keys), F(is_modules), F(dict_keys), F(dict_values);
	F(dk_nentries), F(dk_indices), F(dict_values_array), F(long_digits), F(module_dict);
#undef F
	elfobj__free(o);
	return 0;
}

/* The _Py_DebugOffsets of Debian's 3.14.10 (python3.14 3.14.10-1), as its _PyRuntime begins. */
static void debug_offsets_314(unsigned char *dbg)
{
	static const uint64_t words[] = {
		0,    0x30e0af0, 0,    316616, 784,  808, 225864, 7280, 7272, 7344, 7360, 7408,
		7688, 7672,	 7680, 16,     7784, 0,	  7800,	  7792, 7992, 0,    832,  0,
		8,    16,	 72,   152,    160,  232, 32,	  88,	8,    0,    56,	  80,
		74,   64,	 0,    216,    112,  120, 128,	  136,	68,   52,   96,	  104,
		208,  0,	 16,   8,      416,  24,  88,	  168,	40,   32,   16,	  40,
		24,   16,	 200,  24,     40,   32,  48,	  32,	40,   24,   16,	  32,
		16,   24,	 40,   16,     32,   64,  32,	  16,	40,   264,  192,
	};

	memset(dbg, 0, PY_DEBUG_OFFSETS_SIZE);
	memcpy(dbg, words, sizeof(words));
	memcpy(dbg, "xdebugpy", 8);
}

static void test_debug_offsets(void)
{
	unsigned char dbg[PY_DEBUG_OFFSETS_SIZE];
	const struct py_layout *l, *again;
	char why[256] = "";
	uint64_t v;

	debug_offsets_314(dbg);
	l = py_layout__from_debug_offsets(14, 0x30e0af0, dbg, sizeof(dbg), why, sizeof(why));
	CHECK(l && l->rt_interp_head == 808 && l->is_next == 7272 && l->is_tstate_head == 7344 &&
		      l->ts_thread_id == 152 && l->ts_native_thread_id == 160 &&
		      l->ts_current_frame == 72 && l->fr_code == 0 && l->fr_owner == 74 &&
		      l->fr_localsplus == 80 && l->co_code_adaptive == 208 && l->is_gil_ptr == 16 &&
		      l->gil_locked == 16 && l->gil_last_holder == 8 && l->is_modules == 7688 &&
		      l->fr_tagged && l->refcnt_split,
	      "3.14: every field from its debug offsets");
	if (!l)
		fprintf(stderr, "# %s\n", why);
	again = py_layout__from_debug_offsets(14, 0x30e0af0, dbg, sizeof(dbg), why, sizeof(why));
	CHECK(again == l, "one layout kept per distinct set of offsets");
	CHECK(!py_layout__from_debug_offsets(13, 0x30d05f0, dbg, sizeof(dbg), why, sizeof(why)) &&
		      strstr(why, "not begin with the _Py_DebugOffsets of 3.13"),
	      "offsets of another version refused");
	CHECK(!py_layout__from_debug_offsets(16, 0x3100000, dbg, sizeof(dbg), why, sizeof(why)) &&
		      strstr(why, "those of 3.13 to 3.15"),
	      "a minor version whose offsets are unknown");
	v = 400; /* thread_id inside the thread state's 832 bytes, past the 256 read of it */
	memcpy(dbg + 27 * 8, &v, sizeof(v));
	CHECK(!py_layout__from_debug_offsets(14, 0x30e0af0, dbg, sizeof(dbg), why, sizeof(why)) &&
		      strstr(why, "outside its struct"),
	      "a field beyond what is read refused");
	debug_offsets_314(dbg);
	v = 900000; /* interpreters.head past the runtime's size */
	memcpy(dbg + 5 * 8, &v, sizeof(v));
	CHECK(!py_layout__from_debug_offsets(14, 0x30e0af0, dbg, sizeof(dbg), why, sizeof(why)),
	      "a field outside its struct refused");
	debug_offsets_314(dbg);
	v = 1;
	memcpy(dbg + 16, &v, sizeof(v));
	CHECK(!py_layout__from_debug_offsets(14, 0x30e0af0, dbg, sizeof(dbg), why, sizeof(why)) &&
		      strstr(why, "free-threaded"),
	      "a free-threaded build said");
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--dump"))
		return dump(argv[2]);
	test_line_tables();
	test_fake_states();
	test_debug_offsets();
	CHECK(py_layout__find(3, 5) == NULL && py_layout__find(3, 13) == NULL &&
		      py_layout__find(3, 14) == NULL && py_layout__find(3, 8) != NULL,
	      "tables up to 3.12; 3.13 on describe themselves");
	return tap_done();
}
