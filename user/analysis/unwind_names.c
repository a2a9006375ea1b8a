// SPDX-License-Identifier: GPL-2.0
/* Frames named as gdb names them: DWARF functions and inline frames, else ELF symbols. */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cu_lookup.h"
#include "debuginfo_cache.h"
#include "demangle.h"
#include "framecache.h"
#include "unwind.h"
#include "unwind_impl.h"

static char *die_function_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = NULL;
	char buf[1024];

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (name) {
		demangle(name, buf, sizeof(buf));
		return strdup(buf);
	}
	if (dwarf_attr_integrate(die, DW_AT_name, &attr))
		name = dwarf_formstring(&attr);
	return name ? strdup(name) : NULL;
}

/* Where the inline instance @die was called from: file (new string) and line. */
static char *call_site(Dwarf_Die *cudie, Dwarf_Die *die, int *line)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word v;
	size_t nfiles;
	const char *name;

	if (dwarf_attr(die, DW_AT_call_line, &attr) && !dwarf_formudata(&attr, &v))
		*line = (int)v;
	if (!dwarf_attr(die, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &v) ||
	    dwarf_getsrcfiles(cudie, &files, &nfiles) || v >= nfiles)
		return NULL;
	name = dwarf_filesrc(files, v, NULL, NULL);
	return name ? strdup(name) : NULL;
}

static int push_frame(struct thread_stack *ts, size_t *cap, const struct stack_frame *f)
{
	if (ts->n_frames == *cap) {
		if (ARRAY_GROW(ts->frames, *cap, 32))
			return -ENOMEM;
	}
	ts->frames[ts->n_frames++] = *f;
	return 0;
}

/*
 * @f's source file and line at @lookup: from the unit the aranges scan found (@scanned), else
 * through libdwfl when the module has DWARF (@dbg).
 */
static void frame_line(Dwfl_Module *mod, Dwarf_Die *cudie, bool scanned, bool dbg,
		       Dwarf_Addr lookup, Dwarf_Addr bias, struct stack_frame *f)
{
	if (scanned) {
		/* The same row dwfl_module_getsrc picks: the last one at or below the pc. */
		Dwarf_Line *line = dwarf_getsrc_die(cudie, lookup - bias);
		const char *src = line ? dwarf_linesrc(line, NULL, NULL) : NULL;

		if (line)
			dwarf_lineno(line, &f->line);
		f->file = src ? strdup(src) : NULL;
	} else if (dbg) {
		Dwfl_Line *line = dwfl_module_getsrc(mod, lookup);
		const char *src = line ? dwfl_lineinfo(line, NULL, &f->line, NULL, NULL, NULL) :
					 NULL;

		f->file = src ? strdup(src) : NULL;
	}
}

/*
 * Inline frames, innermost first, pushed onto @ts before the real frame of their pc; each outer
 * one is at its callee's call site. The scopes after an inlined subroutine are those of its
 * abstract definition: its callers come from the scopes that contain the inlined DIE itself.
 * @*scopes (@nscopes of them) may be replaced; the caller frees the last. @f ends as the real
 * frame, named by its subprogram when DWARF has one. 0 or -ENOMEM.
 */
static int push_inline_frames(struct thread_stack *ts, size_t *cap, Dwarf_Die *cudie,
			      Dwarf_Die **scopes, int nscopes, struct stack_frame *f)
{
	for (int k = 0; k < nscopes;) {
		Dwarf_Die *die = &(*scopes)[k], *outer = NULL;
		int tag = dwarf_tag(die), nouter;

		if (tag == DW_TAG_subprogram) {
			f->function = die_function_name(die);
			break;
		}
		if (tag != DW_TAG_inlined_subroutine) {
			k++;
			continue;
		}
		f->function = die_function_name(die);
		/* Inline frames are printed before the real frame of their pc. */
		f->inlined = true;
		if (push_frame(ts, cap, f))
			return -ENOMEM;
		f->inlined = false;
		f->function = NULL;
		f->module = f->module ? strdup(f->module) : NULL;
		f->file = call_site(cudie, die, &f->line);
		nouter = dwarf_getscopes_die(die, &outer);
		free(*scopes);
		*scopes = outer;
		nscopes = nouter;
		k = 1; /* outer[0] is the inlined DIE itself */
	}
	return 0;
}

/*
 * Name each frame as gdb would: the DWARF subprogram (and the inline frames at that pc, innermost
 * first) when debug info is there, else the ELF symbol. Return addresses are looked up at pc - 1,
 * inside the call.
 */
