// SPDX-License-Identifier: GPL-2.0
/* The TUI's model: trace records in, what the views would show out; replay seeking. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event.h"
#include "finding.h"
#include "model.h"
#include "sink.h"
#include "watch.h"
#include "source.h"
#include "tap.h"

/*
 * A command's trace, as the collector writes it: the header, events, finding and summary made
 * by the real encoders (user/event.c, user/sink.c); the loaded records (which need a real
 * library graph) as dlscope record wrote them.
 */
#define N_TRACE 10
static char *trace[N_TRACE];
static size_t n_trace;

static void keep(void *ctx, json_t *rec)
{
	(void)ctx;
	if (n_trace < N_TRACE)
		trace[n_trace++] = json_dumps(rec, JSON_COMPACT);
}

static void keep_line(const char *line)
{
	if (n_trace < N_TRACE)
		trace[n_trace++] = strdup(line);
}

static void encode(struct event_sink *s, struct event *ev)
{
	s->event(s, ev);
	event__clear(ev);
}

static void build_trace(void)
{
	struct json_sink js;
	struct trace_header h = { .t0 = 1000000000 };
	struct event ev;
	struct event_stack stack = { 0 };
	struct watch_stats st = { .events = 5, .findings = 1 };
	struct findings fs = { 0 };
	struct live_finding f = {
		.t = 3000000000, .pid = 10, .tid = 10, .comm = "app", .stack = &stack
	};

	json_sink__init(&js, keep, NULL, NULL);
	js.s.header(&js.s, &h);
	ev = (struct event){
		.kind = EVENT_EXEC, .t = 1000000000, .pid = 10, .tid = 10, .comm = "app"
	};
	snprintf(ev.u.exec.file, sizeof(ev.u.exec.file), "/bin/app");
	encode(&js.s, &ev);
	keep_line("{\"type\":\"loaded\",\"t\":1000000000,\"pid\":10,\"path\":\"/bin/app\","
		  "\"soname\":null,\"namespace\":0,\"origin\":\"executable\",\"needed_by\":[],"
		  "\"roles\":[]}");
	keep_line("{\"type\":\"loaded\",\"t\":1000000000,\"pid\":10,\"path\":"
		  "\"/lib/libgomp.so.1\",\"soname\":\"libgomp.so.1\",\"namespace\":0,\"origin\":"
		  "\"needed\",\"needed_by\":[\"/bin/app\"],\"roles\":[{\"kind\":\"openmp\","
		  "\"impl\":\"libgomp\",\"name\":\"GNU libgomp\",\"version\":\"5.1\",\"detail\":"
		  "null}]}");
	ev = (struct event){ .kind = EVENT_FORK,
			     .t = 2000000000,
			     .pid = 10,
			     .tid = 10,
			     .comm = "app",
			     .u.fork = { .child = 11 } };
	encode(&js.s, &ev);
	ev = (struct event){ .kind = EVENT_DLOPEN,
			     .t = 3000000000,
			     .pid = 10,
			     .tid = 10,
			     .comm = "app",
			     .in_dlopen = 1,
			     .u.dlopen = { .path = "libomp.so.5",
					   .file = "/lib/libomp.so.5",
					   .flags = 2,
					   .handle = 1,
					   .duration_ns = 1000 } };
	encode(&js.s, &ev);
	keep_line("{\"type\":\"loaded\",\"t\":3000000000,\"pid\":10,\"path\":"
		  "\"/lib/libomp.so.5\",\"soname\":\"libomp.so.5\",\"namespace\":0,\"origin\":"
		  "\"dlopen\",\"needed_by\":[],\"roles\":[{\"kind\":\"openmp\",\"impl\":"
		  "\"libomp\",\"name\":\"LLVM libomp\",\"version\":null,\"detail\":null}]}");
	event_stack__push(&stack, "main+0x43 (app)", 0x401043);
	f.f = findings__add(&fs, "dup-openmp", SEV_ERROR, 10, "a second OpenMP runtime arrived");
	js.s.finding(&js.s, &f);
	event_stack__clear(&stack);
	findings__free(&fs);
	ev = (struct event){ .kind = EVENT_DLSYM,
			     .t = 4000000000,
			     .pid = 11,
			     .tid = 11,
			     .comm = "child",
			     .u.dlsym = {
				     .symbol = "omp_get_max_threads", .handle = 1, .address = 2 } };
	encode(&js.s, &ev);
	js.s.summary(&js.s, &st);
}

