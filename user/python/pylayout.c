// SPDX-License-Identifier: GPL-2.0
/*
 * The offsets of each CPython version: a table per minor version up to 3.12, as its DWARF gives
 * them (gdb's ptype/o); from 3.13, what the interpreter's _Py_DebugOffsets say.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "pylayout.h"

/* clang-format off */
/* What every version shares: object headers, strings, bytes, dicts and the GIL's structure. */
#define PY_COMMON \
	.ob_type = 8, .tp_name = 24, .tp_basicsize = 32, .tp_flags = 168, .tp_dictoffset = 288, \
	.str_length = 16, .str_state = 32, .bytes_size = 16, .bytes_data = 32, \
	.gil_last_holder = 8, .gil_locked = 16, .gil_cond = 32, .gil_switch = 120, \
	.gil_size = 208, .ts_next = 8, .ts_interp = 16, .dict_keys = 32, .dict_values = 40, \
	.long_digits = 24, .module_dict = 16

static const struct py_layout layouts[] = {
	{
		/* 3.6 has no _PyRuntime: "runtime" is the interpreter list's head (interp_head),
		 * and its GIL lies in static variables no export leads to. */
		PY_COMMON,
		.major = 3, .minor = 6, .frames = PY_FRAME_OBJECTS, .lines = PY_LNOTAB,
		.rt_finalizing = -1, .rt_interp_head = 0, .rt_gil = -1,
		.is_next = 0, .is_tstate_head = 8, .is_gil_ptr = -1, .is_modules = 16,
		.ts_thread_id = 152, .ts_native_thread_id = -1, .ts_frame = 24, .ts_cframe = -1,
		.cframe_current = -1, .ts_current_frame = -1,
		.fr_code = 32, .fr_previous = 24, .fr_lasti = 120, .fr_instr = -1, .fr_owner = -1,
		.fr_is_entry = -1, .fr_localsplus = 376, .fr_size = 128,
		.co_filename = 96, .co_name = 104, .co_qualname = -1, .co_firstlineno = 36,
		.co_linetable = 112, .co_code_adaptive = -1,
		.str_ascii_size = 48, .str_compact_size = 72,
		.ht_cached_keys = 856, .dict_log2 = false, .dk_nentries = 32, .dk_indices = 40,
		.dict_values_array = -1, .instance_dict = PY_DICT_AT_DICTOFFSET, .long_tagged = false,
	},
	{
		PY_COMMON,
		.major = 3, .minor = 7, .frames = PY_FRAME_OBJECTS, .lines = PY_LNOTAB,
		.rt_finalizing = 8, .rt_interp_head = 24, .rt_gil = 1264,
		.is_next = 0, .is_tstate_head = 8, .is_gil_ptr = -1, .is_modules = 40,
		.ts_thread_id = 176, .ts_native_thread_id = -1, .ts_frame = 24, .ts_cframe = -1,
		.cframe_current = -1, .ts_current_frame = -1,
		.fr_code = 32, .fr_previous = 24, .fr_lasti = 104, .fr_instr = -1, .fr_owner = -1,
		.fr_is_entry = -1, .fr_localsplus = 360, .fr_size = 112,
		.co_filename = 96, .co_name = 104, .co_qualname = -1, .co_firstlineno = 36,
		.co_linetable = 112, .co_code_adaptive = -1,
		.str_ascii_size = 48, .str_compact_size = 72,
		.ht_cached_keys = 856, .dict_log2 = false, .dk_nentries = 32, .dk_indices = 40,
		.dict_values_array = -1, .instance_dict = PY_DICT_AT_DICTOFFSET, .long_tagged = false,
	},
	{
		PY_COMMON,
		.major = 3, .minor = 8, .frames = PY_FRAME_OBJECTS, .lines = PY_LNOTAB,
		.rt_finalizing = 16, .rt_interp_head = 32, .rt_gil = 1152,
		.is_next = 0, .is_tstate_head = 8, .is_gil_ptr = -1, .is_modules = 56,
		.ts_thread_id = 176, .ts_native_thread_id = -1, .ts_frame = 24, .ts_cframe = -1,
		.cframe_current = -1, .ts_current_frame = -1,
		.fr_code = 32, .fr_previous = 24, .fr_lasti = 104, .fr_instr = -1, .fr_owner = -1,
		.fr_is_entry = -1, .fr_localsplus = 360, .fr_size = 112,
		.co_filename = 104, .co_name = 112, .co_qualname = -1, .co_firstlineno = 40,
		.co_linetable = 120, .co_code_adaptive = -1,
		.str_ascii_size = 48, .str_compact_size = 72,
		.ht_cached_keys = 872, .dict_log2 = false, .dk_nentries = 32, .dk_indices = 40,
		.dict_values_array = -1, .instance_dict = PY_DICT_AT_DICTOFFSET, .long_tagged = false,
	},
	{
		PY_COMMON,
		.major = 3, .minor = 9, .frames = PY_FRAME_OBJECTS, .lines = PY_LNOTAB,
		.rt_finalizing = 16, .rt_interp_head = 32, .rt_gil = 352,
		.is_next = 0, .is_tstate_head = 8, .is_gil_ptr = -1, .is_modules = 856,
		.ts_thread_id = 176, .ts_native_thread_id = -1, .ts_frame = 24, .ts_cframe = -1,
		.cframe_current = -1, .ts_current_frame = -1,
		.fr_code = 32, .fr_previous = 24, .fr_lasti = 104, .fr_instr = -1, .fr_owner = -1,
		.fr_is_entry = -1, .fr_localsplus = 360, .fr_size = 112,
		.co_filename = 104, .co_name = 112, .co_qualname = -1, .co_firstlineno = 40,
		.co_linetable = 120, .co_code_adaptive = -1,
		.str_ascii_size = 48, .str_compact_size = 72,
		.ht_cached_keys = 864, .dict_log2 = false, .dk_nentries = 32, .dk_indices = 40,
		.dict_values_array = -1, .instance_dict = PY_DICT_AT_DICTOFFSET, .long_tagged = false,
	},
	{
		PY_COMMON,
		.major = 3, .minor = 10, .frames = PY_FRAME_OBJECTS, .lines = PY_LINETABLE_310,
		.rt_finalizing = 16, .rt_interp_head = 32, .rt_gil = 352,
		.is_next = 0, .is_tstate_head = 8, .is_gil_ptr = -1, .is_modules = 856,
		.ts_thread_id = 176, .ts_native_thread_id = -1, .ts_frame = 24, .ts_cframe = -1,
		.cframe_current = -1, .ts_current_frame = -1,
		.fr_code = 32, .fr_previous = 24, .fr_lasti = 96, .fr_instr = -1, .fr_owner = -1,
		.fr_is_entry = -1, .fr_localsplus = 352, .fr_size = 112,
		.co_filename = 104, .co_name = 112, .co_qualname = -1, .co_firstlineno = 40,
		.co_linetable = 120, .co_code_adaptive = -1,
		.str_ascii_size = 48, .str_compact_size = 72,
		.ht_cached_keys = 872, .dict_log2 = false, .dk_nentries = 32, .dk_indices = 40,
		.dict_values_array = -1, .instance_dict = PY_DICT_AT_DICTOFFSET, .long_tagged = false,
	},
	{
		PY_COMMON,
		.major = 3, .minor = 11, .frames = PY_INTERPRETER_FRAMES, .lines = PY_LOCATIONS,
		.rt_finalizing = 24, .rt_interp_head = 40, .rt_gil = 360,
		.is_next = 0, .is_tstate_head = 16, .is_gil_ptr = -1, .is_modules = 888,
		.ts_thread_id = 152, .ts_native_thread_id = 160, .ts_frame = -1, .ts_cframe = 56,
		.cframe_current = 8, .ts_current_frame = -1,
		.fr_code = 32, .fr_previous = 48, .fr_lasti = -1, .fr_instr = 56, .fr_owner = 69,
		.fr_is_entry = 68, .fr_localsplus = 72, .fr_size = 80,
		.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 72,
		.co_linetable = 136, .co_code_adaptive = 184,
		.str_ascii_size = 48, .str_compact_size = 72,
		.ht_cached_keys = 872, .dict_log2 = true, .dk_nentries = 24, .dk_indices = 32,
		.dict_values_array = 0, .instance_dict = PY_MANAGED_311, .long_tagged = false,
	},
	{
		PY_COMMON,
		.major = 3, .minor = 12, .frames = PY_INTERPRETER_FRAMES, .lines = PY_LOCATIONS,
		.rt_finalizing = 24, .rt_interp_head = 40, .rt_gil = -1,
		.is_next = 0, .is_tstate_head = 72, .is_gil_ptr = 384, .is_modules = 944,
		.ts_thread_id = 136, .ts_native_thread_id = 144, .ts_frame = -1, .ts_cframe = 56,
		.cframe_current = 0, .ts_current_frame = -1,
		.fr_code = 0, .fr_previous = 8, .fr_lasti = -1, .fr_instr = 56, .fr_owner = 70,
		.fr_is_entry = -1, .fr_localsplus = 72, .fr_size = 80,
		.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
		.co_linetable = 136, .co_code_adaptive = 192,
		.str_ascii_size = 40, .str_compact_size = 56,
		.ht_cached_keys = 880, .dict_log2 = true, .dk_nentries = 24, .dk_indices = 32,
		.dict_values_array = 0, .instance_dict = PY_MANAGED_312, .long_tagged = true,
	},
	{
		PY_COMMON,
		.major = 3, .minor = 13, .frames = PY_INTERPRETER_FRAMES, .lines = PY_LOCATIONS,
		.rt_finalizing = 608, .rt_interp_head = 632, .rt_gil = -1,
		.is_next = 7264, .is_tstate_head = 7344, .is_gil_ptr = 16, .is_modules = 7656,
		.ts_thread_id = 152, .ts_native_thread_id = 160, .ts_frame = -1, .ts_cframe = -1,
		.cframe_current = -1, .ts_current_frame = 72,
		.fr_code = 0, .fr_previous = 8, .fr_lasti = -1, .fr_instr = 56, .fr_owner = 70,
		.fr_is_entry = -1, .fr_localsplus = 72, .fr_size = 80,
		.co_filename = 112, .co_name = 120, .co_qualname = 128, .co_firstlineno = 68,
		.co_linetable = 136, .co_code_adaptive = 200,
		.str_ascii_size = 40, .str_compact_size = 56,
		.ht_cached_keys = 880, .dict_log2 = true, .dk_nentries = 24, .dk_indices = 32,
		.dict_values_array = 8, .instance_dict = PY_MANAGED_313, .long_tagged = true,
	},
};
/* clang-format on */

