// SPDX-License-Identifier: GPL-2.0
/*
 * static-tls: objects with initial-exec TLS (DF_STATIC_TLS: libgomp, many wheels) must find room
 * in the static TLS block every thread got at start-up. What a dlopen after start-up may take is
 * a surplus fixed then (1,664 bytes by default), shared by every such object, so whether one
 * loads depends on what came before it: "cannot allocate memory in static TLS block"
 * (scikit-learn #17231, opencv #14884, LightGBM #6509).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "detector.h"
#include "elfobj.h"
#include "libgraph.h"
#include "static_tls.h"
#include "target.h"

/* glibc's default surplus (2.32 and later): what objects loaded later may share. */
#define DEFAULT_SURPLUS 1664

static const char why[] =
	"An object with initial-exec TLS (DF_STATIC_TLS) must have its TLS in the static block "
	"every thread got when the process started. A dlopen after start-up can only use the "
	"surplus glibc set aside then (1,664 bytes by default, shared by every such object), so "
	"whether it loads depends on what was loaded before it.";
static const char fix[] =
	"Load the object at start-up or before the others that take the surplus (import it "
	"first, or LD_PRELOAD it), or give the block more room with "
	"GLIBC_TUNABLES=glibc.rtld.optional_static_tls=BYTES (glibc 2.32 and later); the "
	"object's own fix is to build it with the global- or local-dynamic TLS model.";

/* Its TLS block as the loader places it: the size rounded up to its alignment. */
static uint64_t block(uint64_t size, uint64_t align)
{
	return align > 1 ? (size + align - 1) / align * align : size;
}

void static_tls__files(const struct lint_file *files, size_t n, struct findings *out)
{
	struct finding *fits = NULL;
	size_t n_fit = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t size, align;

		if (elfobj__static_tls(files[i].elf, &size, &align) && size &&
		    block(size, align) <= DEFAULT_SURPLUS)
			n_fit++;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t size, align;
		struct finding *f;

		if (!elfobj__static_tls(files[i].elf, &size, &align) || !size)
			continue;
		if (block(size, align) <= DEFAULT_SURPLUS) {
			if (!fits) {
				fits = findings__add(out, "static-tls", SEV_INFO, 0,
						     "%zu object%s take%s static TLS when dlopened "
						     "(DF_STATIC_TLS)",
						     n_fit, n_fit == 1 ? "" : "s",
						     n_fit == 1 ? "s" : "");
				finding__explain(fits, why, fix);
			}
			finding__evidence(fits, "%s: %llu bytes of initial-exec TLS", files[i].path,
					  (unsigned long long)block(size, align));
			continue;
		}
		f = findings__add(
			out, "static-tls", SEV_WARNING, 0,
			"%s: %llu bytes of initial-exec TLS, more than glibc sets aside for "
			"objects loaded later (%d): dlopened after start-up, it fails",
			files[i].path, (unsigned long long)block(size, align), DEFAULT_SURPLUS);
		finding__evidence(f, "DF_STATIC_TLS, PT_TLS of %llu bytes aligned to %llu",
				  (unsigned long long)size, (unsigned long long)align);
		finding__explain(f, why, fix);
	}
}

/*
 * Live: a dlopen that failed with "cannot allocate memory in static TLS block": the object's
 * TLS (the file it opened, when that has TLS), and the room the process has left.
 */
void static_tls__on_event(const struct live_ctx *lc, const struct live_event *e,
			  struct findings *out)
{
	char host[PATH_MAX + 64];
	struct elf_object *o = NULL;
	struct static_tls st;
	struct finding *f;
	uint64_t size = 0, align = 0;

	if (e->kind != LIVE_DLOPEN_FAILED || !e->error || !lc->g ||
	    !strstr(e->error, "cannot allocate memory in static TLS block"))
		return;
	f = findings__add(out, "static-tls", SEV_ERROR, e->pid,
			  "dlopen(\"%s\") failed: no room left in the static TLS block",
			  e->dlopen_file ? e->dlopen_file : "?");
	if (e->file && e->t) {
		target__host_path(e->t, e->file, host, sizeof(host));
		o = elfobj__open(host);
	}
	if (o && elfobj__static_tls(o, &size, &align) && size)
		finding__evidence(f, "%s: %llu bytes of initial-exec TLS (DF_STATIC_TLS)", e->file,
				  (unsigned long long)block(size, align));
	else if (o && size)
		finding__evidence(f,
				  "%s: %llu bytes of TLS, which its initial-exec accesses "
				  "need in the static block",
				  e->file, (unsigned long long)block(size, align));
	elfobj__free(o);
	if (e->t && !static_tls__read(e->t, lc->g, &st))
		finding__evidence(f,
				  "the process has %llu of %llu bytes left (%u objects took %llu, "
				  "the thread descriptor %llu)",
				  (unsigned long long)st.left,
				  (unsigned long long)(st.size - st.tcb), st.objects,
				  (unsigned long long)st.used, (unsigned long long)st.tcb);
	finding__explain(f, why, fix);
}