static void apply_all(struct model *m)
{
	bool ok = n_trace == N_TRACE;

	for (size_t i = 0; i < n_trace; i++) {
		json_t *rec = json_loads(trace[i], 0, NULL);

		if (model__apply(m, rec)) {
			printf("# record %zu rejected: %s\n", i, trace[i]);
			ok = false;
		}
		json_decref(rec);
	}
	CHECK(ok, "every record the encoders made is accepted");
}

static const struct m_lib *lib(const struct m_proc *p, const char *path)
{
	for (size_t i = 0; p && i < p->n_libs; i++)
		if (!strcmp(p->libs[i].path, path))
			return &p->libs[i];
	return NULL;
}

static size_t count(const struct model *m, const struct event_filter *f)
{
	size_t n = 0;

	for (uint64_t s = model__first_seq(m); s < m->next_seq; s++)
		n += event_filter__match(f, model__event(m, s));
	return n;
}

static bool fold_app(void *ctx, const char *path)
{
	return !strcmp(path, "/bin/app");
}

/* Debian's libblas.so.3 forwards to libopenblas.so.0: the record says so, and it is no collision. */
static void test_front_is_no_collision(void)
{
	static const char *const recs[] = {
		"{\"type\":\"loaded\",\"t\":1,\"pid\":20,\"path\":\"/lib/libblas.so.3\",\"soname\":"
		"\"libblas.so.3\",\"namespace\":0,\"origin\":\"needed\",\"needed_by\":[],\"roles\":"
		"[{\"kind\":\"blas\",\"impl\":\"blas\",\"name\":\"BLAS (reference or unknown)\","
		"\"version\":null,\"detail\":null,\"front_of\":\"/lib/libopenblas.so.0\"}]}",
		"{\"type\":\"loaded\",\"t\":1,\"pid\":20,\"path\":\"/lib/libopenblas.so.0\",\"soname\":"
		"\"libopenblas.so.0\",\"namespace\":0,\"origin\":\"needed\",\"needed_by\":"
		"[\"/lib/libblas.so.3\"],\"roles\":[{\"kind\":\"blas\",\"impl\":\"openblas\",\"name\":"
		"\"OpenBLAS\",\"version\":\"0.3.21\",\"detail\":null}]}",
	};
	struct model *m = model__new(100);
	const struct m_proc *p;
	bool ok = true;

	for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		json_t *rec = json_loads(recs[i], 0, NULL);

		ok &= rec && !model__apply(m, rec);
		json_decref(rec);
	}
	p = model__proc(m, 20);
	CHECK(ok && p && p->n_libs == 2, "both loaded records are accepted");
	CHECK(lib(p, "/lib/libblas.so.3") && !lib(p, "/lib/libblas.so.3")->collision &&
		      !lib(p, "/lib/libopenblas.so.0")->collision,
	      "a front and the BLAS it forwards to do not collide");
	CHECK(lib(p, "/lib/libblas.so.3") && !strcmp(lib(p, "/lib/libblas.so.3")->roles[0].label,
						     "front of /lib/libopenblas.so.0"),
	      "the front is labelled as such");
	model__free(m);
}

/*
 * The snapshot's record of an object is a trace's without "t": the library is there, no event
 * says it arrived; the same record with "t" (live, replay) is also an event line.
 */
