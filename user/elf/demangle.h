/* SPDX-License-Identifier: GPL-2.0 */
/* C++ names as people read them, through libstdc++'s own demangler. */
#ifndef DLSCOPE_DEMANGLE_H
#define DLSCOPE_DEMANGLE_H

#include <stddef.h>

/* Demangle @name into @buf; a name that is not mangled is copied as is. */
void demangle(const char *name, char *buf, size_t len);

#endif