static const struct py_layout *table_layout(unsigned int major, unsigned int minor)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == major && layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

const struct py_layout *py_layout__find(unsigned int major, unsigned int minor)
{
	return major == 3 && minor >= PY_DEBUG_OFFSETS_FIRST ? NULL : table_layout(major, minor);
}

/*
 * Where each field dlscope reads lies inside _Py_DebugOffsets, per minor version: that struct
 * grows between minor versions (3.14 added threads_main and the set object, 3.15 more thread
 * state and the type's instance layout), never within one. Read off each version's pycore_debug_offsets.h and checked against
 * Debian's 3.13.5, 3.14 and 3.15 builds (tests/e2e/test_distros.py).
 */
struct debug_fields {
	unsigned int minor;
	int rt_size, rt_finalizing, rt_interp_head;
	int is_size, is_next, is_threads_head, is_modules, is_ceval_gil, is_gil, is_gil_locked,
		is_gil_holder;
	int ts_size, ts_next, ts_interp, ts_current_frame, ts_thread_id, ts_native_thread_id;
	int fr_size, fr_previous, fr_executable, fr_instr_ptr, fr_localsplus, fr_owner;
	int co_size, co_filename, co_name, co_qualname, co_linetable, co_firstlineno,
		co_code_adaptive;
	int ob_type, tp_name, tp_flags;
	int tp_basicsize, tp_dictoffset, ht_cached_keys; /* 3.15+; 0: not described */
	int dict_keys, dict_values;
	int long_tag, long_digit;
	int bytes_size, bytes_data;
	int str_state, str_length, str_ascii_size;
};