static void test_snapshot_record_is_no_event(void)
{
	static const char rec_text[] =
		"{\"type\":\"loaded\",\"pid\":30,\"comm\":\"app\",\"path\":\"/lib/libgomp.so.1\","
		"\"soname\":\"libgomp.so.1\",\"namespace\":0,\"origin\":\"needed\",\"needed_by\":"
		"[\"/bin/app\"],\"roles\":[{\"kind\":\"openmp\",\"impl\":\"libgomp\",\"label\":"
		"\"GNU libgomp (GCC 12), OpenMP 5.1\"}],\"package\":null}";
	struct model *m = model__new(100);
	json_t *rec = json_loads(rec_text, 0, NULL);
	struct event_filter all = { 0 };
	const struct m_proc *p;
	const struct m_lib *l;

	CHECK(rec && !model__apply(m, rec), "a loaded record without \"t\" is accepted");
	p = model__proc(m, 30);
	l = lib(p, "/lib/libgomp.so.1");
	CHECK(l && l->n_needed_by == 1 && !strcmp(l->needed_by[0], "/bin/app") && l->n_roles == 1 &&
		      !strcmp(l->roles[0].label, "GNU libgomp (GCC 12), OpenMP 5.1"),
	      "its library is there, needed_by and roles as the record says");
	CHECK(count(m, &all) == 0, "and no event says it arrived");
	json_object_set_new(rec, "t", json_integer(5));
	CHECK(!model__apply(m, rec) && model__proc(m, 30)->n_libs == 1 && count(m, &all) == 1,
	      "with \"t\" the same record updates the library and is one event");
	json_decref(rec);
	model__free(m);
}

static void test_graph_and_collision(void)
{
	struct model *m = model__new(100);
	struct m_proc *p;
	struct lib_row *rows;
	ssize_t n;

	apply_all(m);
	p = model__proc(m, 10);
	CHECK(p && p->n_libs == 3, "the graph is rebuilt from loaded records");
	CHECK(p && !strcmp(p->comm, "app"), "exec names the process");
	CHECK(lib(p, "/lib/libgomp.so.1") && lib(p, "/lib/libgomp.so.1")->collision,
	      "libgomp is marked as colliding");
	CHECK(lib(p, "/lib/libomp.so.5") && lib(p, "/lib/libomp.so.5")->collision,
	      "libomp is marked as colliding");
	CHECK(lib(p, "/bin/app") && !lib(p, "/bin/app")->collision, "the executable is not");
	n = model__lib_tree(p, NULL, NULL, &rows);
	CHECK(n == 3 && !strcmp(p->libs[rows[0].lib].path, "/bin/app") && rows[1].depth == 1 &&
		      !strcmp(p->libs[rows[1].lib].path, "/lib/libgomp.so.1") && rows[2].depth == 0,
	      "tree: libgomp under the executable, libomp a dlopen root");
	free(rows);
	n = model__lib_tree(p, fold_app, NULL, &rows);
	CHECK(n == 2 && rows[0].collapsed && !strcmp(p->libs[rows[1].lib].path, "/lib/libomp.so.5"),
	      "folding the executable hides libgomp, not libomp");
	free(rows);
	CHECK(model__proc(m, 11) && model__proc(m, 11)->ppid == 10, "fork links the child");
	CHECK(m->n_findings == 1 && !strcmp(m->findings[0].id, "dup-openmp") &&
		      m->findings[0].stack && strstr(m->findings[0].stack, "main+0x43"),
	      "the finding is kept with its stack");
	/* A loaded record for a known object updates it rather than adding one. */
	{
		json_t *rec = json_loads(trace[3], 0, NULL);

		model__apply(m, rec);
		json_decref(rec);
	}
	CHECK(model__proc(m, 10)->n_libs == 3, "a repeated loaded record updates in place");
	CHECK(m->has_summary && m->summary_events == 5, "the summary is read");
	{
		json_t *bad = json_loads("{\"type\":\"nonsense\"}", 0, NULL);

		CHECK(model__apply(m, bad) == -EINVAL && m->bad_records == 1,
		      "an unknown record is refused and counted");
		json_decref(bad);
	}
	{
		/* record --hot's counts per second: a known record, not a bad one. */
		json_t *act =
			json_loads("{\"type\":\"activity\",\"t\":7,\"pid\":10,\"runtime\":"
				   "\"/lib/libgomp.so.1\",\"kind\":\"openmp\",\"n\":3,\"total\":3,"
				   "\"threads\":{\"10\":3}}",
				   0, NULL);

		const struct m_event *e;

		CHECK(act && model__apply(m, act) == 0 && m->bad_records == 1,
		      "an activity record is accepted");
		e = model__event(m, m->next_seq - 1);
		CHECK(e && e->kind == EV_ACTIVITY && e->pid == 10 && e->lib &&
			      !strcmp(e->lib, "/lib/libgomp.so.1") && e->text &&
			      !strcmp(e->text,
				      "activity libgomp.so.1: 3 parallel regions (3 so far), "
				      "threads 10:3"),
		      "and shown as an event line of its runtime");
		json_decref(act);
	}
	model__free(m);
}

