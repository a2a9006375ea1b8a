// SPDX-License-Identifier: GPL-2.0
/*
 * The TUI's main loop: keys first (answered within one frame), then the sources get a bounded
 * slice of time, then a redraw at most every FRAME_MS and only when something changed.
 */
#include <ctype.h>
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "output.h"
#include "tui.h"
#include "tui_term.h"

#define FRAME_MS 50	    /* at most 20 redraws a second */
#define RELEASE_WAIT_MS 100 /* at the end, for threads a snapshot holds to stop */
#define PUMP_MS 15	    /* the sources' share of a frame */
#define MIN_COLS 60
#define MIN_LINES 10

static const struct view *const views[VIEW__COUNT] = {
	[VIEW_PROCS] = &view_procs,	  [VIEW_LIBS] = &view_libs,
	[VIEW_THREADS] = &view_threads,	  [VIEW_EVENTS] = &view_events,
	[VIEW_FINDINGS] = &view_findings,
};

static const char help_text[] =
	"Views\n"
	"  1 Processes   the process tree; ranks from RANK/LOCAL_RANK; Enter: its libraries\n"
	"  2 Libraries   the selected process's library graph as a tree, runtime roles;\n"
	"                collisions (two OpenMP/BLAS/C++ runtimes) marked '!!' and in red\n"
	"  3 Threads     state, what each waits for, lock-wait edges, the deadlock verdict;\n"
	"                Enter: the thread's stack; r: take a new snapshot\n"
	"  4 Events      the event stream; space: pause/follow; t: filter by kind;\n"
	"                p: only the selected process; l: filter by library; c: clear filters\n"
	"  5 Findings    the detectors' findings with evidence, why and fix\n"
	"\n"
	"Keys\n"
	"  Tab / S-Tab   next / previous view        1-5   a view\n"
	"  Up/Down j/k   move                        PgUp/PgDn  a page\n"
	"  Home/End g/G  first / last                Enter  open (stack, libraries, fold)\n"
	"  /             search the view             n      next match\n"
	"  Left/Right    fold / unfold (Libraries)   r      snapshot again (live, snapshot)\n"
	"  ?  F1         this help                   q  Ctrl-C  quit (Esc closes a box)\n"
	"\n"
	"Replay (--replay FILE)\n"
	"  space         play / pause                < >    seek -5 s / +5 s\n"
	"  [ ]           seek -60 s / +60 s          { }    to the start / the end\n"
	"  + -           speed x2 / /2               m      as fast as possible\n";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Rows longer than the screen, wrapped: each piece a row of its own with the row's colour and
 * ref, indented under the text after the row's label ("why: ") or its leading spaces.
 */
static void rows__wrap(struct rows *rs, int width)
{
	struct rows out = { 0 };
	bool any = false;

	for (size_t i = 0; i < rs->n && !any; i++)
		any = (int)strlen(rs->r[i].text) > width;
	if (!any || width < 30)
		return;
	for (size_t i = 0; i < rs->n; i++) {
		const struct row *r = &rs->r[i];
		const char *colon = strstr(r->text, ": ");
		size_t lead = strspn(r->text, " "), hang = lead + 2;
		char cont[64], first[1];

		if ((int)strlen(r->text) <= width) {
			rows__add(&out, r->color, r->ref, "%s", r->text);
			continue;
		}
		if (colon && (size_t)(colon - r->text) < 24 &&
		    !memchr(r->text + lead, ' ', (size_t)(colon - r->text) - lead))
			hang = (size_t)(colon - r->text) + 2;
		if (hang > (size_t)width / 2)
			hang = lead + 2 < (size_t)width / 2 ? lead + 2 : 2;
		snprintf(cont, sizeof(cont), "%*s", (int)hang, "");
		first[0] = '\0';
		rows__add_wrapped(&out, r->color, r->ref, width, first, cont, r->text);
	}
	free(rs->r);
	*rs = out;
}

/* A view's rows as drawn: wrapped at the screen's width. */
static void view_rows(struct ui *ui, const struct view *v, struct rows *rs)
{
	v->rows(ui, rs);
	rows__wrap(rs, ui->cols);
}

