// SPDX-License-Identifier: GPL-2.0
/* Line tables, decoded as CPython's Objects/codeobject.c and Objects/lnotab_notes.txt say. */
#include <stdbool.h>

#include "pylines.h"

/* 3.9: pairs of (address increment, signed line increment); the line holds until the next. */
static int lnotab_line(const uint8_t *t, size_t len, int line, uint64_t addr)
{
	uint64_t at = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		at += t[i];
		if (at > addr)
			break;
		line += (int8_t)t[i + 1];
	}
	return line;
}

/* 3.10: pairs of (address delta, line delta) covering [start, end); -128: no line. */
static int linetable310_line(const uint8_t *t, size_t len, int line, uint64_t addr)
{
	uint64_t start = 0, end = 0;
	int cur = -1;

	for (size_t i = 0; i + 1 < len; i += 2) {
		start = end;
		end += t[i];
		if ((int8_t)t[i + 1] == -128) {
			cur = -1;
		} else {
			line += (int8_t)t[i + 1];
			cur = line;
		}
		if (start <= addr && addr < end)
			return cur;
	}
	return -1;
}

/* Varints of the location table: 6 bits a byte, bit 6 says another byte follows. */
static bool read_varint(const uint8_t *t, size_t len, size_t *i, uint64_t *out)
{
	unsigned int shift = 0;
	uint64_t v = 0;

	for (;;) {
		if (*i >= len || shift > 60)
			return false;
		uint8_t b = t[(*i)++];

		v |= (uint64_t)(b & 63) << shift;
		if (!(b & 64))
			break;
		shift += 6;
	}
	*out = v;
	return true;
}

static bool read_svarint(const uint8_t *t, size_t len, size_t *i, int64_t *out)
{
	uint64_t u;

	if (!read_varint(t, len, i, &u))
		return false;
	*out = u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return true;
}

/*
 * 3.11+: entries start with a byte 1CCCCLLL: code C, and L+1 code units covered. C 15: no
 * location; 14: long form (svarint line delta, then end line, column, end column varints);
 * 13: no column (svarint line delta); 10-12: one line, delta C-10, two column bytes; 0-9:
 * short form, same line, one column byte.
 */
static int locations_line(const uint8_t *t, size_t len, int line, uint64_t addr)
{
	uint64_t at = 0, skip;
	size_t i = 0;

	while (i < len) {
		uint8_t head = t[i++];
		unsigned int code = (head >> 3) & 15, units = (head & 7) + 1;
		int64_t delta = 0;
		bool has_line = true;

		if (!(head & 128))
			return -1; /* not the start of an entry: a corrupt table */
		switch (code) {
		case 15: has_line = false; break;
		case 14:
			if (!read_svarint(t, len, &i, &delta) || !read_varint(t, len, &i, &skip) ||
			    !read_varint(t, len, &i, &skip) || !read_varint(t, len, &i, &skip))
				return -1;
			break;
		case 13:
			if (!read_svarint(t, len, &i, &delta))
				return -1;
			break;
		case 10:
		case 11:
		case 12:
			delta = code - 10;
			i += 2;
			break;
		default: i += 1; break;
		}
		line += (int)delta;
		if (addr < at + units)
			return has_line ? line : -1;
		at += units;
	}
	return -1;
}

int py_line_of(enum py_line_table kind, const uint8_t *table, size_t len, int firstlineno,
	       uint64_t offset)
{
	if (!table)
		return -1;
	switch (kind) {
	case PY_LNOTAB: return lnotab_line(table, len, firstlineno, offset);
	case PY_LINETABLE_310: return linetable310_line(table, len, firstlineno, offset);
	case PY_LOCATIONS: return locations_line(table, len, firstlineno, offset);
	}
	return -1;
}
