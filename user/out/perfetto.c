// SPDX-License-Identifier: GPL-2.0
/*
 * Trace records to trace events. A record is written when its call returns, with its
 * duration, so file order is not time order: the first pass keeps each record's start time and
 * offset, the second writes them sorted, one line each, as they are read again.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "event.h"
#include "paths.h"
#include "perfetto.h"
#include "tracefile.h"

/* How many frames of a stack go into an event's arguments. */
#define ARGS_FRAMES 16

struct slot {
	uint64_t ts; /* its t: for a dlopen, when the call began */
	off_t off;
	size_t len;
};

/*
 * A merged trace (dlscope merge) holds several hosts, whose PIDs collide: a host's processes and
 * threads get ids host index * HOST_STRIDE + PID (PIDs stay below 2^22, the kernel's limit).
 */
#define HOST_STRIDE (1L << 22)

/*
 * The GPU-load track of a thread: its module loads and program builds, as slices, on a track
 * of their own beside the thread's (id GPU_TRACK + tid, above any real thread id).
 */
#define GPU_TRACK (1L << 30)

/* Names of the tracks: a process's comm, rank and host, a thread's comm. */
struct track {
	size_t host;	/* index in exporter.hosts */
	pid_t pid, tid; /* tid 0: the process */
	char comm[16];
	char rank[16];
};

struct exporter {
	FILE *in, *out;
	uint64_t t0;
	struct slot *slots;
	size_t n, cap;
	struct track *tracks;
	size_t n_tracks, cap_tracks;
	char **hosts; /* the hosts of a merged trace, as its records name them */
	size_t n_hosts, cap_hosts;
	long base;  /* the host of the record being written: its ids' offset */
	bool first; /* no event written yet: no comma before it */
	struct perfetto_stats *st;
};

static int cmp_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The index of a record's "host" (0 without one); -1 without memory. */
static long host_of(struct exporter *e, const json_t *rec)
{
	const char *h = json_string_value(json_object_get(rec, "host"));

	if (!h)
		return 0;
	for (size_t i = 0; i < e->n_hosts; i++)
		if (!strcmp(e->hosts[i], h))
			return (long)i;
	if (ARRAY_RESERVE(e->hosts, e->cap_hosts, e->n_hosts + 1) ||
	    !(e->hosts[e->n_hosts] = strdup(h)))
		return -1;
	return (long)e->n_hosts++;
}

static struct track *track_of(struct exporter *e, size_t host, pid_t pid, pid_t tid)
{
	for (size_t i = 0; i < e->n_tracks; i++)
		if (e->tracks[i].pid == pid && e->tracks[i].tid == tid && e->tracks[i].host == host)
			return &e->tracks[i];
	if (e->n_tracks == e->cap_tracks) {
		if (ARRAY_GROW(e->tracks, e->cap_tracks, 64))
			return NULL;
	}
	memset(&e->tracks[e->n_tracks], 0, sizeof(e->tracks[0]));
	e->tracks[e->n_tracks].host = host;
	e->tracks[e->n_tracks].pid = pid;
	e->tracks[e->n_tracks].tid = tid;
	return &e->tracks[e->n_tracks++];
}

static uint64_t get_u64(const json_t *rec, const char *key)
{
	const json_t *v = json_object_get(rec, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) :
								 0;
}

