/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Opening a trace of `dlscope record` (docs/trace-format.md) to read it record by record: its
 * header checked once here, with one wording for every command that reads traces this way.
 */
#ifndef DLSCOPE_TRACEFILE_H
#define DLSCOPE_TRACEFILE_H

#include <jansson.h>
#include <stdio.h>
#include <sys/stat.h>

/*
 * Open the trace at @path: @f positioned after its header, @hdr the header (decref it), @st the
 * file's. Refuses a file that cannot be read, is no regular file, has no trace header first or
 * a format newer than this dlscope's: -errno with a one-line reason in @why.
 */
int tracefile__open(const char *path, FILE **f, json_t **hdr, struct stat *st, char *why,
		    size_t whylen);
/*
 * Whether @hdr, the first record of the trace at @path (NULL: none, or no JSON; @empty: the
 * file has no line at all), is a header of a format this dlscope reads: 0, or -EINVAL with the
 * one-line reason every reader of traces gives in @why.
 */
int tracefile__check_header(const json_t *hdr, const char *path, bool empty, char *why,
			    size_t whylen);

/*
 * Whether a trace is whole: `record` ends every trace with a summary record, and every record
 * with a newline. A trace cut by a full disk or a killed recorder lacks the one or the other.
 * Readers feed each line (and its record, NULL when it did not parse) to trace_end__see.
 */
struct trace_end {
	bool summary;		   /* a summary record was read */
	unsigned long long lost;   /* its count of events lost */
	unsigned long long broken; /* lines that are no JSON record */
	bool last_cut;		   /* the last line has no newline */
	unsigned long long records;
};
void trace_end__see(struct trace_end *e, const char *line, size_t len, const json_t *rec);
/* False when whole; else true, with what is missing in @why (one clause, no period). */
bool trace_end__cut(const struct trace_end *e, char *why, size_t whylen);

/* A trace read record by record, after its header: the one loop of every reader. */
struct trace_reader {
	const char *path;
	FILE *f;
	json_t *hdr;	      /* the header */
	struct stat st;	      /* the file's */
	struct trace_end end; /* what the lines so far say of the trace's end */
	char *line;	      /* the last line read, @len long, with its newline */
	size_t cap;
	ssize_t len;
	unsigned long long lineno; /* of the last line read (the header is 1) */
};
/* tracefile__open into @r. 0, or -errno with the reason in @why (nothing to close). */
int trace_reader__open(struct trace_reader *r, const char *path, char *why, size_t whylen);
/*
 * The next line's record into @*rec (yours: decref it), NULL for a line that is no JSON;
 * counted in @r->end either way. False at the end of the file.
 */
bool trace_reader__next(struct trace_reader *r, json_t **rec);
void trace_reader__close(struct trace_reader *r);

#endif
