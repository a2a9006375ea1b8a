// SPDX-License-Identifier: GPL-2.0
/*
 * The frame walk every unwind uses and the stacks it gives: freed, printed, as JSON, joined to
 * the Python frames. The unwinds themselves are in the unwind_*.c files (unwind_impl.h).
 */
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "arch.h"
#include "procmaps.h"
#include "pystate.h"
#include "unwind.h"
#include "unwind_impl.h"

/* The CFI of the object holding @pc for it (.eh_frame, else .debug_frame), malloc'd; or NULL. */
static Dwarf_Frame *cfi_frame(Dwfl *dwfl, Dwarf_Addr pc)
{
	Dwfl_Module *m = dwfl_addrmodule(dwfl, pc);
	Dwarf_Frame *frame;
	Dwarf_Addr bias;
	Dwarf_CFI *cfi;

	if (!m)
		return NULL;
	if ((cfi = dwfl_module_eh_cfi(m, &bias)) && !dwarf_cfi_addrframe(cfi, pc - bias, &frame))
		return frame;
	if ((cfi = dwfl_module_dwarf_cfi(m, &bias)) && !dwarf_cfi_addrframe(cfi, pc - bias, &frame))
		return frame;
	return NULL;
}

enum unwind_cfi unwind_cfi_at(Dwfl *dwfl, Dwarf_Addr pc)
{
	Dwarf_Frame *frame = cfi_frame(dwfl, pc);
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 1;
	bool ends;
	int ra;

	if (!frame)
		return UNWIND_CFI_NONE;
	ra = dwarf_frame_info(frame, NULL, NULL, NULL);
	/* No operations, and ops at mem: "undefined" (libdw.h), _start's and clone3's mark. */
	ends = ra >= 0 && !dwarf_frame_register(frame, ra, mem, &ops, &nops) && !nops && ops == mem;
	free(frame);
	return ends ? UNWIND_CFI_OUTERMOST : UNWIND_CFI_CALLER;
}

char *unwind_no_cfi_why(Dwfl *dwfl, const struct stack_frame *f)
{
	Dwarf_Addr pc = stack_frame__lookup_pc(f);
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
	const char *file = NULL, *sym;
	char *why;

	if (!mod || unwind_cfi_at(dwfl, pc) != UNWIND_CFI_NONE)
		return NULL;
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &file, NULL);
	sym = dwfl_module_addrname(mod, pc);
	if (!file)
		file = "?";
	if (strrchr(file, '/'))
		file = strrchr(file, '/') + 1;
	if (asprintf(&why, "(%s in %s) has no unwind information (CFI)", sym ? sym : "??", file) <
	    0)
		return NULL;
	return why;
}

int unwind_frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	struct thread_stack *ts = w->ts;
	Dwarf_Addr pc;
	Dwarf_Word sp;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	/*
	 * A pc no user code can have ends the walk. Either the stack is corrupt, or the frame
	 * below had no CFI and libdwfl's frame-pointer guess read a register the code uses for
	 * data (OpenBLAS's assembly kernels): the two are told apart, as they mean different
	 * things to the reader. Page zero holds no code either, but a first frame may be there:
	 * a call through a null pointer.
	 */
	if (pc >= ARCH_USER_ADDR_END || (ts->n_frames && pc < 4096)) {
		char *why = ts->n_frames ?
				    unwind_no_cfi_why(dwfl_thread_dwfl(dwfl_frame_thread(state)),
						      &ts->frames[ts->n_frames - 1]) :
				    NULL;
		bool scan = why && w->scan_no_cfi;
		char **said = scan ? &w->no_cfi : &ts->error;

		free(*said);
		if (why ? asprintf(said,
				   "frame #%zu %s and its frame-pointer guess, 0x%" PRIx64
				   ", is no return address%s",
				   ts->n_frames - 1, why, (uint64_t)pc,
				   scan ? "" : "; stopped there") < 0 :
			  asprintf(said,
				   "frame #%zu's return address 0x%" PRIx64
				   " is no user-space address (a corrupt stack); stopped there",
				   ts->n_frames, (uint64_t)pc) < 0)
			*said = NULL;
		free(why);
		ts->truncated = !scan;
		return DWARF_CB_ABORT;
	}
	/* A return address lies in the caller's code: pc - 1 is inside its call. */
	if (w->acc && w->acc->pc_ok && !w->acc->pc_ok(w->acc->ctx, activation ? pc : pc - 1)) {
		free(ts->error);
		if (asprintf(&ts->error,
			     "frame #%zu (0x%" PRIx64 ") is in no executable mapping; "
			     "stopped there",
			     ts->n_frames, (uint64_t)pc) < 0)
			ts->error = NULL;
		ts->truncated = true;
		return DWARF_CB_ABORT;
	}
	/*
	 * A frame whose pc and stack pointer are the previous one's made no progress: the next
	 * step would give it again. A recursion has the same pc at a new SP each time.
	 */
	if (!dwfl_frame_reg(state, ARCH_DWARF_SP, &sp)) {
		if (w->have_last && w->last_pc == pc && w->last_sp == sp) {
			ts->truncated = true;
			free(ts->error);
			ts->error = strdup("the stack loops on one frame (the same pc and stack "
					   "pointer twice); stopped there");
			return DWARF_CB_ABORT;
		}
		w->last_pc = pc;
		w->last_sp = sp;
		w->have_last = true;
	} else {
		w->have_last = false;
	}
	if (ts->n_frames >= w->max) {
		ts->truncated = true;
		free(ts->error);
		if (asprintf(&ts->error, "more than %u frames; the rest left out", w->max) < 0)
			ts->error = NULL;
		return DWARF_CB_ABORT;
	}
	if (ts->n_frames == w->cap) {
		if (ARRAY_GROW(ts->frames, w->cap, 32))
			return DWARF_CB_ABORT;
	}
	memset(&ts->frames[ts->n_frames], 0, sizeof(ts->frames[0]));
	ts->frames[ts->n_frames].pc = pc;
	ts->frames[ts->n_frames++].activation = activation;
	return DWARF_CB_OK;
}