/* Pass 1: each record's start and place; the tracks' names. */
static int index_records(struct exporter *e, char *why, size_t whylen)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	off_t off = ftello(e->in);
	int err = 0;

	while ((len = getline(&line, &cap, e->in)) > 0) {
		json_t *rec = json_loadb(line, (size_t)len, 0, NULL);
		const char *type = rec ? json_string_value(json_object_get(rec, "type")) : NULL;
		const json_t *pid = rec ? json_object_get(rec, "pid") : NULL;

		e->st->records++;
		if (!type || !json_is_integer(json_object_get(rec, "t")) || !json_is_integer(pid)) {
			e->st->skipped++;
		} else {
			const char *comm = json_string_value(json_object_get(rec, "comm"));
			const json_t *tid = json_object_get(rec, "tid"), *rank;
			long host = host_of(e, rec);
			struct track *p = host < 0 ? NULL :
						     track_of(e, (size_t)host,
							      (pid_t)json_integer_value(pid), 0),
				     *th = NULL;

			if (p && json_is_integer(tid) && json_integer_value(tid))
				th = track_of(e, p->host, p->pid, (pid_t)json_integer_value(tid));
			if (th && event_kind__parse(type) == EVENT_GPU_LOAD &&
			    !track_of(e, p->host, p->pid, (pid_t)(GPU_TRACK + th->tid)))
				err = -ENOMEM;
			if (err || !p || (json_is_integer(tid) && json_integer_value(tid) && !th)) {
				err = -ENOMEM;
			} else {
				/* The process is named by its main thread, or the first seen. */
				if (comm && (!p->comm[0] || (th && th->tid == p->pid)))
					snprintf(p->comm, sizeof(p->comm), "%s", comm);
				if (comm && th)
					snprintf(th->comm, sizeof(th->comm), "%s", comm);
				rank = json_object_get(rec, "rank");
				if (json_is_integer(rank))
					snprintf(p->rank, sizeof(p->rank), "%" JSON_INTEGER_FORMAT,
						 json_integer_value(rank));
			}
			if (!err && e->n == e->cap && ARRAY_GROW(e->slots, e->cap, 4096))
				err = -ENOMEM;
			if (!err)
				e->slots[e->n++] =
					(struct slot){ get_u64(rec, "t"), off, (size_t)len };
		}
		json_decref(rec);
		off += len;
		if (err) {
			snprintf(why, whylen, "out of memory indexing the trace");
			break;
		}
	}
	free(line);
	return err;
}

static void put(struct exporter *e, json_t *ev)
{
	if (!ev)
		return;
	fputs(e->first ? "\n" : ",\n", e->out);
	json_dumpf(ev, e->out, JSON_COMPACT);
	e->first = false;
	e->st->events++;
	json_decref(ev);
}

static json_t *ts_of(const struct exporter *e, uint64_t t)
{
	/* Microseconds from the trace's start, to the nanosecond. */
	return json_real(t >= e->t0 ? (double)(t - e->t0) / 1e3 : 0.0);
}

static json_t *stack_args(const json_t *rec)
{
	const json_t *stack = json_object_get(rec, "stack");
	json_t *out = json_array();

	for (size_t i = 0; json_is_array(stack) && i < json_array_size(stack) && i < ARGS_FRAMES;
	     i++)
		json_array_append(out, json_array_get(stack, i));
	return out;
}

/* One trace event of @scope ("t" thread, "p" process) at @t. */
static json_t *instant(const struct exporter *e, const struct event *ev, const char *name,
		       const char *cat, const char *scope, json_t *args)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:o}", "name", name, "cat", cat, "ph",
			 "i", "s", scope, "ts", ts_of(e, ev->t), "pid",
			 (json_int_t)(e->base + ev->pid), "tid", (json_int_t)(e->base + ev->tid),
			 "args", args ? args : json_object());
}

static json_t *slice(const struct exporter *e, const struct event *ev, const char *name,
		     const char *cat, uint64_t dur_ns, json_t *args)
{
	return json_pack("{s:s, s:s, s:s, s:o, s:f, s:I, s:I, s:o}", "name", name, "cat", cat, "ph",
			 "X", "ts", ts_of(e, ev->t), "dur", (double)dur_ns / 1e3, "pid",
			 (json_int_t)(e->base + ev->pid), "tid", (json_int_t)(e->base + ev->tid),
			 "args", args ? args : json_object());
}

/* A GPU module load or program build: a slice, as long as the call, on the GPU-load track of
 * the thread that made it, named by its function; the call's line and result in its args. */