static int symbolize_frames(Dwfl *dwfl, struct thread_stack *ts)
{
	struct stack_frame *raw = ts->frames;
	size_t n = ts->n_frames, cap = 0;

	ts->frames = NULL;
	ts->n_frames = 0;
	for (size_t i = 0; i < n; i++) {
		struct stack_frame f = raw[i];
		Dwarf_Addr lookup = stack_frame__lookup_pc(&f), bias = 0;
		Dwfl_Module *mod = dwfl_addrmodule(dwfl, lookup);
		Dwarf *dbg = mod ? dwfl_module_getdwarf(mod, &bias) : NULL;
		Dwarf_Die cu_mem, *cudie = NULL;
		/* The unit from .debug_aranges read in place; libdwfl's lookup builds the whole
		 * table (see cu_lookup.h), so it is asked only when the scan finds nothing. */
		bool scanned = dbg && !cu_lookup(dbg, lookup - bias, &cu_mem);
		Dwarf_Die *scopes = NULL;
		int nscopes;
		const char *modname = NULL, *symname = NULL;
		GElf_Off off = 0;
		GElf_Sym sym;

		if (scanned)
			cudie = &cu_mem;
		else if (dbg)
			cudie = dwfl_module_addrdie(mod, lookup, &bias);
		nscopes = cudie ? dwarf_getscopes(cudie, lookup - bias, &scopes) : 0;

		if (mod) {
			dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &modname, NULL);
			symname = dwfl_module_addrinfo(mod, lookup, &off, &sym, NULL, NULL, NULL);
		}
		f.module = modname ? strdup(modname) : NULL;
		f.offset = symname ? off + (lookup != f.pc) : 0;
		frame_line(mod, cudie, scanned, dbg != NULL, lookup, bias, &f);
		if (push_inline_frames(ts, &cap, cudie, &scopes, nscopes, &f)) {
			free(scopes);
			free(raw);
			return -ENOMEM;
		}
		if (!f.function && symname) {
			char buf[1024];

			demangle(symname, buf, sizeof(buf));
			f.function = strdup(buf);
		}
		free(scopes);
		if (push_frame(ts, &cap, &f)) {
			free(raw);
			return -ENOMEM;
		}
	}
	free(raw);
	return 0;
}

void unwind_free_frames(struct stack_frame *f, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		free(f[k].function);
		free(f[k].module);
		free(f[k].file);
	}
	free(f);
}

static int copy_frame(struct stack_frame *dst, const struct stack_frame *src)
{
	*dst = *src;
	dst->function = src->function ? strdup(src->function) : NULL;
	dst->module = src->module ? strdup(src->module) : NULL;
	dst->file = src->file ? strdup(src->file) : NULL;
	return (src->function && !dst->function) || (src->module && !dst->module) ||
			       (src->file && !dst->file) ?
		       -ENOMEM :
		       0;
}

/*
 * One pc (@one holds its raw frame) named from the frame cache when the object's build-id has it
 * there, else from DWARF and then kept in the cache.
 */
static int symbolize_cached(Dwfl *dwfl, struct framecache *fc, struct thread_stack *one)
{
	const struct stack_frame raw = one->frames[0];
	Dwarf_Addr lookup = stack_frame__lookup_pc(&raw), elf_bias = 0, bias;
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, lookup);
	const struct fc_frame *hit;
	const unsigned char *bid = NULL;
	const char *modname = NULL;
	GElf_Addr vaddr;
	size_t n = 0;
	int bidlen = 0, err;

	/* Keyed by the pc as an address of the ELF file (the bias libdwfl names it with): the
	 * same file mapped elsewhere, or only in part, has the same keys. */
	if (mod && dwfl_module_getelf(mod, &elf_bias)) {
		dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &modname, NULL);
		bidlen = dwfl_module_build_id(mod, &bid, &vaddr);
	}
	hit = bidlen > 0 ? framecache__get(fc, bid, bidlen, raw.pc - elf_bias, raw.activation, &n) :
			   NULL;
	if (!hit) {
		struct fc_frame *keep;

		err = symbolize_frames(dwfl, one);
		/* Names from DWARF only: a module without can gain it (a debug package). And only
		 * from files root's or ours: another user's could claim the build-id of libc. */
		if (err || bidlen <= 0 || !dwfl_module_getdwarf(mod, &bias) ||
		    !debuginfo_cache__trusted(mod))
			return err;
		keep = calloc(one->n_frames ? one->n_frames : 1, sizeof(*keep));
		if (!keep)
			return -ENOMEM;
		for (size_t k = 0; k < one->n_frames; k++) {
			const struct stack_frame *f = &one->frames[k];

			keep[k] = (struct fc_frame){ .inlined = f->inlined,
						     .function = f->function,
						     .offset = f->offset,
						     .file = f->file,
						     .line = f->line };
		}
		err = framecache__put(fc, bid, bidlen, raw.pc - elf_bias, raw.activation, keep,
				      one->n_frames);
		free(keep);
		return err;
	}
	free(one->frames);
	one->n_frames = 0;
	one->frames = calloc(n, sizeof(*one->frames));
	if (!one->frames)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		struct stack_frame *f = &one->frames[one->n_frames++];

		f->pc = raw.pc;
		f->activation = raw.activation;
		f->inlined = hit[k].inlined;
		f->offset = hit[k].offset;
		f->line = hit[k].line;
		f->function = hit[k].function ? strdup(hit[k].function) : NULL;
		f->file = hit[k].file ? strdup(hit[k].file) : NULL;
		f->module = modname ? strdup(modname) : NULL;
		if ((hit[k].function && !f->function) || (hit[k].file && !f->file) ||
		    (modname && !f->module))
			return -ENOMEM;
	}
	return 0;
}

