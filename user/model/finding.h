/* SPDX-License-Identifier: GPL-2.0 */
/* A detector's finding: what is wrong, the evidence, why it breaks and what to do. */
#ifndef DLSCOPE_FINDING_H
#define DLSCOPE_FINDING_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

enum severity {
	SEV_INFO,
	SEV_WARNING,
	SEV_ERROR,
};

struct finding {
	const char *id; /* the detector's stable id, e.g. "dup-openmp" */
	enum severity sev;
	pid_t pid;	 /* 0 for file-level findings of lint */
	char *title;	 /* one line */
	char **evidence; /* one line each: objects, paths, who loaded them, symbols */
	size_t n_evidence, cap_evidence;
	char *why;    /* why it breaks */
	char *remedy; /* what to do about it */
	json_t *data; /* structured evidence for --json (object), may be NULL */
};

struct findings {
	struct finding *f;
	size_t n, cap;
};

/* Start a finding; returns NULL when out of memory (callers then simply skip it). */
struct finding *findings__add(struct findings *fs, const char *id, enum severity sev, pid_t pid,
			      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void finding__evidence(struct finding *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void finding__explain(struct finding *f, const char *why, const char *remedy);
void findings__free(struct findings *fs);

/* The highest severity present, or -1 when there is none. */
int findings__max_severity(const struct findings *fs);
void findings__print(const struct findings *fs, FILE *f);
/* A finding's lines under its "severity id: title" line: evidence, why, fix, after @indent. */
void finding__print_body(const struct finding *f, const char *indent, FILE *out);
json_t *findings__to_json(const struct findings *fs);
/* One finding as check --json writes it: id, severity, title, evidence, why, remedy, pid, data. */
json_t *finding__to_json(const struct finding *f);
/*
 * A live finding as a trace record (docs/trace-format.md): "type":"finding", its time @t
 * (CLOCK_MONOTONIC ns), process and thread, then finding__to_json's fields. NULL on failure.
 */
json_t *finding__record(const struct finding *f, unsigned long long t, pid_t pid, pid_t tid);

const char *severity__name(enum severity s);
/* "info", "warning", "error" -> severity; -EINVAL otherwise. */
int severity__parse(const char *s);

#endif
