// SPDX-License-Identifier: GPL-2.0
/* A trace's header, checked before any of its records is read. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "tracefile.h"

int tracefile__open(const char *path, FILE **f, json_t **hdr, struct stat *st, char *why,
		    size_t whylen)
{
	int version = 0, ours = TRACE_FORMAT_NUMBER, err = -EINVAL;
	const char *fmt, *type;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	*hdr = NULL;
	*f = fopen(path, "r");
	if (!*f || fstat(fileno(*f), st)) {
		err = -errno;
		snprintf(why, whylen, "cannot read %s: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(why, whylen, "%s is %s, not a trace file (make one with 'dlscope record')",
			 path, S_ISDIR(st->st_mode) ? "a directory" : "not a regular file");
		goto fail;
	}
	len = getline(&line, &cap, *f);
	*hdr = len > 0 ? json_loadb(line, (size_t)len, 0, NULL) : NULL;
	free(line);
	fmt = json_string_value(json_object_get(*hdr, "format"));
	type = json_string_value(json_object_get(*hdr, "type"));
	if (!fmt || !type || strcmp(type, "header")) {
		snprintf(why, whylen,
			 "%s is not a dlscope trace (%s; make one with 'dlscope record')", path,
			 len <= 0 ? "it is empty" : "its first line is no trace header");
		goto fail;
	}
	if (sscanf(fmt, "dlscope-trace/%d", &version) != 1 || version < 1 || version > ours) {
		snprintf(why, whylen,
			 "%s is a trace of format \"%.64s\", which this dlscope does not read (it "
			 "reads dlscope-trace/1 to /%d)",
			 path, fmt, ours);
		goto fail;
	}
	return 0;
fail:
	json_decref(*hdr);
	*hdr = NULL;
	if (*f)
		fclose(*f);
	*f = NULL;
	return err;
}

void trace_end__see(struct trace_end *e, const char *line, size_t len, const json_t *rec)
{
	const char *type = json_string_value(json_object_get(rec, "type"));

	e->records++;
	e->last_cut = !len || line[len - 1] != '\n';
	if (!rec) {
		e->broken++;
		return;
	}
	if (type && !strcmp(type, "summary")) {
		e->summary = true;
		e->lost = (unsigned long long)json_integer_value(json_object_get(rec, "lost"));
	}
}

bool trace_end__cut(const struct trace_end *e, char *why, size_t whylen)
{
	if (e->summary && !e->broken && !e->last_cut)
		return false;
	snprintf(why, whylen,
		 "the trace is cut: %s%s%s after record %llu; what followed is missing",
		 e->summary ? "" : "no summary record",
		 !e->summary && (e->last_cut || e->broken) ? ", " : "",
		 e->last_cut ? "its last line is incomplete" :
		 e->broken   ? "it has lines that are no record" :
			       "",
		 e->records - (e->last_cut ? 1 : 0));
	return true;
}
