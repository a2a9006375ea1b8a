// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
/* Version ordering, maps parsing and role classification of the system's own runtimes; the
 * versions each role names: releases apart from OpenMP levels and symbol version nodes. */
#include <string.h>
#include <unistd.h>

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

static void test_comment_compilers(void)
{
	static const char debian[] = "GCC: (Debian 12.2.0-14) 12.2.0";
	/* A manylinux build: crt files of the system's GCC 4.8.5, the code of devtoolset's 9.3.1. */
	static const char rh[] = "GCC: (GNU) 4.8.5 20150623 (Red Hat 4.8.5-44)\0"
				 "GCC: (GNU) 9.3.1 20200408 (Red Hat 9.3.1-2)";
	static const char llvm[] = "GCC: (Debian 12.2.0-14) 12.2.0\0Debian clang version 14.0.6";
	static const char ubuntu[] = "Ubuntu clang version 14.0.0-1ubuntu1.1";
	char gcc[32], clang[32];

	roles__comment_compilers(debian, sizeof(debian), gcc, sizeof(gcc), clang, sizeof(clang));
	CHECK(!strcmp(gcc, "12.2.0") && !clang[0], ".comment: Debian's GCC 12.2.0");
	roles__comment_compilers(rh, sizeof(rh), gcc, sizeof(gcc), NULL, 0);
	CHECK(!strcmp(gcc, "9.3.1"), ".comment: the newest GCC, not the crt files' 4.8.5");
	roles__comment_compilers(llvm, sizeof(llvm), gcc, sizeof(gcc), clang, sizeof(clang));
	CHECK(!strcmp(clang, "14.0.6") && !strcmp(gcc, "12.2.0"), ".comment: clang beside GCC");
	roles__comment_compilers(ubuntu, sizeof(ubuntu) - 1, gcc, sizeof(gcc), clang,
				 sizeof(clang));
	CHECK(!strcmp(clang, "14.0.0") && !gcc[0], ".comment: a vendor's clang, suffix dropped");
}

static void test_release_tables(void)
{
	/* GCC 12's libgomp (Debian 12): every node it defines. */
	static const char *const gcc12[] = {
		"libgomp.so.1",	   "OMP_1.0",	      "OMP_2.0",	 "OMP_3.0",
		"OMP_3.1",	   "OMP_4.0",	      "OMP_4.5",	 "OMP_5.0",
		"OMP_5.0.1",	   "OMP_5.0.2",	      "OMP_5.1",	 "GOMP_1.0",
		"GOMP_2.0",	   "GOMP_3.0",	      "GOMP_4.0",	 "GOMP_4.0.1",
		"GOMP_4.5",	   "GOMP_5.0",	      "GOMP_5.0.1",	 "GOMP_5.1",
		"OACC_2.0",	   "OACC_2.0.1",      "OACC_2.5",	 "OACC_2.5.1",
		"OACC_2.6",	   "GOACC_2.0",	      "GOACC_2.0.1",	 "GOACC_2.0.2",
		"GOMP_PLUGIN_1.0", "GOMP_PLUGIN_1.1", "GOMP_PLUGIN_1.2", "GOMP_PLUGIN_1.3",
	};
	const char *nodes[40];
	size_t n = sizeof(gcc12) / sizeof(gcc12[0]);
	char gcc[32];

	CHECK(!strcmp(roles__glibcxx_gcc("3.4.30") ?: "", "12"), "GLIBCXX_3.4.30 is GCC 12");
	CHECK(!strcmp(roles__glibcxx_gcc("3.4.28") ?: "", "9.3 to 10"),
	      "GLIBCXX_3.4.28: GCC 9.3 to 10, which add nothing");
	CHECK(!strcmp(roles__glibcxx_gcc("3.4.32") ?: "", "13.2 or a later 13"), "3.4.32: 13.2+");
	CHECK(!strcmp(roles__glibcxx_gcc("3.4.40") ?: "", "15 or later"), "past the table");
	CHECK(!roles__glibcxx_gcc("") && !roles__glibcxx_gcc("3.3"), "no node, no release");
	roles__libgomp_gcc(gcc12, n, gcc, sizeof(gcc));
	CHECK(!strcmp(gcc, "12"), "libgomp with GOMP_5.1, OMP_5.1: GCC 12");
	/* GCC 11's: without what 12 added. */
	n = 0;
	for (size_t i = 0; i < sizeof(gcc12) / sizeof(gcc12[0]); i++)
		if (strcmp(gcc12[i], "OMP_5.0.2") && strcmp(gcc12[i], "OMP_5.1") &&
		    strcmp(gcc12[i], "GOMP_5.1") && strcmp(gcc12[i], "GOACC_2.0.2"))
			nodes[n++] = gcc12[i];
	roles__libgomp_gcc(nodes, n, gcc, sizeof(gcc));
	CHECK(!strcmp(gcc, "11"), "libgomp with GOMP_5.0.1 at most: GCC 11");
	nodes[n++] = "GOMP_5.1";
	nodes[n++] = "GOMP_6.0";
	roles__libgomp_gcc(nodes, n, gcc, sizeof(gcc));
	CHECK(!strcmp(gcc, "12 or later"), "a node the table does not know: a later release");
	nodes[n - 1] = "OMP_5.2";
	roles__libgomp_gcc(nodes, n, gcc, sizeof(gcc));
	CHECK(!strcmp(gcc, "13 or later"), "OMP_5.2: GCC 13 or later");
	nodes[0] = "GOMP_1.0";
	nodes[1] = "OMP_4.5";
	nodes[2] = "GOMP_4.5";
	roles__libgomp_gcc(nodes, 3, gcc, sizeof(gcc));
	CHECK(!strcmp(gcc, "6 or 7"), "GCC 7 added no node: 6 or 7");
}

