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

#endif
