// SPDX-License-Identifier: GPL-2.0
/* Symbol versions: what an object needs (.gnu.version_r) and defines (.gnu.version_d). */
#include <libelf.h>
#include <string.h>

#include "elfobj.h"
#include "elfobj_impl.h"

/* Map a version index of .gnu.version to the version name .gnu.version_r gives it. */
static const char *verneed_name(const struct elf_object *o, unsigned idx)
{
	Elf_Data *data;
	GElf_Shdr sh;
	size_t off = 0;

	if (!o->verneed || !gelf_getshdr(o->verneed, &sh))
		return NULL;
	data = elf_getdata(o->verneed, NULL);
	if (!data)
		return NULL;
	for (size_t i = 0; i < sh.sh_info && off < data->d_size; i++) {
		GElf_Verneed vn;
		size_t aoff;

		if (!gelf_getverneed(data, (int)off, &vn))
			return NULL;
		aoff = off + vn.vn_aux;
		for (unsigned j = 0; j < vn.vn_cnt && aoff < data->d_size; j++) {
			GElf_Vernaux va;

			if (!gelf_getvernaux(data, (int)aoff, &va))
				return NULL;
			if ((va.vna_other & 0x7fff) == idx)
				return elf_strptr(o->elf, sh.sh_link, va.vna_name);
			if (!va.vna_next)
				break;
			aoff += va.vna_next;
		}
		if (!vn.vn_next)
			break;
		off += vn.vn_next;
	}
	return NULL;
}

int elfobj__foreach_verneed(const struct elf_object *o, elfobj_verneed_cb cb, void *ctx)
{
	Elf_Data *data;
	GElf_Shdr sh;
	size_t off = 0;

	if (!elfobj_loaded(o))
		return 0;

	if (!o->verneed || !gelf_getshdr(o->verneed, &sh))
		return 0;
	data = elf_getdata(o->verneed, NULL);
	if (!data)
		return 0;
	for (size_t i = 0; i < sh.sh_info && off < data->d_size; i++) {
		GElf_Verneed vn;
		const char *file;
		size_t aoff;

		if (!gelf_getverneed(data, (int)off, &vn))
			break;
		file = elf_strptr(o->elf, sh.sh_link, vn.vn_file);
		aoff = off + vn.vn_aux;
		for (unsigned j = 0; j < vn.vn_cnt && aoff < data->d_size; j++) {
			GElf_Vernaux va;
			const char *ver;
			int ret;

			if (!gelf_getvernaux(data, (int)aoff, &va))
				break;
			ver = elf_strptr(o->elf, sh.sh_link, va.vna_name);
			if (file && ver) {
				ret = cb(file, ver, ctx);
				if (ret)
					return ret;
			}
			if (!va.vna_next)
				break;
			aoff += va.vna_next;
		}
		if (!vn.vn_next)
			break;
		off += vn.vn_next;
	}
	return 0;
}

/* The name of version definition @idx of .gnu.version_d. */
static const char *verdef_name(const struct elf_object *o, unsigned idx)
{
	Elf_Data *data;
	GElf_Shdr sh;
	size_t off = 0;

	if (!o->verdef || !gelf_getshdr(o->verdef, &sh))
		return NULL;
	data = elf_getdata(o->verdef, NULL);
	for (size_t i = 0; data && i < sh.sh_info && off < data->d_size; i++) {
		GElf_Verdef vd;
		GElf_Verdaux va;

		if (!gelf_getverdef(data, (int)off, &vd))
			return NULL;
		if (vd.vd_ndx == idx && vd.vd_cnt &&
		    gelf_getverdaux(data, (int)(off + vd.vd_aux), &va))
			return elf_strptr(o->elf, sh.sh_link, va.vda_name);
		if (!vd.vd_next)
			break;
		off += vd.vd_next;
	}
	return NULL;
}

/*
 * Walk .dynsym with each symbol's version: the node it defines (.gnu.version_d) for defined
 * symbols, the one it needs (.gnu.version_r) for undefined ones. Version indexes are small, so
 * names found once are remembered.
 */
static int foreach_versioned(const struct elf_object *o, bool defined, elfobj_vsym_cb cb, void *ctx)
{
	const char *names[64] = { 0 };
	bool looked[64] = { 0 };
	Elf_Data *data, *vdata = NULL;
	GElf_Shdr sh;
	size_t count;

	if (!elfobj_loaded(o))
		return 0;

	if (!o->dynsym || !gelf_getshdr(o->dynsym, &sh) || !sh.sh_entsize)
		return 0;
	data = elf_getdata(o->dynsym, NULL);
	if (!data)
		return 0;
	if (o->versym)
		vdata = elf_getdata(o->versym, NULL);
	count = data->d_size / sh.sh_entsize;
	for (size_t i = 1; i < count; i++) {
		const char *name, *version = NULL;
		GElf_Versym vs;
		GElf_Sym sym;
		int ret;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		if ((sym.st_shndx != SHN_UNDEF) != defined)
			continue;
		name = elf_strptr(o->elf, sh.sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (vdata && gelf_getversym(vdata, (int)i, &vs) && (vs & 0x7fff) > 1) {
			unsigned idx = vs & 0x7fff;

			if (idx >= 64)
				version = defined ? verdef_name(o, idx) : verneed_name(o, idx);
			else if (looked[idx])
				version = names[idx];
			else {
				version = names[idx] = defined ? verdef_name(o, idx) :
								 verneed_name(o, idx);
				looked[idx] = true;
			}
		}
		ret = cb(name, version, &sym, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

int elfobj__foreach_defined_versioned(const struct elf_object *o, elfobj_vsym_cb cb, void *ctx)
{
	return foreach_versioned(o, true, cb, ctx);
}

struct undef_adapter {
	elfobj_undef_cb cb;
	void *ctx;
};

static int undef_adapt(const char *name, const char *version, const GElf_Sym *sym, void *ctx)
{
	struct undef_adapter *a = ctx;

	return a->cb(name, version, GELF_ST_BIND(sym->st_info) == STB_WEAK, a->ctx);
}

int elfobj__foreach_undefined(const struct elf_object *o, elfobj_undef_cb cb, void *ctx)
{
	struct undef_adapter a = { cb, ctx };

	return foreach_versioned(o, false, undef_adapt, &a);
}