static void test_filters_and_ring(void)
{
	struct model *m = model__new(100);
	struct event_filter f = { 0 };

	apply_all(m);
	CHECK(count(m, &f) == m->ring_n, "no filter shows every event");
	f.kinds = 1u << EV_DLSYM;
	CHECK(count(m, &f) == 1, "kind filter: one dlsym");
	f.kinds = 0;
	f.pid = 11;
	CHECK(count(m, &f) == 1, "process filter: one event of pid 11");
	f.pid = 0;
	snprintf(f.lib, sizeof(f.lib), "libomp");
	CHECK(count(m, &f) == 2, "library filter: the dlopen and the loaded record of libomp");
	model__free(m);

	m = model__new(4);
	for (int i = 0; i < 10; i++)
		model__add_event(m, EV_DLSYM, (uint64_t)i, 1, 1, "x", "e", NULL, NULL);
	CHECK(m->ring_n == 4 && model__first_seq(m) == 6 && !model__event(m, 5) &&
		      model__event(m, 9) && model__event(m, 9)->t == 9,
	      "the ring keeps the newest events");
	model__free(m);
}

static void test_replay_seek(void)
{
	char path[] = "/tmp/test_ui_model.XXXXXX", why[256];
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	struct model *m = model__new(100);
	struct replay *r = NULL;

	for (size_t i = 0; f && i < n_trace; i++)
		fprintf(f, "%s\n", trace[i]);
	if (f)
		fclose(f);
	CHECK(replay__open(path, false, &r, why, sizeof(why)) == 0 && r->n == 10,
	      "the trace is read");
	if (!r)
		goto out;
	replay__seek(r, m, 2500000000ULL, 0);
	CHECK(model__proc(m, 10) && model__proc(m, 10)->n_libs == 2 && !m->n_findings,
	      "seek to 2.5 s: libomp not loaded yet, no finding");
	replay__seek(r, m, UINT64_MAX, 0);
	CHECK(model__proc(m, 10)->n_libs == 3 && m->n_findings == 1, "seek to the end: all of it");
	replay__seek(r, m, 1500000000ULL, 0);
	CHECK(model__proc(m, 10)->n_libs == 2 && !m->n_findings && !model__proc(m, 11),
	      "seek back to 1.5 s rebuilds: no fork, no finding");
	replay__pause(r, false, 100.0);
	replay__set_speed(r, 1.0, 100.0);
	replay__tick(r, m, 101.0, 1000);
	CHECK(model__proc(m, 11) && !m->n_findings, "playing 1 s at 1x reaches the fork only");
	replay__set_speed(r, 0, 101.0);
	replay__tick(r, m, 101.0, 2);
	CHECK(r->pos < r->n, "a tick applies no more than its budget");
	replay__tick(r, m, 101.0, 1000);
	CHECK(replay__at_end(r) && m->n_findings == 1, "max speed reaches the end");
	replay__free(r);
	r = NULL;
	/* A bad line in the middle and the cut last line of a killed recorder. */
	f = fopen(path, "w");
	if (f) {
		for (size_t i = 0; i < n_trace; i++)
			fprintf(f, "%s\n%s", trace[i], i == 3 ? "not json\n" : "");
		fprintf(f, "{\"type\":\"dlsym\",\"t\":5000000000,\"pid\":1");
		fclose(f);
	}
	CHECK(replay__open(path, true, &r, why, sizeof(why)) == -EINVAL && strstr(why, ":5 ") && !r,
	      "--strict refuses a bad line, naming it");
	CHECK(replay__open(path, false, &r, why, sizeof(why)) == 0 && r && r->n == 10 &&
		      r->skipped == 2 && r->first_skipped == 5,
	      "bad lines are left out and counted, the first named");
	if (r) {
		model__reset(m);
		replay__seek(r, m, UINT64_MAX, 0);
		CHECK(model__proc(m, 10) && model__proc(m, 10)->n_libs == 3 && m->n_findings == 1,
		      "the good records all replay");
		replay__free(r);
		r = NULL;
	}
	CHECK(replay__open("/tmp", false, &r, why, sizeof(why)) == -EINVAL &&
		      strstr(why, "is a directory"),
	      "a directory is named as such");
	CHECK(replay__open("/dev/zero", false, &r, why, sizeof(why)) == -EINVAL &&
		      strstr(why, "not a regular file"),
	      "/dev/zero is refused at once, not read without end");
out:
	replay__free(r);
	unlink(path);
	model__free(m);
}