static void emit_gpu_load(struct exporter *e, const json_t *rec, const struct event *ev)
{
	char line[1024];
	const char *res = event__gpu_result(ev->u.gpu_load.function, ev->u.gpu_load.result);

	event__text(ev, 0, line, sizeof(line));
	put(e,
	    json_pack("{s:s, s:s, s:s, s:o, s:f, s:I, s:I, s:{s:s, s:s, s:O*, s:s?, s:I, s:o}}",
		      "name", event__gpu_fn(ev->u.gpu_load.function), "cat", "gpu_load", "ph", "X",
		      "ts", ts_of(e, ev->t), "dur", (double)ev->u.gpu_load.duration_ns / 1e3, "pid",
		      (json_int_t)(e->base + ev->pid), "tid",
		      (json_int_t)(e->base + GPU_TRACK + ev->tid), "args", "call", line, "runtime",
		      event__gpu_runtime(ev->u.gpu_load.function), "result",
		      json_object_get(rec, "result"), "result_name", res, "thread",
		      (json_int_t)ev->tid, "stack", stack_args(rec)));
}

static void emit_event(struct exporter *e, const json_t *rec, const struct event *ev)
{
	char name[512];

	switch (ev->kind) {
	case EVENT_DLOPEN:
		snprintf(name, sizeof(name), "dlopen %s",
			 ev->u.dlopen.path_null ? "(main program)" : path_base(ev->u.dlopen.path));
		put(e, slice(e, ev, name, "dlopen", ev->u.dlopen.duration_ns,
			     json_pack("{s:o, s:s, s:I, s:b, s:o}", "path",
				       ev->u.dlopen.path_null ? json_null() :
								json_string(ev->u.dlopen.path),
				       "file", ev->u.dlopen.file, "flags",
				       (json_int_t)ev->u.dlopen.flags, "ok",
				       ev->u.dlopen.handle != 0, "stack", stack_args(rec))));
		break;
	case EVENT_DLSYM:
		snprintf(name, sizeof(name), "dlsym %s", ev->u.dlsym.symbol);
		put(e, slice(e, ev, name, "dlsym", 0,
			     json_pack("{s:s, s:b}", "symbol", ev->u.dlsym.symbol, "found",
				       ev->u.dlsym.address != 0)));
		break;
	case EVENT_FUTEX_WAIT:
		if (ev->u.futex.what == EVENT_FUTEX_ENDED) {
			put(e, slice(e, ev, "futex wait", "futex", ev->u.futex.duration_ns,
				     json_pack("{s:I}", "futex", (json_int_t)ev->u.futex.futex)));
		} else {
			event__text(ev, 0, name, sizeof(name));
			put(e,
			    instant(e, ev, name, "futex", "t",
				    json_pack("{s:I, s:o}", "futex", (json_int_t)ev->u.futex.futex,
					      "stack", stack_args(rec))));
		}
		break;
	case EVENT_OMP_FORK: {
		char series[64];

		snprintf(series, sizeof(series), "thread %d", ev->tid);
		event__text(ev, 0, name, sizeof(name));
		put(e, instant(e, ev, name, "runtime", "t",
			       json_pack("{s:o}", "stack", stack_args(rec))));
		put(e, json_pack("{s:s, s:s, s:o, s:I, s:{s:I}}", "name", "parallel regions", "ph",
				 "C", "ts", ts_of(e, ev->t), "pid", (json_int_t)(e->base + ev->pid),
				 "args", series, (json_int_t)ev->u.omp_fork.regions));
		break;
	}
	case EVENT_GPU_LOAD: emit_gpu_load(e, rec, ev); break;
	case EVENT_SIGNAL:
	case EVENT_EXEC:
	case EVENT_FORK:
	case EVENT_EXIT:
		event__text(ev, 0, name, sizeof(name));
		put(e, instant(e, ev, name, event_kind__id(ev->kind), "p",
			       json_pack("{s:o}", "stack", stack_args(rec))));
		break;
	default:
		event__text(ev, 0, name, sizeof(name));
		put(e, instant(e, ev, name, event_kind__id(ev->kind), "t",
			       json_pack("{s:o}", "stack", stack_args(rec))));
		break;
	}
}

