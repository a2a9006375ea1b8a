// SPDX-License-Identifier: GPL-2.0
/*
 * The collector's logic without BPF or root: synthetic raw records (as dlwatch.bpf.c sends
 * them) about a live fixture process go through watch's decode and dispatch; the sinks get
 * the events, the objects the model gained and watch's text lines.
 */
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "event.h"
#include "libgraph.h"
#include "sink.h"
#include "tap.h"
#include "watch.h"

/* What a sink got, in order. */
struct got {
	struct event_sink s;
	enum event_kind kinds[16];
	size_t n_events;
	char loaded[64][PATH_MAX];
	char origins[64][16];
	size_t n_loaded;
	bool header, summary;
	unsigned long long summary_events;
};

static void got_header(struct event_sink *s, const struct trace_header *h)
{
	((struct got *)s)->header = h->t0 != 0;
}

static void got_event(struct event_sink *s, const struct event *ev)
{
	struct got *g = (struct got *)s;

	if (g->n_events < 16)
		g->kinds[g->n_events++] = ev->kind;
}

static void got_loaded(struct event_sink *s, const struct loaded_obj *l)
{
	struct got *g = (struct got *)s;

	if (g->n_loaded < 64) {
		snprintf(g->loaded[g->n_loaded], PATH_MAX, "%s", l->o->path);
		snprintf(g->origins[g->n_loaded++], 16, "%s", lg_origin__id(l->o->origin));
	}
}

static void got_summary(struct event_sink *s, const struct watch_stats *st)
{
	((struct got *)s)->summary = true;
	((struct got *)s)->summary_events = st->events;
}

/* Trace records, decoded back: the encoder's output is what the decoder accepts. */
struct records {
	size_t n, bad;
	char types[32][16];
};