/* A view asked for a snapshot (ui->snapshot_pid): the loop takes it, views never collect. */
static void take_snapshot(struct ui *ui, pid_t pid)
{
	char why[512], warn[512];

	if (ui->src == SRC_REPLAY) {
		ui__status(ui, true, "a replay has no live process to snapshot");
		return;
	}
	ui__status(ui, false, "taking a snapshot of %d...", pid);
	if (snapshot__take(ui->m, pid, true, why, sizeof(why), warn, sizeof(warn)))
		ui__status(ui, true, "snapshot of %d failed: %s", pid, why);
	else if (warn[0])
		ui__status(ui, true, "snapshot of %d: %s", pid, warn);
	else
		ui__status(ui, false, "snapshot of %d taken", pid);
}

static void init_colors(struct ui *ui)
{
	const char *no_color = getenv("NO_COLOR");

	ui->show_frames = getenv("DLSCOPE_UI_FRAMES") != NULL;
	/* https://no-color.org: any non-empty value turns colours off. */
	ui->colors = has_colors() && !(no_color && *no_color);
	if (!ui->colors)
		return;
	start_color();
	use_default_colors();
	init_pair(C_TITLE, COLOR_BLACK, COLOR_CYAN);
	init_pair(C_HEADER, COLOR_CYAN, -1);
	init_pair(C_COLLISION, COLOR_RED, -1);
	init_pair(C_CYCLE, COLOR_MAGENTA, -1);
	init_pair(C_WARN, COLOR_YELLOW, -1);
	init_pair(C_DIM, COLOR_BLUE, -1);
	init_pair(C_STATUS, COLOR_BLACK, COLOR_WHITE);
	init_pair(C_ERROR, COLOR_WHITE, COLOR_RED);
}

/* One line at @y, clipped to the screen, padded with the colour to the right edge. */
static void put_line(struct ui *ui, int y, enum ui_color c, bool selected, const char *text)
{
	int attr = ui__attr(ui, c) | (selected ? A_REVERSE : 0);

	attrset(attr);
	ui__addnstr(stdscr, y, 0, text, ui->cols);
	clrtoeol();
	if (selected || c == C_TITLE || c == C_STATUS || c == C_ERROR)
		mvchgat(y, (int)strnlen(text, (size_t)ui->cols), -1, attr, PAIR_NUMBER(attr), NULL);
	attrset(A_NORMAL);
}

static void fix_scroll(struct list_state *ls, size_t n, int h)
{
	if (!n) {
		ls->sel = ls->top = 0;
		return;
	}
	if (ls->sel >= n)
		ls->sel = n - 1;
	if (ls->sel < ls->top)
		ls->top = ls->sel;
	if (h > 0 && ls->sel >= ls->top + (size_t)h)
		ls->top = ls->sel - (size_t)h + 1;
}

/* A title row on top is not a thing to select. */
static void skip_title(struct list_state *ls, const struct rows *rs)
{
	if (ls->sel == 0 && rs->n > 1 && rs->r[0].color == C_HEADER)
		ls->sel = 1;
}

static void draw_rows(struct ui *ui, const struct rows *rs, struct list_state *ls, int y, int h)
{
	skip_title(ls, rs);
	fix_scroll(ls, rs->n, h);
	for (int i = 0; i < h; i++) {
		size_t k = ls->top + (size_t)i;

		if (k < rs->n)
			put_line(ui, y + i, rs->r[k].color, k == ls->sel, rs->r[k].text);
		else
			put_line(ui, y + i, C_NORMAL, false, "");
	}
}

