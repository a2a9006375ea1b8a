// SPDX-License-Identifier: GPL-2.0
/* A recorded trace (dlscope record) replayed into the model: play, pause, speed, seek. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source.h"

static uint64_t record_time(const json_t *rec)
{
	const json_t *t = json_object_get(rec, "t");

	if (!t)
		t = json_object_get(rec, "t0");
	return json_is_integer(t) && json_integer_value(t) > 0 ? (uint64_t)json_integer_value(t) :
								 0;
}

static int push_line(struct replay *r, size_t *cap, char *line, uint64_t t)
{
	if (r->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;
		char **nl = realloc(r->lines, ncap * sizeof(*nl));
		uint64_t *nt;

		if (!nl)
			return -ENOMEM;
		r->lines = nl;
		nt = realloc(r->t, ncap * sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		r->t = nt;
		*cap = ncap;
	}
	/* Records without a time (the summary) or out of order keep the time line monotonic. */
	if (r->n && t < r->t[r->n - 1])
		t = r->t[r->n - 1];
	r->lines[r->n] = line;
	r->t[r->n++] = t;
	return 0;
}

int replay__open(const char *path, struct replay **out, char *why, size_t whylen)
{
	struct replay *r = calloc(1, sizeof(*r));
	size_t cap = 0, lineno = 0, len = 0, open_at = 0;
	bool opening = true;
	char *line = NULL;
	ssize_t got;
	FILE *f;
	int err = 0;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	f = fopen(path, "r");
	if (!f) {
		err = -errno;
		snprintf(why, whylen, "cannot read trace %s: %s", path, strerror(errno));
		goto fail;
	}
	while ((got = getline(&line, &len, f)) > 0) {
		json_error_t jerr;
		json_t *rec;
		uint64_t t;

		lineno++;
		if (got == 1 && line[0] == '\n')
			continue;
		rec = json_loads(line, JSON_DISABLE_EOF_CHECK, &jerr);
		if (!json_is_object(rec)) {
			snprintf(why, whylen, "%s:%zu is not a dlscope trace record: %s", path, lineno,
				 rec ? "not a JSON object" : jerr.text);
			json_decref(rec);
			err = -EINVAL;
			goto close;
		}
		if (lineno == 1 && !json_is_string(json_object_get(rec, "format"))) {
			snprintf(why, whylen, "%s is not a dlscope trace: its first line has no "
					      "\"format\" (make one with 'dlscope record')",
				 path);
			json_decref(rec);
			err = -EINVAL;
			goto close;
		}
		t = record_time(rec);
		/* The first record after the header, and the "loaded" ones that follow it. */
		if (opening && r->n >= 1 &&
		    (r->n == 1 || !strcmp(json_string_value(json_object_get(rec, "type")) ?: "",
					  "loaded")))
			open_at = r->n;
		else if (r->n >= 1)
			opening = false;
		json_decref(rec);
		err = push_line(r, &cap, line, t);
		if (err) {
			snprintf(why, whylen, "%s: out of memory", path);
			goto close;
		}
		line = NULL;
		len = 0;
	}
	if (!r->n) {
		snprintf(why, whylen, "%s is empty: not a dlscope trace", path);
		err = -EINVAL;
		goto close;
	}
	r->t_first = r->t[0];
	r->t_last = r->t[r->n - 1];
	r->t_open = r->t[open_at];
	r->now = r->t_first;
	r->speed = 1.0;
	r->paused = true;
close:
	free(line);
	fclose(f);
fail:
	if (err) {
		replay__free(r);
		return err;
	}
	*out = r;
	return 0;
}

void replay__free(struct replay *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->lines[i]);
	free(r->lines);
	free(r->t);
	free(r);
}

static void apply_next(struct replay *r, struct model *m)
{
	json_t *rec = json_loads(r->lines[r->pos], JSON_DISABLE_EOF_CHECK, NULL);

	model__apply(m, rec);
	json_decref(rec);
	r->pos++;
}

void replay__seek(struct replay *r, struct model *m, uint64_t t, double wall_now)
{
	if (t < r->t_open)
		t = r->t_open;
	if (t > r->t_last)
		t = r->t_last;
	if (t < r->now || (r->pos && t < r->t[r->pos - 1])) {
		model__reset(m);
		r->pos = 0;
	}
	while (r->pos < r->n && r->t[r->pos] <= t)
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

	if (r->paused || r->pos >= r->n)
		return 0;
	if (r->speed <= 0)
		target = r->t_last;
	else
		target = r->trace_anchor + (uint64_t)((wall_now - r->wall_anchor) * r->speed * 1e9);
	while (r->pos < r->n && r->t[r->pos] <= target && done < budget) {
		apply_next(r, m);
		done++;
	}
	/* Out of budget: the clock shows what was applied, and playing resumes from there. */
	if (done == budget && r->pos < r->n && r->t[r->pos] <= target) {
		r->now = r->t[r->pos - 1];
		r->trace_anchor = r->now;
		r->wall_anchor = wall_now;
	} else {
		r->now = target > r->t_last ? r->t_last : target;
	}
	if (r->pos >= r->n)
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
	return r->pos >= r->n;
}
