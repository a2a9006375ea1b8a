/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A process's environment as it is now: the C library's `environ` array read from its memory,
 * which putenv, setenv and Python's os.environ change (threadpoolctl and scikit-learn set
 * KMP_DUPLICATE_LIB_OK at import), where /proc/PID/environ keeps only the one it started with.
 */
#ifndef DLSCOPE_ENVIRON_H
#define DLSCOPE_ENVIRON_H

#include <stddef.h>

struct target;
struct libgraph;

enum env_source {
	ENV_UNSET,   /* not in environ now */
	ENV_UNKNOWN, /* environ could not be read, and the process did not start with it */
	ENV_LIVE,    /* read from environ, and the process started with it so */
	ENV_CHANGED, /* read from environ: set, or changed, since the process started */
	ENV_INITIAL, /* environ could not be read: the value it started with */
};

/* The value of @name in process @t (model @g) into @buf, and where it was read. */
enum env_source environ__get(const struct target *t, const struct libgraph *g, const char *name,
			     char *buf, size_t len);

#endif
