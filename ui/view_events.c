// SPDX-License-Identifier: GPL-2.0
/*
 * The events view: the event ring, newest at the bottom while following, filtered by kind,
 * process or library. It draws only the rows on screen: at 500,000 events a second, formatting
 * the whole ring every frame would be the slow part.
 */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

static const struct m_event *match_at(const struct ui *ui, uint64_t seq)
{
	const struct m_event *e = model__event(ui->m, seq);

	return e && event_filter__match(&ui->filter, e) ? e : NULL;
}

/* The nearest matching event before (dir -1) or after (dir +1) @seq; false when none. */
static bool step(const struct ui *ui, uint64_t *seq, int dir)
{
	uint64_t s = *seq, first = model__first_seq(ui->m);

	while (dir < 0 ? s > first : s + 1 < ui->m->next_seq) {
		s = dir < 0 ? s - 1 : s + 1;
		if (match_at(ui, s)) {
			*seq = s;
			return true;
		}
	}
	return false;
}

/* The newest matching event, or false. */
static bool newest(const struct ui *ui, uint64_t *seq)
{
	*seq = ui->m->next_seq;
	return ui->m->next_seq && step(ui, seq, -1);
}

static void filter_text(const struct ui *ui, char *buf, size_t len)
{
	const struct event_filter *f = &ui->filter;
	size_t n = 0;

	buf[0] = '\0';
	if (!event_filter__active(f)) {
		snprintf(buf, len, "no filter");
		return;
	}
	for (int k = 0; k < EV__COUNT && n < len; k++)
		if (f->kinds & (1u << k))
			n += (size_t)snprintf(buf + n, len - n, "kind=%s ", ev_kind__id(k));
	if (f->pid && n < len)
		n += (size_t)snprintf(buf + n, len - n, "pid=%d ", f->pid);
	if (f->lib[0] && n < len)
		snprintf(buf + n, len - n, "library~%s", f->lib);
}

/* Under follow, the newest match; else the selection, moved to the nearest match if it left. */
static void keep_selection(struct ui *ui)
{
	uint64_t s, sel = 0;

	if (!ui->follow && model__event(ui->m, ui->sel_seq) && match_at(ui, ui->sel_seq))
		return;
	if (!ui->follow) {
		/* The selection left the ring or the filter: go to the nearest match. */
		s = ui->sel_seq;
		if (!step(ui, &s, 1) && !newest(ui, &s))
			s = 0;
		ui->sel_seq = s;
	}
	if (ui->follow && newest(ui, &sel))
		ui->sel_seq = sel;
}

/* The matches to show in @rows rows (@shown), the selection's row in *@sel_row; how many. */
static int visible_events(struct ui *ui, const struct m_event **shown, int rows, int *sel_row)
{
	/* As many after the selection as fit, then fill from before it. */
	const struct m_event *after[512];
	uint64_t sel = ui->sel_seq, s;
	int na = 0, nb = 0, n = 0;

	if (!match_at(ui, sel) || rows <= 0)
		return 0;
	after[na++] = match_at(ui, sel);
	s = sel;
	while (na < rows && step(ui, &s, 1))
		after[na++] = match_at(ui, s);
	s = sel;
	while (nb + na < rows && step(ui, &s, -1))
		nb++;
	for (int i = 0; i < nb; i++) {
		shown[n++] = match_at(ui, s);
		step(ui, &s, 1);
	}
	*sel_row = n;
	for (int i = 0; i < na; i++)
		shown[n++] = after[i];
	return n;
}

