// SPDX-License-Identifier: GPL-2.0
/* The typed watch event: raw BPF record in, text line and trace record out, and back. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "array.h"
#include "event.h"
#include "event_gpu.h"
#include "termsafe.h"

/* The BPF side names signals without signal.h: they must be the kernel's. */
_Static_assert(DLW_SIGILL == SIGILL && DLW_SIGTRAP == SIGTRAP && DLW_SIGABRT == SIGABRT &&
		       DLW_SIGBUS == SIGBUS && DLW_SIGFPE == SIGFPE && DLW_SIGSEGV == SIGSEGV &&
		       DLW_SIGKILL == SIGKILL && DLW_SIGCHLD == SIGCHLD && DLW_SIGCONT == SIGCONT &&
		       DLW_SIGSTOP == SIGSTOP && DLW_SIGURG == SIGURG && DLW_SIGWINCH == SIGWINCH,
	       "dlwatch.h's signal numbers");

/* A fixed-size string of the raw record, always terminated. */
static void copy_str(char *dst, size_t len, const char *src, size_t srclen)
{
	size_t n = strnlen(src, srclen < len ? srclen : len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static const char *futex_blocked_in(const struct event *ev)
{
	return ev->u.futex.what == EVENT_FUTEX_BLOCKED_DLOPEN ? "dlopen" :
	       ev->u.futex.what == EVENT_FUTEX_BLOCKED_DLSYM  ? "dlsym" :
								NULL;
}

const char *event__signal_name(int signo, char *buf, size_t len)
{
	const char *abbrev = signo > 0 ? sigabbrev_np(signo) : NULL;

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else if (signo >= SIGRTMIN && signo <= SIGRTMAX)
		snprintf(buf, len, "SIGRTMIN+%d", signo - SIGRTMIN);
	else
		snprintf(buf, len, "signal %d", signo);
	return buf;
}

void event__wait_status(unsigned long long status, char *buf, size_t len)
{
	int st = (int)status;
	char sig[32];

	if (WIFEXITED(st))
		snprintf(buf, len, "exit, status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "exit, killed by %s%s",
			 event__signal_name(WTERMSIG(st), sig, sizeof(sig)),
			 WCOREDUMP(st) ? " (core dumped)" : "");
	else
		snprintf(buf, len, "exit, status 0x%llx", status);
}

void event__dlopen_flags(unsigned long long flags, char *buf, size_t len)
{
	static const struct {
		unsigned long long bit;
		const char *name;
	} named[] = {
		{ RTLD_NOLOAD, "RTLD_NOLOAD" },
		{ RTLD_GLOBAL, "RTLD_GLOBAL" },
		{ RTLD_NODELETE, "RTLD_NODELETE" },
		{ RTLD_DEEPBIND, "RTLD_DEEPBIND" },
	};
	unsigned long long rest = flags & ~(unsigned long long)(RTLD_BINDING_MASK);
	size_t n;

	/* The binding is a 2-bit field: RTLD_LAZY (1) or RTLD_NOW (2); 0 names neither. */
	n = (size_t)snprintf(buf, len, "%s",
			     (flags & RTLD_BINDING_MASK) == RTLD_NOW  ? "RTLD_NOW" :
			     (flags & RTLD_BINDING_MASK) == RTLD_LAZY ? "RTLD_LAZY" :
									"0");
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]) && n < len; i++)
		if (rest & named[i].bit) {
			n += (size_t)snprintf(buf + n, len - n, "|%s", named[i].name);
			rest &= ~named[i].bit;
		}
	if (rest && n < len)
		snprintf(buf + n, len - n, "|0x%llx", rest);
}

void event__dl_handle(unsigned long long handle, char *buf, size_t len)
{
	/* <dlfcn.h>: RTLD_NEXT is (void *)-1, RTLD_DEFAULT (void *)0. */
	if (handle == (unsigned long long)(uintptr_t)RTLD_NEXT)
		snprintf(buf, len, "RTLD_NEXT");
	else if (handle == (unsigned long long)(uintptr_t)RTLD_DEFAULT)
		snprintf(buf, len, "RTLD_DEFAULT");
	else
		snprintf(buf, len, "0x%llx", handle);
}