/* A trace of record -p: no exec, the target's objects at attach time, then its events. */
static const char *const attach_trace[] = {
	"{\"type\":\"header\",\"format\":\"dlscope-trace/1\",\"t0\":1000000000,\"targets\":[20]}" /* a trace of format 1 is still read */
	,
	"{\"type\":\"loaded\",\"t\":1004000000,\"pid\":20,\"path\":\"/opt/bin/a-long-program-name\","
	"\"soname\":null,\"namespace\":0,\"origin\":\"executable\",\"needed_by\":[],\"roles\":[]}",
	"{\"type\":\"loaded\",\"t\":1004000000,\"pid\":20,\"path\":\"/lib/libc.so.6\",\"soname\":"
	"\"libc.so.6\",\"namespace\":0,\"origin\":\"needed\",\"needed_by\":[\"/opt/bin/a-long-program-name\"],"
	"\"roles\":[]}",
	"{\"type\":\"loaded\",\"t\":1006000000,\"pid\":21,\"path\":\"/bin/other\",\"soname\":null,"
	"\"namespace\":0,\"origin\":\"executable\",\"needed_by\":[],\"roles\":[]}",
	"{\"type\":\"dlsym\",\"t\":2000000000,\"pid\":20,\"tid\":20,\"comm\":\"a-long-program-\","
	"\"in_dlopen\":0,\"symbol\":\"f\",\"handle\":1,\"address\":2}",
	"{\"type\":\"summary\",\"events\":1,\"lost\":0,\"findings\":0}",
};

static struct replay *open_lines(const char *const *lines, size_t n, char *path)
{
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	struct replay *r = NULL;
	char why[256];

	for (size_t i = 0; f && i < n; i++)
		fprintf(f, "%s\n", lines[i]);
	if (f)
		fclose(f);
	if (replay__open(path, false, &r, why, sizeof(why)))
		printf("# %s\n", why);
	unlink(path);
	return r;
}

