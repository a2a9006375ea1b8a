// SPDX-License-Identifier: GPL-2.0
/*
 * The symbol digest check's detectors read instead of symbol tables: on a real library
 * (Debian's libstdc++) it holds every defined and undefined dynamic symbol with its version,
 * its file image reads back the same, and any flaw (a flipped byte, a short or long file, the
 * image of another file's content) reads as nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfobj.h"
#include "objcache.h"
#include "symdigest.h"
#include "tap.h"

#define LIBSTDCXX "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"

struct tally {
	const struct symdigest *d;
	size_t n, missing;
};

static int count_def(const char *name, const char *version, const GElf_Sym *sym, void *ctx)
{
	struct tally *t = ctx;

	t->n++;
	t->missing += !symdigest__has(t->d->defs, t->d->n_defs,
				      symdigest__entry(name, version, false), true);
	return 0;
}

static int count_undef(const char *name, const char *version, bool weak, void *ctx)
{
	struct tally *t = ctx;
	uint64_t e = symdigest__entry(name, version, weak);
	bool found = false;

	t->n++;
	for (size_t i = 0; i < t->d->n_undefs && !found; i++)
		found = t->d->undefs[i] == e;
	t->missing += !found;
	return 0;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool same_vague(const struct symd_vague *a, const struct symd_vague *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i].name, b[i].name) || !same_str(a[i].version, b[i].version) ||
		    a[i].value != b[i].value || a[i].size != b[i].size ||
		    a[i].binds_own != b[i].binds_own || a[i].writable != b[i].writable)
			return false;
	return true;
}

static const struct symd_vague *vague_named(const struct symdigest *d, const char *name)
{
	for (size_t i = 0; i < d->n_vague; i++)
		if (!strcmp(d->vague[i].name, name))
			return &d->vague[i];
	return NULL;
}

static bool same(const struct symdigest *a, const struct symdigest *b)
{
	if (a->n_defs != b->n_defs || a->n_undefs != b->n_undefs || a->n_vague != b->n_vague ||
	    a->n_hidden != b->n_hidden || a->n_verneed != b->n_verneed ||
	    a->elf_defects != b->elf_defects)
		return false;
	if ((a->n_defs && memcmp(a->defs, b->defs, a->n_defs * sizeof(*a->defs))) ||
	    (a->n_undefs && memcmp(a->undefs, b->undefs, a->n_undefs * sizeof(*a->undefs))))
		return false;
	for (size_t i = 0; i < a->n_verneed; i++)
		if (strcmp(a->verneed[i].file, b->verneed[i].file) ||
		    strcmp(a->verneed[i].version, b->verneed[i].version))
			return false;
	return same_vague(a->vague, b->vague, a->n_vague) &&
	       same_vague(a->hidden, b->hidden, a->n_hidden);
}

static void candidates(void)
{
	GElf_Sym weak_obj = { .st_info = GELF_ST_INFO(STB_WEAK, STT_OBJECT), .st_size = 8 };
	GElf_Sym unique = { .st_info = GELF_ST_INFO(STB_GNU_UNIQUE, STT_OBJECT), .st_size = 8 };
	GElf_Sym local = { .st_info = GELF_ST_INFO(STB_LOCAL, STT_OBJECT), .st_size = 8 };
	GElf_Sym global = { .st_info = GELF_ST_INFO(STB_GLOBAL, STT_OBJECT), .st_size = 8 };
	GElf_Sym func = { .st_info = GELF_ST_INFO(STB_WEAK, STT_FUNC), .st_size = 8 };
	const char *type_id = "_ZZN4mlir6detail11TypeIDResolveE2id"; /* a function-local static */

	CHECK(symdigest__vague_candidate(type_id, &weak_obj, false, false) &&
		      symdigest__vague_candidate(type_id, &unique, false, false),
	      "an exported weak or unique C++ static is a candidate");
	CHECK(!symdigest__vague_candidate(type_id, &global, false, false) &&
		      !symdigest__vague_candidate(type_id, &func, false, false) &&
		      !symdigest__vague_candidate("plain_c", &weak_obj, false, false),
	      "strong definitions, functions and C names are not");
	CHECK(symdigest__vague_candidate(type_id, &local, true, false) &&
		      !symdigest__vague_candidate("_ZN12_GLOBAL__N_11xE", &local, true, false),
	      "a hidden one is, unless in an anonymous namespace");
	CHECK(!symdigest__vague_candidate("_ZTV3Foo", &weak_obj, false, true) &&
		      !symdigest__vague_candidate("_ZGVZ1fvE1x", &weak_obj, false, true),
	      "vtables and guard variables never are");
	CHECK(!symdigest__vague_candidate("_ZTI3Foo", &weak_obj, false, false) &&
		      symdigest__vague_candidate("_ZTI3Foo", &weak_obj, false, true),
	      "typeinfo only when asked for (libc++ compares it by address)");
	CHECK(!symdigest__vague_candidate("_ZL9moduledef", &local, true, false) &&
		      !symdigest__vague_candidate("_ZZL10initializeP10JavaThreadE11initialized",
						  &local, true, false) &&
		      !symdigest__vague_candidate("_ZN5numpyL5zerosE.lto_priv.0", &local, true,
						  false) &&
		      !symdigest__vague_candidate("_ZZNSt19_Sp_make_shared_tag5_S_tiEvE5__tag",
						  &unique, false, false),
	      "internal linkage, LTO's renamed locals and the table's harmless statics never are");
}