/* Field setters that, as the collector always did, leave out a string that is not UTF-8. */
static void set(json_t *rec, const char *key, json_t *v)
{
	json_object_set_new(rec, key, v);
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

/* The "python" object of a dlopen record (docs/trace-format.md). */
static json_t *python_to_json(const struct py_import *py)
{
	json_t *o = json_object(), *frames = json_array();

	for (size_t i = 0; i < py->n; i++)
		json_array_append_new(frames,
				      json_pack("{s:s, s:s, s:i}", "function", py->f[i].function,
						"file", py->f[i].file, "line", py->f[i].line));
	json_object_set_new(o, "frames", frames);
	if (py->gap) {
		json_object_set_new(o, "omitted", jint(py->gap));
		json_object_set_new(o, "omitted_at", jint(py->gap_at));
	}
	if (py->more)
		json_object_set_new(o, "more", json_true());
	if (py->module)
		json_object_set_new(o, "import", json_string(py->module));
	if (py->site >= 0)
		json_object_set_new(o, "site", json_integer(py->site));
	if (py->error)
		json_object_set_new(o, "error", json_string(py->error));
	return o;
}

/* Reading a record: the first field that is missing or of the wrong type names the fault. */
struct reader {
	const json_t *rec;
	const char *type;
	char *why;
	size_t whylen;
	bool bad;
};

static const json_t *field(struct reader *r, const char *key, bool required, const char *what,
			   int (*ok)(const json_t *))
{
	const json_t *v = json_object_get(r->rec, key);

	if (r->bad)
		return NULL;
	if (!v && !required)
		return NULL;
	if (!v || !ok(v)) {
		snprintf(r->why, r->whylen, "a \"%s\" record %s \"%s\"%s%s", r->type,
			 v ? "whose" : "without", key, v ? " is not " : "", v ? what : "");
		r->bad = true;
		return NULL;
	}
	return v;
}

static int is_int(const json_t *v)
{
	return json_is_integer(v);
}

static int is_str(const json_t *v)
{
	return json_is_string(v);
}

static int is_str_or_null(const json_t *v)
{
	return json_is_string(v) || json_is_null(v);
}

static int is_bool(const json_t *v)
{
	return json_is_boolean(v);
}

static int is_array(const json_t *v)
{
	return json_is_array(v);
}

static uint64_t get_int(struct reader *r, const char *key, bool required)
{
	return (uint64_t)json_integer_value(field(r, key, required, "an integer", is_int));
}

static void get_str(struct reader *r, const char *key, bool required, char *buf, size_t len)
{
	const char *s = json_string_value(field(r, key, required, "a string", is_str));

	snprintf(buf, len, "%s", s ? s : "");
}

static int read_stack(struct reader *r, struct event_stack *s)
{
	const json_t *frames = field(r, "stack", false, "an array", is_array);
	const json_t *pcs = field(r, "stack_pc", false, "an array", is_array);
	const char *end = json_string_value(field(r, "stack_end", false, "a string", is_str));
	size_t i;
	json_t *v;

	json_array_foreach (frames, i, v) {
		const json_t *pc = json_array_get(pcs, i);

		if (!json_is_string(v) || (pc && !json_is_integer(pc))) {
			snprintf(r->why, r->whylen,
				 "a \"%s\" record whose stack frame %zu is not %s", r->type, i,
				 json_is_string(v) ? "an address" : "a string");
			r->bad = true;
			return -EINVAL;
		}
		if (event_stack__push(s, json_string_value(v), (uint64_t)json_integer_value(pc)))
			return -ENOMEM;
	}
	if (end && !(s->end = strdup(end)))
		return -ENOMEM;
	return 0;
}

static int python_bad(struct reader *r, const char *what)
{
	snprintf(r->why, r->whylen, "a \"%s\" record whose \"python\" %s", r->type, what);
	r->bad = true;
	return -EINVAL;
}

/* A record's "python" object: frames, each with function, file and line. */
static int read_python(struct reader *r, const json_t *o, struct py_import *py)
{
	const json_t *frames = json_object_get(o, "frames"), *v, *site;
	const char *mod, *err;
	size_t i;

	if (!json_is_object(o) || !json_is_array(frames))
		return python_bad(r, "is not an object with \"frames\"");
	json_array_foreach (frames, i, v) {
		const json_t *fn = json_object_get(v, "function"),
			     *file = json_object_get(v, "file");
		const json_t *line = json_object_get(v, "line");

		if (!json_is_string(fn) || !json_is_string(file) || !json_is_integer(line))
			return python_bad(r, "has a frame without function, file and line");
		if (py_import__push(py, json_string_value(fn), json_string_value(file),
				    (int)json_integer_value(line)))
			return -ENOMEM;
	}
	py->gap = (size_t)json_integer_value(json_object_get(o, "omitted"));
	py->gap_at = (size_t)json_integer_value(json_object_get(o, "omitted_at"));
	py->more = json_is_true(json_object_get(o, "more"));
	site = json_object_get(o, "site");
	py->site = json_is_integer(site) && json_integer_value(site) >= 0 &&
				   (size_t)json_integer_value(site) < py->n ?
			   (long)json_integer_value(site) :
			   -1;
	mod = json_string_value(json_object_get(o, "import"));
	err = json_string_value(json_object_get(o, "error"));
	if ((mod && !(py->module = strdup(mod))) || (err && !(py->error = strdup(err))))
		return -ENOMEM;
	return 0;
}

/*
 * Each kind: its raw record's fields, its text line, and its trace record's fields out and
 * back (the header fields, stack and Python stack are common).
 */
struct kind_ops {
	const char *id;
	void (*decode)(struct event *ev, const struct dlw_event *raw, bool full);
	void (*text)(const struct event *ev, bool resolved, char *buf, size_t len);
	void (*to_json)(const struct event *ev, json_t *j);
	void (*from_json)(struct reader *r, struct event *ev);
};

/* dlopen and dlmopen */

static void dlopen_decode(struct event *ev, const struct dlw_event *raw, bool full)
{
	ev->u.dlopen.path_null = raw->str_state == DLW_STR_NULL;
	if (!ev->u.dlopen.path_null)
		copy_str(ev->u.dlopen.path, DLW_STR_LEN, raw->str, sizeof(raw->str));
	ev->u.dlopen.flags = raw->arg0;
	ev->u.dlopen.lmid = raw->arg1;
	ev->u.dlopen.handle = (uint64_t)raw->ret;
	ev->u.dlopen.duration_ns = raw->duration_ns;
	/* A failure's path[] is its error (bpf: dlopen_error), with errno's text where the
	 * loader gave one, as dlerror() says it. */
	if (full && ev->u.dlopen.handle)
		copy_str(ev->u.dlopen.file, DLW_STR_LEN, raw->path, sizeof(raw->path));
	else if (full && raw->path[0]) {
		copy_str(ev->u.dlopen.error, DLW_STR_LEN, raw->path, sizeof(raw->path));
		if (raw->arg2 && raw->arg2 < 4096) {
			size_t n = strlen(ev->u.dlopen.error);

			snprintf(ev->u.dlopen.error + n, DLW_STR_LEN - n, ": %s",
				 strerror((int)raw->arg2));
		}
	}
}

static void dlopen_text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	const char *fn = ev->u.dlopen.lmid ? "dlmopen" : "dlopen";
	const char *q = ev->u.dlopen.path_null ? "" : "\"";
	const char *arg = ev->u.dlopen.path_null ? "NULL" : ev->u.dlopen.path;

	/* dlopen(NULL): the main program, not a file named "". */
	if (resolved)
		snprintf(buf, len, "%s(%s%s%s) = %s (%.3f ms)", fn, q, arg, q,
			 ev->u.dlopen.file[0] ? ev->u.dlopen.file :
			 ev->u.dlopen.handle  ? "the main program" :
						"NULL",
			 (double)ev->u.dlopen.duration_ns / 1e6);
	else {
		char flags[128];

		event__dlopen_flags(ev->u.dlopen.flags, flags, sizeof(flags));
		snprintf(buf, len, "%s(%s%s%s, %s) = 0x%llx (%.3f ms)", fn, q, arg, q, flags,
			 (unsigned long long)ev->u.dlopen.handle,
			 (double)ev->u.dlopen.duration_ns / 1e6);
	}
	if (ev->has_python) {
		char imp[600];
		size_t used = strlen(buf);

		py_import__describe(&ev->py, imp, sizeof(imp));
		if (imp[0] && used < len)
			snprintf(buf + used, len - used, " from %s", imp);
	}
	if (ev->u.dlopen.error[0]) {
		size_t used = strlen(buf);

		if (used < len)
			snprintf(buf + used, len - used, "; error: %s", ev->u.dlopen.error);
	}
}

