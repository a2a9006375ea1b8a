/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The source line of an instruction, from a code object's line table: co_lnotab (3.9), the
 * 3.10 co_linetable, and the PEP 657 location table of 3.11 and later. Pure: the table is a
 * copy; a truncated or corrupt one gives "no line", never a read past its end.
 */
#ifndef DLSCOPE_PYLINES_H
#define DLSCOPE_PYLINES_H

#include <stddef.h>
#include <stdint.h>

#include "pylayout.h"

/*
 * The line of the instruction at @offset (bytes into co_code for 3.9 and 3.10, code units for
 * 3.11+) of a code object whose first line is @firstlineno and line table @table (@len bytes)
 * is in format @kind. Returns the line, or -1 when the table gives none.
 */
int py_line_of(enum py_line_table kind, const uint8_t *table, size_t len, int firstlineno,
	       uint64_t offset);

#endif