/* Records that are no event of the collector's: findings and arriving objects. */
static void emit_other(struct exporter *e, const json_t *rec, const char *type)
{
	struct event ev = { .t = get_u64(rec, "t"),
			    .pid = (pid_t)json_integer_value(json_object_get(rec, "pid")),
			    .tid = (pid_t)json_integer_value(json_object_get(rec, "tid")) };
	char name[512];

	if (!ev.tid)
		ev.tid = ev.pid;
	if (!strcmp(type, "finding")) {
		snprintf(name, sizeof(name), "finding %s: %s",
			 json_string_value(json_object_get(rec, "id")) ?: "?",
			 json_string_value(json_object_get(rec, "title")) ?: "");
		put(e, instant(e, &ev, name, "finding", "p", json_deep_copy(rec)));
	} else if (!strcmp(type, "loaded")) {
		snprintf(name, sizeof(name), "loaded %s",
			 path_base(json_string_value(json_object_get(rec, "path"))));
		put(e,
		    instant(e, &ev, name, "object", "p",
			    json_pack("{s:O, s:O, s:O}", "path", json_object_get(rec, "path"),
				      "roles", json_object_get(rec, "roles") ?: json_null(),
				      "package", json_object_get(rec, "package") ?: json_null())));
	} else if (!strcmp(type, "unloaded")) {
		snprintf(name, sizeof(name), "unloaded %s",
			 path_base(json_string_value(json_object_get(rec, "path"))));
		put(e, instant(e, &ev, name, "object", "p",
			       json_pack("{s:O}", "path", json_object_get(rec, "path"))));
	} else if (!strcmp(type, "activity")) {
		/* Runtime activity (--hot) as a counter track per process and runtime. */
		const char *kind = json_string_value(json_object_get(rec, "kind"));

		snprintf(name, sizeof(name), "%s %s",
			 kind && !strcmp(kind, "blas") ? "BLAS dispatches/s" : "parallel regions/s",
			 path_base(json_string_value(json_object_get(rec, "runtime"))));
		put(e, json_pack("{s:s, s:s, s:o, s:I, s:{s:I}}", "name", name, "ph", "C", "ts",
				 ts_of(e, ev.t), "pid", (json_int_t)(e->base + ev.pid), "args",
				 "count", json_integer_value(json_object_get(rec, "n"))));
	} else {
		e->st->skipped++;
	}
}