static void draw_header(struct ui *ui)
{
	/* Under 100 columns the tabs are packed, so that the source still shows at 80. */
	bool narrow = ui->cols < 100;
	char line[512], clock[160] = "";
	int n = snprintf(line, sizeof(line), narrow ? " dlscope " : " dlscope ui ");
	struct m_proc *p = ui__proc(ui);

	for (int v = 0; v < VIEW__COUNT; v++)
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      v == (int)ui->view ? "[%d %s]%s" :
			      narrow		 ? " %d %s " :
						   " %d %s  ",
			      v + 1, views[v]->name, narrow ? "" : " ");
	snprintf(line + n, sizeof(line) - (size_t)n, " %s",
		 ui->src == SRC_LIVE   ? "live" :
		 ui->src == SRC_REPLAY ? "replay" :
					 "snapshot");
	put_line(ui, 0, C_TITLE, false, line);
	if (ui->src == SRC_REPLAY) {
		const struct replay *r = ui->replay;

		snprintf(clock, sizeof(clock),
			 narrow ? "%s%s t=%.3f/%.3fs #%zu/%zu" :
				  "%s %s  t=%.3fs / %.3fs  record %zu/%zu",
			 r->paused ? (replay__at_end(r) ? "ended" : "paused") : "playing",
			 r->speed > 0 ? "" :
			 narrow	      ? " max" :
					"max",
			 (double)(r->now - r->t_first) / 1e9,
			 (double)(r->t_last - r->t_first) / 1e9, r->pos, r->n);
		if (r->speed > 0)
			snprintf(clock + strlen(clock), sizeof(clock) - strlen(clock),
				 narrow ? " %gx" : "  speed %gx", r->speed);
	} else if (ui->src == SRC_LIVE) {
		unsigned long long dropped = ui->live ? live__dropped(ui->live) : 0;

		/* Counted, never dropped unsaid: the UI's queue is the last place events can go. */
		snprintf(clock, sizeof(clock), "%llu events", (unsigned long long)ui->m->next_seq);
		if (dropped)
			snprintf(clock + strlen(clock), sizeof(clock) - strlen(clock),
				 ", %llu dropped (the UI fell behind; graph records are kept)",
				 dropped);
	} else {
		snprintf(clock, sizeof(clock),
			 "snapshot: libraries, findings, threads and stacks; "
			 "no events");
	}
	snprintf(line, sizeof(line), " process %s%d %s%s%s%s%s", p ? "" : "-", p ? p->pid : 0,
		 p ? p->comm : "", p && p->exited ? " (exited)" : "",
		 p && p->rank[0] ? " rank " : "", narrow ? " | " : "  |  ", clock);
	if (p && p->rank[0])
		snprintf(line, sizeof(line), " process %d %s rank %s%s%s%s%s", p->pid, p->comm,
			 p->rank, p->local_rank[0] ? " local " : "", p->local_rank,
			 narrow ? " | " : "  |  ", clock);
	put_line(ui, 1, C_HEADER, false, line);
}

static void draw_popup(struct ui *ui)
{
	int h = ui->lines - 4, w = ui->cols - 4, line = 0;
	const char *s = ui->popup_text;
	WINDOW *win = newwin(h, w, 2, 2);
	size_t skip, total = 0;

	/* Not past the last page: the end of the text stays on the box's last line. */
	if (ui->popup_lines > (size_t)h - 2 && ui->popup_top > ui->popup_lines - ((size_t)h - 2))
		ui->popup_top = ui->popup_lines - ((size_t)h - 2);
	else if (ui->popup_lines && ui->popup_lines <= (size_t)h - 2)
		ui->popup_top = 0;
	skip = ui->popup_top;

	if (!win)
		return;
	wattrset(win, ui__attr(ui, C_NORMAL));
	werase(win);
	wborder(win, '|', '|', '-', '-', '+', '+', '+', '+');
	{
		char title[256];

		snprintf(title, sizeof(title), " %.*s ", w - 8 > 0 ? w - 8 : 0, ui->popup_title);
		ui__addnstr(win, 0, 2, title, (int)strlen(title));
	}
	/* Every line wrapped to the box, under its own indentation: nothing is cut at the edge. */
	while (*s) {
		size_t len = strcspn(s, "\n"), lead = strspn(s, " "), room = (size_t)w - 4;
		size_t hang = lead + 2 < room / 2 ? lead + 2 : 0, at = 0;

		do {
			size_t indent = at ? hang : 0,
			       cut = wrap_cut(s + at, room - indent > 10 ? room - indent : 10);

			if (cut > len - at)
				cut = len - at;
			if (skip) {
				skip--;
			} else {
				if (line < h - 2)
					ui__addnstr(win, 1 + line, 2 + (int)indent, s + at,
						    (int)cut);
				line++;
			}
			total++;
			at += cut;
			while (at < len && s[at] == ' ')
				at++;
		} while (at < len);
		s += len + (s[len] == '\n');
	}
	/* The lines past the box: say that it scrolls, and keep the last page in reach. */
	ui->popup_lines = total;
	mvwprintw(win, h - 1, 2, " Esc/q/Enter: close  %s",
		  total > (size_t)h - 2 ? "Up/Down PgUp/PgDn: scroll " : "");
	if (total > (size_t)h - 2)
		wprintw(win, "(%zu-%zu of %zu) ", ui->popup_top + 1,
			ui->popup_top + (size_t)h - 2 < total ? ui->popup_top + (size_t)h - 2 :
								total,
			total);
	wnoutrefresh(win);
	delwin(win);
}

