// SPDX-License-Identifier: GPL-2.0
/* A recorded trace (dlscope record) replayed into the model: play, pause, speed, seek. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "event.h"
#include "source.h"
#include "tracefile.h"

static uint64_t record_time(const json_t *rec)
{
	const json_t *t = json_object_get(rec, "t");

	if (!t)
		t = json_object_get(rec, "t0");
	return json_is_integer(t) && json_integer_value(t) > 0 ? (uint64_t)json_integer_value(t) :
								 0;
}

/*
 * Read the next line into @buf (at most REPLAY_MAX_LINE bytes, newline dropped). Returns its
 * length, -1 at the end of the file, or -2 for a line that was too long (read past, not kept)
 * or that the file ends without a newline (a record cut short when the recorder was killed).
 */
static ssize_t read_line(FILE *f, char *buf)
{
	size_t n = 0;
	int c;

	while ((c = getc(f)) != EOF && c != '\n') {
		if (n < REPLAY_MAX_LINE)
			buf[n] = (char)c;
		n++;
	}
	if (c == EOF && !n)
		return -1;
	if (n >= REPLAY_MAX_LINE || c == EOF)
		return -2;
	buf[n] = '\0';
	return (ssize_t)n;
}

/* The next good record after the file position: its text in @buf and its object, or NULL. */
static json_t *next_record(struct replay *r, char *buf, size_t *lineno, bool strict, char *why,
			   size_t whylen, const char *path)
{
	for (;;) {
		ssize_t got = read_line(r->f, buf);
		json_t *rec;

		if (got == -1)
			return NULL;
		++*lineno;
		if (got == 0)
			continue;
		rec = got > 0 ? json_loads(buf, JSON_DISABLE_EOF_CHECK, NULL) : NULL;
		if (json_is_object(rec))
			return rec;
		json_decref(rec);
		if (strict && why) {
			snprintf(why, whylen, "%s:%zu is not a dlscope trace record (%s)", path,
				 *lineno,
				 got == -2 ? "too long, or cut short at the end of the file" :
					     "not a JSON object");
			return NULL;
		}
		if (!r->skipped++)
			r->first_skipped = *lineno;
	}
}

static bool is_loaded(const json_t *rec)
{
	const char *type = json_string_value(json_object_get(rec, "type"));

	return type && !strcmp(type, "loaded");
}

/* @path opened as r->f; only a regular file, since seeking back reads it again. */
static int open_trace_file(struct replay *r, const char *path, char *why, size_t whylen)
{
	struct stat st;

	r->f = fopen(path, "r");
	if (!r->f || fstat(fileno(r->f), &st)) {
		int err = -errno;

		snprintf(why, whylen, "cannot read trace %s: %s", path, strerror(errno));
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen,
			 "%s is %s, not a trace file (make one with 'dlscope record -o')", path,
			 S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
		return -EINVAL;
	}
	return 0;
}

/* The header: a format this dlscope reads. Its time is the replay's first and open time. */
static int read_header(struct replay *r, char *buf, size_t *lineno, const char *path, char *why,
		       size_t whylen)
{
	char bad[256];
	json_t *rec = next_record(r, buf, lineno, true, bad, sizeof(bad), path);

	/* What every reader of traces says of a file that is none, or of a newer format. */
	if (tracefile__check_header(rec, path, !*lineno, why, whylen)) {
		json_decref(rec);
		return -EINVAL;
	}
	r->t_first = r->t_open = record_time(rec);
	json_decref(rec);
	r->n = 1;
	return 0;
}

/* Count and time every record after the header once, keeping none of them: the last time. */
static uint64_t scan_records(struct replay *r, char *buf, size_t *lineno, bool strict,
			     const char *path, char *why, size_t whylen)
{
	uint64_t t = r->t_first;
	bool opening = true;
	json_t *rec;

	while ((rec = next_record(r, buf, lineno, strict, why, whylen, path))) {
		uint64_t rt = record_time(rec);

		/* Records without a time (the summary) or out of order keep the clock monotonic. */
		t = rt > t ? rt : t;
		/* The first record after the header, and the "loaded" ones that follow it. */
		if (opening && (r->n == 1 || is_loaded(rec)))
			r->t_open = t;
		else
			opening = false;
		r->n++;
		json_decref(rec);
	}
	return t;
}

int replay__open(const char *path, bool strict, struct replay **out, char *why, size_t whylen)
{
	struct replay *r = calloc(1, sizeof(*r));
	char *buf = malloc(REPLAY_MAX_LINE + 1);
	size_t lineno = 0;
	uint64_t t;
	int err = 0;

	*out = NULL;
	why[0] = '\0';
	if (r)
		r->buf = buf;
	if (!r || !buf) {
		err = -ENOMEM;
		snprintf(why, whylen, "%s: out of memory", path);
		goto fail;
	}
	err = open_trace_file(r, path, why, whylen) ?:
						      read_header(r, buf, &lineno, path, why, whylen);
	if (err)
		goto fail;
	t = scan_records(r, buf, &lineno, strict, path, why, whylen);
	if (strict && why[0]) {
		err = -EINVAL;
		goto fail;
	}
	r->t_last = t;
	r->now = r->t_first;
	r->speed = 1.0;
	r->paused = true;
	replay__rewind(r);
	*out = r;
	return 0;
fail:
	if (!r)
		free(buf);
	replay__free(r);
	return err;
}