static void keep_record(void *ctx, json_t *rec)
{
	struct records *r = ctx;
	const char *type = json_string_value(json_object_get(rec, "type"));
	struct event ev;
	char why[256];

	if (event_kind__parse(type)) {
		if (event__from_json(rec, &ev, why, sizeof(why))) {
			printf("# rejected: %s\n", why);
			r->bad++;
		}
		event__clear(&ev);
	}
	if (r->n < 32)
		snprintf(r->types[r->n++], 16, "%s", type ? type : "?");
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* dlopen_list LIB: it dlopens the library, says "ready PID" and waits. */
static pid_t start_fixture(const char *exe, const char *lib)
{
	int p[2];
	pid_t pid;
	char line[64] = "";
	FILE *f;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl(exe, exe, lib, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	/* The fixture is ready once it says so: a blocking read, no sleep. */
	if (!f || !fgets(line, sizeof(line), f) || strncmp(line, "ready", 5)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	if (f)
		fclose(f);
	return pid;
}

static bool has_line(const char *text, const char *a, const char *b)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		size_t len = strcspn(l, "\n");
		char line[PATH_MAX + 256];

		snprintf(line, sizeof(line), "%.*s", (int)len, l);
		if (strstr(line, a) && (!b || strstr(line, b)))
			return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	char self[PATH_MAX], dir[PATH_MAX], rel[PATH_MAX + 32], exe[PATH_MAX], lib[PATH_MAX];
	char want[PATH_MAX + 128];
	struct got got = { .s = { .header = got_header,
				  .event = got_event,
				  .loaded = got_loaded,
				  .summary = got_summary } };
	struct records recs = { 0 };
	struct json_sink js;
	struct text_sink ts;
	struct event_sink *sinks[3] = { &got.s, &js.s, &ts.s };
	struct watch_opts o = { .sinks = sinks, .n_sinks = 3 };
	struct watch_stats st;
	struct dlw_event raw = { 0 };
	struct watch *w;
	char *text = NULL;
	size_t text_len = 0;
	FILE *out = open_memstream(&text, &text_len);
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	bool plain = false, exe_seen = false, libc = false;
	pid_t pid;

	(void)argc;
	(void)argv;
	if (n <= 0 || !out)
		return 1;
	self[n] = '\0';
	snprintf(dir, sizeof(dir), "%s", dirname(self)); /* build/tests */
	snprintf(rel, sizeof(rel), "%s/../fixtures/dlopen_list", dir);
	if (!realpath(rel, exe))
		exe[0] = '\0';
	snprintf(rel, sizeof(rel), "%s/../fixtures/libplain.so", dir);
	if (!realpath(rel, lib) || !exe[0] || strlen(exe) >= DLW_STR_LEN ||
	    strlen(lib) >= DLW_STR_LEN) {
		printf("1..0 # SKIP the fixtures are not built (make fixtures)\n");
		return 0;
	}
	pid = start_fixture(exe, lib);
	CHECK(pid > 0, "the fixture dlopened its library and waits");
	if (pid <= 0)
		return tap_done();
	json_sink__init(&js, keep_record, NULL, &recs);
	text_sink__init(&ts, out);
	w = watch__offline_new(&o, &st);
	CHECK(w && !watch__offline_add(w, pid, "dlopen_list"), "the collector starts without BPF");
	if (!w)
		goto out;

	/* Its exec, as the sched_process_exec tracepoint reports it. */
	raw = (struct dlw_event){ .ts_ns = now_ns(),
				  .pid = (unsigned)pid,
				  .tid = (unsigned)pid,
				  .type = DLW_EXEC,
				  .comm = "dlopen_list" };
	memcpy(raw.str, exe, strlen(exe) + 1);
	watch__offline_feed(w, &raw, offsetof(struct dlw_event, path));
	/* Its dlopen's return: the argument, flags, the handle and the link map's l_name. */
	raw = (struct dlw_event){ .ts_ns = now_ns(),
				  .pid = (unsigned)pid,
				  .tid = (unsigned)pid,
				  .type = DLW_DLOPEN,
				  .arg0 = 2,
				  .ret = 0x1000,
				  .duration_ns = 1500000,
				  .comm = "dlopen_list" };
	memcpy(raw.str, lib, strlen(lib) + 1);
	memcpy(raw.path, lib, strlen(lib) + 1);
	watch__offline_feed(w, &raw, sizeof(raw));
	/* A record shorter than an event's header is not one. */
	watch__offline_feed(w, &raw, 12);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	raw = (struct dlw_event){ .ts_ns = now_ns(),
				  .pid = (unsigned)pid,
				  .tid = (unsigned)pid,
				  .type = DLW_EXIT,
				  .arg0 = 9,
				  .comm = "dlopen_list" };
	watch__offline_feed(w, &raw, offsetof(struct dlw_event, path));
	watch__offline_end(w);
	fclose(out);
	out = NULL;

	CHECK(got.n_events == 3 && got.kinds[0] == EVENT_EXEC && got.kinds[1] == EVENT_DLOPEN &&
		      got.kinds[2] == EVENT_EXIT,
	      "the sink got exec, dlopen and exit, decoded, and nothing of the short record");
	for (size_t i = 0; i < got.n_loaded; i++) {
		if (!strcmp(got.loaded[i], lib))
			plain = !strcmp(got.origins[i], "dlopen");
		exe_seen |= !strcmp(got.loaded[i], exe) && !strcmp(got.origins[i], "executable");
		libc |= strstr(got.loaded[i], "/libc.so.6") != NULL;
	}
	CHECK(exe_seen && libc, "the exec brought the executable and libc into the model");
	CHECK(plain, "the dlopen brought libplain.so, read from the live process, origin dlopen");
	CHECK(got.header && got.summary && got.summary_events == 3 && st.events == 3,
	      "header and summary reach the sinks; 3 events counted");
	CHECK(recs.n >= 6 && !recs.bad && !strcmp(recs.types[0], "header") &&
		      !strcmp(recs.types[recs.n - 1], "summary"),
	      "the trace sink's records decode back");
	snprintf(want, sizeof(want), "%d/%d dlopen_list exec %s", pid, pid, exe);
	CHECK(has_line(text, want, NULL), "watch's line for the exec");
	snprintf(want, sizeof(want),
		 "%d/%d dlopen_list dlopen(\"%s\", RTLD_NOW) = 0x1000 (1.500 ms)", pid, pid, lib);
	CHECK(has_line(text, want, NULL), "watch's line for the dlopen");
	snprintf(want, sizeof(want), "%d + %s", pid, lib);
	CHECK(has_line(text, want, "(dlopen)"), "watch's line for the object it loaded");
	snprintf(want, sizeof(want), "%d/%d dlopen_list exit, killed by SIGKILL", pid, pid);
	CHECK(has_line(text, want, NULL), "watch's line for the exit");
	if (tap_failed)
		printf("# text:\n%s", text ? text : "");
out:
	if (out)
		fclose(out);
	free(text);
	return tap_done();
}