static void test_labels(void)
{
	struct obj_role gomp = { .kind = ROLE_OPENMP,
				 .impl = IMPL_GNU_LIBGOMP,
				 .version = "5.1",
				 .version_kind = VERSION_NODE,
				 .release_of = "GCC",
				 .release = "12.2.0",
				 .release_from = RELEASE_COMMENT,
				 .openmp = "5.1" };
	struct obj_role omp = { .kind = ROLE_OPENMP,
				.impl = IMPL_LLVM_LIBOMP,
				.version = "5.0.20140926",
				.version_kind = VERSION_KMP,
				.release_of = "LLVM",
				.release = "14.0",
				.release_from = RELEASE_BUILD_COMPILER,
				.openmp = "5.0" };
	struct obj_role cxx = { .kind = ROLE_CXX_RUNTIME,
				.impl = IMPL_LIBSTDCXX,
				.version = "3.4.30",
				.version_kind = VERSION_NODE,
				.release_of = "GCC",
				.release = "12",
				.release_from = RELEASE_SYMVER };
	struct obj_role blas = { .kind = ROLE_BLAS,
				 .impl = IMPL_OPENBLAS,
				 .version = "0.3.21",
				 .detail = "64-bit integers",
				 .version_kind = VERSION_RELEASE,
				 .release = "0.3.21",
				 .release_from = RELEASE_RODATA };
	struct obj_role bare = { .kind = ROLE_OPENMP,
				 .impl = IMPL_GNU_LIBGOMP,
				 .version = "5.1",
				 .version_kind = VERSION_NODE };
	char buf[256];
	json_t *j;

	obj_role__label(&gomp, buf, sizeof(buf));
	CHECK(!strcmp(buf, "GNU libgomp (GCC 12.2.0), OpenMP 5.1"), "libgomp: release, OpenMP");
	obj_role__version_text(&gomp, buf, sizeof(buf));
	CHECK(!strcmp(buf, "GCC 12.2.0, OpenMP 5.1"), "libgomp's versions alone");
	obj_role__label(&omp, buf, sizeof(buf));
	CHECK(!strcmp(buf, "LLVM libomp (LLVM 14.0), OpenMP 5.0") && !strstr(buf, "2014"),
	      "libomp: no KMP banner date read as a release");
	obj_role__label(&cxx, buf, sizeof(buf));
	CHECK(!strcmp(buf, "GNU libstdc++ GLIBCXX_3.4.30 (GCC 12)"), "libstdc++: node and GCC");
	obj_role__version_text(&cxx, buf, sizeof(buf));
	CHECK(!strcmp(buf, "GLIBCXX_3.4.30 (GCC 12)"), "libstdc++'s versions alone");
	obj_role__label(&blas, buf, sizeof(buf));
	CHECK(!strcmp(buf, "OpenBLAS 0.3.21 (64-bit integers)"), "OpenBLAS: its own release");
	obj_role__label(&bare, buf, sizeof(buf));
	CHECK(!strcmp(buf, "GNU libgomp GOMP_5.1"), "only a node: named as a node, not a release");
	obj_role__describe(&gomp, buf, sizeof(buf));
	CHECK(!strcmp(buf, "OpenMP runtime: GNU libgomp (GCC 12.2.0), OpenMP 5.1"), "describe");
	j = json_object();
	obj_role__json_versions(&omp, j);
	CHECK(!strcmp(json_string_value(json_object_get(j, "version_kind")) ?: "", "kmp") &&
		      !strcmp(json_string_value(json_object_get(j, "release")) ?: "", "14.0") &&
		      !strcmp(json_string_value(json_object_get(j, "release_of")) ?: "", "LLVM") &&
		      !strcmp(json_string_value(json_object_get(j, "release_from")) ?: "",
			      "build-compiler") &&
		      !strcmp(json_string_value(json_object_get(j, "openmp_version")) ?: "", "5.0"),
	      "JSON: what version is, the release apart, the OpenMP level");
	json_decref(j);
	j = json_object();
	obj_role__json_versions(&blas, j);
	CHECK(!strcmp(json_string_value(json_object_get(j, "release_of")) ?: "", "OpenBLAS") &&
		      json_is_null(json_object_get(j, "openmp_version")),
	      "JSON: a library's own release is of itself");
	json_decref(j);
}

