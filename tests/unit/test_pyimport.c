// SPDX-License-Identifier: GPL-2.0
/*
 * A dlopen's Python frames named from what the kernel captured, against objects laid out in this
 * process's own memory as CPython 3.11 lays them out: a str or code object freed since the
 * capture and its memory reused (by another str, never hashed, as most are) must be refused, not
 * named; the ones still there are named. The kernel's fingerprint is py_import__str_digest's
 * (bpf/dlwatch.bpf.c takes the same one, dlwatch.h's mix).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pyimport.h"
#include "pystate.h"
#include "tap.h"

#define STR_HASH 24
#define STR_CAP 160 /* bytes of characters a fake str holds, the longest text below */

static const char *const str_type_name = "str";
static unsigned char str_type[64], code_type[64];

static void put(void *base, int off, uint64_t v)
{
	memcpy((char *)base + off, &v, 8);
}

/* A compact ASCII str as 3.11 lays it out (48 bytes of header), live, its hash @hash. */
static void str_set(unsigned char *o, const char *s, int64_t hash)
{
	uint64_t n = strlen(s);
	uint32_t state = 1 << 2 | 1 << 5 | 1 << 6; /* kind 1, compact, ascii */

	memset(o, 0, 48 + STR_CAP);
	put(o, 0, 1);
	put(o, 8, (uintptr_t)str_type);
	put(o, 16, n);
	put(o, STR_HASH, (uint64_t)hash);
	memcpy(o + 32, &state, 4);
	memcpy(o + 48, s, n);
}

static unsigned char *str_new(const char *s, int64_t hash)
{
	unsigned char *o = malloc(48 + STR_CAP);

	str_set(o, s, hash);
	return o;
}

static struct py_interp interp(void)
{
	struct py_interp pi = { .major = 3, .minor = 11, .layout = py_layout__find(3, 11) };

	put(str_type, pi.layout->tp_name, (uintptr_t)str_type_name);
	pi.code_type = (uintptr_t)code_type;
	return pi;
}

/* One captured frame of code that is gone (@code: no code object), named @name by the kernel. */
static void one_frame(struct dlw_pystack *raw, uint64_t code, const char *name, const void *file,
		      uint64_t file_hash, uint64_t file_digest)
{
	memset(raw, 0, sizeof(*raw));
	raw->status = DLW_PY_OK;
	raw->n = 1;
	raw->f[0].code = code;
	raw->f[0].file = (uintptr_t)file;
	raw->f[0].file_hash = file_hash;
	raw->f[0].file_digest = file_digest;
	snprintf(raw->f[0].name, sizeof(raw->f[0].name), "%s", name);
}

/* The file the one frame of @raw is named with ("?" when refused). */
static char *file_of(const struct py_interp *pi, const struct dlw_pystack *raw)
{
	struct py_import imp;
	char *file = NULL;

	if (!py_import__resolve(pi, getpid(), raw, NULL, &imp) && imp.n == 1)
		file = strdup(imp.f[0].file);
	py_import__clear(&imp);
	return file ? file : strdup("(error)");
}

static bool named_as(const struct py_interp *pi, const struct dlw_pystack *raw, const char *want)
{
	char *file = file_of(pi, raw);
	bool ok = !strcmp(file, want);

	if (!ok)
		printf("# named %s, wanted %s\n", file, want);
	free(file);
	return ok;
}

