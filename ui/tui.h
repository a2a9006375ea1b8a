/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The TUI: a small main loop (tui.c), what views draw with (widgets.c) and one file per view.
 * Views read the model and the selection state here; sources fill the model; nothing in a view
 * collects data: a view asks (ui__request_snapshot) and the loop does it.
 */
#ifndef DLSCOPE_UI_TUI_H
#define DLSCOPE_UI_TUI_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "model.h"
#include "source.h"

enum view_id { VIEW_PROCS, VIEW_LIBS, VIEW_THREADS, VIEW_EVENTS, VIEW_FINDINGS, VIEW__COUNT };

/* Colour pairs; with no colours each maps to an attribute (bold, reverse, underline). */
enum ui_color {
	C_NORMAL,
	C_TITLE,
	C_HEADER,
	C_COLLISION,
	C_CYCLE,
	C_WARN,
	C_DIM,
	C_STATUS,
	C_ERROR,
	C__COUNT,
};

struct row {
	char text[512];
	enum ui_color color;
	long ref; /* what the row stands for: a pid, a tid, a library index; -1 for none */
};

struct rows {
	struct row *r;
	size_t n, cap;
};

/* Append a row; silently dropped when out of memory (the screen is best effort). */
void rows__add(struct rows *rs, enum ui_color color, long ref, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * @text word-wrapped to @width columns: the first row starts with @first, the others with
 * @cont (a hanging indent); each row at most @width wide. Any length of text.
 */
void rows__add_wrapped(struct rows *rs, enum ui_color color, long ref, int width, const char *first,
		       const char *cont, const char *text);
/* How much of @s (up to a newline) goes on a line @width wide: cut at a space when one is there. */
size_t wrap_cut(const char *s, size_t width);

struct ui;

/* Key handler results, as htop's: the loop redraws or quits on them. */
enum key_result { KEY_IGNORED = 0, KEY_HANDLED = 1, KEY_QUIT = 2 };
/* Sent to a view that draws itself: search for ui->search from the selection on. */
#define UI_KEY_SEARCH 0x20000

struct view {
	const char *name;
	/* The rows of a list view; NULL for a view that draws itself (events). */
	void (*rows)(struct ui *ui, struct rows *out);
	void (*draw)(struct ui *ui, int y, int h);
	/* A key the generic list did not take; @sel is the selected row or NULL. */
	enum key_result (*key)(struct ui *ui, int ch, const struct row *sel);
};

extern const struct view view_procs, view_libs, view_threads, view_events, view_findings;

struct list_state {
	size_t sel, top;
};

enum source_kind { SRC_LIVE, SRC_REPLAY, SRC_SNAPSHOT };

struct ui {
	struct model *m;
	enum source_kind src;
	struct live *live;
	/* Live mode: the collector's options; it starts once the terminal is the UI's. */
	const struct watch_opts *live_opts;
	/* -- CMD: the file its stdout and stderr go to, read for the status line. */
	const char *cmd_out_path, *cmd_name;
	int cmd_out_fd;
	long long cmd_out_off;
	struct replay *replay;
	pid_t *snap_pids; /* -p targets: what 'r' snapshots again */
	size_t n_snap_pids;

	enum view_id view;
	struct list_state list[VIEW__COUNT];
	pid_t pid; /* the selected process, 0 for the first one */
	char search[128];

	/* events view */
	struct event_filter filter;
	bool follow;	  /* stick to the newest event */
	uint64_t sel_seq; /* selected event when not following */

	char **collapsed; /* folded library subtrees, by path */
	size_t n_collapsed, cap_collapsed;

	/* a scrolling text box over the view: help, a stack */
	char popup_title[128];
	char *popup_text;
	size_t popup_top;
	size_t popup_lines; /* the popup's text as wrapped when last drawn */

	/* a one-line prompt on the bottom row */
	bool prompting;
	char prompt_label[48], prompt_buf[128];
	void (*on_prompt)(struct ui *ui, const char *text);

	char status[512];
	bool status_error;
	unsigned int status_gen; /* bumped by ui__status: the loop redraws when it moves */
	bool colors;
	int lines, cols;
	unsigned long redraws;
	/* DLSCOPE_UI_FRAMES set: each frame's number at the status line's end, written last, so
	 * that a test's screen capture can tell a whole frame from one taken mid-redraw. */
	bool show_frames;
	pid_t snapshot_pid; /* a view's request for the loop (ui__request_snapshot); 0: none */
};

/* The process the views show: the selected one, or the first the model knows. */
struct m_proc *ui__proc(struct ui *ui);
void ui__status(struct ui *ui, bool error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ui__popup(struct ui *ui, const char *title, const char *text);
void ui__prompt(struct ui *ui, const char *label, void (*done)(struct ui *ui, const char *text));
int ui__attr(const struct ui *ui, enum ui_color c);
/* At most @n bytes of @s at (@y, @x) of @win, control characters shown as '?'. */
void ui__addnstr(WINDOW *win, int y, int x, const char *s, int n);
/*
 * Ask the loop for a snapshot of @pid (threads, stacks, findings) once the key is handled: it
 * says how it went on the status line. Views ask; only the loop collects.
 */
void ui__request_snapshot(struct ui *ui, pid_t pid);

/* Run the TUI until the user quits. Returns a dls_exit value; the terminal is restored. */
int tui__run(struct ui *ui, char *why, size_t whylen);

#endif