/* GCC's L marks internal linkage where a name is read; template arguments are not names. */
static void internal_linkage(void)
{
	static const char *const internal[] = {
		"_ZL11ioctl_table",			       /* the sanitizer runtimes */
		"_ZL9moduledef",			       /* a C++ extension's PyModuleDef */
		"_ZN2v88internalL3rspE",		       /* node: a namespace-scope static */
		"_ZN2v88internal4wasm4implL12kTypes_l_illE",   /* nested namespaces */
		"_ZZL10initializeP10JavaThreadE11initialized", /* libjvm: static of a static */
		"_ZStL8__ioinit",			       /* <iostream>'s, in std */
		"_ZN6icu_7812_GLOBAL__N_1L25gSystemDefaultCenturyInitE",
		"_ZNSt6chrono3_V2L3fooE", /* after two source names */
		"_ZN1AS_L3barE",	  /* after a substitution */
	};
	static const char *const external[] = {
		"_ZN6TypeIDI7DialectE2idE",
		"_ZNSt10moneypunctIcLb0EE4intlE", /* Lb0E: a template argument, not a marker */
		"_ZN6TypeIDIL6Colour1EE2idE",	  /* an enum argument: L6Colour1E */
		"_ZZNSt8__detail18__to_chars_10_implIjEEvPcjT_E8__digits",
		"_ZN3agg14sRGB_conv_baseIfE3lutE",
		"_ZZN4mlir6detail14TypeIDExported3getINS_7DialectEEENS_6TypeIDEvE8instance",
		"_ZNSt8numpunctIcE2idE",
		"_ZN3FooIiE1LE", /* a member called L */
		"_Z1L",
		"_ZN9",		/* truncated */
		"_ZN99999abcE", /* a length past the end */
		"plain_c",
	};
	size_t bad = 0;

	for (size_t i = 0; i < sizeof(internal) / sizeof(internal[0]); i++)
		if (!symdigest__internal_linkage(internal[i]) && ++bad)
			printf("# not seen as internal: %s\n", internal[i]);
	CHECK(!bad, "internal-linkage names are read as such");
	bad = 0;
	for (size_t i = 0; i < sizeof(external) / sizeof(external[0]); i++)
		if (symdigest__internal_linkage(external[i]) && ++bad)
			printf("# read as internal: %s\n", external[i]);
	CHECK(!bad, "vague-linkage, template-argument and malformed names are not");
}

