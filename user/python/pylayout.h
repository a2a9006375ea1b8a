/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where CPython keeps what a stack reader needs (x86-64 release and debug builds without
 * Py_TRACE_REFS): the runtime's interpreter list and GIL, each thread state's frame chain, the
 * frame and code object fields, and how strings and line tables are laid out.
 *
 * 3.6 to 3.12: a table per minor version, read off each version's DWARF (tests/e2e/test_python.py
 * checks them against it), so no debug info is needed at run time. 3.13 and later describe
 * themselves: _PyRuntime begins with _Py_DebugOffsets (what gdb, py-spy and pystack read), so a
 * patch release that moves a field cannot break frames. Only where that struct's own fields lie
 * is known per minor version, and what it does not describe (dict internals, the GIL's
 * condition variables) comes from the nearest table.
 */
#ifndef DLSCOPE_PYLAYOUT_H
#define DLSCOPE_PYLAYOUT_H

#include <stdbool.h>
#include <stdint.h>

enum py_frame_model {
	PY_FRAME_OBJECTS,      /* to 3.10: PyFrameObject chain, one C eval call per frame */
	PY_INTERPRETER_FRAMES, /* 3.11+: _PyInterpreterFrame chain, many frames per eval call */
};

enum py_line_table {
	PY_LNOTAB,	  /* to 3.9: (address delta, line delta) byte pairs, addresses in bytes */
	PY_LINETABLE_310, /* 3.10: (address delta, line delta) pairs, -128 for no line */
	PY_LOCATIONS,	  /* 3.11+: PEP 657 location table, addresses in code units */
};

/* Where an instance keeps its attributes (threading.Thread's _name, for thread names). */
enum py_instance_dict {
	PY_DICT_AT_DICTOFFSET, /* to 3.10: a dict at tp_dictoffset */
	PY_MANAGED_311, /* values at obj[-4] (keys: the type's cached keys), dict at obj[-3] */
	PY_MANAGED_312, /* obj[-3]: a dict, or values tagged with bit 0 */
	PY_MANAGED_313, /* obj[-3]: a dict, else values inline at tp_basicsize */
};

/* Offsets in bytes; -1 for a field this version does not have. */
struct py_layout {
	unsigned int major, minor;
	enum py_frame_model frames;
	enum py_line_table lines;
	/* _PyRuntimeState */
	int rt_finalizing;  /* the thread state finalizing the runtime, NULL while it runs */
	int rt_interp_head; /* interpreters.head */
	int rt_gil;	    /* ceval.gil, embedded in the runtime (3.7 to 3.11) */
	/* PyInterpreterState */
	int is_next, is_tstate_head;
	int is_gil_ptr; /* ceval.gil, a pointer to the interpreter's GIL (3.12+) */
	/* PyThreadState */
	int ts_next, ts_interp, ts_thread_id, ts_native_thread_id;
	int ts_frame;	      /* PyFrameObject *frame (3.9, 3.10) */
	int ts_cframe;	      /* _PyCFrame *cframe (3.11, 3.12) ... */
	int cframe_current;   /* ... and its current_frame */
	int ts_current_frame; /* _PyInterpreterFrame *current_frame (3.13) */
	/* The frame: PyFrameObject (3.9, 3.10) or _PyInterpreterFrame */
	int fr_code, fr_previous;
	int fr_lasti;	 /* int f_lasti (3.9: bytes, 3.10: code units) */
	int fr_instr;	 /* prev_instr (3.11, 3.12) or instr_ptr (3.13): a pointer into the code */
	int fr_owner;	 /* char owner: thread, generator, frame object, C stack (3.12+) */
	int fr_is_entry; /* bool is_entry: the first frame of an eval call (3.11) */
	int fr_localsplus; /* the frame's first local */
	int fr_size;	   /* bytes of a frame read: every field used lies within */
	bool fr_tagged;	   /* f_executable and locals are _PyStackRefs (3.14+): tag bits below 4 */
	bool refcnt_split; /* ob_refcnt is 32 bits, then overflow and flags (3.14+) */
	/* PyCodeObject */
	int co_filename, co_name, co_qualname, co_firstlineno, co_linetable, co_code_adaptive;
	/* _gil_runtime_state */
	int gil_last_holder, gil_locked;
	int gil_cond, gil_switch; /* take_gil waits on cond and mutex, drop_gil on switch_cond */
	int gil_size;
	/* str: PyASCIIObject (data follows it when ascii), PyCompactUnicodeObject */
	int str_length, str_state, str_ascii_size, str_compact_size;
	/* bytes */
	int bytes_size, bytes_data;
	/* PyObject, PyTypeObject, PyHeapTypeObject */
	int ob_type, tp_name, tp_basicsize, tp_flags, tp_dictoffset, ht_cached_keys;
	int is_modules; /* sys.modules */
	/* Dicts: 3.9/3.10 keys have dk_size, 3.11+ log2 sizes and key kinds */
	bool dict_log2;
	int dict_keys, dict_values, dk_nentries, dk_indices;
	int dict_values_array; /* values[] inside PyDictValues (3.11+) */
	enum py_instance_dict instance_dict;
	/* int: up to 3.11 ob_size holds the signed digit count, 3.12+ lv_tag */
	bool long_tagged;
	int long_digits;
	int module_dict; /* PyModuleObject.md_dict */
};

/*
 * _PyInterpreterFrame.owner: the frame's storage. From PY_OWNED_BY_SHIM on, the frame is the
 * shim an eval call pushes (3.12, 3.13: owned by the C stack; 3.14+: by the interpreter, 4 by
 * the C stack): no Python code of its own.
 */
enum { PY_OWNED_BY_THREAD, PY_OWNED_BY_GENERATOR, PY_OWNED_BY_FRAME_OBJECT, PY_OWNED_BY_SHIM };

/* A _PyStackRef's pointer: its tag bits cleared; 0 for a tagged int, which is no object. */
static inline uint64_t py_stackref_ptr(uint64_t ref)
{
	return (ref & 3) == 3 ? 0 : ref & ~(uint64_t)3;
}

/* The layout of CPython @major.@minor from its table, or NULL when there is none (3.13+). */
const struct py_layout *py_layout__find(unsigned int major, unsigned int minor);

/* The minor versions whose _Py_DebugOffsets this build can read. */
#define PY_DEBUG_OFFSETS_FIRST 13
#define PY_DEBUG_OFFSETS_LAST 15

/*
 * The layout of CPython 3.@minor (3.13+) from the _Py_DebugOffsets at the start of its
 * _PyRuntime (@dbg, @len bytes). Returns a layout that lives as long as the program, or NULL
 * with a reason in @why: a minor version whose offsets this build cannot read, a free-threaded
 * build, or offsets that do not describe a 3.@minor runtime.
 */
const struct py_layout *py_layout__from_debug_offsets(unsigned int minor, uint64_t version,
						      const unsigned char *dbg, size_t len,
						      char *why, size_t whylen);

/* Bytes of a thread state and of a code object read: every field used lies within. */
#define PY_STATE_READ 256

/* Bytes of _PyRuntime that py_layout__from_debug_offsets reads. */
#define PY_DEBUG_OFFSETS_SIZE 1024

#endif
