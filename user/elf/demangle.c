// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <stdlib.h>

#include "demangle.h"

/* Declared extern "C" by <cxxabi.h>; libstdc++ provides it. */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

void demangle(const char *name, char *buf, size_t len)
{
	int status = -1;
	char *d = name[0] == '_' && name[1] == 'Z' ? __cxa_demangle(name, NULL, NULL, &status) :
						     NULL;

	snprintf(buf, len, "%s", d && !status ? d : name);
	free(d);
}