static void test_replay_first_state(void)
{
	char path[] = "/tmp/test_ui_model.XXXXXX", path2[] = "/tmp/test_ui_model.XXXXXX";
	struct model *m = model__new(100);
	struct replay *r = open_lines((const char *const *)trace, n_trace, path);

	/* What the TUI does first, and what '{' does. */
	if (r)
		replay__seek(r, m, 0, 0);
	CHECK(r && r->pos == 4 && model__proc(m, 10) && model__proc(m, 10)->n_libs == 2 &&
		      !model__proc(m, 11),
	      "a command's trace opens on its exec and start-up objects, not on the header");
	replay__free(r);
	model__reset(m);
	r = open_lines(attach_trace, sizeof(attach_trace) / sizeof(attach_trace[0]), path2);
	if (r)
		replay__seek(r, m, 0, 0);
	CHECK(r && r->pos == 4 && model__proc(m, 20) && model__proc(m, 20)->n_libs == 2 &&
		      model__proc(m, 21),
	      "a -p trace opens on every target's objects");
	CHECK(model__proc(m, 20) && !strcmp(model__proc(m, 20)->comm, "a-long-program-"),
	      "a -p target is named after its executable, as the kernel's comm would");
	CHECK(model__proc(m, 21) && !strcmp(model__proc(m, 21)->comm, "other"),
	      "each -p target is named");
	replay__free(r);
	model__free(m);
}

/*
 * Records as dlscope record wrote them (dlopen_list with libhang_ctor_omp_dlsym.so, by default
 * and with --futex-ms 5; busy_threads with --futex-ms 5; dlopen_list with libctor_blas.so and
 * --hot; two_blas with FIXTURE_EXIT=fault), and the line watch prints for each.
 */
static const struct {
	const char *rec, *text, *lib;
} real_events[] = {
	{ "{\"type\":\"futex_wait\",\"t\":2221669664668,\"pid\":12992,\"tid\":12992,\"comm\":"
	  "\"dlopen_list\",\"in_dlopen\":1,\"futex\":94191475846532,\"duration_ns\":0}",
	  "futex wait on 0x55aaa9756d84 begins inside dlopen", NULL },
	{ "{\"type\":\"futex_wait\",\"t\":2218873087793,\"pid\":12989,\"tid\":12989,\"comm\":"
	  "\"dlopen_list\",\"in_dlopen\":1,\"futex\":93964506983812,\"blocked_in\":\"dlopen\","
	  "\"call\":\"build/fixtures/libhang_ctor_omp_dlsym.so\",\"duration_ns\":102697050}",
	  "blocked in a futex wait on 0x5575d10f6d84 inside "
	  "dlopen(\"build/fixtures/libhang_ctor_omp_dlsym.so\"), which began 103 ms ago",
	  "build/fixtures/libhang_ctor_omp_dlsym.so" },
	{ "{\"type\":\"futex_wait\",\"t\":2218873087793,\"pid\":12989,\"tid\":12990,\"comm\":"
	  "\"dlopen_list\",\"in_dlopen\":0,\"futex\":140355758795304,\"blocked_in\":\"dlsym\","
	  "\"call\":\"printf\",\"duration_ns\":100099695}",
	  "blocked in a futex wait on 0x7fa71f252a28 inside dlsym(\"printf\"), which began 100 ms ago",
	  NULL },
	{ "{\"type\":\"futex_wait\",\"t\":2234832610510,\"pid\":13120,\"tid\":13126,\"comm\":"
	  "\"busy_threads\",\"in_dlopen\":0,\"futex\":94648563548392,\"duration_ns\":20274009}",
	  "futex wait on 0x5615160240e8 for 20.3 ms", NULL },
	{ "{\"type\":\"omp_fork\",\"t\":2231541280338,\"pid\":13066,\"tid\":13066,\"comm\":"
	  "\"dlopen_list\",\"in_dlopen\":1,\"regions\":1,\"entry\":4,\"stack\":[\"exec_blas+0x0 "
	  "(libopenblas.so.0)\",\"0x7f7ad2af0563 (libopenblas.so.0)\"]}",
	  "BLAS parallel dispatch (exec_blas) #1 started inside dlopen", NULL },
	{ "{\"type\":\"fork\",\"t\":2218772669627,\"pid\":12989,\"tid\":12989,\"comm\":"
	  "\"dlopen_list\",\"in_dlopen\":1,\"child\":12990,\"thread\":true,\"stack\":"
	  "[\"0x7fa71f12b8d9\",\"0x5575d10f7470\"]}",
	  "new thread 12990 (inside dlopen)", NULL },
	{ "{\"type\":\"signal\",\"t\":2262292782083,\"pid\":13339,\"tid\":13339,\"comm\":"
	  "\"two_blas\",\"in_dlopen\":0,\"at\":\"main+0x77 (two_blas)\",\"signal\":11,"
	  "\"address\":16,\"where\":\"0x10\",\"stack\":[\"main+0x77 (two_blas)\"]}",
	  "fatal signal SIGSEGV, fault address 0x10, at main+0x77 (two_blas)", NULL },
	{ "{\"type\":\"exit\",\"t\":2262294636024,\"pid\":13339,\"tid\":13339,\"comm\":"
	  "\"two_blas\",\"in_dlopen\":0,\"exit_code\":11}",
	  "exit, killed by SIGSEGV", NULL },
};

