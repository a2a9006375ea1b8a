// SPDX-License-Identifier: GPL-2.0
/* A Go program's goroutines, read from its memory through the layout its DWARF describes. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "goroutines.h"
#include "libgraph.h"
#include "target.h"

/* Bounds on what one read takes: a corrupt runtime cannot make it read without end. */
#define MAX_GOROUTINES 100000
#define MAX_GO_FRAMES 64
#define MAX_REASONS 256

/* Go's goroutine states (runtime/runtime2.go), and the bit a scan adds. */
enum { G_IDLE, G_RUNNABLE, G_RUNNING, G_SYSCALL, G_WAITING, G_DEAD = 6 };
#define G_SCAN 0x1000

/* Where the fields read lie, from DWARF; -1 when the program's DWARF does not say. */
struct go_layout {
	int g_stack_lo, g_stack_hi, g_sched_sp, g_sched_pc, g_sched_bp, g_status, g_goid,
		g_waitreason, g_startpc, g_m, m_procid;
};

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	return dwarf_attr(die, DW_AT_name, &attr) ? dwarf_formstring(&attr) : NULL;
}

/* The offset of member @name of the struct @type; -1 when it has none. */
static int member_offset(Dwarf_Die *type, const char *name)
{
	Dwarf_Die child;
	Dwarf_Attribute attr;
	Dwarf_Word off;

	if (dwarf_child(type, &child))
		return -1;
	do {
		const char *n = die_name(&child);

		if (dwarf_tag(&child) == DW_TAG_member && n && !strcmp(n, name) &&
		    dwarf_attr(&child, DW_AT_data_member_location, &attr) &&
		    !dwarf_formudata(&attr, &off) && off < (1u << 20))
			return (int)off;
	} while (!dwarf_siblingof(&child, &child));
	return -1;
}

/* The structure types runtime.g, runtime.gobuf, runtime.stack and runtime.m of @dw. */
static bool find_types(Dwarf *dw, Dwarf_Die types[4])
{
	static const char *const names[4] = { "runtime.g", "runtime.gobuf", "runtime.stack",
					      "runtime.m" };
	Dwarf_Off off = 0, next;
	size_t hsize;
	unsigned found = 0;

	while (found != 15 && !dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL)) {
		Dwarf_Die cu, die;

		if (dwarf_offdie(dw, off + hsize, &cu) && !dwarf_child(&cu, &die)) {
			do {
				const char *n;

				if (dwarf_tag(&die) != DW_TAG_structure_type ||
				    !(n = die_name(&die)))
					continue;
				for (int i = 0; i < 4; i++)
					if (!(found & (1u << i)) && !strcmp(n, names[i])) {
						types[i] = die;
						found |= 1u << i;
					}
			} while (!dwarf_siblingof(&die, &die));
		}
		off = next;
	}
	return found == 15;
}

static bool read_layout(Dwarf *dw, struct go_layout *l)
{
	Dwarf_Die t[4];
	int stack, sched;

	if (!find_types(dw, t))
		return false;
	stack = member_offset(&t[0], "stack");
	sched = member_offset(&t[0], "sched");
	*l = (struct go_layout){
		.g_stack_lo = stack < 0 ? -1 : stack + member_offset(&t[2], "lo"),
		.g_stack_hi = stack < 0 ? -1 : stack + member_offset(&t[2], "hi"),
		.g_sched_sp = sched < 0 ? -1 : sched + member_offset(&t[1], "sp"),
		.g_sched_pc = sched < 0 ? -1 : sched + member_offset(&t[1], "pc"),
		.g_sched_bp = sched < 0 ? -1 : sched + member_offset(&t[1], "bp"),
		.g_status = member_offset(&t[0], "atomicstatus"),
		.g_goid = member_offset(&t[0], "goid"),
		.g_waitreason = member_offset(&t[0], "waitreason"),
		.g_startpc = member_offset(&t[0], "startpc"),
		.g_m = member_offset(&t[0], "m"),
		.m_procid = member_offset(&t[3], "procid"),
	};
	return l->g_stack_lo >= 0 && l->g_stack_hi >= 0 && l->g_sched_sp >= 0 &&
	       l->g_sched_pc >= 0 && l->g_sched_bp >= 0 && l->g_status >= 0 && l->g_goid >= 0 &&
	       l->g_waitreason >= 0 && l->g_startpc >= 0 && l->g_m >= 0 && l->m_procid >= 0;
}

