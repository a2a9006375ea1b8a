// SPDX-License-Identifier: GPL-2.0
/* Detectors and graph linking on synthetic library graphs built from the system's objects. */
#include <string.h>

#include "static_identity.h"
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

static void test_graph_links_needed_objects_and_dlclose_marks_gone(void)
{
	struct libgraph *g = libgraph__new(1, "synthetic");
	struct lg_object *libc, *gomp, *omp;

	/* In the loader's order: dlopen(libgomp) maps libgomp, then the libc it needs. */
	gomp = add(g, 0, LIB "libgomp.so.1", 0x2000, 2);
	libc = add(g, 0, LIB "libc.so.6", 0x1000, 1);
	omp = add(g, 0, LIB "libomp.so.5", 0x3000, 3);
	CHECK(libgraph__link(g) == 0, "link");
	CHECK(gomp->n_children >= 1 && gomp->children[0] == libc->id, "libgomp needs libc");
	CHECK(libc->n_parents == 2, "libc has both runtimes as parents");
	CHECK(gomp->origin == LG_DLOPEN && libc->origin == LG_NEEDED && omp->origin == LG_DLOPEN,
	      "origins from the edges");
	CHECK(libgraph__loaded_by(g, libc->id) == gomp->id &&
		      libgraph__loaded_by(g, gomp->id) == LG_NONE,
	      "libc loaded by libgomp, the first to need it");
	libgraph__remove(g, omp->lm_addr);
	CHECK(omp->gone, "dlclose marks the object gone");
	libgraph__free(g);
}

/*
 * The load order decides who loaded an object: one that was in the link map before anything that
 * needs it came by its own dlopen (ctypes.CDLL("libgfortran.so.5"), then numpy's OpenBLAS).
 */
static void test_an_object_loaded_before_what_needs_it_came_by_dlopen(void)
{
	struct libgraph *g = libgraph__new(1, "synthetic");
	struct lg_object *libc, *gomp, *omp, *cxx;
	unsigned int by[8];

	libc = add(g, 0, LIB "libc.so.6", 0x1000, 1);
	gomp = add(g, 0, LIB "libgomp.so.1", 0x2000, 2);
	cxx = add(g, 0, LIB "libstdc++.so.6", 0x3000, 3);
	omp = add(g, 0, LIB "libomp.so.5", 0x4000, 4);
	CHECK(libgraph__link(g) == 0, "link");
	CHECK(libc->n_parents >= 3, "libc has later parents");
	CHECK(libc->origin == LG_DLOPEN && libgraph__loaded_by(g, libc->id) == LG_NONE &&
		      libgraph__needed_by(g, libc->id, by, 8) == 0,
	      "libc, first in the link map, was dlopen'ed: nothing before it needs it");
	CHECK(gomp->origin == LG_DLOPEN && cxx->origin == LG_DLOPEN && omp->origin == LG_DLOPEN,
	      "so was each later one: none is needed by an earlier object");
	/* Now the same objects, each brought by what came before it. */
	libgraph__free(g);
	g = libgraph__new(1, "synthetic");
	omp = add(g, 0, LIB "libomp.so.5", 0x4000, 4);
	libc = add(g, 0, LIB "libc.so.6", 0x1000, 1);
	gomp = add(g, 0, LIB "libgomp.so.1", 0x2000, 2);
	CHECK(libgraph__link(g) == 0, "link");
	CHECK(libc->origin == LG_NEEDED && libgraph__loaded_by(g, libc->id) == omp->id,
	      "libc after libomp: libomp's DT_NEEDED loaded it");
	CHECK(libgraph__needed_by(g, libc->id, by, 8) == 1 && by[0] == omp->id,
	      "needed_by names libomp only, not libgomp that came later");
	CHECK(gomp->origin == LG_DLOPEN, "libgomp, needed by nothing before it: dlopen");
	/* A dlopen seen live outranks the order. */
	libgraph__saw_dlopen(libc);
	CHECK(libc->origin == LG_DLOPEN && libgraph__loaded_by(g, libc->id) == LG_NONE,
	      "an object a dlopen was seen to bring in is a root");
	CHECK(libgraph__link(g) == 0 && libc->origin == LG_DLOPEN, "and stays one after a relink");
	libgraph__free(g);
}

/* From /proc/PID/maps alone the ids follow addresses: the loader's walk gives the order. */
static void test_without_link_maps_the_walk_orders_objects(void)
{
	struct libgraph *g = libgraph__new(1, "synthetic");
	struct lg_object *libc, *gomp;

	g->unordered = true;
	libc = add(g, 0, LIB "libc.so.6", 0x1000, 1);
	gomp = add(g, 0, LIB "libgomp.so.1", 0x2000, 2);
	CHECK(libgraph__link(g) == 0, "link");
	CHECK(gomp->seq < libc->seq, "libgomp before the libc it needs");
	CHECK(libc->origin == LG_NEEDED && libgraph__loaded_by(g, libc->id) == gomp->id,
	      "libc loaded by libgomp");
	libgraph__free(g);
}

static void test_two_openmp_runtimes_are_an_error_until_one_is_closed(void)
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

