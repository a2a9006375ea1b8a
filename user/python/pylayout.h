/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where CPython keeps what a stack reader needs, per minor version (3.9 to 3.13, x86-64 release
 * and debug builds without Py_TRACE_REFS): the runtime's interpreter list and GIL, each thread
 * state's frame chain, the frame and code object fields, and how strings and line tables are
 * laid out. Read off each version's DWARF (tests/e2e/test_python.py checks them against it), so
 * no debug info is needed at run time.
 */
#ifndef DLSCOPE_PYLAYOUT_H
#define DLSCOPE_PYLAYOUT_H

#include <stdbool.h>
#include <stdint.h>

enum py_frame_model {
	PY_FRAME_OBJECTS,      /* 3.9, 3.10: PyFrameObject chain, one C eval call per frame */
	PY_INTERPRETER_FRAMES, /* 3.11+: _PyInterpreterFrame chain, many frames per eval call */
};

enum py_line_table {
	PY_LNOTAB,	  /* 3.9: (address delta, line delta) byte pairs, addresses in bytes */
	PY_LINETABLE_310, /* 3.10: (address delta, line delta) pairs, -128 for no line */
	PY_LOCATIONS,	  /* 3.11+: PEP 657 location table, addresses in code units */
};

/* Where an instance keeps its attributes (threading.Thread's _name, for thread names). */
enum py_instance_dict {
	PY_DICT_AT_DICTOFFSET, /* 3.9, 3.10: a dict at tp_dictoffset */
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
	int rt_gil;	    /* ceval.gil, embedded in the runtime (up to 3.11) */
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

/* _PyInterpreterFrame.owner: the frame's storage; a C-stack frame is the shim of an eval call. */
enum { PY_OWNED_BY_THREAD, PY_OWNED_BY_GENERATOR, PY_OWNED_BY_FRAME_OBJECT, PY_OWNED_BY_CSTACK };

/* The layout of CPython @major.@minor, or NULL when this build does not know it. */
const struct py_layout *py_layout__find(unsigned int major, unsigned int minor);

#endif
