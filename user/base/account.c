// SPDX-License-Identifier: GPL-2.0
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "account.h"

#ifdef DLSCOPE_STATIC
char *account__name(uid_t uid)
{
	FILE *f = fopen("/etc/passwd", "re");
	struct passwd *pw;
	char *name = NULL;

	if (!f)
		return NULL;
	while (!name && (pw = fgetpwent(f)))
		if (pw->pw_uid == uid)
			name = strdup(pw->pw_name);
	fclose(f);
	return name;
}
#else
char *account__name(uid_t uid)
{
	struct passwd *pw = getpwuid(uid);

	return pw ? strdup(pw->pw_name) : NULL;
}
#endif

const char *account__describe(uid_t uid, char *buf, size_t len)
{
	char *name = account__name(uid);

	if (name)
		snprintf(buf, len, "%s (uid %u)", name, (unsigned int)uid);
	else
		snprintf(buf, len, "uid %u", (unsigned int)uid);
	free(name);
	return buf;
}
