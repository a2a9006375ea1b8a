// SPDX-License-Identifier: GPL-2.0
/*
 * Several nodes' traces as one: a k-way merge over the inputs (a heap of each input's next
 * record, by its time on the common clock), each record read, relabelled and written before
 * the next is read, so memory is one record per input.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "event.h"
#include "outfile.h"
#include "tracefile.h"
#include "tracemerge.h"
#include "version.h"

struct input {
	const char *path;
	struct trace_reader r; /* the trace, its header (r.hdr) and file (r.st) */
	json_t *label;	       /* the "host" every record gets (a string) */
	int64_t off;	       /* realtime_minus_monotonic_ns */
	uint64_t lines;	       /* lines after the header */
	uint64_t written;      /* records of it written */
	uint64_t bad, first_bad;
	json_t *head;	 /* its next record, NULL at its end */
	uint64_t head_t; /* its time on the merged clock */
	uint64_t last_t; /* a record without a time keeps its place: the time before it */
	json_t *summary;
};

uint64_t merge__realtime(uint64_t t, int64_t off)
{
	if (off < 0 && (uint64_t)-off > t)
		return 0;
	return off < 0 ? t - (uint64_t)-off : t + (uint64_t)off;
}

int merge__labels(const struct merge_host *h, size_t n, char **labels, size_t dup[2])
{
	for (size_t i = 0; i < n; i++)
		labels[i] = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *bi = h[i].boot_id ? h[i].boot_id : "";
		bool several_boots = false;

		for (size_t j = 0; j < n; j++) {
			const char *bj = h[j].boot_id ? h[j].boot_id : "";

			if (j == i || strcmp(h[i].host, h[j].host))
				continue;
			/* One boot's PIDs are one namespace: two runs of it would collide. An unknown
			 * boot cannot be told apart from any other of the host. */
			if (!bi[0] || !bj[0] || !strcmp(bi, bj)) {
				dup[0] = i < j ? i : j;
				dup[1] = i < j ? j : i;
				goto fail_dup;
			}
			several_boots = true;
		}
		if (several_boots ? asprintf(&labels[i], "%s/%.8s", h[i].host, bi) < 0 :
				    !(labels[i] = strdup(h[i].host))) {
			labels[i] = NULL;
			goto fail_nomem;
		}
	}
	return 0;
fail_dup:
	for (size_t i = 0; i < n; i++) {
		free(labels[i]);
		labels[i] = NULL;
	}
	return -EEXIST;
fail_nomem:
	for (size_t i = 0; i < n; i++) {
		free(labels[i]);
		labels[i] = NULL;
	}
	return -ENOMEM;
}

/* The lines after the header, read in large blocks (no parsing); the file is left where it was. */
static int count_lines(FILE *f, uint64_t *lines)
{
	static char buf[1 << 16];
	uint64_t n = 0;
	size_t got;
	char last = '\n';
	off_t at = ftello(f);

	while ((got = fread(buf, 1, sizeof(buf), f)) > 0) {
		for (char *p = buf; (p = memchr(p, '\n', (size_t)(buf + got - p))); p++)
			n++;
		last = buf[got - 1];
	}
	if (ferror(f))
		return -EIO;
	if (last != '\n')
		n++; /* a last line without its newline (a trace cut short) */
	*lines = n;
	return fseeko(f, at, SEEK_SET) ? -EIO : 0;
}