static void draw(struct ui *ui)
{
	const struct view *v = views[ui->view];
	int h = ui->lines - 3;

	getmaxyx(stdscr, ui->lines, ui->cols);
	h = ui->lines - 3;
	erase();
	if (ui->lines < MIN_LINES || ui->cols < MIN_COLS) {
		mvprintw(0, 0, "terminal too small (%dx%d): dlscope ui needs %dx%d", ui->cols,
			 ui->lines, MIN_COLS, MIN_LINES);
		wnoutrefresh(stdscr);
		doupdate();
		return;
	}
	draw_header(ui);
	if (v->rows) {
		struct rows rs = { 0 };

		view_rows(ui, v, &rs);
		draw_rows(ui, &rs, &ui->list[ui->view], 2, h);
		free(rs.r);
	} else {
		v->draw(ui, 2, h);
	}
	if (ui->prompting) {
		char line[256];

		snprintf(line, sizeof(line), "%s%s", ui->prompt_label, ui->prompt_buf);
		put_line(ui, ui->lines - 1, C_STATUS, false, line);
	} else {
		char line[600];

		/* "?: help" first, whatever the status says: the way to every key stays in sight. */
		if (ui->status[0])
			snprintf(line, sizeof(line), " ?: help  q: quit | %s", ui->status);
		else
			snprintf(line, sizeof(line),
				 " ?: help  Tab: next view  /: search  Enter: open  q: quit");
		put_line(ui, ui->lines - 1, ui->status_error ? C_ERROR : C_STATUS, false, line);
	}
	if (ui->show_frames) {
		char frame[32];
		int n = snprintf(frame, sizeof(frame), " frame %lu ", ui->redraws + 1);

		if (n < ui->cols)
			mvaddstr(ui->lines - 1, ui->cols - n, frame);
	}
	wnoutrefresh(stdscr);
	if (ui->popup_text)
		draw_popup(ui);
	doupdate();
	ui->redraws++;
}

static bool row_matches(const char *text, const char *needle)
{
	return needle[0] && strcasestr(text, needle);
}

/* Search forward from the row after the selection, wrapping; says so when nothing matches. */
static void search_rows(struct ui *ui)
{
	const struct view *v = views[ui->view];
	struct list_state *ls = &ui->list[ui->view];
	struct rows rs = { 0 };

	if (!v->rows) {
		v->key(ui, UI_KEY_SEARCH, NULL); /* the events view searches its own ring */
		return;
	}
	view_rows(ui, v, &rs);
	for (size_t i = 1; i <= rs.n; i++) {
		size_t k = (ls->sel + i) % rs.n;

		if (row_matches(rs.r[k].text, ui->search)) {
			ls->sel = k;
			ui__status(ui, false, "/%s", ui->search);
			free(rs.r);
			return;
		}
	}
	ui__status(ui, true, "'%s' not found in %s", ui->search, v->name);
	free(rs.r);
}

static void search_done(struct ui *ui, const char *text)
{
	if (!*text)
		return;
	snprintf(ui->search, sizeof(ui->search), "%s", text);
	search_rows(ui);
}

static enum key_result popup_key(struct ui *ui, int ch)
{
	switch (ch) {
	case 27:
	case 'q':
	case '\n':
	case KEY_ENTER:
	case '?':
	case KEY_F(1):
		free(ui->popup_text);
		ui->popup_text = NULL;
		return KEY_HANDLED;
	case KEY_UP:
	case 'k':
		if (ui->popup_top)
			ui->popup_top--;
		return KEY_HANDLED;
	case KEY_DOWN:
	case 'j': ui->popup_top++; return KEY_HANDLED;
	case KEY_PPAGE:
		ui->popup_top = ui->popup_top > 10 ? ui->popup_top - 10 : 0;
		return KEY_HANDLED;
	case KEY_NPAGE:
	case ' ': ui->popup_top += 10; return KEY_HANDLED;
	}
	return KEY_HANDLED;
}

