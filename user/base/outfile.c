// SPDX-License-Identifier: GPL-2.0
/* Output files created without following another user's links (see outfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "account.h"
#include "outfile.h"
#include "output.h"

static void name_user(uid_t uid, char *buf, size_t len)
{
	char id[128];

	snprintf(buf, len, "user %s", account__describe(uid, id, sizeof(id)));
}

bool outfile__dir_is_foreign(const char *dir, char *who, size_t wholen)
{
	struct stat st;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return false;
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		name_user(st.st_uid, who, wholen);
		return true;
	}
	/* The sticky bit keeps others from replacing a name they do not own (/tmp). */
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
		snprintf(who, wholen, "%s", st.st_mode & S_IWOTH ? "every user" : "its group");
		return true;
	}
	return false;
}

static void warn_foreign_dir(const char *cmd, const char *path)
{
	char *copy = strdup(path), who[160];
	const char *dir = copy ? dirname(copy) : NULL;

	if (dir && outfile__dir_is_foreign(dir, who, sizeof(who)))
		dls_warn("%s: %s is written in %s, which %s can change", cmd, path, dir, who);
	free(copy);
}

/* -ELOOP with @why when @lst is a symbolic link that another user owns. */
static int refuse_foreign_link(const char *path, const struct stat *lst, char *why, size_t whylen)
{
	char who[160];

	if (!S_ISLNK(lst->st_mode) || lst->st_uid == geteuid())
		return 0;
	name_user(lst->st_uid, who, sizeof(who));
	snprintf(why, whylen,
		 "%s is a symbolic link of %s: not followed (remove it or name "
		 "another file)",
		 path, who);
	return -ELOOP;
}

int outfile__check_replace(const char *cmd, const char *path, char *why, size_t whylen)
{
	struct stat lst;
	int err;

	if (!lstat(path, &lst) && (err = refuse_foreign_link(path, &lst, why, whylen)))
		return err;
	warn_foreign_dir(cmd, path);
	return 0;
}

/*
 * Whether another open of @path holds its lock (a writer that must be alone: two recorders on
 * one trace truncate and interleave it); otherwise the lock is ours while @fd stays open.
 */
static bool locked_by_another(int fd, const char *path, char *why, size_t whylen)
{
	if (!flock(fd, LOCK_EX | LOCK_NB) || errno != EWOULDBLOCK)
		return false;
	snprintf(why, whylen,
		 "%s is being written by another process (another dlscope record?): not written",
		 path);
	return true;
}

/* The existing @path, opened after lstat said what it is; -errno with @why. */
static int open_existing(const char *path, int flags, bool lock, char *why, size_t whylen)
{
	uid_t me = geteuid();
	struct stat lst, st;
	char who[160];
	int fd, err;

	if (lstat(path, &lst))
		goto fail_errno;
	err = refuse_foreign_link(path, &lst, why, whylen);
	if (err)
		return err;
	if (S_ISLNK(lst.st_mode)) {
		fd = open(path, O_CREAT | O_CLOEXEC | O_NONBLOCK | flags, 0666);
	} else {
		fd = open(path, O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | flags);
	}
	if (fd < 0)
		goto fail_errno;
	if (fstat(fd, &st))
		goto fail_close;
	if (!S_ISLNK(lst.st_mode) && (st.st_dev != lst.st_dev || st.st_ino != lst.st_ino)) {
		snprintf(why, whylen, "%s changed while it was opened: not written", path);
		close(fd);
		return -EAGAIN;
	}
	if (S_ISREG(st.st_mode) && lock && locked_by_another(fd, path, why, whylen)) {
		close(fd);
		return -EBUSY;
	}
	if (S_ISREG(st.st_mode)) {
		/* A hard link is the other way to point a name at someone else's file. */
		if (st.st_uid != me && st.st_nlink > 1) {
			name_user(st.st_uid, who, sizeof(who));
			snprintf(why, whylen,
				 "%s is a hard link to a file of %s: not written (remove it or "
				 "name another file)",
				 path, who);
			close(fd);
			return -EPERM;
		}
		if (ftruncate(fd, 0))
			goto fail_close;
	}
	/* A FIFO or device named by the user blocks and writes as usual from here. */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
		goto fail_close;
	return fd;
fail_close:
	err = -errno;
	close(fd);
	errno = -err;
fail_errno:
	err = -errno;
	snprintf(why, whylen, "cannot write %s: %s", path, strerror(-err));
	return err;
}

int outfile__open(const char *cmd, const char *path, int flags, char *why, size_t whylen)
{
	return outfile__open_alone(cmd, path, flags, false, why, whylen);
}

int outfile__open_alone(const char *cmd, const char *path, int flags, bool lock, char *why,
			size_t whylen)
{
	int fd;

	/* Written, or read back too (O_RDWR); never opened for reading alone. */
	flags = (flags & ~O_ACCMODE) | ((flags & O_ACCMODE) == O_RDWR ? O_RDWR : O_WRONLY);
	/* O_EXCL with O_CREAT never follows a link: a new file is simply ours. */
	fd = open(path, O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | flags, 0666);
	/* A file just made is ours, but its lock is taken at once: the next writer sees it. */
	if (fd >= 0 && lock && locked_by_another(fd, path, why, whylen)) {
		close(fd);
		return -EBUSY;
	}
	if (fd < 0 && errno == EEXIST) {
		fd = open_existing(path, flags, lock, why, whylen);
	} else if (fd < 0) {
		fd = -errno;
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(-fd));
	}
	if (fd >= 0)
		warn_foreign_dir(cmd, path);
	return fd;
}

FILE *outfile__fopen(const char *cmd, const char *path, char *why, size_t whylen)
{
	int fd = outfile__open(cmd, path, 0, why, whylen);
	FILE *f;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f) {
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}

FILE *outfile__temp(const char *tmp, int *err)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f;

	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	if (!(f = fdopen(fd, "w"))) {
		*err = -errno;
		close(fd);
		unlink(tmp);
	}
	return f;
}

int outfile__rename_into(FILE *f, const char *tmp, const char *path, int err)
{
	if ((fflush(f) || ferror(f)) && !err)
		err = -(errno ? errno : EIO);
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