/* The pc of @raw as an address of its object's file, on each frame @one names it with. */
static void set_module_offset(Dwfl *dwfl, const struct stack_frame *raw, struct thread_stack *one)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, stack_frame__lookup_pc(raw));
	Dwarf_Addr bias = 0;

	if (!mod || !dwfl_module_getelf(mod, &bias))
		return;
	for (size_t k = 0; k < one->n_frames; k++) {
		one->frames[k].module_offset = raw->pc - bias;
		one->frames[k].has_module_offset = true;
	}
}

int unwind_symbolize(Dwfl *dwfl, struct framecache *fc, struct pc_memo *memo,
		     struct thread_stack *ts)
{
	struct stack_frame *raw = ts->frames;
	size_t n = ts->n_frames, cap = 0;
	int err = 0;

	ts->frames = NULL;
	ts->n_frames = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const struct thread_stack *named = NULL;

		for (size_t m = 0; m < memo->n && !named; m++)
			if (memo->e[m].pc == raw[i].pc &&
			    memo->e[m].activation == raw[i].activation)
				named = &memo->e[m].named;
		if (!named) {
			struct thread_stack one = { .frames = malloc(sizeof(raw[i])),
						    .n_frames = 1 };

			if (ARRAY_RESERVE(memo->e, memo->cap, memo->n + 1) || !one.frames) {
				free(one.frames);
				err = -ENOMEM;
				break;
			}
			one.frames[0] = raw[i];
			err = fc ? symbolize_cached(dwfl, fc, &one) : symbolize_frames(dwfl, &one);
			if (err) {
				unwind_free_frames(one.frames, one.n_frames);
				break;
			}
			set_module_offset(dwfl, &raw[i], &one);
			memo->e[memo->n].pc = raw[i].pc;
			memo->e[memo->n].activation = raw[i].activation;
			memo->e[memo->n].named = one;
			named = &memo->e[memo->n++].named;
		}
		for (size_t k = 0; k < named->n_frames && !err; k++) {
			struct stack_frame f;

			err = copy_frame(&f, &named->frames[k]);
			/* How the pc was found is this stack's, not the name's (memo, cache). */
			f.scanned = raw[i].scanned;
			if (!err)
				err = push_frame(ts, &cap, &f);
		}
	}
	free(raw);
	/* Thousands of threads keep their frames to the end (the output): no room to spare. */
	if (!err && ts->n_frames < cap)
		ARRAY_SHRINK(ts->frames, ts->n_frames);
	return err;
}

void pc_memo__free(struct pc_memo *memo)
{
	for (size_t m = 0; m < memo->n; m++)
		unwind_free_frames(memo->e[m].named.frames, memo->e[m].named.n_frames);
	free(memo->e);
}

void thread_stack__clear(struct thread_stack *ts)
{
	unwind_free_frames(ts->frames, ts->n_frames);
	free(ts->error);
	ts->frames = NULL;
	ts->n_frames = 0;
	ts->error = NULL;
	ts->truncated = false;
}

void pc_memo__clear(struct pc_memo *memo)
{
	pc_memo__free(memo);
	memset(memo, 0, sizeof(*memo));
}

void pc_memo__drop_unnamed(struct pc_memo *memo)
{
	size_t k = 0;

	for (size_t m = 0; m < memo->n; m++) {
		if (memo->e[m].named.n_frames && memo->e[m].named.frames[0].module)
			memo->e[k++] = memo->e[m];
		else
			unwind_free_frames(memo->e[m].named.frames, memo->e[m].named.n_frames);
	}
	memo->n = k;
}