/* clang-format off */
static const struct debug_fields debug_fields[] = {
	{
		.minor = 13,
		.rt_size = 24, .rt_finalizing = 32, .rt_interp_head = 40,
		.is_size = 48, .is_next = 64, .is_threads_head = 72, .is_modules = 88,
		.is_ceval_gil = 112, .is_gil = 120, .is_gil_locked = 136, .is_gil_holder = 144,
		.ts_size = 152, .ts_next = 168, .ts_interp = 176, .ts_current_frame = 184,
		.ts_thread_id = 192, .ts_native_thread_id = 200,
		.fr_size = 224, .fr_previous = 232, .fr_executable = 240, .fr_instr_ptr = 248,
		.fr_localsplus = 256, .fr_owner = 264,
		.co_size = 272, .co_filename = 280, .co_name = 288, .co_qualname = 296,
		.co_linetable = 304, .co_firstlineno = 312, .co_code_adaptive = 344,
		.ob_type = 360, .tp_name = 376, .tp_flags = 392,
		.dict_keys = 456, .dict_values = 464, .long_tag = 496, .long_digit = 504,
		.bytes_size = 520, .bytes_data = 528,
		.str_state = 544, .str_length = 552, .str_ascii_size = 560,
	},
	{
		.minor = 14,
		.rt_size = 24, .rt_finalizing = 32, .rt_interp_head = 40,
		.is_size = 48, .is_next = 64, .is_threads_head = 72, .is_modules = 96,
		.is_ceval_gil = 120, .is_gil = 128, .is_gil_locked = 144, .is_gil_holder = 152,
		.ts_size = 176, .ts_next = 192, .ts_interp = 200, .ts_current_frame = 208,
		.ts_thread_id = 216, .ts_native_thread_id = 224,
		.fr_size = 248, .fr_previous = 256, .fr_executable = 264, .fr_instr_ptr = 272,
		.fr_localsplus = 280, .fr_owner = 288,
		.co_size = 312, .co_filename = 320, .co_name = 328, .co_qualname = 336,
		.co_linetable = 344, .co_firstlineno = 352, .co_code_adaptive = 384,
		.ob_type = 408, .tp_name = 424, .tp_flags = 440,
		.dict_keys = 536, .dict_values = 544, .long_tag = 576, .long_digit = 584,
		.bytes_size = 600, .bytes_data = 608,
		.str_state = 624, .str_length = 632, .str_ascii_size = 640,
	},
	{
		.minor = 15,
		.rt_size = 24, .rt_finalizing = 32, .rt_interp_head = 40,
		.is_size = 48, .is_next = 64, .is_threads_head = 72, .is_modules = 96,
		.is_ceval_gil = 120, .is_gil = 128, .is_gil_locked = 144, .is_gil_holder = 152,
		.ts_size = 176, .ts_next = 192, .ts_interp = 200, .ts_current_frame = 208,
		.ts_thread_id = 240, .ts_native_thread_id = 248,
		.fr_size = 312, .fr_previous = 320, .fr_executable = 328, .fr_instr_ptr = 336,
		.fr_localsplus = 344, .fr_owner = 352,
		.co_size = 376, .co_filename = 384, .co_name = 392, .co_qualname = 400,
		.co_linetable = 408, .co_firstlineno = 416, .co_code_adaptive = 448,
		.ob_type = 472, .tp_name = 488, .tp_flags = 504,
		.tp_basicsize = 512, .tp_dictoffset = 520, .ht_cached_keys = 536,
		.dict_keys = 632, .dict_values = 640, .long_tag = 672, .long_digit = 680,
		.bytes_size = 696, .bytes_data = 704,
		.str_state = 720, .str_length = 728, .str_ascii_size = 736,
	},
};
/* clang-format on */