static const char *str_of(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Open an input and read its header: 0, or -errno with the reason in @why. */
static int open_input(struct input *in, char *why, size_t whylen)
{
	int err = trace_reader__open(&in->r, in->path, why, whylen);

	if (err)
		return err;
	if (json_object_get(in->r.hdr, "inputs")) {
		snprintf(why, whylen,
			 "%s is already a merged trace: merge the nodes' own traces in one run",
			 in->path);
		return -EINVAL;
	}
	if (!json_is_integer(json_object_get(in->r.hdr, "realtime_minus_monotonic_ns"))) {
		snprintf(why, whylen,
			 "%s has no realtime_minus_monotonic_ns in its header: its times cannot be "
			 "put on the other nodes' clock",
			 in->path);
		return -EINVAL;
	}
	in->off = (int64_t)json_integer_value(
		json_object_get(in->r.hdr, "realtime_minus_monotonic_ns"));
	if (count_lines(in->r.f, &in->lines)) {
		snprintf(why, whylen, "cannot read %s: %s", in->path, strerror(EIO));
		return -EIO;
	}
	return 0;
}

/* The input's next record on the merged clock, labelled; NULL at its end. */
static json_t *next_record(struct input *in)
{
	json_t *rec;

	while (trace_reader__next(&in->r, &rec)) {
		const char *type = str_of(rec, "type");
		const json_t *t = json_object_get(rec, "t");

		if (!json_is_object(rec) || !type || !strcmp(type, "header")) {
			if (!in->bad++)
				in->first_bad = in->r.lineno;
			json_decref(rec);
			continue;
		}
		/* The summaries become one, at the end. */
		if (!strcmp(type, "summary")) {
			json_decref(in->summary);
			in->summary = rec;
			continue;
		}
		if (json_is_integer(t) && json_integer_value(t) >= 0) {
			in->last_t = merge__realtime((uint64_t)json_integer_value(t), in->off);
			json_object_set_new(rec, "t", json_integer((json_int_t)in->last_t));
		}
		in->head_t = in->last_t;
		json_object_set(rec, "host", in->label);
		return rec;
	}
	return NULL;
}

/* A min-heap of input indices by (head_t, index): equal times keep the inputs' order. */
struct heap {
	size_t *a, n;
	struct input *in;
};

static bool before(const struct heap *h, size_t x, size_t y)
{
	const struct input *a = &h->in[x], *b = &h->in[y];

	return a->head_t != b->head_t ? a->head_t < b->head_t : x < y;
}

static void sift_down(struct heap *h, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i, tmp;

		if (l < h->n && before(h, h->a[l], h->a[m]))
			m = l;
		if (r < h->n && before(h, h->a[r], h->a[m]))
			m = r;
		if (m == i)
			return;
		tmp = h->a[i];
		h->a[i] = h->a[m];
		h->a[m] = tmp;
		i = m;
	}
}