static int read_u64(const struct target *t, uint64_t addr, uint64_t *v)
{
	return target__read(t, addr, v, sizeof(*v));
}

/* A Go string {ptr, len} at @addr, as C (at most @len - 1 bytes); false when unreadable. */
static bool read_go_string(const struct target *t, uint64_t addr, char *buf, size_t len)
{
	uint64_t hdr[2];

	if (target__read(t, addr, hdr, sizeof(hdr)) || hdr[1] >= len ||
	    (hdr[1] && target__read(t, hdr[0], buf, hdr[1])))
		return false;
	buf[hdr[1]] = '\0';
	for (size_t i = 0; i < hdr[1]; i++)
		if ((unsigned char)buf[i] < 0x20)
			buf[i] = '?';
	return true;
}

struct go_reader {
	const struct target *t;
	const struct elf_object *exe;
	uint64_t bias;
	Dwarf *dw;
	struct go_layout l;
	char reasons[MAX_REASONS][48];
	size_t n_reasons;
	Dwarf_Die last_cu; /* the unit the last frame was in: a goroutine's frames share a few */
	bool last_cu_valid;
};

/* The compile unit holding @pc: Go writes no .debug_aranges, so each unit's ranges are asked. */
static bool cu_of(struct go_reader *r, uint64_t pc, Dwarf_Die *cu)
{
	Dwarf_Off off = 0, next;
	size_t hsize;

	if (!r->dw)
		return false;
	if (r->last_cu_valid && dwarf_haspc(&r->last_cu, pc) > 0) {
		*cu = r->last_cu;
		return true;
	}
	while (!dwarf_nextcu(r->dw, off, &next, &hsize, NULL, NULL, NULL)) {
		if (dwarf_offdie(r->dw, off + hsize, cu) && dwarf_haspc(cu, pc) > 0) {
			r->last_cu = *cu;
			r->last_cu_valid = true;
			return true;
		}
		off = next;
	}
	return false;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && !strcmp(s + n - k, tail);
}

static const char *origin_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Die origin;

	if (dwarf_attr(die, DW_AT_abstract_origin, &attr) && dwarf_formref_die(&attr, &origin))
		return die_name(&origin);
	return die_name(die);
}