/* The view's two header lines: what is seen and filtered, and the columns. */
static void draw_event_headers(struct ui *ui, int y, bool narrow, bool ranks)
{
	char filt[256], line[1024];

	filter_text(ui, filt, sizeof(filt));
	snprintf(line, sizeof(line), "Events: %llu seen, ring holds %zu  |  %s  |  %s",
		 (unsigned long long)ui->m->next_seq, ui->m->ring_n, filt,
		 ui->follow ? "following (space: pause)" : "paused (space/End: follow)");
	attrset(ui__attr(ui, C_HEADER));
	mvaddnstr(y, 0, line, ui->cols);
	clrtoeol();
	if (narrow)
		snprintf(line, sizeof(line), "%10s %-7s %s%-10s %-11s %s", "TIME", "PID",
			 ranks ? "RANK " : "", "COMM", "KIND", "WHAT (Enter: details)");
	else
		snprintf(line, sizeof(line), "%12s %-7s %-7s %-4s %-15s %-11s %s", "TIME", "PID",
			 "TID", "RANK", "COMM", "KIND", "WHAT (Enter: details)");
	mvaddnstr(y + 1, 0, line, ui->cols);
	clrtoeol();
	attrset(A_NORMAL);
}

/* One event's row at @y, in the columns draw_event_headers names. */
static void draw_event_row(struct ui *ui, int y, const struct m_event *e, bool narrow, bool ranks,
			   bool selected)
{
	uint64_t base = ui->m->t0 ? ui->m->t0 : e->t;
	const struct m_proc *p = model__proc(ui->m, e->pid);
	enum ui_color c = C_NORMAL;
	char line[1024], rank[16] = "";

	if (e->kind == EV_FINDING || e->kind == EV_SIGNAL)
		c = C_COLLISION;
	else if (e->kind == EV_LOADED)
		c = C_DIM;
	/* A rank's events say which rank (the trace's "rank", or its environment). */
	if (ranks)
		snprintf(rank, sizeof(rank), "%-4.4s ", p && p->rank[0] ? p->rank : "-");
	if (narrow)
		snprintf(line, sizeof(line), "%10.6f %-7d %s%-10.10s %-11s %s",
			 e->t >= base ? (double)(e->t - base) / 1e9 : 0.0, e->pid, rank, e->comm,
			 ev_kind__id(e->kind), e->text);
	else
		snprintf(line, sizeof(line), "%12.6f %-7d %-7d %-4s %-15s %-11s %s",
			 e->t >= base ? (double)(e->t - base) / 1e9 : 0.0, e->pid, e->tid,
			 p && p->rank[0] ? p->rank : "-", e->comm, ev_kind__id(e->kind), e->text);
	attrset(ui__attr(ui, c) | (selected ? A_REVERSE : 0));
	ui__addnstr(stdscr, y, 0, line, ui->cols);
	if (selected)
		chgat(-1, ui__attr(ui, c) | A_REVERSE, PAIR_NUMBER(ui__attr(ui, c)), NULL);
	attrset(A_NORMAL);
}

static void events_draw(struct ui *ui, int y, int h)
{
	const struct m_event *shown[512];
	int rows = h - 2 < 512 ? h - 2 : 512, n, sel_row = -1;
	bool narrow, ranks = false;

	keep_selection(ui);
	n = visible_events(ui, shown, rows, &sel_row);
	/*
	 * Under 120 columns: no TID (Enter shows it), COMM cut to 10, RANK only for a job; WHAT
	 * keeps 38 columns at 80.
	 */
	narrow = ui->cols < 120;
	for (size_t i = 0; i < ui->m->n_procs && !ranks; i++)
		ranks = ui->m->procs[i].rank[0];
	draw_event_headers(ui, y, narrow, ranks);
	for (int i = 0; i < rows; i++) {
		move(y + 2 + i, 0);
		clrtoeol();
		if (i < n)
			draw_event_row(ui, y + 2 + i, shown[i], narrow, ranks, i == sel_row);
	}
	if (!n) {
		attrset(ui__attr(ui, C_DIM));
		mvaddnstr(y + 2, 0,
			  ui->m->next_seq	  ? "no event matches the filter (c: clear)" :
			  ui->src == SRC_SNAPSHOT ? "a snapshot has no events (live mode "
						    "needs root)" :
						    "no events yet",
			  ui->cols);
		attrset(A_NORMAL);
	}
}

static void lib_filter_done(struct ui *ui, const char *text)
{
	snprintf(ui->filter.lib, sizeof(ui->filter.lib), "%s", text);
}

