// SPDX-License-Identifier: GPL-2.0
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "debuginfo_cache.h"
#include "dwarf_member.h"

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	return dwarf_attr_integrate(die, DW_AT_name, &attr) ? dwarf_formstring(&attr) : NULL;
}

/* The structure type of @var, through typedefs and qualifiers. */
static bool struct_type(Dwarf_Die *var, Dwarf_Die *type)
{
	Dwarf_Attribute attr;
	Dwarf_Die *die = var;

	for (int depth = 0; depth < 16; depth++) {
		if (!dwarf_attr_integrate(die, DW_AT_type, &attr) ||
		    !dwarf_formref_die(&attr, type))
			return false;
		switch (dwarf_tag(type)) {
		case DW_TAG_structure_type:
		case DW_TAG_union_type: return true;
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type: die = type; break;
		default: return false;
		}
	}
	return false;
}

static int member_at(Dwarf_Die *type, uint64_t offset, char *buf, size_t len)
{
	Dwarf_Die member;

	if (dwarf_child(type, &member))
		return -ENOENT;
	do {
		Dwarf_Attribute attr;
		Dwarf_Word where;
		Dwarf_Die mtype;
		Dwarf_Word size;
		const char *name = die_name(&member);

		if (dwarf_tag(&member) != DW_TAG_member || !name ||
		    !dwarf_attr(&member, DW_AT_data_member_location, &attr) ||
		    dwarf_formudata(&attr, &where) ||
		    !dwarf_attr_integrate(&member, DW_AT_type, &attr) ||
		    !dwarf_formref_die(&attr, &mtype) || dwarf_aggregate_size(&mtype, &size))
			continue;
		if (offset >= where && offset < where + size) {
			snprintf(buf, len, "%s", name);
			return 0;
		}
	} while (!dwarf_siblingof(&member, &member));
	return -ENOENT;
}

static int lookup_member(const char *path, const char *variable, uint64_t offset, char *buf,
			 size_t len)
{
	static char *debuginfo_path;
	static const Dwfl_Callbacks callbacks = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = debuginfo_cache__find,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &debuginfo_path,
	};
	Dwfl *dwfl = dwfl_begin(&callbacks);
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias;
	Dwfl_Module *mod;
	int err = -ENOENT;

	if (!dwfl)
		return -ENOMEM;
	mod = dwfl_report_offline(dwfl, "", path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	while (mod && err && (cu = dwfl_module_nextcu(mod, cu, &bias))) {
		Dwarf_Die die, type;
		Dwarf_Attribute attr;

		if (dwarf_child(cu, &die))
			continue;
		do {
			const char *name = die_name(&die);

			if (dwarf_tag(&die) != DW_TAG_variable || !name || strcmp(name, variable) ||
			    !dwarf_attr(&die, DW_AT_location, &attr))
				continue;
			if (struct_type(&die, &type))
				err = member_at(&type, offset, buf, len);
			break;
		} while (!dwarf_siblingof(&die, &die));
	}
	dwfl_end(dwfl);
	return err;
}

/*
 * Answers already found, by file (as it is now: device, inode, size, mtime), variable and
 * offset: the 21 threads waiting on one condition variable ask the same question, and each
 * answer walks every unit of the object's DWARF.
 */
#define MEMO_MAX 32

static struct member_memo {
	char *path, *variable;
	uint64_t offset;
	struct stat st;
	int err;
	char name[128];
} memo[MEMO_MAX];
static size_t memo_next;
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int dwarf_member_at(const char *path, const char *variable, uint64_t offset, char *buf, size_t len)
{
	struct member_memo *m;
	struct stat st;
	char name[128];
	int err;

	if (stat(path, &st))
		return lookup_member(path, variable, offset, buf, len);
	pthread_mutex_lock(&memo_lock);
	for (size_t i = 0; i < MEMO_MAX; i++) {
		m = &memo[i];
		if (m->path && m->offset == offset && !strcmp(m->path, path) &&
		    !strcmp(m->variable, variable) && same_file(&m->st, &st)) {
			err = m->err;
			if (!err)
				snprintf(buf, len, "%s", m->name);
			pthread_mutex_unlock(&memo_lock);
			return err;
		}
	}
	pthread_mutex_unlock(&memo_lock);
	err = lookup_member(path, variable, offset, name, sizeof(name));
	if (!err)
		snprintf(buf, len, "%s", name);
	if (err && err != -ENOENT)
		return err; /* out of memory: not an answer to keep */
	pthread_mutex_lock(&memo_lock);
	m = &memo[memo_next++ % MEMO_MAX];
	free(m->path);
	free(m->variable);
	*m = (struct member_memo){ .path = strdup(path),
				   .variable = strdup(variable),
				   .offset = offset,
				   .st = st,
				   .err = err };
	if (!m->path || !m->variable) {
		free(m->path);
		free(m->variable);
		m->path = m->variable = NULL;
	} else if (!err) {
		snprintf(m->name, sizeof(m->name), "%s", name);
	}
	pthread_mutex_unlock(&memo_lock);
	return err;
}