static void dlopen_to_json(const struct event *ev, json_t *j)
{
	char names[128];

	set(j, "path", ev->u.dlopen.path_null ? json_null() : json_string(ev->u.dlopen.path));
	set(j, "file", json_string(ev->u.dlopen.file));
	set(j, "flags", jint(ev->u.dlopen.flags));
	/* The number in <dlfcn.h>'s names, as the text line says it. */
	event__dlopen_flags(ev->u.dlopen.flags, names, sizeof(names));
	set(j, "flags_names", json_string(names));
	set(j, "handle", jint(ev->u.dlopen.handle));
	set(j, "duration_ns", jint(ev->u.dlopen.duration_ns));
	if (!ev->u.dlopen.handle)
		set(j, "error",
		    ev->u.dlopen.error[0] ? json_string(ev->u.dlopen.error) : json_null());
}

static void dlopen_from_json(struct reader *r, struct event *ev)
{
	const json_t *v = field(r, "path", false, "a string or null", is_str_or_null);

	ev->u.dlopen.path_null = !json_is_string(v);
	snprintf(ev->u.dlopen.path, DLW_STR_LEN, "%s",
		 json_is_string(v) ? json_string_value(v) : "");
	get_str(r, "file", false, ev->u.dlopen.file, DLW_STR_LEN);
	ev->u.dlopen.flags = get_int(r, "flags", false);
	ev->u.dlopen.handle = get_int(r, "handle", false);
	ev->u.dlopen.duration_ns = get_int(r, "duration_ns", false);
	/* Traces before the error was read have none. */
	if (json_is_string(json_object_get(r->rec, "error")))
		get_str(r, "error", false, ev->u.dlopen.error, DLW_STR_LEN);
}

