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
	int err = -EINVAL;
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
	if (tracefile__check_header(*hdr, path, len <= 0, why, whylen))
		goto fail;
	return 0;
fail:
	json_decref(*hdr);
	*hdr = NULL;
	if (*f)
		fclose(*f);
	*f = NULL;
	return err;
}

int tracefile__check_header(const json_t *hdr, const char *path, bool empty, char *why,
			    size_t whylen)
{
	const char *fmt = json_string_value(json_object_get(hdr, "format"));
	const char *type = json_string_value(json_object_get(hdr, "type"));
	int version = 0, ours = TRACE_FORMAT_NUMBER;

	if (!fmt || !type || strcmp(type, "header")) {
		snprintf(why, whylen,
			 "%s is not a dlscope trace (%s; make one with 'dlscope record')", path,
			 empty ? "it is empty" : "its first line is no trace header");
		return -EINVAL;
	}
	if (sscanf(fmt, "dlscope-trace/%d", &version) != 1 || version < 1 || version > ours) {
		snprintf(why, whylen,
			 "%s is a trace of format \"%.64s\", which this dlscope does not read (it "
			 "reads dlscope-trace/1 to /%d)",
			 path, fmt, ours);
		return -EINVAL;
	}
	return 0;
}

int trace_reader__open(struct trace_reader *r, const char *path, char *why, size_t whylen)
{
	*r = (struct trace_reader){ .path = path, .end = { .records = 1 }, .lineno = 1 };
	return tracefile__open(path, &r->f, &r->hdr, &r->st, why, whylen);
}

bool trace_reader__next(struct trace_reader *r, json_t **rec)
{
	r->len = getline(&r->line, &r->cap, r->f);
	if (r->len <= 0)
		return false;
	r->lineno++;
	*rec = json_loadb(r->line, (size_t)r->len, 0, NULL);
	trace_end__see(&r->end, r->line, (size_t)r->len, *rec);
	return true;
}

void trace_reader__close(struct trace_reader *r)
{
	if (r->f)
		fclose(r->f);
	free(r->line);
	json_decref(r->hdr);
	*r = (struct trace_reader){ 0 };
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