/* File @idx of the line table of @cu, NULL when unknown. */
static const char *cu_file(Dwarf_Die *cu, Dwarf_Word idx)
{
	Dwarf_Files *files;
	size_t n;

	if (dwarf_getsrcfiles(cu, &files, &n) || idx >= n)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

#define MAX_INLINE_DEPTH 16

/*
 * The inlined calls containing @pc in @cu, innermost first, in *@out (malloc'd): found by
 * descending from the function through blocks. Go's abstract origins lie in other units, which
 * dwarf_getscopes follows into failure; only the instances are needed here. Returns how many.
 */
static int inline_chain(Dwarf_Die *cu, uint64_t pc, Dwarf_Die **out)
{
	Dwarf_Die chain[MAX_INLINE_DEPTH], die, parent = *cu;
	int n = 0;

	*out = NULL;
	for (int depth = 0; depth < MAX_INLINE_DEPTH + 1 && !dwarf_child(&parent, &die);) {
		bool found = false;

		do {
			int tag = dwarf_tag(&die);

			if ((tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
			     tag == DW_TAG_lexical_block) &&
			    dwarf_haspc(&die, pc) > 0) {
				if (tag == DW_TAG_inlined_subroutine && n < MAX_INLINE_DEPTH)
					chain[n++] = die;
				parent = die;
				found = true;
				break;
			}
		} while (!dwarf_siblingof(&die, &die));
		if (!found)
			break;
		depth++;
	}
	if (!n || !(*out = malloc((size_t)n * sizeof(**out))))
		return 0;
	for (int i = 0; i < n; i++)
		(*out)[i] = chain[n - 1 - i];
	return n;
}

/*
 * The frames of return address @pc, innermost first: each function inlined there (Go inlines
 * sync.(*Mutex).Lock into its caller), then the function itself. Each is named by DWARF and
 * placed at the line its callee was called from; the last falls back on the symbol table.
 * Returns how many were added (at most @room).
 */
static size_t name_frames(struct go_reader *r, uint64_t pc, struct go_frame *f, size_t room)
{
	uint64_t off, at = pc - 1 - r->bias; /* a return address: its call is before it */
	const char *sym = NULL, *file = NULL;
	Dwarf_Die cu, *scopes = NULL;
	Dwarf_Line *line;
	size_t n = 0;
	int lineno = 0, nscopes = 0;

	if (elfobj__symbol_at(r->exe, at, true, &sym, &off))
		sym = NULL;
	if (cu_of(r, at, &cu)) {
		if ((line = dwarf_getsrc_die(&cu, at)) && !dwarf_lineno(line, &lineno))
			file = dwarf_linesrc(line, NULL, NULL);
		nscopes = inline_chain(&cu, at, &scopes);
	}
	for (int i = 0; i < nscopes && n + 1 < room; i++) {
		Dwarf_Attribute attr;
		Dwarf_Word cfile, cline;

		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		f[n] = (struct go_frame){ .pc = pc, .line = lineno, .inlined = true };
		f[n].function = origin_name(&scopes[i]) ? strdup(origin_name(&scopes[i])) : NULL;
		f[n].file = file ? strdup(file) : NULL;
		n++;
		/* The caller's place: where this inlined call is. */
		file = dwarf_attr(&scopes[i], DW_AT_call_file, &attr) &&
				       !dwarf_formudata(&attr, &cfile) ?
			       cu_file(&cu, cfile) :
			       NULL;
		lineno = dwarf_attr(&scopes[i], DW_AT_call_line, &attr) &&
					 !dwarf_formudata(&attr, &cline) ?
				 (int)cline :
				 0;
	}
	free(scopes);
	f[n] = (struct go_frame){ .pc = pc, .line = lineno };
	/* An assembly function's symbol carries its ABI (runtime.goexit.abi0); Go's name does not. */
	f[n].function = sym ? strndup(sym, strlen(sym) - (ends_with(sym, ".abi0") ? 5 : 0)) : NULL;
	f[n].file = file ? strdup(file) : NULL;
	return n + 1;
}

/* A parked goroutine's frames: from its saved pc along the frame pointers, inside its stack. */
static int walk(struct go_reader *r, const unsigned char *g, struct goroutine *out)
{
	uint64_t pc, bp, lo, hi;

	memcpy(&pc, g + r->l.g_sched_pc, 8);
	memcpy(&bp, g + r->l.g_sched_bp, 8);
	memcpy(&lo, g + r->l.g_stack_lo, 8);
	memcpy(&hi, g + r->l.g_stack_hi, 8);
	out->frames = calloc(MAX_GO_FRAMES, sizeof(*out->frames));
	if (!out->frames)
		return -ENOMEM;
	while (pc && out->n_frames < MAX_GO_FRAMES) {
		struct go_frame *f;
		uint64_t next[2];

		out->n_frames += name_frames(r, pc, &out->frames[out->n_frames],
					     MAX_GO_FRAMES - out->n_frames);
		f = &out->frames[out->n_frames - 1];
		/* goexit is every goroutine's first frame: nothing called it. */
		if (f->function && !strcmp(f->function, "runtime.goexit"))
			return 0;
		if (bp < lo || bp + 16 > hi || (bp & 7) ||
		    target__read(r->t, bp, next, sizeof(next)))
			return 0;
		if (next[0] && next[0] <= bp)
			return 0; /* the chain must go up the stack */
		bp = next[0];
		pc = next[1];
	}
	out->truncated = pc != 0;
	return 0;
}

static void read_reasons(struct go_reader *r)
{
	GElf_Sym sym;

	if (elfobj__lookup(r->exe, "runtime.waitReasonStrings", ELFOBJ_SYMTAB, &sym))
		return;
	for (uint64_t i = 0; i < sym.st_size / 16 && i < MAX_REASONS; i++) {
		if (!read_go_string(r->t, r->bias + sym.st_value + 16 * i, r->reasons[i],
				    sizeof(r->reasons[i])))
			break;
		r->n_reasons = i + 1;
	}
}

static void describe(struct go_reader *r, const unsigned char *g, uint32_t status,
		     struct goroutine *out)
{
	uint64_t m, procid = 0, startpc, off;
	uint8_t reason = g[r->l.g_waitreason];

	memcpy(&m, g + r->l.g_m, 8);
	if (m && (status == G_RUNNING || status == G_SYSCALL) &&
	    !read_u64(r->t, m + (uint64_t)r->l.m_procid, &procid))
		out->thread = (pid_t)procid;
	memcpy(&startpc, g + r->l.g_startpc, 8);
	if (startpc && !elfobj__symbol_at(r->exe, startpc - r->bias, true, &out->start, &off))
		out->system = !strncmp(out->start, "runtime.", 8) &&
			      strcmp(out->start, "runtime.main"); /* as Go's traceback has it */
	switch (status) {
	case G_RUNNABLE: snprintf(out->state, sizeof(out->state), "runnable"); break;
	case G_RUNNING: snprintf(out->state, sizeof(out->state), "running"); break;
	case G_SYSCALL: snprintf(out->state, sizeof(out->state), "syscall"); break;
	case G_WAITING:
		snprintf(out->state, sizeof(out->state), "%s",
			 reason < r->n_reasons && r->reasons[reason][0] ? r->reasons[reason] :
									  "waiting");
		break;
	default: snprintf(out->state, sizeof(out->state), "status %u", status); break;
	}
}

static int read_goroutines(struct go_reader *r, struct go_state *s)
{
	int size = r->l.g_stack_lo;
	unsigned char *g;
	uint64_t allgs[2];
	GElf_Sym sym;
	int err = 0;

	/* Every field read lies before the largest offset among them. */
	const int fields[] = { r->l.g_stack_hi,	  r->l.g_sched_sp, r->l.g_sched_pc,
			       r->l.g_sched_bp,	  r->l.g_status,   r->l.g_goid,
			       r->l.g_waitreason, r->l.g_startpc,  r->l.g_m };
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fields[i] > size)
			size = fields[i];
	size += 8;
	if (elfobj__lookup(r->exe, "runtime.allgs", ELFOBJ_SYMTAB, &sym) ||
	    target__read(r->t, r->bias + sym.st_value, allgs, sizeof(allgs))) {
		s->error = strdup("runtime.allgs cannot be read");
		return s->error ? 0 : -ENOMEM;
	}
	if (allgs[1] > MAX_GOROUTINES) {
		s->error = strdup("runtime.allgs is longer than 100000 goroutines: corrupt");
		return s->error ? 0 : -ENOMEM;
	}
	s->g = calloc(allgs[1] ? allgs[1] : 1, sizeof(*s->g));
	g = malloc((size_t)size);
	if (!s->g || !g) {
		free(g);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < allgs[1] && !err; i++) {
		uint64_t gp;
		uint32_t status;
		struct goroutine *out = &s->g[s->n];

		if (read_u64(r->t, allgs[0] + 8 * i, &gp) || !gp ||
		    target__read(r->t, gp, g, (size_t)size))
			continue;
		memcpy(&status, g + r->l.g_status, sizeof(status));
		status &= ~(uint32_t)G_SCAN;
		if (status == G_DEAD || status == G_IDLE)
			continue;
		memcpy(&out->id, g + r->l.g_goid, sizeof(out->id));
		out->status = status;
		describe(r, g, status, out);
		if (status != G_RUNNING && status != G_SYSCALL)
			err = walk(r, g, out);
		s->n++;
	}
	free(g);
	return err;
}