/* dlclose */

static void dlclose_decode(struct event *ev, const struct dlw_event *raw, bool full)
{
	ev->u.dlclose.handle = raw->arg0;
	ev->u.dlclose.result = raw->ret;
}

static void dlclose_text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	snprintf(buf, len, "dlclose(0x%llx) = %lld", (unsigned long long)ev->u.dlclose.handle,
		 (long long)ev->u.dlclose.result);
}

static void dlclose_to_json(const struct event *ev, json_t *j)
{
	set(j, "handle", jint(ev->u.dlclose.handle));
	set(j, "result", json_integer(ev->u.dlclose.result));
}

static void dlclose_from_json(struct reader *r, struct event *ev)
{
	ev->u.dlclose.handle = get_int(r, "handle", false);
	ev->u.dlclose.result = (int64_t)get_int(r, "result", false);
}

/* dlsym and dlvsym */

static void dlsym_decode(struct event *ev, const struct dlw_event *raw, bool full)
{
	copy_str(ev->u.dlsym.symbol, DLW_STR_LEN, raw->str, sizeof(raw->str));
	ev->u.dlsym.handle = raw->arg0;
	ev->u.dlsym.address = (uint64_t)raw->ret;
}

static void dlsym_text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	char handle[32];

	event__dl_handle(ev->u.dlsym.handle, handle, sizeof(handle));
	snprintf(buf, len, "dlsym(%s, \"%s\") = 0x%llx", handle, ev->u.dlsym.symbol,
		 (unsigned long long)ev->u.dlsym.address);
}

static void dlsym_to_json(const struct event *ev, json_t *j)
{
	set(j, "symbol", json_string(ev->u.dlsym.symbol));
	set(j, "handle", jint(ev->u.dlsym.handle));
	set(j, "address", jint(ev->u.dlsym.address));
}

static void dlsym_from_json(struct reader *r, struct event *ev)
{
	get_str(r, "symbol", false, ev->u.dlsym.symbol, DLW_STR_LEN);
	ev->u.dlsym.handle = get_int(r, "handle", false);
	ev->u.dlsym.address = get_int(r, "address", false);
}

/* A parallel region or BLAS dispatch */

static void omp_fork_decode(struct event *ev, const struct dlw_event *raw, bool full)
{
	ev->u.omp_fork.entry = (unsigned int)raw->arg0;
	ev->u.omp_fork.regions = raw->arg1;
	ev->u.omp_fork.runtime_id = (unsigned int)raw->ret;
}

static void omp_fork_text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	const char *what = ev->u.omp_fork.entry == DLW_ENTRY_BLAS_DISPATCH ?
				   "BLAS parallel dispatch (exec_blas)" :
				   "parallel region";
	const char *rt = ev->u.omp_fork.runtime;

	if (ev->in_dlopen)
		snprintf(buf, len, "%s #%llu started inside dlopen%s%s", what,
			 (unsigned long long)ev->u.omp_fork.regions, *rt ? " in " : "", rt);
	else
		snprintf(buf, len, "first %s of %s (#%llu of this thread)", what,
			 *rt ? rt : "a runtime", (unsigned long long)ev->u.omp_fork.regions);
}

static void omp_fork_to_json(const struct event *ev, json_t *j)
{
	set(j, "regions", jint(ev->u.omp_fork.regions));
	set(j, "entry", jint(ev->u.omp_fork.entry));
	if (ev->u.omp_fork.runtime[0])
		set(j, "runtime", json_string(ev->u.omp_fork.runtime));
}

static void omp_fork_from_json(struct reader *r, struct event *ev)
{
	ev->u.omp_fork.regions = get_int(r, "regions", false);
	ev->u.omp_fork.entry = (unsigned int)get_int(r, "entry", false);
	get_str(r, "runtime", false, ev->u.omp_fork.runtime, DLW_STR_LEN);
}

static void blas_thread_text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	snprintf(buf, len, "BLAS pool thread starts");
}

/* A GPU module load or program build (event_gpu.c) */

static void gpu_load_decode(struct event *ev, const struct dlw_event *raw, bool full)
{
	event_gpu__decode(ev, raw);
}