/* Layouts made from debug offsets, kept for the program's life: one per distinct layout. */
static struct {
	pthread_mutex_t lock;
	struct py_layout **l;
	size_t n, cap;
} made = { .lock = PTHREAD_MUTEX_INITIALIZER };

static const struct py_layout *keep(const struct py_layout *l)
{
	const struct py_layout *found = NULL;
	struct py_layout *copy;

	pthread_mutex_lock(&made.lock);
	for (size_t i = 0; i < made.n && !found; i++)
		if (!memcmp(made.l[i], l, sizeof(*l)))
			found = made.l[i];
	if (!found && (copy = malloc(sizeof(*copy))) &&
	    !ARRAY_RESERVE(made.l, made.cap, made.n + 1)) {
		*copy = *l;
		made.l[made.n++] = copy;
		found = copy;
	} else if (!found) {
		free(copy);
	}
	pthread_mutex_unlock(&made.lock);
	return found;
}

static uint64_t u64_at(const unsigned char *p, int off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* The offset at @at of the debug offsets, which must lie inside a struct of the size at
 * @size_at with room for @width bytes; -1 otherwise. */
static int field(const unsigned char *dbg, int at, int size_at, unsigned int width)
{
	uint64_t v = u64_at(dbg, at), size = u64_at(dbg, size_at);

	return size < (1u << 20) && v + width <= size ? (int)v : -1;
}

/* The offset at @at of the debug offsets inside an object: at most @max; -1 otherwise. */
static int small(const unsigned char *dbg, int at, int max)
{
	uint64_t v = u64_at(dbg, at);

	return v <= (uint64_t)max ? (int)v : -1;
}

/* Whether every field in @l is known: a -1 left means the offsets described something else. */
static bool complete(const struct py_layout *l)
{
	const int must[] = {
		l->rt_finalizing,
		l->rt_interp_head,
		l->is_next,
		l->is_tstate_head,
		l->is_modules,
		l->is_gil_ptr,
		l->gil_locked,
		l->gil_last_holder,
		l->ts_next,
		l->ts_interp,
		l->ts_current_frame,
		l->ts_thread_id,
		l->ts_native_thread_id,
		l->fr_previous,
		l->fr_code,
		l->fr_instr,
		l->fr_localsplus,
		l->fr_owner,
		l->co_filename,
		l->co_name,
		l->co_qualname,
		l->co_linetable,
		l->co_firstlineno,
		l->co_code_adaptive,
		l->ob_type,
		l->tp_name,
		l->tp_flags,
		l->tp_basicsize,
		l->tp_dictoffset,
		l->ht_cached_keys,
		l->dict_keys,
		l->dict_values,
		l->long_digits,
		l->bytes_size,
		l->bytes_data,
		l->str_state,
		l->str_length,
		l->str_ascii_size,
	};

	/* Read from the first bytes of a thread state and of a code object. */
	const int within[] = {
		l->ts_next,	   l->ts_interp,	   l->ts_current_frame,
		l->ts_thread_id,   l->ts_native_thread_id, l->co_filename,
		l->co_name,	   l->co_qualname,	   l->co_linetable,
		l->co_firstlineno,
	};

	for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++)
		if (must[i] < 0)
			return false;
	for (size_t i = 0; i < sizeof(within) / sizeof(within[0]); i++)
		if (within[i] + 8 > PY_STATE_READ)
			return false;
	return l->fr_size > 0 && l->fr_size <= 256 && l->str_ascii_size >= 32;
}