static void test_freed_file_names(void)
{
	static const char cheb[] = "/usr/lib/python3/dist-packages/numpy/polynomial/chebyshev.py";
	static const char doc[] = "Issued by chebfit when the design matrix is rank deficient.";
	struct py_interp pi = interp();
	unsigned char *file = str_new(cheb, -1), gone[256] = { 0 };
	struct dlw_pystack *raw = calloc(1, sizeof(*raw));
	uint64_t digest = py_import__str_digest(&pi, getpid(), (uintptr_t)file);

	CHECK(digest != 0, "a compact str has a fingerprint");
	one_frame(raw, (uintptr_t)gone, "<module>", file, (uint64_t)-1, digest);
	CHECK(named_as(&pi, raw, cheb), "a freed code's file str still there is named");

	/* The case: the file name freed, a docstring (never hashed) in its memory. */
	str_set(file, doc, -1);
	CHECK(named_as(&pi, raw, "?"), "a never-hashed str at a reused address is refused");
	one_frame(raw, (uintptr_t)gone, "<module>", file, (uint64_t)-1, 0);
	CHECK(named_as(&pi, raw, "?"),
	      "a hash of -1 without a fingerprint proves nothing: refused");

	/* Another file name of the same length: only its characters differ. */
	str_set(file, "/usr/lib/python3/dist-packages/numpy/polynomial/chebyshXv.py", -1);
	one_frame(raw, (uintptr_t)gone, "<module>", file, (uint64_t)-1, digest);
	CHECK(named_as(&pi, raw, "?"), "a same-length str with other characters is refused");

	/* The same text, freed and not yet reused: its reference count says so. */
	str_set(file, cheb, -1);
	put(file, 0, 0);
	CHECK(named_as(&pi, raw, "?"), "a freed str (reference count 0) is refused");
	put(file, 0, 3);
	CHECK(named_as(&pi, raw, cheb), "the same str, alive, is named");

	/* A hash taken at capture must be the str's now. */
	str_set(file, cheb, 0x1234567);
	one_frame(raw, (uintptr_t)gone, "<module>", file, 0x1234567, 0);
	CHECK(named_as(&pi, raw, cheb), "a hashed str whose hash is unchanged is named");
	str_set(file, doc, -1);
	CHECK(named_as(&pi, raw, "?"), "a hashed str replaced by a never-hashed one is refused");
	str_set(file, doc, 0x7654321);
	CHECK(named_as(&pi, raw, "?"), "a hashed str replaced by another hashed one is refused");
	/* A fingerprint and a hash: both must hold. */
	str_set(file, doc, 0x1234567);
	one_frame(raw, (uintptr_t)gone, "<module>", file, 0x1234567, digest);
	CHECK(named_as(&pi, raw, "?"), "an equal hash with another text fails the fingerprint");

	/* A long name: its head and tail are fingerprinted (and its length). */
	{
		char longname[STR_CAP], other[STR_CAP];
		uint64_t d;

		memset(longname, 'a', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		memcpy(other, longname, sizeof(other));
		other[sizeof(other) - 2] = 'b'; /* the last character */
		str_set(file, longname, -1);
		d = py_import__str_digest(&pi, getpid(), (uintptr_t)file);
		one_frame(raw, (uintptr_t)gone, "<module>", file, (uint64_t)-1, d);
		CHECK(named_as(&pi, raw, longname), "a long file name still there is named");
		str_set(file, other, -1);
		CHECK(named_as(&pi, raw, "?"),
		      "a long one whose last character differs is refused");
	}
	free(raw);
	free(file);
}

/* A live code object of 3.11 at @code: name @name, file @file, every unit on line 5. */
static void code_set(const struct py_layout *l, unsigned char *code, unsigned char *linetable,
		     const void *name, const void *file)
{
	memset(code, 0, 256);
	put(code, 0, 1);
	put(code, l->ob_type, (uintptr_t)code_type);
	put(code, l->co_filename, (uintptr_t)file);
	put(code, l->co_qualname, (uintptr_t)name);
	put(code, l->co_name, (uintptr_t)name);
	put(code, l->co_firstlineno, 5);
	put(code, l->co_linetable, (uintptr_t)linetable);
	memset(linetable, 0, 48);
	put(linetable, l->bytes_size, 2);
	linetable[32] = 0x80 | 13 << 3 | 7; /* no-column form, +0 lines, 8 units */
	linetable[33] = 0x00;
}

/* The frame of importlib's _find_and_load(name): the module being imported. */
static void test_module_name_and_code_objects(void)
{
	struct py_interp pi = interp();
	const struct py_layout *l = pi.layout;
	unsigned char *fn = str_new("_find_and_load", 11),
		      *boot = str_new("<frozen importlib._bootstrap>", 12),
		      *mod = str_new("sklearn", 0x5eed), code[256], linetable[48];
	struct dlw_pystack *raw = calloc(1, sizeof(*raw));
	struct py_import imp;

	code_set(l, code, linetable, fn, boot);
	one_frame(raw, (uintptr_t)code, "_find_and_load", boot, 12,
		  py_import__str_digest(&pi, getpid(), (uintptr_t)boot));
	raw->f[0].func = (uintptr_t)fn;
	raw->f[0].local0 = (uintptr_t)mod;
	raw->f[0].local0_hash = 0x5eed;
	CHECK(!py_import__resolve(&pi, getpid(), raw, NULL, &imp) && imp.n == 1 &&
		      !strcmp(imp.f[0].function, "_find_and_load") && imp.f[0].line == 5 &&
		      imp.module && !strcmp(imp.module, "sklearn"),
	      "the module name of _find_and_load, hashed as sys.modules hashed it, is read");
	py_import__clear(&imp);

	str_set(mod, "Issued by chebfit when the design matrix is rank deficient.", -1);
	CHECK(!py_import__resolve(&pi, getpid(), raw, NULL, &imp) && !imp.module,
	      "a never-hashed str where the module name was is no module name");
	py_import__clear(&imp);
	str_set(mod, "torch", 0x600d);
	CHECK(!py_import__resolve(&pi, getpid(), raw, NULL, &imp) && !imp.module,
	      "nor is another hashed one");
	py_import__clear(&imp);
	raw->f[0].local0_hash = (uint64_t)-1;
	str_set(mod, "sklearn", -1);
	CHECK(!py_import__resolve(&pi, getpid(), raw, NULL, &imp) && !imp.module,
	      "a module name never hashed when captured proves nothing");
	py_import__clear(&imp);

	/* The code object freed, its memory untouched: fields intact, reference count 0. */
	put(code, 0, 0);
	CHECK(!py_import__resolve(&pi, getpid(), raw, NULL, &imp) && imp.n == 1 &&
		      imp.f[0].line == -1 && !strcmp(imp.f[0].function, "_find_and_load"),
	      "a freed code object's line table is not read (reference count 0)");
	py_import__clear(&imp);

	/* Alive, but its name str freed and reused: the name is not the one the kernel copied. */
	put(code, 0, 1);
	str_set(fn, "nanfunctions", -1);
	CHECK(!py_import__resolve(&pi, getpid(), raw, NULL, &imp) && imp.n == 1 &&
		      imp.f[0].line == -1 && !strcmp(imp.f[0].function, "_find_and_load"),
	      "a code whose name now reads otherwise than the kernel's copy is not that code");
	py_import__clear(&imp);

	/* Another code object at the address, of another file. */
	str_set(fn, "_find_and_load", 11);
	code_set(l, code, linetable, fn, mod);
	CHECK(!py_import__resolve(&pi, getpid(), raw, NULL, &imp) && imp.n == 1 &&
		      imp.f[0].line == -1,
	      "a code whose file is another str is not the code captured");
	py_import__clear(&imp);
	free(raw);
	free(fn);
	free(boot);
	free(mod);
}

int main(void)
{
	test_freed_file_names();
	test_module_name_and_code_objects();
	return tap_done();
}