static void test_a_blas_front_and_its_backend_are_one_blas(void)
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

static void test_one_file_in_two_namespaces_is_a_warning(void)
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

static void test_severity_names_parse_and_print(void)
{
	CHECK(severity__parse("warning") == SEV_WARNING, "parse warning");
	CHECK(severity__parse("fatal") < 0, "reject unknown severity");
	CHECK(!strcmp(severity__name(SEV_ERROR), "error"), "name error");
}

/* The collector's view: only objects in @seen count as present. */
struct seen_set {
	const struct lg_object *o[16];
	size_t n;
};

static bool seen(const struct live_ctx *lc, const struct lg_object *o)
{
	const struct seen_set *s = lc->arg;

	for (size_t i = 0; i < s->n; i++)
		if (s->o[i] == o)
			return true;
	return false;
}

/* Report @o as the collector does (mark it seen, then run the table's object hooks). */
static void arrive(struct live_ctx *lc, struct seen_set *s, const struct lg_object *o,
		   struct findings *out)
{
	s->o[s->n++] = o;
	detectors__on_object(lc, o, out);
}

static void test_live_second_openmp_runtime_is_the_batch_finding_once(void)
{
	struct libgraph *g = libgraph__new(1, "synthetic");
	struct findings live = { 0 }, batch = { 0 };
	struct check_ctx ctx = { .g = g };
	struct seen_set s = { 0 };
	struct live_ctx lc = { .g = g, .reported = seen, .arg = &s };
	struct lg_object *libc, *gomp, *omp, *third;

	libc = add(g, 0, LIB "libc.so.6", 0x1000, 1);
	gomp = add(g, 0, LIB "libgomp.so.1", 0x2000, 2);
	omp = add(g, 0, LIB "libomp.so.5", 0x3000, 3);
	libgraph__link(g);
	arrive(&lc, &s, libc, &live);
	arrive(&lc, &s, gomp, &live);
	CHECK(live.n == 0,
	      "live: one OpenMP runtime is fine, the one not yet reported is not there");
	arrive(&lc, &s, omp, &live);
	dup_openmp__process(&ctx, &batch);
	CHECK(count(&live, "dup-openmp") == 1 && live.n == 1, "live: the second one is a finding");
	CHECK(live.n && batch.n && live.f[0].sev == batch.f[0].sev &&
		      !strcmp(live.f[0].title, batch.f[0].title) &&
		      !strcmp(live.f[0].why, batch.f[0].why) &&
		      !strcmp(live.f[0].remedy, batch.f[0].remedy) &&
		      live.f[0].n_evidence == batch.f[0].n_evidence,
	      "live and batch give the same severity, title, evidence, why and fix");
	findings__free(&live);
	third = add(g, 1, LIB "libgomp.so.1", 0x9000, 2);
	libgraph__link(g);
	arrive(&lc, &s, third, &live);
	CHECK(count(&live, "dup-openmp") == 0, "live: a third runtime repeats no finding");
	findings__free(&live);
	findings__free(&batch);
	libgraph__free(g);
}

static void test_live_blas_front_arriving_is_no_second_blas(void)
{
	struct libgraph *g = libgraph__new(1, "synthetic");
	struct findings live = { 0 };
	struct seen_set s = { 0 };
	struct live_ctx lc = { .g = g, .reported = seen, .arg = &s };
	struct lg_object *front, *impl, *other;

	front = add(g, 0, LIB "openblas-pthread/libblas.so.3", 0x1000, 1);
	impl = add(g, 0, LIB "openblas-pthread/libopenblas.so.0", 0x2000, 2);
	other = add(g, 0, LIB "openblas64-pthread/libopenblas64.so.0", 0x3000, 3);
	libgraph__link(g);
	arrive(&lc, &s, front, &live);
	arrive(&lc, &s, impl, &live);
	CHECK(live.n == 0, "live: Debian's libblas.so.3 and the OpenBLAS behind it are one BLAS");
	arrive(&lc, &s, other, &live);
	CHECK(count(&live, "dup-blas") == 1 && live.f[0].why && live.f[0].remedy,
	      "live: a second OpenBLAS is a finding with why and fix");
	findings__free(&live);
	libgraph__free(g);
}

static void test_live_parallel_region_inside_dlopen_has_batch_why_and_fix(void)
{
	struct findings live = { 0 };
	struct live_ctx lc = { 0 };
	struct live_event e = { .kind = LIVE_PARALLEL_IN_DLOPEN,
				.pid = 7,
				.tid = 8,
				.comm = "app",
				.entry = LIVE_GOMP_PARALLEL };
	const struct detector *d = detector__find("loader-lock-hazard");

	detectors__on_event(&lc, &e, &live);
	CHECK(live.n == 1 && !strcmp(live.f[0].id, "loader-lock-hazard") && d &&
		      live.f[0].sev == d->severity && live.f[0].pid == 7,
	      "a parallel region inside dlopen is a loader-lock-hazard of the table's severity");
	CHECK(live.n &&
		      strstr(live.f[0].title,
			     "thread 8 (app) runs a GNU libgomp parallel region") &&
		      live.f[0].why && strstr(live.f[0].why, "loader lock") && live.f[0].remedy,
	      "with the batch finding's title form, why and fix");
	findings__free(&live);
	e.kind = LIVE_LOADER_LOCK_CYCLE;
	e.dlopen_file = "/lib/libx.so";
	e.waiter_tid = 9;
	e.waiter_symbol = "printf";
	detectors__on_event(&lc, &e, &live);
	CHECK(live.n == 1 && !strcmp(live.f[0].id, "deadlock") && live.f[0].sev == SEV_ERROR &&
		      live.f[0].why && live.f[0].remedy,
	      "a dlopen holder and a dlsym waiter are a deadlock with why and fix");
	findings__free(&live);
	CHECK(detector__find("no-such-detector") == NULL, "an unknown id names no detector");
}