void replay__free(struct replay *r)
{
	if (!r)
		return;
	if (r->f)
		fclose(r->f);
	free(r->buf);
	free(r->next);
	json_decref(r->hosts);
	free(r);
}

/* Read the record at pos ahead (pos 0 is the header, which is applied like any other). */
static void read_ahead(struct replay *r)
{
	size_t lineno = 0, skipped = r->skipped, first = r->first_skipped;
	json_t *rec;

	/* Bad lines were counted when the trace was opened; reading again counts nothing. */
	rec = next_record(r, r->buf, &lineno, false, NULL, 0, NULL);
	r->skipped = skipped;
	r->first_skipped = first;
	free(r->next);
	r->next = NULL;
	if (rec) {
		uint64_t t = record_time(rec);

		r->next_t = t > r->next_t ? t : r->next_t;
		r->next = strdup(r->buf);
		json_decref(rec);
	}
}

void replay__rewind(struct replay *r)
{
	r->pos = 0;
	r->next_t = 0;
	fseek(r->f, 0, SEEK_SET);
	read_ahead(r);
}

/*
 * A merged trace (dlscope merge) holds several hosts, whose PIDs collide: the Nth host's (N from
 * 0, in the header's "hosts") are shown as N * 2^22 + PID (PIDs stay below 2^22), so that two
 * hosts' PID 1234 are two processes.
 */
static void host_pids(struct replay *r, json_t *rec)
{
	static const char *const keys[] = { "pid", "tid", "child" };
	const char *host = json_string_value(json_object_get(rec, "host"));
	size_t n = 0;

	if (json_is_array(json_object_get(rec, "hosts"))) {
		json_decref(r->hosts);
		r->hosts = json_incref(json_object_get(rec, "hosts"));
	}
	if (!host)
		return;
	while (n < json_array_size(r->hosts) &&
	       strcmp(json_string_value(json_array_get(r->hosts, n)) ?: "", host))
		n++;
	for (size_t k = 0; n && k < sizeof(keys) / sizeof(keys[0]); k++) {
		const json_t *v = json_object_get(rec, keys[k]);

		if (json_is_integer(v) && json_integer_value(v) > 0)
			json_object_set_new(
				rec, keys[k],
				json_integer(json_integer_value(v) + (json_int_t)n * (1 << 22)));
	}
}

static void apply_next(struct replay *r, struct model *m)
{
	json_t *rec = r->next ? json_loads(r->next, JSON_DISABLE_EOF_CHECK, NULL) : NULL;

	host_pids(r, rec);
	model__apply(m, rec);
	json_decref(rec);
	r->applied_t = r->next_t;
	r->pos++;
	read_ahead(r);
}

void replay__seek(struct replay *r, struct model *m, uint64_t t, double wall_now)
{
	if (t < r->t_open)
		t = r->t_open;
	if (t > r->t_last)
		t = r->t_last;
	if (t < r->now || (r->pos && t < r->applied_t)) {
		model__reset(m);
		replay__rewind(r);
	}
	while (r->next && r->next_t <= t)
		apply_next(r, m);
	r->now = t;
	r->trace_anchor = t;
	r->wall_anchor = wall_now;
	m->generation++;
}

size_t replay__tick(struct replay *r, struct model *m, double wall_now, size_t budget)
{
	uint64_t target;
	size_t done = 0;

	if (r->paused || !r->next)
		return 0;
	if (r->speed <= 0)
		target = r->t_last;
	else
		target = r->trace_anchor + (uint64_t)((wall_now - r->wall_anchor) * r->speed * 1e9);
	while (r->next && r->next_t <= target && done < budget) {
		apply_next(r, m);
		done++;
	}
	/* Out of budget: the clock shows what was applied, and playing resumes from there. */
	if (done == budget && r->next && r->next_t <= target) {
		r->now = r->applied_t;
		r->trace_anchor = r->now;
		r->wall_anchor = wall_now;
	} else {
		r->now = target > r->t_last ? r->t_last : target;
	}
	if (!r->next)
		r->paused = true;
	return done;
}

void replay__pause(struct replay *r, bool paused, double wall_now)
{
	r->paused = paused;
	r->trace_anchor = r->now;
	r->wall_anchor = wall_now;
}

void replay__set_speed(struct replay *r, double speed, double wall_now)
{
	r->speed = speed;
	r->trace_anchor = r->now;
	r->wall_anchor = wall_now;
}

bool replay__at_end(const struct replay *r)
{
	return !r->next;
}
