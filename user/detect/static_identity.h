/* SPDX-License-Identifier: GPL-2.0 */
#ifndef DLSCOPE_STATIC_IDENTITY_H
#define DLSCOPE_STATIC_IDENTITY_H

/*
 * Whether two copies of a vague-linkage static can make a program behave differently, as
 * the identity table (static_identity.c) knows it from the static's mangled name:
 * the default is ID_WRITABLE. @why, when not NULL, gets the table's reason (NULL for the
 * default). The symbol digests leave out ID_CONTENTS names, and typeinfo unless asked.
 */
enum static_identity {
	ID_WRITABLE,	   /* its copies are apart when they can be written at run time */
	ID_ADDRESS,	   /* its address is an identity the program compares: always apart */
	ID_ADDRESS_LIBCXX, /* compared by address where libc++ is the C++ runtime (typeinfo) */
	ID_CONTENTS,	   /* compared by contents or by an id it holds, or never: copies are one */
};
/* A name's entry in the table (static_identity.c), or NULL: the default, ID_WRITABLE. */
struct identity_rule {
	const char *pattern; /* a prefix of the mangled name; '*'+part: a source name inside it */
	enum static_identity id;
	const char *label; /* for the evidence */
	const char *why;
};
const struct identity_rule *static_identity__rule(const char *mangled);
enum static_identity static_identity__of(const char *mangled, const char **why);

#endif
