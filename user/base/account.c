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
