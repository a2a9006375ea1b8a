/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A CPython interpreter inside a process: where it is (_PyRuntime, in the executable or in
 * libpython, or in any program that embeds one), which version, and, read from its memory,
 * each thread's Python frames (function, file, line) and who holds the GIL. Reads never
 * follow a pointer without bounds: a corrupt, cyclic or half-torn-down state gives a reason,
 * not a crash or a loop.
 */
#ifndef DLSCOPE_PYSTATE_H
#define DLSCOPE_PYSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pylayout.h"

struct elf_object;

/* A loaded object, as the caller knows it: its path in the process, ELF and load bias. */
struct py_object_ref {
	const char *path;
	const struct elf_object *elf;
	uint64_t bias;
};

struct py_interp {
	unsigned int major, minor, micro;
	bool micro_known; /* false when the version came from a file name */
	const struct py_layout *layout;
	uint64_t runtime;   /* address of _PyRuntime */
	uint64_t code_type; /* address of PyCode_Type: a frame's code is checked against it */
	char object[256];   /* the object that holds it (python3.11, libpython3.12.so.1.0) */
};

/*
 * Find the interpreter among the objects @objs of a process. Returns 0; -ENOENT when none
 * holds one (not a Python process); -ENOTSUP with a reason in @why for a version this build
 * has no layout for.
 */
int py_interp__find(const struct py_object_ref *objs, size_t n, struct py_interp *out, char *why,
		    size_t whylen);

struct py_frame {
	const char *function; /* co_qualname (3.11+) or co_name; owned by the snapshot */
	const char *file;
	int line; /* -1 when unknown */
	uint64_t code;
	/*
	 * The first frame of its eval call: the frames of one _PyEval_EvalFrameDefault C frame
	 * end here (3.9 and 3.10 have one frame per call).
	 */
	bool eval_entry;
};

struct py_thread {
	uint64_t tstate;
	pid_t tid;		 /* native_thread_id (3.11+); 0 when unknown */
	uint64_t pthread_id;	 /* thread_id: pthread_self() of the thread */
	char *name;		 /* threading.Thread.name, NULL when it cannot be read */
	struct py_frame *frames; /* innermost first */
	size_t n_frames;
	bool truncated; /* more frames than asked for */
	char *error;	/* why the frames stop early or are missing */
};

struct py_snapshot {
	const struct py_interp *interp;
	struct py_thread *t;
	size_t n;
	bool finalizing; /* the runtime is shutting down */
	uint64_t gil;	 /* address of the GIL's state, 0 when unknown */
	bool gil_locked;
	uint64_t gil_holder; /* thread state of the last holder */
	char *error;	     /* why nothing or not everything could be read */
	struct py_strings *strings;
};

/*
 * Read the Python threads of @pid through @pi: up to @max_frames frames each. The process
 * should be stopped for a consistent picture (a running one gives a best effort). Returns 0
 * with @out set (its error says what is missing), or -ENOMEM.
 */
int py_snapshot__read(const struct py_interp *pi, pid_t pid, unsigned int max_frames,
		      struct py_snapshot **out);
struct corefile;
/* The same, of the process a core file holds: its memory is the core's segments. */
int py_snapshot__read_core(const struct py_interp *pi, const struct corefile *core,
			   unsigned int max_frames, struct py_snapshot **out);
void py_snapshot__free(struct py_snapshot *s);
/* The thread of @s whose thread state is @tstate, or NULL. */
const struct py_thread *py_snapshot__thread(const struct py_snapshot *s, uint64_t tstate);
/* Does futex @addr belong to the GIL's wait (take_gil: its condition variable and mutex)? */
bool py_snapshot__is_gil_wait(const struct py_snapshot *s, uint64_t addr);

/* What a code object says about itself: names, first line and line table (malloc'd). */
struct py_code_info {
	char *function; /* co_qualname (3.11+) or co_name */
	char *file;
	int firstlineno;
	uint8_t *lines; /* its line table, in the layout's format; NULL when unreadable */
	size_t n_lines;
};

/*
 * The code object at @code of @pid, read now, for a frame captured elsewhere (the kernel, at a
 * dlopen). @name_check and @file_check, when not 0, are the code's co_qualname (3.11+) or
 * co_name pointer and its co_filename pointer when captured: a code object freed since and its
 * address reused by another fails them, and with them a freed one whose memory nothing reused
 * yet (its reference count 0). Its name and file may have been freed and reused too: the caller
 * compares them with what it captured. Returns 0; -ESTALE for a reused address or a freed code;
 * -EFAULT when not a readable code object.
 */
int py_code__read(const struct py_interp *pi, pid_t pid, uint64_t code, uint64_t name_check,
		  uint64_t file_check, struct py_code_info *out);
void py_code_info__clear(struct py_code_info *c);
/*
 * Can @refcnt, an object's first word, be a live object's reference count? A freed object's
 * memory keeps 0 there until reused, or a free list's pointer (pymalloc); immortal objects
 * (3.12, 3.13) count 2^30 - 1 or 2^32 - 1, far below 2^40. From 3.14 the word is split: a
 * 32-bit count (immortal: 3 << 30), a 16-bit overflow, then 16 bits of flags (statically
 * allocated, deferred): a pointer's high bits land in the overflow.
 */
static inline bool py_refcnt_live(const struct py_layout *l, uint64_t refcnt)
{
	if (l->refcnt_split)
		return (uint32_t)refcnt && !((refcnt >> 32) & 0xffff);
	return refcnt && refcnt < 1ULL << 40;
}

/* The str object at @addr of @pid as UTF-8 (malloc'd); NULL when it is not a readable str. */
char *py_str__read(const struct py_interp *pi, pid_t pid, uint64_t addr);
#endif
