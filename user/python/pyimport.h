/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Python stack of a dlopen, as the collector's BPF program captured it (bpf/dlwatch.h's
 * struct dlw_pystack: code objects and instruction offsets), named: each frame's function, file
 * and line, the module being imported and the user's line that started the import.
 */
#ifndef DLSCOPE_PYIMPORT_H
#define DLSCOPE_PYIMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dlwatch.h"
#include "pystate.h"

struct py_import_frame {
	char *function; /* co_qualname (3.11+) or co_name; "?" when the code is gone */
	char *file;
	int line; /* -1 when unknown */
};

struct py_import {
	struct py_import_frame *f; /* innermost first */
	size_t n, cap;
	size_t gap_at; /* frames left out (@gap) just before f[gap_at]: a chain too long */
	size_t gap;
	bool more;    /* the chain goes on past what was walked */
	char *module; /* the outermost import's module ("sklearn"), or NULL */
	long site;    /* the frame that started it (the user's line), or -1 */
	char *error;  /* why there are no frames, or why some could not be named */
};

/*
 * The code objects a process's frames named so far, by address, file and name pointers as the
 * kernel captured them: a frame seen again (importlib's, the script's) is named without reading
 * the process, also when it has exited since. Bounded: full, it starts over.
 */
struct py_code_cache;
struct py_code_cache *py_code_cache__new(void);
void py_code_cache__free(struct py_code_cache *c);

/* The BPF program's view of interpreter @pi (the offsets of its version). */
void py_import__cfg(const struct py_interp *pi, struct dlw_pycfg *cfg);

/*
 * Name the frames of @raw, captured in process @pid: from @cache (may be NULL), else reading its
 * memory now. Returns 0 (what could not be named is said in @out->error), or -ENOMEM.
 * py_import__clear() it after.
 */
int py_import__resolve(const struct py_interp *pi, pid_t pid, const struct dlw_pystack *raw,
		       struct py_code_cache *cache, struct py_import *out);

/*
 * The fingerprint (dlwatch.h: dlw_str_start, dlw_str_mix) of the str at @addr of @pid, read now,
 * as the kernel takes it with each frame; 0 when it is no compact str or cannot be read.
 */
uint64_t py_import__str_digest(const struct py_interp *pi, pid_t pid, uint64_t addr);

/* "import sklearn at train.py:3", "CDLL.__init__ at train.py:4"; "" when there are no frames. */
void py_import__describe(const struct py_import *imp, char *buf, size_t len);
/* "function (file:line)" of one frame ("file:?" without a line). */
void py_import__frame_text(const struct py_import_frame *f, char *buf, size_t len);
/* Is @f one of importlib's own frames ("<frozen importlib._bootstrap>")? */
bool py_import__is_importlib(const struct py_import_frame *f);
/*
 * Every frame as a line, innermost first, with a line for frames left out and the error
 * (malloc'd); with @skip_importlib, importlib's frames are left out (the import chain).
 * NULL without frames or memory.
 */
char *py_import__lines(const struct py_import *imp, bool skip_importlib, const char *indent);
/* Append a frame (the strings are copied); -ENOMEM. */
int py_import__push(struct py_import *imp, const char *function, const char *file, int line);
void py_import__clear(struct py_import *imp);

#endif