/*
 * The ELF whose machine libdwfl's unwinder takes its register set from: dlscope's own
 * executable (the targets are of its machine). Left to choose (NULL), libdwfl takes the first
 * module with an ELF image, and a module that is no object of this machine (a file a process
 * mapped, one replaced meanwhile) failed an assertion in its frame state (state_alloc).
 */
Elf *unwind_arch_elf(void)
{
	static Elf *elf;
	int fd;

	if (elf)
		return elf;
	elf_version(EV_CURRENT);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)))
		close(fd);
	return elf; /* fd stays open with it, for the life of the process */
}

/* What every capture ends with: the result on success, everything freed either way. */
int unwind_capture_end(struct stacks *s, struct procmaps *maps, Dwfl *dwfl, int err,
		       struct stacks **out)
{
	procmaps__free(maps);
	if (dwfl)
		dwfl_end(dwfl);
	if (err)
		stacks__free(s);
	else
		*out = s;
	return err;
}

/*
 * Each thread's Python frames: by its TID (3.11+) or its pthread_self() (3.9, 3.10), which
 * then gives the Python thread its TID for the lock-wait graph.
 */
void unwind_link_python(struct stacks *s)
{
	for (size_t i = 0; s->py && i < s->n; i++) {
		struct thread_stack *ts = &s->t[i];

		for (size_t k = 0; k < s->py->n && !ts->py; k++) {
			struct py_thread *pt = &s->py->t[k];

			if (pt->tid ? pt->tid == ts->tid :
				      ts->thread_pointer && pt->pthread_id == ts->thread_pointer) {
				pt->tid = ts->tid;
				ts->py = pt;
			}
		}
	}
}

size_t thread_stack__place_python(const struct thread_stack *ts, long *native)
{
	size_t j = 0, placed = 0, n = ts->py ? ts->py->n_frames : 0;

	for (size_t i = 0; i < n; i++)
		native[i] = -1;
	/* Innermost first on both sides: each eval call runs the frames down to its entry one. */
	for (size_t k = 0; k < ts->n_frames && j < n; k++) {
		const struct stack_frame *f = &ts->frames[k];

		if (f->inlined || !f->function || strcmp(f->function, "_PyEval_EvalFrameDefault"))
			continue;
		while (j < n) {
			bool entry = ts->py->frames[j].eval_entry;

			native[j++] = (long)k;
			placed++;
			if (entry)
				break;
		}
	}
	return placed;
}

bool stacks__holds_gil(const struct stacks *s, const struct thread_stack *ts)
{
	return s->py && ts->py && s->py->gil_locked && ts->py->tstate == s->py->gil_holder;
}

void stacks__free(struct stacks *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		for (size_t k = 0; k < s->t[i].n_frames; k++) {
			free(s->t[i].frames[k].function);
			free(s->t[i].frames[k].module);
			free(s->t[i].frames[k].file);
		}
		free(s->t[i].frames);
		free(s->t[i].error);
	}
	free(s->t);
	py_snapshot__free(s->py);
	free(s);
}

json_t *stack_frame__to_json(const struct stack_frame *f)
{
	char pc[24], moff[24];

	/* An address is a hex string in every document (docs/schema/common.schema.json). */
	snprintf(pc, sizeof(pc), "0x%" PRIx64, (uint64_t)f->pc);
	snprintf(moff, sizeof(moff), "0x%" PRIx64, f->module_offset);
	json_t *j = json_pack("{s:s, s:b, s:o, s:I, s:o, s:o, s:o, s:i}", "pc", pc, "inlined",
			      f->inlined, "function",
			      f->function ? json_string(f->function) : json_null(), "offset",
			      (json_int_t)f->offset, "module",
			      f->module ? json_string(f->module) : json_null(), "module_offset",
			      f->has_module_offset ? json_string(moff) : json_null(), "file",
			      f->file ? json_string(f->file) : json_null(), "line", f->line);

	if (j && f->scanned)
		json_object_set_new(j, "scanned", json_true());
	return j;
}
