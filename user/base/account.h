/* SPDX-License-Identifier: GPL-2.0 */
/* User names for messages and --redact. */
#ifndef DLSCOPE_ACCOUNT_H
#define DLSCOPE_ACCOUNT_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The name of user @uid (malloc'd), or NULL when none is known. The static build reads
 * /etc/passwd alone: it loads no NSS module (each belongs to the host's own glibc).
 */
char *account__name(uid_t uid);

/* "NAME (uid N)", or "uid N" when no name is known, in @buf; returns @buf. */
const char *account__describe(uid_t uid, char *buf, size_t len);

#endif