int go_state__read(const struct target *t, const struct libgraph *g, struct go_state **out)
{
	struct go_reader *r;
	struct go_state *s;
	GElf_Sym sym;
	Elf *elf;
	int err = 0;

	*out = NULL;
	if (!g->n || !g->objs[0]->elf ||
	    elfobj__lookup(g->objs[0]->elf, "runtime.buildVersion", ELFOBJ_SYMTAB, &sym))
		return -ENOENT;
	s = calloc(1, sizeof(*s));
	r = calloc(1, sizeof(*r));
	if (!s || !r) {
		free(s);
		free(r);
		return -ENOMEM;
	}
	r->t = t;
	r->exe = g->objs[0]->elf;
	r->bias = elfobj__type(r->exe) == ET_DYN ? g->objs[0]->base : 0;
	if (!read_go_string(t, r->bias + sym.st_value, s->version, sizeof(s->version)))
		snprintf(s->version, sizeof(s->version), "go?");
	elf = elfobj__elf(r->exe);
	r->dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	if (!r->dw || !read_layout(r->dw, &r->l)) {
		s->error =
			strdup("its goroutines are not read: the program has no DWARF describing "
			       "runtime.g (built with -ldflags=-w?)");
		err = s->error ? 0 : -ENOMEM;
	} else {
		read_reasons(r);
		err = read_goroutines(r, s);
	}
	if (r->dw)
		dwarf_end(r->dw);
	free(r);
	if (err) {
		go_state__free(s);
		return err;
	}
	*out = s;
	return 0;
}

