// SPDX-License-Identifier: GPL-2.0
/*
 * Which statics' copies can make a program behave differently, from their mangled names: the
 * knowledge dup-library's split rules and the symbol digests share. Its own module so that the
 * digests (below the detectors) need no detector.
 */
#include <stdbool.h>
#include <string.h>

#include "static_identity.h"

/*
 * The statics whose identity a runtime or library decides, with the reason: ONE table, read by
 * dup-library's split rules (det_dup_library.c) and by the symbol digests (which leave out ID_CONTENTS names: a change
 * to those entries changes what a digest holds, so bump SD_FORMAT in symdigest.c with it).
 * A pattern is a prefix of the mangled name, or with a leading '*' a part of it that begins a
 * source name. Names in no entry are ID_WRITABLE.
 */
static const struct identity_rule identity_table[] = {
	{ "_ZTV", ID_CONTENTS, "vtable",
	  "vtables are called through, never compared, and every copy holds the same entries" },
	{ "_ZTT", ID_CONTENTS, "VTT", "VTTs are tables of vtable pointers: read, never compared" },
	{ "_ZTC", ID_CONTENTS, "construction vtable",
	  "construction vtables are read while a base is built, never compared" },
	{ "_ZGV", ID_CONTENTS, "guard variable",
	  "a guard variable guards its own object's copy of a static: the static's split is the "
	  "one that counts" },
	{ "_ZTI", ID_ADDRESS_LIBCXX, "typeinfo under libc++",
	  "libc++ on ELF compares type_info by the address of its name; libstdc++ compares the "
	  "names' characters, so there two copies are one type" },
	{ "_ZTS", ID_ADDRESS_LIBCXX, "typeinfo name under libc++",
	  "the address libc++ compares two type_info by (libstdc++ compares the characters)" },
	{ "_ZZNSt19_Sp_make_shared_tag5_S_tiEvE5__tag", ID_CONTENTS, "make_shared tag",
	  "libstdc++'s _Sp_counted_ptr_inplace::_M_get_deleter accepts typeid(_Sp_make_shared_tag) "
	  "as well as this tag's address, so a shared_ptr made through one copy is recognised "
	  "through the other" },
	{ "_ZN5boost6system6detail10cat_holder", ID_CONTENTS, "Boost.System category",
	  "Boost.System compares error categories by the 64-bit id they hold "
	  "(error_category::operator== in Boost 1.74's error_code.hpp), not by address" },
	{ "_ZN5boost6system6detail18generic_cat_holder", ID_CONTENTS, "Boost.System category",
	  "Boost.System compares error categories by the 64-bit id they hold, not by address" },
	{ "_ZN5boost6system6detail17system_cat_holder", ID_CONTENTS, "Boost.System category",
	  "Boost.System compares error categories by the 64-bit id they hold, not by address" },
	{ "_ZZN5boost6system6detail15to_std_category", ID_CONTENTS,
	  "Boost.System std::error_category bridge",
	  "to_std_category's wrappers (and its map of them, under its own mutex) are a per-copy "
	  "cache: each wrapper's equivalent() compares the Boost categories it wraps by their id, "
	  "so every copy converts and matches the same codes (Boost 1.74 std_interoperability.hpp)" },
	{ "_ZZN4mlir6detail14TypeIDExported3get", ID_ADDRESS, "MLIR TypeID",
	  "MLIR's TypeID (LLVM 14 and before) is the address of TypeIDExported::get<T>()'s static: "
	  "isa/dyn_cast, the dialect and interface registries compare it" },
	{ "_ZN4mlir6detail14TypeIDResolver", ID_ADDRESS, "MLIR TypeID",
	  "MLIR's TypeID (LLVM 15 and later) is the address of TypeIDResolver<T>::id: isa/dyn_cast "
	  "and the registries compare it" },
	{ "*6TypeIDI", ID_ADDRESS, "TypeID idiom",
	  "a class template TypeID<T> whose static's address is T's identity (MLIR's idiom, and "
	  "dlscope's seed fixture)" },
};

static bool pattern_match(const char *pattern, const char *name)
{
	if (pattern[0] != '*')
		return !strncmp(name, pattern, strlen(pattern));
	/* Where a source name starts: not inside a longer length ("16TypeID..."). */
	for (const char *at = strstr(name, pattern + 1); at; at = strstr(at + 1, pattern + 1))
		if (at == name || at[-1] < '0' || at[-1] > '9')
			return true;
	return false;
}

const struct identity_rule *static_identity__rule(const char *mangled)
{
	for (size_t i = 0; i < sizeof(identity_table) / sizeof(identity_table[0]); i++)
		if (pattern_match(identity_table[i].pattern, mangled))
			return &identity_table[i];
	return NULL;
}

enum static_identity static_identity__of(const char *mangled, const char **why)
{
	const struct identity_rule *e = static_identity__rule(mangled);

	if (why)
		*why = e ? e->why : NULL;
	return e ? e->id : ID_WRITABLE;
}
