/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files dlscope writes for the user (-o of record, report, export, merge, ui; report's
 * companion and graph), created so that a user who controls the directory cannot turn root's
 * dlscope against another file: no symbolic link followed unless it belongs to the one who
 * runs dlscope, no write through a hard link to another user's file, and a warning when the
 * directory can be changed by another user.
 */
#ifndef DLSCOPE_OUTFILE_H
#define DLSCOPE_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * Opens @path for writing from its start (O_WRONLY, or O_RDWR and other @flags such as O_APPEND
 * given in @flags), creating
 * it (mode 0666 less the umask) when it does not exist. Refuses a symbolic link owned by
 * another user, a regular file that another user owns through more than one hard link, and a
 * directory; a FIFO or a device the user named (/dev/stdout, /dev/null) is opened as is.
 * Warns once, through dls_warn with @cmd, when @path's directory can be written by another
 * user. Returns the descriptor (O_CLOEXEC), or -errno with @why set to one line naming @path.
 */
int outfile__open(const char *cmd, const char *path, int flags, char *why, size_t whylen);
/*
 * outfile__open, and with @lock a writer that must be alone: the file's flock is taken before it
 * is truncated, and held while the descriptor is open; -EBUSY (nothing written) when another
 * holds it.
 */
int outfile__open_alone(const char *cmd, const char *path, int flags, bool lock, char *why,
			size_t whylen);

/*
 * For a file written whole beside @path and renamed over it (merge): refuses @path when it is
 * a symbolic link of another user, as outfile__open does, and warns of a foreign directory.
 * 0, or -errno with @why set.
 */
int outfile__check_replace(const char *cmd, const char *path, char *why, size_t whylen);

/* outfile__open as a stdio stream ("w"); NULL with @why set. */
FILE *outfile__fopen(const char *cmd, const char *path, char *why, size_t whylen);

/*
 * Whether @dir can be changed by a user other than the effective one: owned by another user
 * (root aside), or writable by group or others without the sticky bit. @who gets "user NAME"
 * or "every user" when it can; false when it cannot or @dir cannot be read.
 */
bool outfile__dir_is_foreign(const char *dir, char *who, size_t wholen);

/*
 * A file that is written whole or not at all (the agent's metrics and reports): @tmp, in the
 * directory of the file it will become, opened for writing without following a link (the
 * directory may be another user's to change). NULL with *@err set (-errno).
 */
FILE *outfile__temp(const char *tmp, int *err);
/*
 * @f (from outfile__temp(@tmp)) flushed and closed, then renamed over @path; @err a failure
 * met while writing (-EIO) or 0. 0, or -errno with @tmp removed and @path as it was.
 */
int outfile__rename_into(FILE *f, const char *tmp, const char *path, int err);

#endif
