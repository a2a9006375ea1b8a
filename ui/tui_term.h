/* SPDX-License-Identifier: GPL-2.0 */
/* The TUI's terminal, and the messages and command output it shows on the status line. */
#ifndef DLSCOPE_TUI_TERM_H
#define DLSCOPE_TUI_TERM_H

#include <curses.h>
#include <stddef.h>

struct ui;

struct term_state {
	int saved_fd[3];
	int out_read;
	SCREEN *screen;
	FILE *tty_out, *tty_in;
};

/*
 * curses on copies of fds 0 and 1; fds 0-2 become /dev/null and a pipe (@ts->out_read). 0, or
 * a negative errno with @why; tui_term__close undoes what was done either way.
 */
int tui_term__open(struct term_state *ts, char *why, size_t whylen);
/* The screen ended and fds 0-2 given back. */
void tui_term__close(struct term_state *ts);
/* dlscope's output sink while the screen is up: the message waits for the status line. */
void tui_term__sink(const char *level, const char *msg);
/* Shows what is new: the sink's message, what came down @out_fd, the command's output. */
void tui_term__read_messages(struct ui *ui, int out_fd);
/* The newest line the command wrote to its output file, with where that file is. */
void tui_term__read_command_output(struct ui *ui);

#endif
