// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "finding.h"
#include "output.h"

static const char
	*sev_names[] = { [SEV_INFO] = "info", [SEV_WARNING] = "warning", [SEV_ERROR] = "error" };

const char *severity__name(enum severity s)
{
	return sev_names[s];
}

int severity__parse(const char *s)
{
	for (int i = SEV_INFO; i <= SEV_ERROR; i++)
		if (!strcmp(s, sev_names[i]))
			return i;
	return -EINVAL;
}

struct finding *findings__add(struct findings *fs, const char *id, enum severity sev, pid_t pid,
			      const char *fmt, ...)
{
	struct finding *f;
	va_list ap;

	if (fs->n == fs->cap) {
		if (ARRAY_GROW(fs->f, fs->cap, 16))
			return NULL;
	}
	f = &fs->f[fs->n];
	memset(f, 0, sizeof(*f));
	va_start(ap, fmt);
	if (vasprintf(&f->title, fmt, ap) < 0)
		f->title = NULL;
	va_end(ap);
	if (!f->title)
		return NULL;
	f->id = id;
	f->sev = sev;
	f->pid = pid;
	fs->n++;
	return f;
}

void finding__evidence(struct finding *f, const char *fmt, ...)
{
	char *line;
	va_list ap;
	int n;

	if (!f)
		return;
	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (ARRAY_PUSH(f->evidence, f->n_evidence, f->cap_evidence, line))
		free(line);
}

void finding__explain(struct finding *f, const char *why, const char *remedy)
{
	if (!f)
		return;
	free(f->why);
	free(f->remedy);
	f->why = why ? strdup(why) : NULL;
	f->remedy = remedy ? strdup(remedy) : NULL;
}

void findings__free(struct findings *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		struct finding *f = &fs->f[i];

		for (size_t j = 0; j < f->n_evidence; j++)
			free(f->evidence[j]);
		free(f->evidence);
		free(f->title);
		free(f->why);
		free(f->remedy);
		json_decref(f->data);
	}
	free(fs->f);
	memset(fs, 0, sizeof(*fs));
}

int findings__max_severity(const struct findings *fs)
{
	int max = -1;

	for (size_t i = 0; i < fs->n; i++)
		if ((int)fs->f[i].sev > max)
			max = (int)fs->f[i].sev;
	return max;
}

/*
 * Wrap @text under its label at the terminal's width (output__columns), for the why/fix
 * paragraphs; piped, each paragraph is one line.
 */
static void print_wrapped(FILE *out, const char *indent, const char *label, const char *text)
{
	int start = fprintf(out, "%s  %s: ", indent, label), col = start;
	int width = output__columns(out);
	const char *p = text;

	/* A terminal too narrow for the label still gets a few words a line. */
	if (width && width < start + 20)
		width = start + 20;
	while (*p) {
		size_t word = strcspn(p, " ");

		if (width && col > start && col + 1 + (int)word > width) {
			fprintf(out, "\n%*s", start, "");
			col = start;
		} else if (col > start) {
			col += fprintf(out, " ");
		}
		col += fprintf(out, "%.*s", (int)word, p);
		p += word;
		p += strspn(p, " ");
	}
	fputc('\n', out);
}

void finding__print_body(const struct finding *f, const char *indent, FILE *out)
{
	for (size_t j = 0; j < f->n_evidence; j++)
		fprintf(out, "%s  - %s\n", indent, f->evidence[j]);
	if (f->why)
		print_wrapped(out, indent, "why", f->why);
	if (f->remedy)
		print_wrapped(out, indent, "fix", f->remedy);
}

void findings__print(const struct findings *fs, FILE *out)
{
	for (size_t i = 0; i < fs->n; i++) {
		const struct finding *f = &fs->f[i];

		if (i)
			fputc('\n', out);
		fprintf(out, "%s %s: %s\n", severity__name(f->sev), f->id, f->title);
		finding__print_body(f, "", out);
	}
}

json_t *finding__to_json(const struct finding *f)
{
	json_t *ev = json_array(), *obj;

	for (size_t j = 0; j < f->n_evidence; j++)
		json_array_append_new(ev, json_string(f->evidence[j]));
	obj = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "id", f->id, "severity",
			severity__name(f->sev), "title", f->title, "evidence", ev, "why",
			f->why ? json_string(f->why) : json_null(), "remedy",
			f->remedy ? json_string(f->remedy) : json_null());
	if (obj && f->pid)
		json_object_set_new(obj, "pid", json_integer(f->pid));
	if (obj && f->data)
		json_object_set(obj, "data", f->data);
	return obj;
}

json_t *findings__to_json(const struct findings *fs)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < fs->n; i++)
		json_array_append_new(arr, finding__to_json(&fs->f[i]));
	return arr;
}

json_t *finding__record(const struct finding *f, unsigned long long t, pid_t pid, pid_t tid)
{
	json_t *body = finding__to_json(f), *j;

	j = json_pack("{s:s, s:I, s:i, s:i}", "type", "finding", "t", (json_int_t)t, "pid", pid,
		      "tid", tid);
	if (j && (!body || json_object_update(j, body))) {
		json_decref(j);
		j = NULL;
	}
	json_decref(body);
	return j;
}