/* The system's runtimes (Debian 12: GCC 12.2.0, LLVM 14.0.6), read from their objects. */
static void test_system_releases(void)
{
	struct elf_object *o;
	const struct obj_role *r;
	char buf[256];

	r = role_of("/usr/lib/x86_64-linux-gnu/libgomp.so.1", ROLE_OPENMP, &o);
	CHECK(r && !strcmp(r->version, "5.1") && r->version_kind == VERSION_NODE,
	      "libgomp's version is still its GOMP_ node (JSON compatible)");
	CHECK(r && !strcmp(r->release_of, "GCC") && !strcmp(r->release, "12") &&
		      !strcmp(r->openmp, "5.1"),
	      "libgomp: GCC 12 (its version nodes), OpenMP 5.1");
	if (r)
		obj_role__label(r, buf, sizeof(buf));
	CHECK(r && !strcmp(buf, "GNU libgomp (GCC 12), OpenMP 5.1"), "libgomp's label");
	elfobj__free(o);
	r = role_of("/usr/lib/x86_64-linux-gnu/libomp.so.5", ROLE_OPENMP, &o);
	CHECK(r && !strcmp(r->version, "5.0.20140926") && r->version_kind == VERSION_KMP,
	      "libomp's version is still its banner's");
	CHECK(r && !strcmp(r->release_of, "LLVM") && !strcmp(r->release, "14.0") &&
		      !strcmp(r->openmp, "5.0"),
	      "libomp: LLVM 14.0 (its build compiler), OpenMP 5.0 (its API banner)");
	elfobj__free(o);
	r = role_of("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", ROLE_CXX_RUNTIME, &o);
	if (r)
		obj_role__label(r, buf, sizeof(buf));
	CHECK(r && !strcmp(buf, "GNU libstdc++ GLIBCXX_3.4.30 (GCC 12)"), "libstdc++'s label");
	elfobj__free(o);
	r = role_of("/usr/lib/x86_64-linux-gnu/libc.so.6", ROLE_LIBC, &o);
	CHECK(r && !strcmp(r->release, "2.36") && r->release_from == RELEASE_RODATA,
	      "glibc: its release string");
	elfobj__free(o);
	if (!access("/usr/lib/x86_64-linux-gnu/libtbb.so.12", R_OK)) {
		r = role_of("/usr/lib/x86_64-linux-gnu/libtbb.so.12", ROLE_TBB, &o);
		CHECK(r && r->version_kind == VERSION_RELEASE && !strcmp(r->release, r->version) &&
			      !strncmp(r->release, "2021.", 5),
		      "oneTBB: TBB_runtime_version() is its release");
		elfobj__free(o);
	}
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
	test_comment_compilers();
	test_release_tables();
	test_labels();
	test_system_releases();
	test_func_offset();
	return tap_done();
}
