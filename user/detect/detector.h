/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The detectors of dlscope check and lint. Each lives in its own det_*.c file and is one row of
 * the table in detectors.c: adding a detector is adding a file and a row.
 */
#ifndef DLSCOPE_DETECTOR_H
#define DLSCOPE_DETECTOR_H

#include <stddef.h>

#include "finding.h"

struct target;
struct libgraph;
struct threadscan;
struct elf_object;
struct runtime_list;
struct lockwait_report;

/* What a process-level detector may look at. Nothing here stops the process. */
struct check_ctx {
	const struct target *t;
	const struct libgraph *g;
	const struct threadscan *ts; /* NULL when the threads could not be read */
	const struct runtime_list *rt; /* the runtime inventory; NULL: detectors make their own */
	/* The lock-wait graph the caller built (one inspection); NULL: the detector builds it. */
	const struct lockwait_report *lw;
};

/* One file of lint, or one loaded object of check. */
struct lint_file {
	const char *path;	/* as shown to the user */
	struct elf_object *elf;
};

struct detector {
	const char *id;
	const char *summary;
	/* On a live process; NULL when the detector only looks at files. */
	void (*process)(const struct check_ctx *ctx, struct findings *out);
	/* On a set of files with no process (lint); NULL when it needs a process. */
	void (*files)(const struct lint_file *files, size_t n, struct findings *out);
};

extern const struct detector detectors[];
extern const size_t n_detectors;

/* Detector entry points, one pair per det_*.c. */
void dup_openmp__process(const struct check_ctx *ctx, struct findings *out);
void dup_blas__process(const struct check_ctx *ctx, struct findings *out);
void dup_cxx__process(const struct check_ctx *ctx, struct findings *out);
void dup_cxx__files(const struct lint_file *files, size_t n, struct findings *out);
void dup_library__process(const struct check_ctx *ctx, struct findings *out);
void dup_library__files(const struct lint_file *files, size_t n, struct findings *out);
void abi_mismatch__process(const struct check_ctx *ctx, struct findings *out);
void abi_mismatch__files(const struct lint_file *files, size_t n, struct findings *out);
void loader_lock__process(const struct check_ctx *ctx, struct findings *out);
void deadlock__process(const struct check_ctx *ctx, struct findings *out);
void elf_defects__process(const struct check_ctx *ctx, struct findings *out);
void elf_defects__files(const struct lint_file *files, size_t n, struct findings *out);

/* Shared by detectors: "libgomp.so.1 (needed by two_omp)" / "(dlopen)" for evidence lines. */
void lg_object__describe_origin(const struct libgraph *g, unsigned int id, char *buf,
				size_t len);

#endif
