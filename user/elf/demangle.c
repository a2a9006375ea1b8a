// SPDX-License-Identifier: GPL-2.0
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "demangle.h"

typedef char *cxa_demangle_fn(const char *mangled, char *out, size_t *len, int *status);

/*
 * Declared extern "C" by <cxxabi.h>. Weak: the static build links libstdc++ in (and keeps this
 * symbol); the dynamic one loads libstdc++ at the first C++ name only, for linking it into every
 * command cost each start some 3 ms on a nested VM (mapping it, libm and libgcc_s, and their
 * relocations), most of `dlscope --version`.
 */
extern cxa_demangle_fn __cxa_demangle __attribute__((weak));

static cxa_demangle_fn *loaded;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

	if (h)
		loaded = (cxa_demangle_fn *)dlsym(h, "__cxa_demangle");
}

static cxa_demangle_fn *demangler(void)
{
	if (__cxa_demangle)
		return __cxa_demangle;
	pthread_once(&load_once, load);
	return loaded;
}

void demangle(const char *name, char *buf, size_t len)
{
	cxa_demangle_fn *fn = name[0] == '_' && name[1] == 'Z' ? demangler() : NULL;
	int status = -1;
	char *d = fn ? fn(name, NULL, NULL, &status) : NULL;

	snprintf(buf, len, "%s", d && !status ? d : name);
	free(d);
}
