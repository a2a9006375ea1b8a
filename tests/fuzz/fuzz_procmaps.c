// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer harness: the /proc/PID/maps reader on any text (procmaps.c reads its lines by hand).
 * Every mapping it returns must hold together: a NUL-terminated perms field of at most four
 * bytes, a path that is NULL or not empty and no longer than a line it reads.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct procmaps *m;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	m = procmaps__parse(text);
	for (size_t i = 0; m && i < m->n; i++) {
		const struct mapping *mp = &m->maps[i];
		size_t plen = mp->path ? strlen(mp->path) : 0;

		if (strnlen(mp->perms, sizeof(mp->perms)) >= sizeof(mp->perms) ||
		    plen > 4096 + 256 || (mp->path && !plen))
			abort();
	}
	procmaps__free(m);
	free(text);
	return 0;
}