static enum key_result prompt_key(struct ui *ui, int ch)
{
	size_t len = strlen(ui->prompt_buf);

	if (ch == 27) {
		ui->prompting = false;
	} else if (ch == '\n' || ch == KEY_ENTER) {
		ui->prompting = false;
		ui->on_prompt(ui, ui->prompt_buf);
	} else if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && len) {
		ui->prompt_buf[len - 1] = '\0';
	} else if (ch >= 32 && ch < 127 && len + 1 < sizeof(ui->prompt_buf)) {
		ui->prompt_buf[len] = (char)ch;
		ui->prompt_buf[len + 1] = '\0';
	}
	return KEY_HANDLED;
}

static enum key_result replay_key(struct ui *ui, int ch)
{
	struct replay *r = ui->replay;
	double t = now_s();
	int64_t step = 0;

	switch (ch) {
	case ' ': replay__pause(r, !r->paused, t); return KEY_HANDLED;
	case '<': step = -5; break;
	case '>': step = 5; break;
	case '[': step = -60; break;
	case ']': step = 60; break;
	case '{': replay__seek(r, ui->m, 0, t); return KEY_HANDLED;
	case '}': replay__seek(r, ui->m, UINT64_MAX, t); return KEY_HANDLED;
	case '+':
		replay__set_speed(r, r->speed > 0 && r->speed < 1024 ? r->speed * 2 : r->speed, t);
		return KEY_HANDLED;
	case '-':
		replay__set_speed(r,
				  r->speed > 1.0 / 1024 ? r->speed / 2 :
				  r->speed > 0		? r->speed :
							  1,
				  t);
		return KEY_HANDLED;
	case 'm': replay__set_speed(r, 0, t); return KEY_HANDLED;
	default: return KEY_IGNORED;
	}
	if (step < 0 && r->now - r->t_first < (uint64_t)(-step) * 1000000000ULL)
		replay__seek(r, ui->m, 0, t);
	else
		replay__seek(r, ui->m, r->now + (uint64_t)(step * 1000000000LL), t);
	return KEY_HANDLED;
}

static enum key_result list_key(struct ui *ui, int ch, size_t n, int h)
{
	struct list_state *ls = &ui->list[ui->view];
	size_t page = h > 1 ? (size_t)h - 1 : 1;

	switch (ch) {
	case KEY_UP:
	case 'k':
		if (ls->sel)
			ls->sel--;
		return KEY_HANDLED;
	case KEY_DOWN:
	case 'j':
		if (ls->sel + 1 < n)
			ls->sel++;
		return KEY_HANDLED;
	case KEY_PPAGE: ls->sel = ls->sel > page ? ls->sel - page : 0; return KEY_HANDLED;
	case KEY_NPAGE:
		ls->sel = n && ls->sel + page >= n ? n - 1 : ls->sel + page;
		return KEY_HANDLED;
	case KEY_HOME:
	case 'g': ls->sel = 0; return KEY_HANDLED;
	case KEY_END:
	case 'G': ls->sel = n ? n - 1 : 0; return KEY_HANDLED;
	}
	return KEY_IGNORED;
}

static enum key_result handle_key(struct ui *ui, int ch)
{
	const struct view *v = views[ui->view];
	enum key_result res = KEY_IGNORED;

