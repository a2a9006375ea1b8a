/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DLSCOPE_FDREAPER_H
#define DLSCOPE_FDREAPER_H

#include <stddef.h>

/*
 * Descriptors whose last close is slow (a BPF link waits for a grace period, 15-100 ms each)
 * closed off the caller's path: a reaper process starts with copies of @fds, and ends (closing
 * them) once the descriptor returned is closed. The caller closes its own copies of @fds, then
 * that descriptor: its closes are then not the last, and cost nothing. -errno, with no reaper,
 * when it cannot be made.
 */
int fd_reaper__start(const int *fds, size_t n);

#endif
