// SPDX-License-Identifier: GPL-2.0
/*
 * The CPython interpreter of a watched process: found among its objects (or in the command's
 * file before it runs) and told to the kernel, which then reads the Python stack of each dlopen.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlwatch.skel.h"
#include "elfobj.h"
#include "pyimport.h"
#include "watch_internal.h"

/*
 * Is @ps a Python process (an interpreter among its objects: the executable, libpython, or a
 * program that embeds one)? Then the kernel learns where it is and how this version lays out
 * its frames, and captures the Python stack of every dlopen from then on.
 */
void pyprocs__find(struct watch *w, struct proc_state *ps)
{
	struct dlw_pycfg cfg;
	uint32_t key = (uint32_t)ps->pid;
	char why[256], note[400];
	int err;

	if (ps->python || !ps->g || !ps->g->n)
		return;
	err = libgraph__find_python(ps->g, &ps->py, why, sizeof(why));
	ps->python = !err;
	/* An interpreter whose frames are not known: said once, never left silent. */
	if (err == -ENOTSUP && !ps->py_unknown_said) {
		ps->py_unknown_said = true;
		snprintf(
			note, sizeof(note),
			"dlscope: process %d: %s; its dlopens are shown without their Python imports",
			ps->pid, why);
		SINKS(w, note, note);
	}
	if (ps->python && !ps->codes)
		ps->codes = py_code_cache__new();
	if (!ps->python || !w->skel)
		return;
	py_import__cfg(&ps->py, &cfg);
	if (bpf_map__update_elem(w->skel->maps.pyprocs, &key, sizeof(key), &cfg, sizeof(cfg),
				 BPF_ANY))
		ps->python = false;
}

/* A new image, or gone: no interpreter to read any more. */
void pyprocs__forget(struct watch *w, struct proc_state *ps, pid_t pid)
{
	uint32_t key = (uint32_t)pid;

	if (ps) {
		ps->python = false;
		py_code_cache__free(ps->codes);
		ps->codes = NULL;
	}
	if (w->skel)
		bpf_map__delete_elem(w->skel->maps.pyprocs, &key, sizeof(key), 0);
}

/*
 * The command's program, before it runs: an interpreter in a fixed-address executable (Debian's
 * python3.11) is known at once, so that its first dlopens, made while the collector is still
 * reading the process after its exec, carry their Python stacks too. A PIE or a shared
 * libpython is found at the first read of the process instead.
 */
void pyprocs__of_command(struct watch *w, struct proc_state *ps, const char *argv0)
{
	char found[PATH_MAX];
	struct elf_object *o = NULL;
	struct py_object_ref ref;
	struct dlw_pycfg cfg;
	uint32_t key = (uint32_t)ps->pid;
	char why[256];

	if (spawn__resolve(argv0, found, sizeof(found)) || !(o = elfobj__open(found)))
		return;
	ref = (struct py_object_ref){ found, o, 0 };
	if (elfobj__type(o) == ET_EXEC && !py_interp__find(&ref, 1, &ps->py, why, sizeof(why)) &&
	    (ps->codes = py_code_cache__new())) {
		py_import__cfg(&ps->py, &cfg);
		ps->python = ps->py_preset =
			w->skel && !bpf_map__update_elem(w->skel->maps.pyprocs, &key, sizeof(key),
							 &cfg, sizeof(cfg), BPF_ANY);
	}
	elfobj__free(o);
}