	if (ui->prompting)
		return prompt_key(ui, ch);
	if (ui->popup_text)
		return popup_key(ui, ch);
	switch (ch) {
	case 'q':
	case 3: /* Ctrl-C in raw mode */ return KEY_QUIT;
	case '\t': ui->view = (ui->view + 1) % VIEW__COUNT; return KEY_HANDLED;
	case KEY_BTAB: ui->view = (ui->view + VIEW__COUNT - 1) % VIEW__COUNT; return KEY_HANDLED;
	case '1':
	case '2':
	case '3':
	case '4':
	case '5': ui->view = (enum view_id)(ch - '1'); return KEY_HANDLED;
	case '?':
	case KEY_F(1): ui__popup(ui, "dlscope ui: help", help_text); return KEY_HANDLED;
	case '/': ui__prompt(ui, "/", search_done); return KEY_HANDLED;
	case 'n':
		if (ui->search[0])
			search_rows(ui);
		return KEY_HANDLED;
	case KEY_RESIZE: return KEY_HANDLED;
	}
	if (ui->src == SRC_REPLAY && (res = replay_key(ui, ch)) != KEY_IGNORED)
		return res;
	if (v->rows) {
		struct rows rs = { 0 };
		const struct row *sel;

		view_rows(ui, v, &rs);
		skip_title(&ui->list[ui->view], &rs);
		fix_scroll(&ui->list[ui->view], rs.n, ui->lines - 3);
		res = list_key(ui, ch, rs.n, ui->lines - 3);
		skip_title(&ui->list[ui->view], &rs);
		sel = rs.n ? &rs.r[ui->list[ui->view].sel] : NULL;
		if (res == KEY_IGNORED && v->key)
			res = v->key(ui, ch, sel);
		else if (res == KEY_HANDLED && v->key && rs.n)
			/* Let the view follow the selection (the processes view selects a pid). */
			v->key(ui, 0, &rs.r[ui->list[ui->view].sel]);
		free(rs.r);
		return res;
	}
	return v->key(ui, ch, NULL);
}

/*
 * Pump the sources for at most PUMP_MS; true when the model changed. *backlog: stopped by the
 * time limit with records still waiting, so the loop should not sleep. @out_read: the pipe
 * of dlscope's own messages.
 */
static bool pump(struct ui *ui, int out_read, bool *collector_failed, bool *backlog, char *why,
		 size_t whylen)
{
	double t0 = now_s(), t;
	unsigned int gen = ui->m->generation;
	int err;

	*backlog = false;
	do {
		size_t done = 0;

		t = now_s();
		if (ui->live)
			done = live__drain(ui->live, ui->m, 2048);
		else if (ui->replay)
			done = replay__tick(ui->replay, ui->m, t, 2048);
		if (!done)
			break;
		*backlog = now_s() - t0 >= PUMP_MS / 1e3;
	} while (!*backlog);
	if (ui->live && live__finished(ui->live, &err, why, whylen)) {
		live__free(ui->live);
		ui->live = NULL;
		/*
		 * The collector and the command are done: their last words first (a message the
		 * collector wrote before it ended but not yet read would otherwise hide the end),
		 * then what became of them.
		 */
		tui_term__read_messages(ui, out_read);
		if (err) {
			*collector_failed = true;
			ui__status(ui, true, "live events stopped: %s", why);
		} else {
			ui__status(ui, false, "the watched processes are gone; events stopped%s%s",
				   ui->cmd_out_path ? "  | output: " : "",
				   ui->cmd_out_path ? ui->cmd_out_path : "");
		}
	}
	return gen != ui->m->generation || (ui->replay && !ui->replay->paused);
}

static sigset_t saved_mask;

/* A command the collector starts must not inherit the UI's blocked signals. */
static void child_after_fork(void)
{
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
}

/*
 * Ctrl-C arrives as a key (raw mode); SIGTERM/SIGHUP/SIGINT from outside through the signalfd
 * returned, so that every way out goes through endwin.
 */
static int block_stop_signals(void)
{
	static bool atfork_done;
	sigset_t stop_sigs;

	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGINT);
	sigaddset(&stop_sigs, SIGTERM);
	sigaddset(&stop_sigs, SIGHUP);
	sigaddset(&stop_sigs, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &stop_sigs, &saved_mask);
	if (!atfork_done) {
		pthread_atfork(NULL, NULL, child_after_fork);
		atfork_done = true;
	}
	return signalfd(-1, &stop_sigs, SFD_NONBLOCK | SFD_CLOEXEC);
}

/* The screen up, in raw mode, and the collector started; else a dls_exit value and @why. */
static int start_screen(struct ui *ui, struct term_state *ts, char *why, size_t whylen)
{
	if (tui_term__open(ts, why, whylen)) {
		tui_term__close(ts);
		return DLS_EXIT_INSPECT;
	}
	getmaxyx(stdscr, ui->lines, ui->cols);
	if (ui->lines < MIN_LINES || ui->cols < MIN_COLS) {
		snprintf(why, whylen, "the terminal is too small (%dx%d): dlscope ui needs %dx%d",
			 ui->cols, ui->lines, MIN_COLS, MIN_LINES);
		tui_term__close(ts);
		return DLS_EXIT_USAGE;
	}
	output__set_sink(tui_term__sink);
	/* Started only now: whatever the collector prints goes to the pipe, not over the screen. */
	if (ui->live_opts) {
		int err = live__start(ui->live_opts, &ui->live);

		if (err) {
			snprintf(why, whylen, "cannot start the collector: %s", strerror(-err));
			output__set_sink(NULL);
			tui_term__close(ts);
			return DLS_EXIT_INSPECT;
		}
	}
	raw();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	init_colors(ui);
	return DLS_EXIT_OK;
}