static void test_event_lines_as_watch_prints_them(void)
{
	for (size_t i = 0; i < sizeof(real_events) / sizeof(real_events[0]); i++) {
		struct model *m = model__new(10);
		json_t *rec = json_loads(real_events[i].rec, 0, NULL);
		const struct m_event *e;
		char name[512];

		snprintf(name, sizeof(name), "real record %zu is applied", i);
		CHECK(rec && !model__apply(m, rec), name);
		e = model__event(m, 0);
		snprintf(name, sizeof(name), "%s shown as watch prints it: '%s'",
			 json_string_value(json_object_get(rec, "type")), e ? e->text : "(none)");
		CHECK(e && !strcmp(e->text, real_events[i].text), name);
		if (real_events[i].lib) {
			snprintf(name, sizeof(name), "the object it concerns: %s",
				 e && e->lib ? e->lib : "(none)");
			CHECK(e && e->lib && !strcmp(e->lib, real_events[i].lib), name);
		}
		json_decref(rec);
		model__free(m);
	}
}

/* A live finding reaches the Findings view as the detector made it, through the record. */
static void test_live_finding_keeps_the_detectors_severity_why_and_fix(void)
{
	struct model *m = model__new(16);
	struct findings fs = { 0 };
	struct finding *f = findings__add(&fs, "dup-blas", SEV_WARNING, 10, "%d BLAS libraries", 2);
	json_t *rec, *old, *bad;
	const struct m_finding *mf;

	finding__evidence(f, "#3 /lib/libblas.so.3: reference BLAS");
	finding__explain(f, "the loader binds every caller to one of them", "keep one BLAS");
	rec = finding__record(f, 5000000000ULL, 10, 12);
	json_object_set_new(rec, "stack", json_pack("[s]", "main+0x43 (app)"));
	CHECK(model__apply(m, rec) == 0 && m->n_findings == 1, "the record is accepted");
	mf = m->n_findings ? &m->findings[0] : NULL;
	CHECK(mf && !strcmp(mf->severity, "warning") && !strcmp(mf->id, "dup-blas") &&
		      !strcmp(mf->title, "2 BLAS libraries"),
	      "its severity is the detector's, not made up");
	CHECK(mf && mf->n_evidence == 1 &&
		      !strcmp(mf->evidence[0], "#3 /lib/libblas.so.3: reference BLAS"),
	      "its evidence");
	CHECK(mf && mf->why && !strcmp(mf->why, "the loader binds every caller to one of them") &&
		      mf->remedy && !strcmp(mf->remedy, "keep one BLAS"),
	      "its why and fix");
	CHECK(mf && mf->live && mf->t == 5000000000ULL && mf->stack &&
		      strstr(mf->stack, "main+0x43"),
	      "its time and stack");
	model__drop_snapshot_findings(m, 10);
	CHECK(m->n_findings == 1, "a snapshot does not replace a live finding");
	/* dlscope-trace/1 wrote only "text": the detector's own severity stands in. No encoder
	 * writes /1 any more, so its record is written out here. */
	old = json_loads("{\"type\":\"finding\",\"t\":3000000000,\"pid\":10,\"tid\":10,"
			 "\"id\":\"dup-openmp\",\"text\":\"a second OpenMP runtime arrived\","
			 "\"stack\":[\"main+0x43 (app)\"],\"stack_pc\":[4198467]}",
			 0, NULL);
	CHECK(model__apply(m, old) == 0 && m->n_findings == 2 &&
		      !strcmp(m->findings[1].severity, "error") &&
		      !strcmp(m->findings[1].title, "a second OpenMP runtime arrived"),
	      "an old record is read, with its detector's severity");
	bad = json_pack("{s:s, s:I, s:s, s:s}", "type", "finding", "t", (json_int_t)1, "title", "x",
			"severity", "fatal");
	CHECK(model__apply(m, bad) == -EINVAL && m->bad_records == 1 && m->n_findings == 2,
	      "a finding without an id or with an unknown severity is rejected");
	json_decref(rec);
	json_decref(old);
	json_decref(bad);
	findings__free(&fs);
	model__free(m);
}