int main(void)
{
	struct elf_object *o = elfobj__open(LIBSTDCXX);
	const struct symdigest *d = o ? symdigest__of(o) : NULL;
	struct tally defs = { .d = d }, undefs = { .d = d };
	struct objcache_key other;
	struct symdigest *back = NULL;
	unsigned char *img = NULL;
	size_t len = 0, accepted = 0;
	uint64_t memcpy_v = symdigest__entry("memcpy", "GLIBC_2.14", false);

	candidates();
	internal_linkage();
	CHECK(d && d->n_defs > 1000 && d->n_undefs > 50, "libstdc++'s digest has its symbols");
	if (!d) {
		elfobj__free(o);
		return tap_done();
	}
	elfobj__foreach_defined_versioned(o, count_def, &defs);
	elfobj__foreach_undefined(o, count_undef, &undefs);
	printf("# %zu definitions, %zu undefined, %zu vague candidates, %zu version needs\n",
	       defs.n, undefs.n, d->n_vague, d->n_verneed);
	CHECK(defs.n == d->n_defs && !defs.missing,
	      "every definition is there with its version, and nothing else");
	CHECK(undefs.n == d->n_undefs && !undefs.missing,
	      "every undefined symbol is there with its version and weakness");
	CHECK(symdigest__has(d->undefs, d->n_undefs, memcpy_v, true) &&
		      !symdigest__has(d->undefs, d->n_undefs,
				      symdigest__entry("memcpy", "GLIBC_9.99", false), true) &&
		      symdigest__has(d->undefs, d->n_undefs,
				     symdigest__entry("memcpy", "GLIBC_9.99", false), false),
	      "a name is found with its version, or by name alone");
	CHECK(d->n_verneed > 0 && !d->elf_defects, "its version needs are kept; it is sound");
	{
		/* std::numpunct<char>::id lives in .bss, moneypunct<char, false>::intl in .rodata. */
		const struct symd_vague *id = vague_named(d, "_ZNSt8numpunctIcE2idE"),
					*intl = vague_named(d, "_ZNSt10moneypunctIcLb0EE4intlE");

		CHECK(id && id->writable && id->version && !strcmp(id->version, "GLIBCXX_3.4") &&
			      intl && !intl->writable,
		      "a candidate carries its version and whether it is writable at run time");
	}

	CHECK(!symdigest__encode(d, elfobj__content_key(o), (void **)&img, &len),
	      "the digest is encoded");
	CHECK(!symdigest__decode(img, len, elfobj__content_key(o), &back) && back && same(d, back),
	      "it reads back as written");
	symdigest__free(back);
	other = *elfobj__content_key(o);
	other.ino++;
	CHECK(symdigest__decode(img, len, &other, &back) == -EINVAL,
	      "another file's content does not read it");
	{
		/* The header: magic[8], producer[48], then the format number. */
		uint32_t format, older;

		memcpy(&format, img + 56, sizeof(format));
		older = format - 1;
		memcpy(img + 56, &older, sizeof(older));
		CHECK(format >= 3 &&
			      symdigest__decode(img, len, elfobj__content_key(o), &back) == -EINVAL,
		      "a digest of an earlier format (3 added versions and the writable flag) is "
		      "refused");
		memcpy(img + 56, &format, sizeof(format));
	}
	/* Flipping bytes of the whole image is slow on 100,000 entries: the header and a stride. */
	for (size_t at = 0; at < len; at += at < 4096 ? 1 : 509) {
		img[at] ^= 0x5a;
		if (!symdigest__decode(img, len, elfobj__content_key(o), &back)) {
			accepted++;
			symdigest__free(back);
		}
		img[at] ^= 0x5a;
	}
	for (size_t l = 0; l < len; l += l < 4096 ? 1 : 4093)
		if (!symdigest__decode(img, l, elfobj__content_key(o), &back)) {
			accepted++;
			symdigest__free(back);
		}
	CHECK(accepted == 0, "no corrupt or truncated image is accepted");
	free(img);
	elfobj__free(o);
	return tap_done();
}
