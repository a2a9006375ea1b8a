/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The packages behind a finding's objects, in words: which installed distribution vendors or
 * provides each copy, which one it was loaded for, and so which one to rebuild or reinstall.
 * From the owners libgraph__find_packages put on the graph; silent where none is known.
 */
#ifndef DLSCOPE_OWNERS_H
#define DLSCOPE_OWNERS_H

#include <stddef.h>

struct finding;
struct libgraph;

/*
 * For an evidence line: "torch 2.1.0 (pip) vendors it" or "from libgomp1 12.2.0-14 (deb)", then
 * ", loaded for python3-torch 1.13.1+dfsg-4 (deb)" (the first object up its loading chain that
 * another package owns). "" when the object has no known package.
 */
void owners__describe(const struct libgraph *g, unsigned int id, char *buf, size_t len);

/*
 * Add to @f's remedy (set it first: finding__explain) the packages to act on: the wheels that
 * vendor one of the copies @ids, or else the packages the copies come from and are loaded for;
 * and "packages" to its data (one entry per copy). Nothing when no copy has a known package.
 */
void owners__remedy(struct finding *f, const struct libgraph *g, const unsigned int *ids, size_t n);

#endif