static void gpu_load_to_json(const struct event *ev, json_t *j)
{
	unsigned int fn = ev->u.gpu_load.function;
	const char *res = event__gpu_result(fn, ev->u.gpu_load.result);

	set(j, "function", json_string(event__gpu_fn(fn)));
	set(j, "runtime", json_string(event__gpu_runtime(fn)));
	set(j, "file", json_string(ev->u.gpu_load.file));
	if (ev->u.gpu_load.options[0])
		set(j, "options", json_string(ev->u.gpu_load.options));
	set(j, "image_size", jint(ev->u.gpu_load.image_size));
	if (ev->u.gpu_load.image)
		set(j, "image", jint(ev->u.gpu_load.image));
	if (ev->u.gpu_load.program || event_gpu__creates(fn))
		set(j, "program", jint(ev->u.gpu_load.program));
	if (!event_gpu__is_load(fn))
		set(j, "count", jint(ev->u.gpu_load.count));
	/* An OpenCL create call given no errcode_ret: no result to tell. */
	if (!ev->u.gpu_load.no_result) {
		set(j, "result", json_integer(ev->u.gpu_load.result));
		if (res)
			set(j, "result_name", json_string(res));
	}
	set(j, "duration_ns", jint(ev->u.gpu_load.duration_ns));
}

static void gpu_load_from_json(struct reader *r, struct event *ev)
{
	char fn[64];

	get_str(r, "function", false, fn, sizeof(fn));
	ev->u.gpu_load.function = event_gpu__parse_fn(fn);
	get_str(r, "file", false, ev->u.gpu_load.file, DLW_STR_LEN);
	get_str(r, "options", false, ev->u.gpu_load.options, DLW_STR_LEN);
	ev->u.gpu_load.image_size = get_int(r, "image_size", false);
	ev->u.gpu_load.image = get_int(r, "image", false);
	ev->u.gpu_load.program = get_int(r, "program", false);
	ev->u.gpu_load.count = (unsigned int)get_int(r, "count", false);
	ev->u.gpu_load.no_result = !json_object_get(r->rec, "result");
	ev->u.gpu_load.result = (int64_t)get_int(r, "result", false);
	ev->u.gpu_load.duration_ns = get_int(r, "duration_ns", false);
}

/* exec */

static void exec_decode(struct event *ev, const struct dlw_event *raw, bool full)
{
	copy_str(ev->u.exec.file, DLW_STR_LEN, raw->str, sizeof(raw->str));
}

static void exec_text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	snprintf(buf, len, "exec %s", ev->u.exec.file);
}

static void exec_to_json(const struct event *ev, json_t *j)
{
	set(j, "file", json_string(ev->u.exec.file));
}

static void exec_from_json(struct reader *r, struct event *ev)
{
	get_str(r, "file", false, ev->u.exec.file, DLW_STR_LEN);
}

/* fork, and a thread created inside dlopen */

static void fork_decode(struct event *ev, const struct dlw_event *raw, bool full)
{
	ev->u.fork.child = (pid_t)raw->arg0;
	ev->u.fork.thread = raw->arg1 == DLW_FORK_THREAD;
}

static void fork_text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	snprintf(buf, len, "%s %llu%s", ev->u.fork.thread ? "new thread" : "fork, child",
		 (unsigned long long)ev->u.fork.child, ev->in_dlopen ? " (inside dlopen)" : "");
}

static void fork_to_json(const struct event *ev, json_t *j)
{
	set(j, "child", json_integer(ev->u.fork.child));
	set(j, "thread", json_boolean(ev->u.fork.thread));
}

static void fork_from_json(struct reader *r, struct event *ev)
{
	ev->u.fork.child = (pid_t)get_int(r, "child", false);
	ev->u.fork.thread = json_is_true(field(r, "thread", false, "a boolean", is_bool));
}

/* A process's exit */

static void exit_decode(struct event *ev, const struct dlw_event *raw, bool full)
{
	ev->u.exit.wait_status = raw->arg0;
}

static void exit_text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	event__wait_status(ev->u.exit.wait_status, buf, len);
}

static void exit_to_json(const struct event *ev, json_t *j)
{
	/* check --json's COMMAND form: exit_status or signal; the raw status beside. */
	int st = (int)ev->u.exit.wait_status;
	char sig[32];

	set(j, "exit_status", WIFEXITED(st) ? json_integer(WEXITSTATUS(st)) : json_null());
	set(j, "signal",
	    WIFSIGNALED(st) ? json_string(event__signal_name(WTERMSIG(st), sig, sizeof(sig))) :
			      json_null());
	set(j, "core_dumped", json_boolean(WIFSIGNALED(st) && WCOREDUMP(st)));
	set(j, "wait_status", jint(ev->u.exit.wait_status));
}

