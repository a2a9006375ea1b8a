// SPDX-License-Identifier: GPL-2.0
/* Control characters escaped before they reach a terminal (see termsafe.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "termsafe.h"

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

char *termsafe__escape(const char *in, size_t inlen, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!outlen)
		return out;
	for (size_t i = 0; i < inlen && in[i] && o + 1 < outlen; i++) {
		unsigned char c = (unsigned char)in[i];

		if (!is_control(c)) {
			out[o++] = (char)c;
			continue;
		}
		if (o + 5 > outlen)
			break;
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 15];
	}
	out[o] = '\0';
	return out;
}

static int write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

/* fopencookie's write: @cookie is the descriptor. Returns @n, or -1 when the write failed. */
static ssize_t guarded_write(void *cookie, const char *buf, size_t n)
{
	int fd = (int)(intptr_t)cookie;
	char out[4096];
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (o + 4 > sizeof(out)) {
			/* Whole lines per write where they fit: a pipe's writes of up to 4 KiB are
			 * never cut by another writer's (the watched command shares the output). */
			char *nl = memrchr(out, '\n', o);
			size_t keep = nl ? o - (size_t)(nl + 1 - out) : 0;

			if (write_all(fd, out, o - keep))
				return -1;
			memmove(out, out + o - keep, keep);
			o = keep;
		}
		if (is_control(c) && c != '\n' && c != '\t')
			o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	if (o && write_all(fd, out, o))
		return -1;
	return (ssize_t)n;
}

static FILE *guarded(int fd, int mode)
{
	FILE *f = fopencookie((void *)(intptr_t)fd, "w",
			      (cookie_io_functions_t){ .write = guarded_write });

	if (f)
		setvbuf(f, NULL, mode, mode == _IONBF ? 0 : BUFSIZ);
	return f;
}

void termsafe__guard_stdio(void)
{
	/* A terminal sees each line as it is made; a pipe or file gets full buffers. */
	FILE *out = guarded(STDOUT_FILENO, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF);
	FILE *err = guarded(STDERR_FILENO, _IONBF);

	if (out) {
		fflush(stdout);
		stdout = out;
	}
	if (err)
		stderr = err;
}
