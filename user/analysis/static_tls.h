/* SPDX-License-Identifier: GPL-2.0 */
/*
 * glibc's static TLS block: every thread gets one of one size, fixed at start-up, which holds
 * the TLS of the objects loaded then and a surplus for objects with initial-exec TLS that a
 * dlopen brings later (1,664 bytes by default; the tunables glibc.rtld.nns and
 * glibc.rtld.optional_static_tls). A dlopen that finds no room fails with "cannot allocate
 * memory in static TLS block", depending on what was loaded before it.
 */
#ifndef DLSCOPE_STATIC_TLS_H
#define DLSCOPE_STATIC_TLS_H

#include <stdint.h>

struct target;
struct libgraph;

struct static_tls {
	uint64_t size; /* the block, the thread descriptor included (GLRO(dl_tls_static_size)) */
	uint64_t tcb;  /* the thread descriptor at its end (sizeof(struct pthread)) */
	uint64_t used; /* taken so far: the largest offset an object's TLS got from the thread
			* pointer (GL(dl_tls_static_used)) */
	uint64_t left; /* what a later initial-exec TLS object may still take */
	unsigned int objects; /* objects whose TLS is in it */
};

/*
 * Read @t's block from the fields glibc publishes to libthread_db and the loader's
 * _dl_get_tls_static_info. 0, or -ENOTSUP (not glibc, or a glibc that does not say), or
 * -EFAULT when the process could not be read.
 */
int static_tls__read(const struct target *t, const struct libgraph *g, struct static_tls *out);

#endif