static void exit_from_json(struct reader *r, struct event *ev)
{
	/* "exit_code" in traces before wait_status: the same raw status. */
	ev->u.exit.wait_status = json_object_get(r->rec, "wait_status") ?
					 get_int(r, "wait_status", false) :
					 get_int(r, "exit_code", false);
}

/* A fatal signal */

static void signal_decode(struct event *ev, const struct dlw_event *raw, bool full)
{
	ev->u.signal.signo = (unsigned int)raw->arg0;
	ev->u.signal.address = raw->arg1;
	ev->u.signal.sent = raw->arg2 != 0;
	ev->u.signal.sent_by = ev->u.signal.sent ? (int64_t)raw->arg2 - 1 : 0;
}

static void signal_text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	char sig[32];

	if (ev->u.signal.sent)
		snprintf(buf, len,
			 "fatal signal %s, sent by PID %" PRId64 " (%snot a fault), at %s",
			 event__signal_name((int)ev->u.signal.signo, sig, sizeof(sig)),
			 ev->u.signal.sent_by, ev->u.signal.sent_by == ev->pid ? "itself; " : "",
			 ev->u.signal.at[0] ? ev->u.signal.at : "?");
	else
		snprintf(buf, len, "fatal signal %s, fault address %s, at %s",
			 event__signal_name((int)ev->u.signal.signo, sig, sizeof(sig)),
			 ev->u.signal.where[0] ? ev->u.signal.where : "?",
			 ev->u.signal.at[0] ? ev->u.signal.at : "?");
}

static void signal_to_json(const struct event *ev, json_t *j)
{
	set(j, "at", json_string(ev->u.signal.at));
	set(j, "signal", jint(ev->u.signal.signo));
	set(j, "address", jint(ev->u.signal.address));
	set(j, "where", json_string(ev->u.signal.where));
	if (ev->u.signal.sent)
		set(j, "sent_by", jint(ev->u.signal.sent_by));
}

static void signal_from_json(struct reader *r, struct event *ev)
{
	get_str(r, "at", false, ev->u.signal.at, sizeof(ev->u.signal.at));
	ev->u.signal.signo = (unsigned int)get_int(r, "signal", false);
	ev->u.signal.address = get_int(r, "address", false);
	get_str(r, "where", false, ev->u.signal.where, sizeof(ev->u.signal.where));
	ev->u.signal.sent = json_object_get(r->rec, "sent_by") != NULL;
	ev->u.signal.sent_by = ev->u.signal.sent ? (int64_t)get_int(r, "sent_by", false) : 0;
}

/* A futex wait */

static void futex_decode(struct event *ev, const struct dlw_event *raw, bool full)
{
	/* The kernel's waits only: one sampled blocked in dlopen or dlsym is the collector's own
	 * event (user/collect), never a record. */
	ev->u.futex.what = raw->arg1 == DLW_FUTEX_BEGINS_IN_DLOPEN ? EVENT_FUTEX_BEGINS :
								     EVENT_FUTEX_ENDED;
	ev->u.futex.futex = raw->arg0;
	ev->u.futex.duration_ns = raw->duration_ns;
}

static void futex_text(const struct event *ev, bool resolved, char *buf, size_t len)
{
	const char *in = futex_blocked_in(ev);
	unsigned long long futex = ev->u.futex.futex;

	if (in)
		snprintf(buf, len,
			 "blocked in a futex wait on 0x%llx inside %s(\"%s\"), which began "
			 "%.0f ms ago",
			 futex, in, ev->u.futex.call, (double)ev->u.futex.duration_ns / 1e6);
	else if (ev->u.futex.what == EVENT_FUTEX_BEGINS)
		snprintf(buf, len, "futex wait on 0x%llx begins inside dlopen", futex);
	else
		snprintf(buf, len, "futex wait on 0x%llx for %.1f ms%s", futex,
			 (double)ev->u.futex.duration_ns / 1e6,
			 ev->in_dlopen ? " (inside dlopen)" : "");
}

static void futex_to_json(const struct event *ev, json_t *j)
{
	set(j, "futex", jint(ev->u.futex.futex));
	if (futex_blocked_in(ev)) {
		set(j, "blocked_in", json_string(futex_blocked_in(ev)));
		set(j, "call", json_string(ev->u.futex.call));
	}
	set(j, "duration_ns", jint(ev->u.futex.duration_ns));
}

