// SPDX-License-Identifier: GPL-2.0
/* A core file's stacks, and its Python frames. */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corefile.h"
#include "debuginfo_cache.h"
#include "elfobj.h"
#include "framecache.h"
#include "pystate.h"
#include "unwind.h"
#include "unwind_impl.h"

/* A core's module files, found by build-id or by the path the core names (dwfl's own search). */
static int find_elf_for_core(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
			     char **file_name, Elf **elfp)
{
	int fd = dwfl_build_id_find_elf(mod, userdata, name, base, file_name, elfp);

	if (fd >= 0)
		debuginfo_cache__note_main(userdata, fd);
	return fd;
}

struct core_walk {
	struct stacks *s;
	unsigned int max;
	size_t seen;
};

static int core_thread_cb(Dwfl_Thread *thread, void *arg)
{
	struct core_walk *cw = arg;
	pid_t tid = dwfl_thread_tid(thread);

	for (size_t i = 0; i < cw->s->n; i++) {
		struct thread_stack *ts = &cw->s->t[i];
		struct walk w = { .ts = ts, .max = cw->max };

		if (ts->tid != tid || ts->n_frames || ts->error)
			continue;
		cw->seen++;
		if (dwfl_thread_getframes(thread, unwind_frame_cb, &w) && !ts->error &&
		    !ts->n_frames)
			ts->error = strdup(dwfl_errmsg(-1));
		break;
	}
	return DWARF_CB_OK;
}

int stacks__from_core(const struct corefile *core, const char *exe, unsigned int max_frames,
		      struct stacks **out, char *why, size_t whylen)
{
	struct core_walk cw;
	static char *debuginfo_path;
	static const Dwfl_Callbacks core_callbacks = {
		.find_elf = find_elf_for_core,
		.find_debuginfo = debuginfo_cache__find,
		.debuginfo_path = &debuginfo_path,
	};
	struct pc_memo memo = { 0 };
	struct framecache *fc = NULL;
	struct stacks *s = calloc(1, sizeof(*s));
	Dwfl *dwfl = dwfl_begin(&core_callbacks);
	int err = 0;

	*out = NULL;
	if (!s || !dwfl || !(s->t = calloc(core->n_threads, sizeof(*s->t)))) {
		err = -ENOMEM;
		snprintf(why, whylen, "out of memory reading core file %s", core->path);
		goto out;
	}
	dwfl_report_begin(dwfl);
	if (dwfl_core_file_report(dwfl, core->elf, exe) < 0) {
		dwfl_report_end(dwfl, NULL, NULL);
		snprintf(why, whylen, "cannot read the modules of core file %s: %s", core->path,
			 dwfl_errmsg(-1));
		err = -EINVAL;
		goto out;
	}
	dwfl_report_end(dwfl, NULL, NULL);
	if (dwfl_core_file_attach(dwfl, core->elf) < 0) {
		snprintf(why, whylen, "cannot read the threads of core file %s: %s", core->path,
			 dwfl_errmsg(-1));
		err = -EINVAL;
		goto out;
	}
	/* Every thread in one pass: dwfl_getthread_frames on a core leaked 16 bytes a call
	 * (elfutils 0.188, seen under LeakSanitizer). */
	for (size_t i = 0; i < core->n_threads; i++)
		s->t[s->n++].tid = core->threads[i].tid;
	cw = (struct core_walk){ .s = s, .max = max_frames };
	if (dwfl_getthreads(dwfl, core_thread_cb, &cw) && !cw.seen)
		for (size_t i = 0; i < s->n; i++)
			s->t[i].error = strdup(dwfl_errmsg(-1));
	for (size_t i = 0; i < s->n; i++)
		if (!s->t[i].n_frames && !s->t[i].error)
			s->t[i].error = strdup("libdwfl read no registers for this thread");
	fc = framecache__new();
	for (size_t i = 0; i < s->n && !err; i++) {
		struct thread_stack *ts = &s->t[i];

		err = unwind_symbolize(dwfl, fc, &memo, ts);
		while (!err && ts->n_frames > max_frames) {
			struct stack_frame *f = &ts->frames[--ts->n_frames];

			free(f->function);
			free(f->module);
			free(f->file);
			ts->truncated = true;
		}
	}
	if (err)
		snprintf(why, whylen, "out of memory unwinding core file %s", core->path);
out:
	pc_memo__free(&memo);
	framecache__close(fc);
	return unwind_capture_end(s, NULL, dwfl, err, out);
}

int stacks__core_python(struct stacks *s, const struct corefile *core, const char *exe,
			unsigned int max_frames, struct py_interp *pi, char *why, size_t whylen)
{
	const char *core_exe = corefile__exe(core);
	struct py_object_ref refs[8];
	struct elf_object *objs[8];
	size_t n = 0;
	int err;

	/* The executable first (a static embedding), then any object named like libpython. */
	for (size_t i = 0; i < core->n_files && n < 8; i++) {
		const struct core_file_map *f = &core->files[i];
		const char *base = strrchr(f->path, '/');
		bool is_exe = core_exe && !strcmp(f->path, core_exe), seen = false;

		for (size_t k = 0; k < i && !seen; k++)
			seen = !strcmp(core->files[k].path, f->path);
		if (seen || f->offset || (!is_exe && !strstr(base ? base : f->path, "python")))
			continue;
		if (!(objs[n] = elfobj__open(is_exe && exe ? exe : f->path)))
			continue;
		refs[n] = (struct py_object_ref){ f->path, objs[n],
						  elfobj__type(objs[n]) == ET_EXEC ? 0 : f->start };
		if (is_exe && n) { /* keep the executable at 0 */
			struct py_object_ref r = refs[0];
			struct elf_object *o = objs[0];

			refs[0] = refs[n], objs[0] = objs[n];
			refs[n] = r, objs[n] = o;
		}
		n++;
	}
	err = py_interp__find(refs, n, pi, why, whylen);
	if (!err && py_snapshot__read_core(pi, core, max_frames, &s->py))
		err = -ENOMEM;
	if (!err)
		unwind_link_python(s);
	for (size_t i = 0; i < n; i++)
		elfobj__free(objs[i]);
	return err;
}