/* Pass 2: every record again, in time order. */
static int write_sorted(struct exporter *e, char *why, size_t whylen)
{
	char *buf = NULL;
	size_t cap = 0;

	for (size_t i = 0; i < e->n; i++) {
		const struct slot *s = &e->slots[i];
		json_t *rec;
		const char *type;
		struct event ev;
		char err[256];

		if (ARRAY_RESERVE(buf, cap, s->len + 1)) {
			free(buf);
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		if (fseeko(e->in, s->off, SEEK_SET) || fread(buf, 1, s->len, e->in) != s->len) {
			free(buf);
			snprintf(why, whylen, "the trace changed while it was read");
			return -EIO;
		}
		rec = json_loadb(buf, s->len, 0, NULL);
		type = json_string_value(json_object_get(rec, "type"));
		/* Known since pass 1: no allocation here. */
		e->base = host_of(e, rec);
		e->base = e->base > 0 ? e->base * HOST_STRIDE : 0;
		if (type && event_kind__parse(type)) {
			if (!event__from_json(rec, &ev, err, sizeof(err))) {
				emit_event(e, rec, &ev);
				event__clear(&ev);
			} else {
				e->st->skipped++;
			}
		} else if (type) {
			emit_other(e, rec, type);
		}
		json_decref(rec);
	}
	free(buf);
	return 0;
}

/* Process and thread names, processes sorted by rank. */
static void write_names(struct exporter *e)
{
	for (size_t i = 0; i < e->n_tracks; i++) {
		const struct track *t = &e->tracks[i];
		json_int_t base = (json_int_t)t->host * HOST_STRIDE;
		char name[400], host[300] = "";

		if (t->tid >= GPU_TRACK) {
			snprintf(name, sizeof(name), "GPU loads of thread %ld", t->tid - GPU_TRACK);
			put(e, json_pack("{s:s, s:s, s:I, s:I, s:{s:s}}", "name", "thread_name",
					 "ph", "M", "pid", base + t->pid, "tid", base + t->tid,
					 "args", "name", name));
			continue;
		}
		if (t->tid) {
			snprintf(name, sizeof(name), "%s %d", t->comm[0] ? t->comm : "thread",
				 t->tid);
			put(e, json_pack("{s:s, s:s, s:I, s:I, s:{s:s}}", "name", "thread_name",
					 "ph", "M", "pid", base + t->pid, "tid", base + t->tid,
					 "args", "name", name));
			continue;
		}
		e->st->processes++;
		/* A merged trace's processes are named with their host: "node7: rank 3: ...". */
		if (t->host < e->n_hosts)
			snprintf(host, sizeof(host), "%s: ", e->hosts[t->host]);
		if (t->rank[0])
			snprintf(name, sizeof(name), "%srank %s: %s %d", host, t->rank, t->comm,
				 t->pid);
		else
			snprintf(name, sizeof(name), "%s%s %d", host,
				 t->comm[0] ? t->comm : "process", t->pid);
		put(e, json_pack("{s:s, s:s, s:I, s:{s:s}}", "name", "process_name", "ph", "M",
				 "pid", base + t->pid, "args", "name", name));
		/* By rank; without ranks, a merged trace's processes grouped by host. */
		if (t->rank[0] || e->n_hosts > 1)
			put(e, json_pack("{s:s, s:s, s:I, s:{s:i}}", "name", "process_sort_index",
					 "ph", "M", "pid", base + t->pid, "args", "sort_index",
					 t->rank[0] ? atoi(t->rank) : (int)t->host));
	}
}

/* The header (tracefile__open read and checked it): the trace's first time. */
static void take_header(struct exporter *e, const json_t *hdr)
{
	e->t0 = get_u64(hdr, "t0");
	e->st->records++;
	e->st->skipped++; /* the header is no event */
}

int perfetto__export(const char *path, FILE *out, struct perfetto_stats *st, char *why,
		     size_t whylen)
{
	struct exporter e = { .out = out, .first = true, .st = st };
	json_t *hdr = NULL;
	struct stat fst;
	int err;

	memset(st, 0, sizeof(*st));
	err = tracefile__open(path, &e.in, &hdr, &fst, why, whylen);
	if (err)
		return err;
	take_header(&e, hdr);
	err = index_records(&e, why, whylen);
	if (!err) {
		json_t *other = json_pack("{s:O, s:O, s:O}", "dlscope",
					  json_object_get(hdr, "dlscope") ?: json_null(), "host",
					  json_object_get(hdr, "host") ?: json_null(), "format",
					  json_object_get(hdr, "format"));

		/* A merged trace's hosts, in the order of their process ids' offsets. */
		if (other && e.n_hosts) {
			json_t *hosts = json_array();

			for (size_t i = 0; i < e.n_hosts; i++)
				json_array_append_new(hosts, json_string(e.hosts[i]));
			json_object_set_new(other, "hosts", hosts);
			json_object_set_new(other, "host_pid_stride", json_integer(HOST_STRIDE));
		}

		qsort(e.slots, e.n, sizeof(*e.slots), cmp_slot);
		fprintf(out, "{\"displayTimeUnit\": \"ns\", \"otherData\": ");
		json_dumpf(other, out, JSON_COMPACT);
		json_decref(other);
		fprintf(out, ",\n\"traceEvents\": [");
		err = write_sorted(&e, why, whylen);
		write_names(&e);
		fprintf(out, "\n]}\n");
		if (!err && (fflush(out) || ferror(out))) {
			err = -EIO;
			snprintf(why, whylen, "cannot write the export: %s", strerror(errno));
		}
	}
	json_decref(hdr);
	fclose(e.in);
	free(e.slots);
	free(e.tracks);
	for (size_t i = 0; i < e.n_hosts; i++)
		free(e.hosts[i]);
	free(e.hosts);
	return err;
}