/* Leave follow mode at the newest match, so that moving starts from what is on screen. */
static void unfollow(struct ui *ui)
{
	uint64_t s;

	if (ui->follow && newest(ui, &s))
		ui->sel_seq = s;
	ui->follow = false;
}

static void search(struct ui *ui)
{
	uint64_t s;

	unfollow(ui);
	s = ui->sel_seq;
	while (step(ui, &s, -1)) {
		const struct m_event *e = match_at(ui, s);

		if (strcasestr(e->text, ui->search) || strcasestr(e->comm, ui->search)) {
			ui->sel_seq = s;
			ui__status(ui, false, "/%s", ui->search);
			return;
		}
	}
	ui__status(ui, true, "'%s' not found in older events", ui->search);
}

/* The kind filter's next step: one kind at a time, in the order of the trace format, then all. */
static void next_kind_filter(struct ui *ui)
{
	int k = 0;

	while (k < EV__COUNT && !(ui->filter.kinds & (1u << k)))
		k++;
	k = ui->filter.kinds ? k + 1 : 0;
	ui->filter.kinds = k < EV__COUNT ? 1u << k : 0;
}

/* The selected event whole, in a box: its thread, object and stack. */
static void show_event(struct ui *ui)
{
	const struct m_event *e = match_at(ui, ui->sel_seq);
	char *text;

	if (e &&
	    asprintf(&text, "%s\npid %d, thread %d (%s), %s\n%s%s%s%s", e->text, e->pid, e->tid,
		     e->comm, ev_kind__id(e->kind), e->lib ? "object: " : "", e->lib ? e->lib : "",
		     e->stack ? "\n\nstack:\n" : "", e->stack ? e->stack : "") >= 0) {
		ui__popup(ui, "event", text);
		free(text);
	}
}

static enum key_result events_key(struct ui *ui, int ch, const struct row *unused)
{
	int page = ui->lines - 6 > 1 ? ui->lines - 6 : 1;
	uint64_t s;

	switch (ch) {
	case UI_KEY_SEARCH: search(ui); return KEY_HANDLED;
	case KEY_UP:
	case 'k':
	case KEY_PPAGE:
		unfollow(ui);
		for (int i = 0; i < (ch == KEY_PPAGE ? page : 1); i++)
			step(ui, &ui->sel_seq, -1);
		return KEY_HANDLED;
	case KEY_DOWN:
	case 'j':
	case KEY_NPAGE:
		unfollow(ui);
		for (int i = 0; i < (ch == KEY_NPAGE ? page : 1); i++)
			step(ui, &ui->sel_seq, 1);
		return KEY_HANDLED;
	case KEY_HOME:
	case 'g':
		unfollow(ui);
		s = model__first_seq(ui->m);
		if (!match_at(ui, s))
			step(ui, &s, 1);
		ui->sel_seq = s;
		return KEY_HANDLED;
	case KEY_END:
	case 'G': ui->follow = true; return KEY_HANDLED;
	case ' ':
		if (ui->follow)
			unfollow(ui);
		else
			ui->follow = true;
		return KEY_HANDLED;
	case 't': next_kind_filter(ui); return KEY_HANDLED;
	case 'p':
		if (ui->filter.pid)
			ui->filter.pid = 0;
		else if (ui__proc(ui))
			ui->filter.pid = ui__proc(ui)->pid;
		return KEY_HANDLED;
	case 'l':
		ui__prompt(ui, "library (part of its path): ", lib_filter_done);
		return KEY_HANDLED;
	case 'c': memset(&ui->filter, 0, sizeof(ui->filter)); return KEY_HANDLED;
	case '\n':
	case KEY_ENTER: show_event(ui); return KEY_HANDLED;
	case 'r':
		if (ui__proc(ui) && ui->src != SRC_REPLAY) {
			ui__request_snapshot(ui, ui__proc(ui)->pid);
			return KEY_HANDLED;
		}
		return KEY_IGNORED;
	}
	return KEY_IGNORED;
}

const struct view view_events = {
	.name = "Events",
	.draw = events_draw,
	.key = events_key,
};
