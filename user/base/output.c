// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <jansson.h>

#include "output.h"

static bool json_mode;
static void (*msg_sink)(const char *level, const char *msg);
static const char *command;
/* With --json, every error message, for the document's "errors". */
static json_t *errors;

int output__columns(FILE *out)
{
	const char *env = getenv("COLUMNS");
	struct winsize ws;
	long n;
	/* stdout and stderr are termsafe's cookie streams, with no descriptor of their own. */
	int fd = out == stdout ? STDOUT_FILENO : out == stderr ? STDERR_FILENO : fileno(out);

	/* COLUMNS set by the user wins, as in ls and many others; then the terminal's width. */
	if (env && *env) {
		char *end;

		n = strtol(env, &end, 10);
		if (!*end && n > 0 && n < 10000)
			return (int)n;
	}
	if (fd < 0 || !isatty(fd))
		return 0; /* piped: lines whole, for grep and scripts */
	if (!ioctl(fd, TIOCGWINSZ, &ws) && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

json_t *output__errors_json(void)
{
	return errors ? json_copy(errors) : json_array();
}

void output__set_command(const char *name)
{
	command = name;
}

/* True when @msg already names the command: "check: ..." or "check --job: ...". */
static bool names_command(const char *msg)
{
	size_t n = command ? strlen(command) : 0;

	return !n || (!strncmp(msg, command, n) && (msg[n] == ':' || msg[n] == ' '));
}

void output__set_json(bool json)
{
	json_mode = json;
}

void output__set_sink(void (*sink)(const char *level, const char *msg))
{
	msg_sink = sink;
}

static void emit(const char *level, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (level[0] == 'e' && json_mode) {
		if (!errors)
			errors = json_array();
		json_array_append_new(errors, json_string(msg));
	}
	if (msg_sink) {
		msg_sink(level, msg);
		return;
	}
	/* stderr stays plain text even with --json: the document on stdout remains parseable. */
	/* Every error says which command it is about: "dlscope: CMD: reason". */
	if (level[0] == 'e' && !names_command(msg))
		fprintf(stderr, "dlscope: %s: %s\n", command, msg);
	else if (level[0] == 'e')
		fprintf(stderr, "dlscope: %s\n", msg);
	else
		fprintf(stderr, "dlscope: %s: %s\n", level, msg);
}

void dls_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("error", fmt, ap);
	va_end(ap);
}

void dls_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit("warning", fmt, ap);
	va_end(ap);
}