static json_int_t int_of(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* The merged header: the common clock, and each input with its host, offset and size. */
static json_t *merged_header(struct input *ins, size_t n)
{
	json_t *inputs = json_array(), *hosts = json_array();
	uint64_t t0 = UINT64_MAX;
	bool follow = false, hot = false;

	for (size_t i = 0; i < n; i++) {
		const json_t *h = ins[i].r.hdr;
		uint64_t t = merge__realtime((uint64_t)int_of(h, "t0"), ins[i].off);

		t0 = t < t0 ? t : t0;
		follow |= json_is_true(json_object_get(h, "follow"));
		hot |= json_is_true(json_object_get(h, "hot"));
		json_array_append(hosts, ins[i].label);
		json_array_append_new(
			inputs,
			json_pack(
				"{s:O, s:s?, s:s?, s:s?, s:s?, s:s?, s:s, s:s, s:I, s:I, s:I, s:O}",
				"host", ins[i].label, "hostname", str_of(h, "host"), "boot_id",
				str_of(h, "boot_id"), "kernel", str_of(h, "kernel"), "glibc",
				str_of(h, "glibc"), "dlscope", str_of(h, "dlscope"), "format",
				str_of(h, "format"), "path", ins[i].path, "t0", int_of(h, "t0"),
				"realtime_minus_monotonic_ns", (json_int_t)ins[i].off, "records",
				(json_int_t)ins[i].lines, "targets",
				json_object_get(h, "targets") ?: json_null()));
	}
	return json_pack("{s:s, s:s, s:s, s:b, s:s, s:I, s:I, s:o, s:o, s:b, s:b}", "type",
			 "header", "format", TRACE_FORMAT, "dlscope", DLSCOPE_VERSION, "merged",
			 true, "clock", "CLOCK_REALTIME", "t0", (json_int_t)(n ? t0 : 0),
			 "realtime_minus_monotonic_ns", (json_int_t)0, "hosts", hosts, "inputs",
			 inputs, "follow", follow, "hot", hot);
}

static void add_int(json_t *to, const char *key, const json_t *from)
{
	json_object_set_new(to, key, json_integer(int_of(to, key) + int_of(from, key)));
}

/* One summary: the inputs' counts summed, their activity labelled, each input's own. */
static json_t *merged_summary(struct input *ins, size_t n)
{
	static const char *const counts[] = { "events", "lost", "findings", "activity_uncounted" };
	static const char *const causes[] = { "ring_full", "calls_full", "skipped_by_kernel",
					      "unread_at_stop" };
	json_t *s = json_pack("{s:s, s:I, s:I, s:{s:I, s:I, s:I, s:I}, s:I, s:[], s:I, s:[]}",
			      "type", "summary", "events", (json_int_t)0, "lost", (json_int_t)0,
			      "lost_by", "ring_full", (json_int_t)0, "calls_full", (json_int_t)0,
			      "skipped_by_kernel", (json_int_t)0, "unread_at_stop", (json_int_t)0,
			      "findings", (json_int_t)0, "activity", "activity_uncounted",
			      (json_int_t)0, "inputs");

	for (size_t i = 0; s && i < n; i++) {
		const json_t *in = ins[i].summary, *a;
		size_t k;

		json_array_append_new(json_object_get(s, "inputs"),
				      json_pack("{s:O, s:b, s:I, s:I}", "host", ins[i].label,
						"summary", in != NULL, "records",
						(json_int_t)ins[i].written, "bad_lines",
						(json_int_t)ins[i].bad));
		if (!in)
			continue; /* a trace cut short: its counts are unknown */
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
			add_int(s, counts[c], in);
		for (size_t c = 0; c < sizeof(causes) / sizeof(causes[0]); c++)
			add_int(json_object_get(s, "lost_by"), causes[c],
				json_object_get(in, "lost_by"));
		json_array_foreach (json_object_get(in, "activity"), k, a) {
			json_t *c = json_deep_copy(a);

			json_object_set(c, "host", ins[i].label);
			json_array_append_new(json_object_get(s, "activity"), c);
		}
	}
	return s;
}

/* The output, and a buffer each record is dumped into (json_dumpf's many small writes cost
 * more than encoding the record). */
struct writer {
	FILE *f;
	char *buf;
	size_t cap;
};

static int write_rec(struct writer *w, json_t *rec)
{
	size_t n = rec ? json_dumpb(rec, w->buf, w->cap, JSON_COMPACT) : 0;
	int err = 0;

	if (n + 1 > w->cap) {
		if (ARRAY_RESERVE(w->buf, w->cap, n + 1)) {
			json_decref(rec);
			return -ENOMEM;
		}
		n = json_dumpb(rec, w->buf, w->cap, JSON_COMPACT);
	}
	json_decref(rec);
	if (!n)
		return -ENOMEM;
	w->buf[n++] = '\n';
	if (fwrite(w->buf, 1, n, w->f) != n)
		err = -EIO;
	return err;
}

/* Enough descriptors for one per input: the soft limit up to the hard one. */
static void raise_fd_limit(size_t n)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < n + 16 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int merge_inputs(struct input *ins, size_t n, FILE *out, struct merge_stats *st)
{
	struct heap h = { .a = calloc(n ? n : 1, sizeof(size_t)), .in = ins };
	struct writer w = { .f = out, .cap = 1 << 16 };
	int err = 0;

	w.buf = malloc(w.cap);
	if (!h.a || !w.buf) {
		free(h.a);
		free(w.buf);
		return -ENOMEM;
	}
	err = write_rec(&w, merged_header(ins, n));
	for (size_t i = 0; i < n; i++)
		if ((ins[i].head = next_record(&ins[i])))
			h.a[h.n++] = i;
	for (size_t i = h.n / 2; i-- > 0;)
		sift_down(&h, i);
	st->records++;
	while (!err && h.n) {
		struct input *in = &ins[h.a[0]];

		err = write_rec(&w, in->head);
		in->written++;
		st->records++;
		in->head = next_record(in);
		if (!in->head)
			h.a[0] = h.a[--h.n];
		sift_down(&h, 0);
	}
	if (!err) {
		err = write_rec(&w, merged_summary(ins, n));
		st->records++;
	}
	for (size_t i = 0; i < n; i++)
		st->bad += ins[i].bad;
	free(h.a);
	free(w.buf);
	return err;
}

/* Writing over an input would read what is being written: refused. */
static int refuse_overwriting_input(const struct input *ins, size_t n, const char *const *paths,
				    const char *out_path, char *why, size_t whylen)
{
	struct stat ost;

	if (stat(out_path, &ost))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (ost.st_dev == ins[i].r.st.st_dev && ost.st_ino == ins[i].r.st.st_ino) {
			snprintf(why, whylen,
				 "-o %s is the input %s: the merge would overwrite it; write "
				 "to another file",
				 out_path, paths[i]);
			return -EINVAL;
		}
	return 0;
}

/* Each input's host label (ins[i].label); two inputs of one host and boot are refused. */
static int label_hosts(struct input *ins, size_t n, const char *const *paths,
		       struct merge_host *hosts, char **labels, char *why, size_t whylen)
{
	size_t dup[2];
	int err;

	for (size_t i = 0; i < n; i++) {
		/* A Slurm node's trace by the node's name; a header without a host name: the file's
		 * name stands for it. */
		hosts[i].host = str_of(ins[i].r.hdr, "node")	     ?:
					str_of(ins[i].r.hdr, "host") ?:
								       paths[i];
		hosts[i].boot_id = str_of(ins[i].r.hdr, "boot_id");
	}
	err = merge__labels(hosts, n, labels, dup);
	if (err == -EEXIST) {
		const char *b0 = hosts[dup[0]].boot_id, *b1 = hosts[dup[1]].boot_id;
		bool both = b0 && b0[0] && b1 && b1[0];

		snprintf(why, whylen,
			 "%s and %s are both from host %s (%s): one node's run recorded twice, "
			 "whose PIDs would collide; merge one of them",
			 paths[dup[0]], paths[dup[1]], hosts[dup[0]].host,
			 both ? "the same boot" : "no boot id tells them apart");
		return err;
	}
	if (err) {
		snprintf(why, whylen, "out of memory");
		return err;
	}
	for (size_t i = 0; i < n; i++)
		ins[i].label = json_string(labels[i]);
	return 0;
}

/*
 * The merge written to a temporary file beside @out_path (*@tmp, for the caller to remove on
 * failure), renamed over it at the end.
 */
static int write_merged(struct input *ins, size_t n, const char *out_path, struct merge_stats *st,
			char **tmp, char *why, size_t whylen)
{
	FILE *out;
	int err;

	if (asprintf(tmp, "%s.tmp.%d", out_path, (int)getpid()) < 0) {
		*tmp = NULL;
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	out = fopen(*tmp, "wx");
	if (!out) {
		err = -errno;
		snprintf(why, whylen, "cannot write %s: %s", out_path, strerror(errno));
		free(*tmp);
		*tmp = NULL;
		return err;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	err = merge_inputs(ins, n, out, st);
	if (!err && (fflush(out) || ferror(out)))
		err = -EIO;
	if (fclose(out) && !err)
		err = -EIO;
	if (err) {
		snprintf(why, whylen, "cannot write %s: %s", out_path,
			 strerror(err == -EIO ? (errno ? errno : EIO) : -err));
		return err;
	}
	if (rename(*tmp, out_path)) {
		err = -errno;
		snprintf(why, whylen, "cannot write %s: %s", out_path, strerror(errno));
	}
	return err;
}

static void close_inputs(struct input *ins, char **labels, size_t n)
{
	for (size_t i = 0; ins && i < n; i++) {
		trace_reader__close(&ins[i].r);
		json_decref(ins[i].label);
		json_decref(ins[i].head);
		json_decref(ins[i].summary);
		if (labels)
			free(labels[i]);
	}
	free(ins);
	free(labels);
}

int trace__merge(const char *const *paths, size_t n, const char *out_path, struct merge_stats *st,
		 char *why, size_t whylen)
{
	struct input *ins = calloc(n ? n : 1, sizeof(*ins));
	struct merge_host *hosts = calloc(n ? n : 1, sizeof(*hosts));
	char **labels = calloc(n ? n : 1, sizeof(*labels)), *tmp = NULL;
	int err = 0;

	memset(st, 0, sizeof(*st));
	if (!ins || !hosts || !labels) {
		snprintf(why, whylen, "out of memory");
		err = -ENOMEM;
		goto out;
	}
	raise_fd_limit(n);
	for (size_t i = 0; i < n && !err; i++) {
		ins[i].path = paths[i];
		err = open_input(&ins[i], why, whylen);
	}
	if (!err)
		err = outfile__check_replace("merge", out_path, why, whylen);
	err = err ?: refuse_overwriting_input(ins, n, paths, out_path, why, whylen);
	err = err ?: label_hosts(ins, n, paths, hosts, labels, why, whylen);
	err = err ?: write_merged(ins, n, out_path, st, &tmp, why, whylen);
out:
	if (tmp) {
		if (err)
			unlink(tmp);
		free(tmp);
	}
	close_inputs(ins, labels, n);
	free(hosts);
	return err;
}
