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

#endif
