/* SPDX-License-Identifier: GPL-2.0 */
/* One place for everything dlscope says about failures, so the CLI, --json and the TUI agree. */
#ifndef DLSCOPE_OUTPUT_H
#define DLSCOPE_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

/* Exit codes, documented in --help and docs/dlscope.1.md. */
enum dls_exit {
	DLS_EXIT_OK = 0,
	DLS_EXIT_FINDINGS = 1,
	DLS_EXIT_USAGE = 2,
	DLS_EXIT_INSPECT = 3,
	DLS_EXIT_COMMAND = 4, /* check -- CMD: CMD exited non-zero or was killed by a signal */
};

/* When set, errors are also collected for the JSON document instead of only going to stderr. */
void output__set_json(bool json);
/* The command errors are about: dls_err() prefixes it unless the message starts with it. */
void output__set_command(const char *name);
/*
 * The width to wrap text written to @out at: $COLUMNS when set, else the terminal's width
 * (TIOCGWINSZ), else 80 on a terminal; 0 (no wrapping) when @out is no terminal.
 */
int output__columns(FILE *out);
/*
 * A --json document's "errors": every error message said since output__set_json(true), as on
 * stderr (without "dlscope: CMD: "). A new reference; an empty array when there was none.
 */
struct json_t;
struct json_t *output__errors_json(void);
/* A sink the TUI installs so that messages land on its status line, not on a curses screen. */
void output__set_sink(void (*sink)(const char *level, const char *msg));

/* Print "dlscope: MSG" on stderr (or to the sink). One line, says what failed, on what, and why. */
void dls_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void dls_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