/* A format this dlscope does not know is refused at open, in one line that names it. */
static void test_unknown_format_refused(void)
{
	char path[] = "/tmp/test_ui_model.XXXXXX", why[256] = "";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	struct replay *r = NULL;
	int err;

	if (f) {
		fprintf(f, "{\"type\":\"header\",\"format\":\"dlscope-trace/9\",\"t0\":1}\n");
		fclose(f);
	}
	err = replay__open(path, false, &r, why, sizeof(why));
	CHECK(err == -EINVAL && !r && strstr(why, "dlscope-trace/9") && !strchr(why, '\n'),
	      "a trace of an unknown format is refused, naming it");
	replay__free(r);
	unlink(path);
}

/* A dlopen of a Python process: its line names the import, Enter shows the Python frames. */
static void test_python_dlopen(void)
{
	struct model *m = model__new(16);
	json_t *rec = json_loads(
		"{\"type\":\"dlopen\",\"t\":7,\"pid\":10,\"tid\":10,\"comm\":\"python3\","
		"\"path\":\"libomp.so.5\",\"file\":\"/lib/libomp.so.5\",\"handle\":4096,"
		"\"stack\":[\"___dlopen+0x8a (libc.so.6)\"],\"python\":{\"frames\":["
		"{\"function\":\"CDLL.__init__\",\"file\":\"/usr/lib/python3.11/ctypes/__init__.py\","
		"\"line\":376},{\"function\":\"<module>\",\"file\":\"/srv/train.py\",\"line\":4}],"
		"\"site\":1}}",
		0, NULL);
	const struct m_event *e;

	CHECK(rec && model__apply(m, rec) == 0, "a dlopen record with \"python\" is accepted");
	e = model__event(m, model__first_seq(m));
	CHECK(e && strstr(e->text, "from `CDLL.__init__` called at train.py:4"),
	      "the event's line names the call and the line that made it");
	CHECK(e && e->stack &&
		      !strncmp(e->stack,
			       "python:\npy#0 CDLL.__init__ "
			       "(/usr/lib/python3.11/ctypes/__init__.py:376)\npy#1 <module> "
			       "(/srv/train.py:4)\n\nnative:\n___dlopen+0x8a (libc.so.6)",
			       200),
	      "Enter shows the Python frames above the native ones");
	json_decref(rec);
	model__free(m);
}

int main(void)
{
	test_python_dlopen();
	build_trace();
	test_unknown_format_refused();
	test_graph_and_collision();
	test_front_is_no_collision();
	test_snapshot_record_is_no_event();
	test_filters_and_ring();
	test_replay_seek();
	test_replay_first_state();
	test_event_lines_as_watch_prints_them();
	test_live_finding_keeps_the_detectors_severity_why_and_fix();
	return tap_done();
}