static void test_live_oversubscription_needs_two_busy_pools_past_the_cpus(void)
{
	struct live_pool p[2] = { { "/lib/libgomp.so.1", 900, 3 }, { "/lib/libomp.so.5", 300, 3 } };
	struct live_pools lp = {
		.pid = 7, .comm = "app", .p = p, .n = 2, .starters = 1, .ncpu = 8, .cpus_list = "0-7"
	};
	struct findings fs = { 0 };

	oversubscription__live(&lp, &fs);
	CHECK(fs.n == 0, "7 threads on 8 CPUs: no finding");
	lp.ncpu = 4;
	lp.cpus_list = "0-3";
	p[1].regions = 0;
	oversubscription__live(&lp, &fs);
	CHECK(fs.n == 0, "one pool busy: no finding");
	p[1].regions = 300;
	oversubscription__live(&lp, &fs);
	CHECK(fs.n == 1 && !strcmp(fs.f[0].id, "oversubscription") && fs.f[0].sev == SEV_WARNING &&
		      strstr(fs.f[0].title, "process 7 (app) runs 7 threads in 2 thread pools at "
					    "once on the 4 CPUs it may use") &&
		      fs.f[0].why && fs.f[0].remedy,
	      "two busy pools with 7 threads on 4 CPUs: oversubscription, with why and fix");
	findings__free(&fs);
}

/* dup-library's one table of statics whose identity a runtime or library decides. */
static void test_static_identity_table(void)
{
	const char *why = NULL;

	CHECK(static_identity__of("_ZN3agg14sRGB_conv_baseIfE3lutE", &why) == ID_WRITABLE && !why,
	      "a static in no entry is judged by whether it can be written");
	CHECK(static_identity__of("_ZTV3Foo", NULL) == ID_CONTENTS &&
		      static_identity__of("_ZGVZ1fvE1x", NULL) == ID_CONTENTS,
	      "vtables and guard variables: copies are harmless");
	CHECK(static_identity__of("_ZTI3Foo", NULL) == ID_ADDRESS_LIBCXX &&
		      static_identity__of("_ZTS3Foo", NULL) == ID_ADDRESS_LIBCXX,
	      "typeinfo is compared by address under libc++ only");
	CHECK(static_identity__of("_ZZNSt19_Sp_make_shared_tag5_S_tiEvE5__tag", &why) ==
			      ID_CONTENTS &&
		      why && strstr(why, "_M_get_deleter"),
	      "libstdc++'s make_shared tag: _M_get_deleter also accepts its typeid");
	CHECK(static_identity__of("_ZN5boost6system6detail10cat_holderIvE25generic_category_"
				  "instanceE",
				  &why) == ID_CONTENTS &&
		      why && strstr(why, "id"),
	      "Boost.System categories are compared by id");
	CHECK(static_identity__of("_ZN4mlir6detail14TypeIDResolverINS_7DialectEE2idE", NULL) ==
			      ID_ADDRESS &&
		      static_identity__of("_ZZN4mlir6detail14TypeIDExported3getINS_7DialectEEENS_"
					  "6TypeIDEvE8instance",
					  NULL) == ID_ADDRESS &&
		      static_identity__of("_ZN6TypeIDI7DialectE2idE", NULL) == ID_ADDRESS,
	      "MLIR TypeIDs and the TypeID idiom are compared by address");
	CHECK(static_identity__of("_ZN3Foo16TypeIDIsNotThisE", NULL) == ID_WRITABLE,
	      "a longer name that contains TypeID is not the idiom");
}

int main(void)
{
	test_static_identity_table();
	test_graph_links_needed_objects_and_dlclose_marks_gone();
	test_an_object_loaded_before_what_needs_it_came_by_dlopen();
	test_without_link_maps_the_walk_orders_objects();
	test_two_openmp_runtimes_are_an_error_until_one_is_closed();
	test_a_blas_front_and_its_backend_are_one_blas();
	test_one_file_in_two_namespaces_is_a_warning();
	test_severity_names_parse_and_print();
	test_live_second_openmp_runtime_is_the_batch_finding_once();
	test_live_blas_front_arriving_is_no_second_blas();
	test_live_parallel_region_inside_dlopen_has_batch_why_and_fix();
	test_live_oversubscription_needs_two_busy_pools_past_the_cpus();
	return tap_done();
}