/* Every key waiting, first @ch, answered; true when one of them quits. */
static bool answer_keys(struct ui *ui, int ch, bool *dirty, double *last_draw)
{
	bool quit = false;

	while (ch != ERR && !quit) {
		enum key_result r = handle_key(ui, ch);

		quit = r == KEY_QUIT;
		if (ui->snapshot_pid && !quit)
			take_snapshot(ui, ui->snapshot_pid);
		ui->snapshot_pid = 0;
		if (r == KEY_HANDLED) {
			*dirty = true;
			*last_draw = 0; /* a key is answered at once, not at the next frame */
		}
		nodelay(stdscr, TRUE);
		if (!quit)
			ch = getch();
	}
	return quit;
}

/* Keys, then the sources, then a redraw, until the user quits: a dls_exit value. */
static int main_loop(struct ui *ui, int sfd, int out_read, char *why, size_t whylen)
{
	double last_draw = 0;
	bool dirty = true, failed = false, backlog = false;
	unsigned int status_gen = ui->status_gen;

	for (;;) {
		double t = now_s(), wait_ms = FRAME_MS - (t - last_draw) * 1e3;
		struct signalfd_siginfo si;
		bool quit;

		timeout(backlog ? 0 : dirty ? (wait_ms > 0 ? (int)wait_ms : 0) : FRAME_MS);
		quit = answer_keys(ui, getch(), &dirty, &last_draw);
		if (sfd >= 0 && read(sfd, &si, sizeof(si)) == sizeof(si))
			quit = true;
		/* q: the terminal back at once; the sources are stopped after the screen. */
		if (quit)
			return DLS_EXIT_OK;
		if (pump(ui, out_read, &failed, &backlog, why, whylen))
			dirty = true;
		/* A thread a snapshot could not stop is let go as soon as it stops. */
		snapshot__release(0);
		/* Nothing to show: the collector never started (e.g. not root). */
		if (failed && ui->src == SRC_LIVE && !ui->m->n_procs)
			return DLS_EXIT_INSPECT;
		failed = false;
		tui_term__read_messages(ui, out_read);
		if (ui->status_gen != status_gen) {
			status_gen = ui->status_gen;
			dirty = true;
		}
		t = now_s();
		if (dirty && (t - last_draw) * 1e3 >= FRAME_MS) {
			draw(ui);
			last_draw = t;
			dirty = false;
		}
	}
}

int tui__run(struct ui *ui, char *why, size_t whylen)
{
	struct term_state ts = { .saved_fd = { -1, -1, -1 }, .out_read = -1 };
	double started = now_s();
	uint64_t first_seq = ui->m->next_seq;
	int ret, sfd;

	why[0] = '\0';
	sfd = block_stop_signals();
	ret = start_screen(ui, &ts, why, whylen);
	if (ret != DLS_EXIT_OK)
		goto out;
	ui->follow = true;
	if (ui->replay)
		replay__seek(ui->replay, ui->m, 0, now_s());
	ret = main_loop(ui, sfd, ts.out_read, why, whylen);
	if (ret == DLS_EXIT_OK)
		why[0] = '\0';
	output__set_sink(NULL);
	tui_term__close(&ts);
	/* For bench/ui_bench.py: how often the screen was redrawn under load. */
	if (getenv("DLSCOPE_UI_STATS"))
		fprintf(stderr,
			"dlscope: ui: %lu redraws in %.2f s (%.1f/s), %llu events applied\n",
			ui->redraws, now_s() - started, (double)ui->redraws / (now_s() - started),
			(unsigned long long)(ui->m->next_seq - first_seq));
out:
	/* Our exit would let them go too; a moment for them to stop first. */
	snapshot__release(RELEASE_WAIT_MS);
	if (sfd >= 0)
		close(sfd);
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
	return ret;
}