void go_state__free(struct go_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		for (size_t k = 0; k < s->g[i].n_frames; k++) {
			free(s->g[i].frames[k].function);
			free(s->g[i].frames[k].file);
		}
		free(s->g[i].frames);
	}
	free(s->g);
	free(s->error);
	free(s);
}

static bool blocked(const struct goroutine *g)
{
	return !g->system && g->status == G_WAITING;
}

char *go_state__summary(const struct go_state *s)
{
	char *text = NULL;
	size_t len = 0, n_blocked = 0;
	FILE *f;
	bool *said;

	for (size_t i = 0; s && i < s->n; i++)
		n_blocked += blocked(&s->g[i]);
	if (!n_blocked || !(said = calloc(s->n, sizeof(*said))))
		return NULL;
	f = open_memstream(&text, &len);
	if (!f) {
		free(said);
		return NULL;
	}
	fprintf(f, "Go %s: %zu goroutine%s blocked:", s->version, n_blocked,
		n_blocked == 1 ? " is" : "s are");
	/* One clause per wait reason, in the order first met, naming its goroutines. */
	for (size_t i = 0, clauses = 0; i < s->n; i++) {
		if (said[i] || !blocked(&s->g[i]))
			continue;
		fprintf(f, "%s %s (goroutine", clauses++ ? ";" : "", s->g[i].state);
		for (size_t k = i, first = 1; k < s->n; k++) {
			if (said[k] || !blocked(&s->g[k]) || strcmp(s->g[k].state, s->g[i].state))
				continue;
			said[k] = true;
			fprintf(f, "%s %lld", first ? "" : ",", (long long)s->g[k].id);
			first = 0;
		}
		fprintf(f, ")");
	}
	fprintf(f, ". The Go runtime records no holder of a sync.Mutex and no sender of a "
		   "channel, so no goroutine is known to wait for another: the goroutines' "
		   "stacks say where each one is.");
	fclose(f);
	free(said);
	return text;
}

void go_state__print(const struct go_state *s, FILE *out)
{
	fprintf(out, "\nGoroutines (%s):\n", s->version);
	if (s->error)
		fprintf(out, "    (%s)\n", s->error);
	for (size_t i = 0; i < s->n; i++) {
		const struct goroutine *g = &s->g[i];

		fprintf(out, "\ngoroutine %lld [%s]%s", (long long)g->id, g->state,
			g->system ? " (runtime)" : "");
		if (g->thread)
			fprintf(out, " on thread %d: its frames are the thread's", g->thread);
		fprintf(out, ":\n");
		for (size_t k = 0; k < g->n_frames; k++) {
			const struct go_frame *f = &g->frames[k];

			fprintf(out, "    %s%s\n", f->function ? f->function : "??",
				f->inlined ? " (inlined)" : "");
			if (f->file)
				fprintf(out, "        %s:%d\n", f->file, f->line);
			else
				fprintf(out, "        0x%llx\n", (unsigned long long)f->pc);
		}
		if (g->truncated)
			fprintf(out, "    ...more frames...\n");
	}
}

json_t *go_state__to_json(const struct go_state *s)
{
	json_t *gs = json_array();

	for (size_t i = 0; i < s->n; i++) {
		const struct goroutine *g = &s->g[i];
		json_t *frames = json_array();
		char pc[24];

		for (size_t k = 0; k < g->n_frames; k++) {
			const struct go_frame *f = &g->frames[k];

			snprintf(pc, sizeof(pc), "0x%llx", (unsigned long long)f->pc);
			json_array_append_new(
				frames,
				json_pack("{s:s, s:o, s:o, s:i, s:b}", "pc", pc, "function",
					  f->function ? json_string(f->function) : json_null(),
					  "file", f->file ? json_string(f->file) : json_null(),
					  "line", f->line, "inlined", f->inlined));
		}
		json_array_append_new(gs,
				      json_pack("{s:I, s:s, s:o, s:b, s:o, s:o, s:b}", "id",
						(json_int_t)g->id, "state", g->state, "thread",
						g->thread ? json_integer(g->thread) : json_null(),
						"system", g->system, "start",
						g->start ? json_string(g->start) : json_null(),
						"frames", frames, "truncated", g->truncated));
	}
	return json_pack("{s:s, s:o, s:o}", "version", s->version, "goroutines", gs, "error",
			 s->error ? json_string(s->error) : json_null());
}
