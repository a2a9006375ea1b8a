// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
/* Version ordering, maps parsing and role classification of the system's own runtimes. */
#include <string.h>

#include "elfobj.h"
#include "procmaps.h"
#include "roles.h"
#include "tap.h"

static void test_version_cmp(void)
{
	CHECK(version_cmp("3.4.30", "3.4.9") > 0, "3.4.30 > 3.4.9");
	CHECK(version_cmp("5.0", "5.0.1") < 0, "5.0 < 5.0.1");
	CHECK(version_cmp("2.36", "2.36") == 0, "equal versions");
	CHECK(version_cmp("1.10a", "1.10b") < 0, "suffix letters order");
}

static void test_maps_parse(void)
{
	const char *text =
		"55d0c0000000-55d0c0001000 r--p 00000000 fd:01 1234 /usr/bin/x\n"
		"7f0000000000-7f0000002000 r-xp 00001000 fd:01 99 /lib/lib a.so (deleted)\n"
		"7f0000003000-7f0000004000 rw-p 00000000 00:00 0 \n"
		"7ffd00000000-7ffd00001000 r-xp 00000000 00:00 0 [vdso]\n";
	struct procmaps *m = procmaps__parse(text);

	CHECK(m && m->n == 4, "four mappings");
	if (!m)
		return;
	CHECK(!strcmp(m->maps[1].path, "/lib/lib a.so") && m->maps[1].deleted,
	      "spaces in paths and (deleted)");
	CHECK(m->maps[1].offset == 0x1000 && m->maps[1].inode == 99, "offset and inode");
	CHECK(m->maps[2].path == NULL, "anonymous mapping has no path");
	CHECK(procmaps__find(m, 0x7f0000001fff) == &m->maps[1], "find inside");
	CHECK(procmaps__find(m, 0x7f0000002000) == NULL, "find in a gap");
	CHECK(!mapping__is_file(&m->maps[3]), "[vdso] is not a file");
	procmaps__free(m);
}

static const struct obj_role *role_of(const char *path, enum role_kind k, struct elf_object **o)
{
	*o = elfobj__open(path);
	return *o ? obj_roles__find(roles__of(*o), k) : NULL;
}

static void test_system_roles(void)
{
	struct elf_object *o;
	const struct obj_role *r;

	r = role_of("/usr/lib/x86_64-linux-gnu/libgomp.so.1", ROLE_OPENMP, &o);
	CHECK(r && r->impl == IMPL_GNU_LIBGOMP && r->version[0], "libgomp is GNU OpenMP");
	elfobj__free(o);
	r = role_of("/usr/lib/x86_64-linux-gnu/libomp.so.5", ROLE_OPENMP, &o);
	CHECK(r && r->impl == IMPL_LLVM_LIBOMP, "libomp is LLVM OpenMP despite its GOMP_ symbols");
	elfobj__free(o);
	r = role_of("/usr/lib/x86_64-linux-gnu/openblas64-pthread/libopenblas64.so.0", ROLE_BLAS,
		    &o);
	CHECK(r && r->impl == IMPL_OPENBLAS && !strcmp(r->version, "0.3.21"), "OpenBLAS 0.3.21");
	elfobj__free(o);
	r = role_of("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", ROLE_CXX_RUNTIME, &o);
	CHECK(r && r->impl == IMPL_LIBSTDCXX && version_cmp(r->version, "3.4.29") >= 0,
	      "libstdc++ with its newest GLIBCXX node");
	elfobj__free(o);
	r = role_of("/usr/lib/x86_64-linux-gnu/libc.so.6", ROLE_LIBC, &o);
	CHECK(r && r->impl == IMPL_GLIBC && !strcmp(r->version, "2.36"), "glibc 2.36");
	CHECK(o && elfobj__build_id(o) && strlen(elfobj__build_id(o)) == 40, "build-id");
	elfobj__free(o);
	o = elfobj__open("/etc/passwd");
	CHECK(!o, "a text file is not an ELF object");
}

static void test_func_offset(void)
{
	struct elf_object *o = elfobj__open("/usr/lib/x86_64-linux-gnu/libc.so.6");
	uint64_t off = 0, off2 = 0;

	CHECK(o && elfobj__func_offset(o, "dlopen", &off) == 0 && off, "dlopen resolves in libc");
	CHECK(o && elfobj__func_offset(o, "dlsym", &off2) == 0 && off2 != off, "dlsym differs");
	CHECK(o && elfobj__func_offset(o, "no_such_function_here", &off) == -ENOENT,
	      "missing symbol");
	elfobj__free(o);
}

int main(void)
{
	test_version_cmp();
	test_maps_parse();
	test_system_roles();
	test_func_offset();
	return tap_done();
}