static void futex_from_json(struct reader *r, struct event *ev)
{
	char in[16];

	ev->u.futex.futex = get_int(r, "futex", false);
	ev->u.futex.duration_ns = get_int(r, "duration_ns", false);
	get_str(r, "blocked_in", false, in, sizeof(in));
	get_str(r, "call", false, ev->u.futex.call, DLW_STR_LEN);
	/* docs/trace-format.md: duration 0 is a wait inside dlopen reported as it began. */
	if (!strcmp(in, "dlopen"))
		ev->u.futex.what = EVENT_FUTEX_BLOCKED_DLOPEN;
	else if (!strcmp(in, "dlsym"))
		ev->u.futex.what = EVENT_FUTEX_BLOCKED_DLSYM;
	else if (in[0] && !r->bad) {
		snprintf(r->why, r->whylen,
			 "a \"futex_wait\" record blocked in \"%s\", neither dlopen nor dlsym", in);
		r->bad = true;
	} else
		ev->u.futex.what = ev->u.futex.duration_ns ? EVENT_FUTEX_ENDED : EVENT_FUTEX_BEGINS;
}

static const struct kind_ops kinds[EVENT__COUNT] = {
	[EVENT_DLOPEN] = { "dlopen", dlopen_decode, dlopen_text, dlopen_to_json, dlopen_from_json },
	[EVENT_DLCLOSE] = { "dlclose", dlclose_decode, dlclose_text, dlclose_to_json,
			    dlclose_from_json },
	[EVENT_DLSYM] = { "dlsym", dlsym_decode, dlsym_text, dlsym_to_json, dlsym_from_json },
	[EVENT_OMP_FORK] = { "omp_fork", omp_fork_decode, omp_fork_text, omp_fork_to_json,
			     omp_fork_from_json },
	[EVENT_BLAS_THREAD] = { "blas_thread", NULL, blas_thread_text, NULL, NULL },
	[EVENT_GPU_LOAD] = { "gpu_load", gpu_load_decode, event_gpu__text, gpu_load_to_json,
			     gpu_load_from_json },
	[EVENT_EXEC] = { "exec", exec_decode, exec_text, exec_to_json, exec_from_json },
	[EVENT_FORK] = { "fork", fork_decode, fork_text, fork_to_json, fork_from_json },
	[EVENT_EXIT] = { "exit", exit_decode, exit_text, exit_to_json, exit_from_json },
	[EVENT_SIGNAL] = { "signal", signal_decode, signal_text, signal_to_json, signal_from_json },
	[EVENT_FUTEX_WAIT] = { "futex_wait", futex_decode, futex_text, futex_to_json,
			       futex_from_json },
};

const char *event_kind__id(enum event_kind k)
{
	return k > 0 && k < EVENT__COUNT ? kinds[k].id : NULL;
}

enum event_kind event_kind__parse(const char *id)
{
	for (int k = 1; id && k < EVENT__COUNT; k++)
		if (!strcmp(id, kinds[k].id))
			return (enum event_kind)k;
	return 0;
}

int event__decode(struct event *ev, const struct dlw_event *raw, size_t size, char *why,
		  size_t whylen)
{
	/* Full-size events (dlopen...) also carry the link map's path. */
	bool full = size >= offsetof(struct dlw_event, path) + sizeof(raw->path);

	memset(ev, 0, sizeof(*ev));
	if (size < offsetof(struct dlw_event, path)) {
		snprintf(why, whylen, "a raw event of %zu bytes, shorter than its header", size);
		return -EINVAL;
	}
	if (!event_kind__id((enum event_kind)raw->type)) {
		snprintf(why, whylen, "a raw event of unknown type %u", raw->type);
		return -EINVAL;
	}
	ev->kind = (enum event_kind)raw->type;
	ev->t = raw->ts_ns;
	ev->pid = (pid_t)raw->pid;
	ev->tid = (pid_t)raw->tid;
	ev->in_dlopen = raw->in_dlopen;
	/* The thread names itself (prctl): shown escaped, a newline included. */
	termsafe__escape(raw->comm, sizeof(raw->comm), ev->comm, sizeof(ev->comm));
	if (kinds[ev->kind].decode)
		kinds[ev->kind].decode(ev, raw, full);
	return 0;
}

void event__text(const struct event *ev, unsigned int style, char *buf, size_t len)
{
	if (event_kind__id(ev->kind))
		kinds[ev->kind].text(ev, style & EVENT_TEXT_RESOLVED, buf, len);
	else
		snprintf(buf, len, "?");
}

const char *event__object(const struct event *ev)
{
	const char *s = NULL;

	switch (ev->kind) {
	case EVENT_DLOPEN:
		s = ev->u.dlopen.file[0]   ? ev->u.dlopen.file :
		    ev->u.dlopen.path_null ? NULL :
					     ev->u.dlopen.path;
		break;
	case EVENT_GPU_LOAD: s = ev->u.gpu_load.file; break;
	case EVENT_OMP_FORK: s = ev->u.omp_fork.runtime; break;
	case EVENT_EXEC: s = ev->u.exec.file; break;
	case EVENT_SIGNAL: s = ev->u.signal.where; break;
	case EVENT_FUTEX_WAIT:
		/* Found blocked inside dlopen: the library filter finds it under that file. */
		if (ev->u.futex.what == EVENT_FUTEX_BLOCKED_DLOPEN)
			s = ev->u.futex.call;
		break;
	default: break;
	}
	return s && *s ? s : NULL;
}