const struct py_layout *py_layout__from_debug_offsets(unsigned int minor, uint64_t version,
						      const unsigned char *dbg, size_t len,
						      char *why, size_t whylen)
{
	const struct debug_fields *d = NULL;
	struct py_layout l;
	int gil;

	for (size_t i = 0; i < sizeof(debug_fields) / sizeof(debug_fields[0]); i++)
		if (debug_fields[i].minor == minor)
			d = &debug_fields[i];
	if (!d) {
		snprintf(why, whylen,
			 "its _Py_DebugOffsets are laid out as dlscope does not know (it reads "
			 "those of 3.%d to 3.%d)",
			 PY_DEBUG_OFFSETS_FIRST, PY_DEBUG_OFFSETS_LAST);
		return NULL;
	}
	if (len < PY_DEBUG_OFFSETS_SIZE || memcmp(dbg, "xdebugpy", 8) ||
	    (u64_at(dbg, 8) >> 16) != (version >> 16)) {
		snprintf(why, whylen,
			 "_PyRuntime does not begin with the _Py_DebugOffsets of 3.%u (a modified "
			 "build?)",
			 minor);
		return NULL;
	}
	if (u64_at(dbg, 16)) {
		snprintf(why, whylen,
			 "a free-threaded build (no GIL): dlscope does not read its frames yet");
		return NULL;
	}
	/* What the offsets do not describe is as in 3.13. */
	l = *table_layout(3, 13);
	l.minor = minor;
	l.rt_finalizing = field(dbg, d->rt_finalizing, d->rt_size, 8);
	l.rt_interp_head = field(dbg, d->rt_interp_head, d->rt_size, 8);
	l.is_next = field(dbg, d->is_next, d->is_size, 8);
	l.is_tstate_head = field(dbg, d->is_threads_head, d->is_size, 8);
	l.is_modules = field(dbg, d->is_modules, d->is_size, 8);
	l.is_gil_ptr = field(dbg, d->is_ceval_gil, d->is_size, 8);
	/* The GIL the pointer leads to is the interpreter's own _gil: its fields from there. */
	gil = field(dbg, d->is_gil, d->is_size, 1);
	l.gil_locked = field(dbg, d->is_gil_locked, d->is_size, 4);
	l.gil_last_holder = field(dbg, d->is_gil_holder, d->is_size, 8);
	l.gil_locked = gil < 0 || l.gil_locked < gil ? -1 : l.gil_locked - gil;
	l.gil_last_holder = gil < 0 || l.gil_last_holder < gil ? -1 : l.gil_last_holder - gil;
	l.ts_next = field(dbg, d->ts_next, d->ts_size, 8);
	l.ts_interp = field(dbg, d->ts_interp, d->ts_size, 8);
	l.ts_current_frame = field(dbg, d->ts_current_frame, d->ts_size, 8);
	l.ts_thread_id = field(dbg, d->ts_thread_id, d->ts_size, 8);
	l.ts_native_thread_id = field(dbg, d->ts_native_thread_id, d->ts_size, 8);
	l.fr_previous = field(dbg, d->fr_previous, d->fr_size, 8);
	l.fr_code = field(dbg, d->fr_executable, d->fr_size, 8);
	l.fr_instr = field(dbg, d->fr_instr_ptr, d->fr_size, 8);
	l.fr_localsplus = field(dbg, d->fr_localsplus, d->fr_size, 0);
	l.fr_owner = field(dbg, d->fr_owner, d->fr_size, 1);
	l.fr_size = (int)small(dbg, d->fr_size, 256);
	l.fr_tagged = minor >= 14;
	l.refcnt_split = minor >= 14;
	l.co_filename = field(dbg, d->co_filename, d->co_size, 8);
	l.co_name = field(dbg, d->co_name, d->co_size, 8);
	l.co_qualname = field(dbg, d->co_qualname, d->co_size, 8);
	l.co_linetable = field(dbg, d->co_linetable, d->co_size, 8);
	l.co_firstlineno = field(dbg, d->co_firstlineno, d->co_size, 4);
	l.co_code_adaptive = field(dbg, d->co_code_adaptive, d->co_size, 0);
	/* Objects: no size in the offsets bounds these, and all lie in the first bytes. */
	l.ob_type = small(dbg, d->ob_type, 64);
	l.tp_name = small(dbg, d->tp_name, 512);
	l.tp_flags = small(dbg, d->tp_flags, 512);
	if (d->ht_cached_keys) {
		l.tp_basicsize = small(dbg, d->tp_basicsize, 512);
		l.tp_dictoffset = small(dbg, d->tp_dictoffset, 512);
		l.ht_cached_keys = small(dbg, d->ht_cached_keys, 2048);
	}
	l.dict_keys = small(dbg, d->dict_keys, 128);
	l.dict_values = small(dbg, d->dict_values, 128);
	l.long_digits = small(dbg, d->long_digit, 64);
	l.bytes_size = small(dbg, d->bytes_size, 64);
	l.bytes_data = small(dbg, d->bytes_data, 128);
	l.str_state = small(dbg, d->str_state, 64);
	l.str_length = small(dbg, d->str_length, 64);
	l.str_ascii_size = small(dbg, d->str_ascii_size, 96);
	/* PyCompactUnicodeObject: the ASCII header, then utf8_length and utf8. */
	l.str_compact_size = l.str_ascii_size + 16;
	if (!complete(&l)) {
		snprintf(why, whylen,
			 "its _Py_DebugOffsets name a field outside its struct: not the layout "
			 "of 3.%u (a modified build?)",
			 minor);
		return NULL;
	}
	return keep(&l);
}
