// SPDX-License-Identifier: GPL-2.0
/* Detectors and graph linking on synthetic library graphs built from the system's objects. */
#include <string.h>

#include "detector.h"
#include "libgraph.h"
#include "tap.h"

#define LIB "/usr/lib/x86_64-linux-gnu/"

static struct lg_object *add(struct libgraph *g, unsigned ns, const char *path, uint64_t base,
			     uint64_t inode)
{
	struct lg_object *o = libgraph__add(g, ns, path, path, base, base + 0x100, 0);

	if (o) {
		o->inode = inode;
		o->in_maps = true;
	}
	return o;
}

static size_t count(const struct findings *fs, const char *id)
{
	size_t n = 0;

	for (size_t i = 0; i < fs->n; i++)
		n += !strcmp(fs->f[i].id, id);
	return n;
}

static void test_linking(void)
{
	struct libgraph *g = libgraph__new(1, "synthetic");
	struct lg_object *libc, *gomp, *omp;

	libc = add(g, 0, LIB "libc.so.6", 0x1000, 1);
	gomp = add(g, 0, LIB "libgomp.so.1", 0x2000, 2);
	omp = add(g, 0, LIB "libomp.so.5", 0x3000, 3);
	CHECK(libgraph__link(g) == 0, "link");
	CHECK(gomp->n_children >= 1 && gomp->children[0] == libc->id, "libgomp needs libc");
	CHECK(libc->n_parents == 2, "libc has both runtimes as parents");
	CHECK(gomp->origin == LG_DLOPEN && libc->origin == LG_NEEDED, "origins from the edges");
	libgraph__remove(g, omp->lm_addr);
	CHECK(omp->gone, "dlclose marks the object gone");
	libgraph__free(g);
}

static void test_dup_openmp(void)
{
	struct libgraph *g = libgraph__new(1, "synthetic");
	struct findings fs = { 0 };
	struct check_ctx ctx = { .g = g };

	add(g, 0, LIB "libc.so.6", 0x1000, 1);
	add(g, 0, LIB "libgomp.so.1", 0x2000, 2);
	libgraph__link(g);
	dup_openmp__process(&ctx, &fs);
	CHECK(count(&fs, "dup-openmp") == 0, "one OpenMP runtime is fine");
	add(g, 0, LIB "libomp.so.5", 0x3000, 3);
	libgraph__link(g);
	dup_openmp__process(&ctx, &fs);
	CHECK(count(&fs, "dup-openmp") == 1 && fs.f[0].sev == SEV_ERROR, "two are an error");
	CHECK(fs.n && fs.f[0].n_evidence == 2 && strstr(fs.f[0].evidence[1], "libomp.so.5"),
	      "evidence names both");
	findings__free(&fs);
	/* Once dlclose'd, the second runtime no longer counts. */
	libgraph__remove(g, 0x3100);
	dup_openmp__process(&ctx, &fs);
	CHECK(fs.n == 0, "a closed runtime is gone");
	findings__free(&fs);
	libgraph__free(g);
}

static void test_blas_front_is_one_runtime(void)
{
	struct libgraph *g = libgraph__new(1, "synthetic");
	struct findings fs = { 0 };
	struct check_ctx ctx = { .g = g };

	/* Debian's libblas.so.3 forwards to libopenblas.so.0, which it needs. */
	add(g, 0, LIB "openblas-pthread/libblas.so.3", 0x1000, 1);
	add(g, 0, LIB "openblas-pthread/libopenblas.so.0", 0x2000, 2);
	libgraph__link(g);
	dup_blas__process(&ctx, &fs);
	CHECK(fs.n == 0, "a BLAS front and its backend are one BLAS");
	add(g, 0, LIB "openblas64-pthread/libopenblas64.so.0", 0x3000, 3);
	libgraph__link(g);
	dup_blas__process(&ctx, &fs);
	CHECK(count(&fs, "dup-blas") == 1, "a second OpenBLAS is a finding");
	findings__free(&fs);
	libgraph__free(g);
}

static void test_same_build_twice(void)
{
	struct libgraph *g = libgraph__new(1, "synthetic");
	struct findings fs = { 0 };
	struct check_ctx ctx = { .g = g };

	add(g, 0, LIB "libgomp.so.1", 0x2000, 2);
	add(g, 1, LIB "libgomp.so.1", 0x9000, 2); /* the same file in a dlmopen namespace */
	libgraph__link(g);
	dup_library__process(&ctx, &fs);
	CHECK(count(&fs, "dup-library") == 1 && fs.f[0].sev == SEV_WARNING,
	      "one file in two namespaces is a warning");
	findings__free(&fs);
	libgraph__free(g);
}

static void test_severity_names(void)
{
	CHECK(severity__parse("warning") == SEV_WARNING, "parse warning");
	CHECK(severity__parse("fatal") < 0, "reject unknown severity");
	CHECK(!strcmp(severity__name(SEV_ERROR), "error"), "name error");
}

int main(void)
{
	test_linking();
	test_dup_openmp();
	test_blas_front_is_one_runtime();
	test_same_build_twice();
	test_severity_names();
	return tap_done();
}