void event_stack__to_json(const struct event_stack *s, json_t *rec)
{
	json_t *text = json_array(), *pcs = json_array();

	for (size_t i = 0; i < s->n; i++) {
		json_array_append_new(text, json_string(s->frames[i]));
		json_array_append_new(pcs, json_integer((json_int_t)s->pcs[i]));
	}
	json_object_set_new(rec, "stack", text);
	json_object_set_new(rec, "stack_pc", pcs);
	if (s->end)
		json_object_set_new(rec, "stack_end", json_string(s->end));
}

json_t *event__to_json(const struct event *ev)
{
	json_t *j;

	if (!event_kind__id(ev->kind))
		return NULL;
	j = json_pack("{s:s, s:I, s:i, s:i, s:s, s:i}", "type", event_kind__id(ev->kind), "t",
		      (json_int_t)ev->t, "pid", ev->pid, "tid", ev->tid, "comm", ev->comm,
		      "in_dlopen", (int)ev->in_dlopen);
	if (!j)
		return NULL;
	if (ev->has_rank)
		set(j, "rank", json_integer(ev->rank));
	if (kinds[ev->kind].to_json)
		kinds[ev->kind].to_json(ev, j);
	if (ev->has_stack)
		event_stack__to_json(&ev->stack, j);
	if (ev->has_python)
		set(j, "python", python_to_json(&ev->py));
	return j;
}

int event__from_json(const json_t *rec, struct event *ev, char *why, size_t whylen)
{
	struct reader r = { .rec = rec, .why = why, .whylen = whylen };
	char comm[sizeof(ev->comm)];
	const json_t *v;

	memset(ev, 0, sizeof(*ev));
	if (!json_is_object(rec)) {
		snprintf(why, whylen, "a record that is not a JSON object");
		return -EINVAL;
	}
	r.type = json_string_value(json_object_get(rec, "type"));
	ev->kind = event_kind__parse(r.type);
	if (!ev->kind) {
		snprintf(why, whylen,
			 r.type ? "a record of unknown type \"%s\"" : "a record without a \"type\"",
			 r.type);
		return -EINVAL;
	}
	ev->t = get_int(&r, "t", true);
	ev->pid = (pid_t)get_int(&r, "pid", true);
	ev->tid = (pid_t)get_int(&r, "tid", false);
	get_str(&r, "comm", false, ev->comm, sizeof(ev->comm));
	termsafe__escape(strcpy(comm, ev->comm), sizeof(comm), ev->comm, sizeof(ev->comm));
	ev->in_dlopen = (unsigned int)get_int(&r, "in_dlopen", false);
	v = json_object_get(rec, "rank");
	if (json_is_integer(v)) {
		ev->has_rank = true;
		ev->rank = (int)json_integer_value(v);
	}
	if (kinds[ev->kind].from_json)
		kinds[ev->kind].from_json(&r, ev);
	ev->has_stack = json_object_get(rec, "stack") != NULL;
	ev->py.site = -1;
	if (!r.bad && json_object_get(rec, "python")) {
		ev->has_python = true;
		if (read_python(&r, json_object_get(rec, "python"), &ev->py) == -ENOMEM && !r.bad) {
			snprintf(why, whylen, "out of memory");
			r.bad = true;
		}
	}
	if (!r.bad && read_stack(&r, &ev->stack) == -ENOMEM && !r.bad) {
		snprintf(why, whylen, "out of memory");
		r.bad = true;
	}
	if (r.bad) {
		event__clear(ev);
		return -EINVAL;
	}
	return 0;
}

int event_stack__push(struct event_stack *s, const char *frame, uint64_t pc)
{
	if (ARRAY_RESERVE(s->frames, s->cap_frames, s->n + 1) ||
	    ARRAY_RESERVE(s->pcs, s->cap_pcs, s->n + 1))
		return -ENOMEM;
	s->frames[s->n] = strdup(frame);
	if (!s->frames[s->n])
		return -ENOMEM;
	s->pcs[s->n++] = pc;
	return 0;
}

void event_stack__clear(struct event_stack *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->frames[i]);
	free(s->frames);
	free(s->pcs);
	free(s->end);
	memset(s, 0, sizeof(*s));
}

void event__clear(struct event *ev)
{
	event_stack__clear(&ev->stack);
	ev->has_stack = false;
	py_import__clear(&ev->py);
	ev->has_python = false;
}
