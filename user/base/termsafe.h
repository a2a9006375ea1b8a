/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Text from a target (its comm and thread names, paths, Python strings) or from a file (a
 * trace, an ELF symbol) never reaches a terminal raw: an escape sequence in a name could clear
 * the screen, set the window title or fake a line of dlscope's own output.
 */
#ifndef DLSCOPE_TERMSAFE_H
#define DLSCOPE_TERMSAFE_H

#include <stddef.h>

/*
 * Copies @in (@inlen bytes, or up to its NUL when @inlen is (size_t)-1) into @out with every
 * control character (C0, DEL) written as \xNN, newlines and tabs too; cut at @outlen - 1.
 * For names that are shown, never opened. Returns @out.
 */
char *termsafe__escape(const char *in, size_t inlen, char *out, size_t outlen);

/*
 * Makes stdout and stderr escape control characters other than newline and tab on their way
 * to descriptors 1 and 2, whatever printed them: the chokepoint for every command's text
 * (JSON is unaffected: jansson already escapes controls inside strings). Call once, first.
 */
void termsafe__guard_stdio(void);

#endif
