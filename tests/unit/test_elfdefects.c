// SPDX-License-Identifier: GPL-2.0
/*
 * elfdefects__scan's segment rules on files written here with libelf: a shared object for
 * x86-64 without PT_GNU_STACK is one the loader gives an executable stack; the same file for
 * no machine (EM_NONE: Guile's compiled .go modules, which Guile maps itself) is never loaded
 * by it, and `check` of a live guile warned of it falsely. Such a module's .dynamic names no
 * string and links to no string table, which lint called corrupt.
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "elfdefects.h"
#include "elfobj.h"
#include "tap.h"

/*
 * A shared object for @machine with one read-only PT_LOAD and no PT_GNU_STACK; with @dynamic,
 * a .dynamic of DT_INIT alone linked to no string table, as Guile writes its .go modules.
 */
static bool write_object(const char *path, int machine, bool dynamic)
{
	static Elf64_Dyn dyn[2] = { { .d_tag = DT_INIT, .d_un.d_ptr = 0x10 },
				    { .d_tag = DT_NULL } };
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_WRITE, NULL) : NULL;
	Elf64_Ehdr *eh = e ? elf64_newehdr(e) : NULL;
	Elf64_Phdr *ph = eh ? elf64_newphdr(e, 1) : NULL;
	Elf_Scn *scn = ph ? elf_newscn(e) : NULL;
	Elf_Data *d = scn ? elf_newdata(scn) : NULL;
	Elf64_Shdr *sh = d ? elf64_getshdr(scn) : NULL;
	static char bytes[64];
	bool ok = false;

	if (sh) {
		eh->e_ident[EI_DATA] = ELFDATA2LSB;
		eh->e_type = ET_DYN;
		eh->e_machine = (Elf64_Half)machine;
		eh->e_version = EV_CURRENT;
		d->d_buf = bytes;
		d->d_size = sizeof(bytes);
		d->d_type = ELF_T_BYTE;
		sh->sh_type = SHT_PROGBITS;
		sh->sh_flags = SHF_ALLOC;
		ok = true;
	}
	if (sh && dynamic) {
		Elf_Scn *ds = elf_newscn(e);
		Elf_Data *dd = ds ? elf_newdata(ds) : NULL;
		Elf64_Shdr *dsh = dd ? elf64_getshdr(ds) : NULL;

		ok = dsh != NULL;
		if (dsh) {
			dd->d_buf = dyn;
			dd->d_size = sizeof(dyn);
			dd->d_type = ELF_T_DYN;
			dsh->sh_type = SHT_DYNAMIC;
			dsh->sh_flags = SHF_ALLOC;
			dsh->sh_entsize = sizeof(dyn[0]);
		}
	}
	if (sh && ok) {
		ok = elf_update(e, ELF_C_NULL) >= 0;
		*ph = (Elf64_Phdr){ .p_type = PT_LOAD,
				    .p_flags = PF_R,
				    .p_align = 0x1000,
				    .p_filesz = sizeof(bytes),
				    .p_memsz = sizeof(bytes) };
		elf_flagphdr(e, ELF_C_SET, ELF_F_DIRTY);
		ok = ok && elf_update(e, ELF_C_WRITE) >= 0;
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return ok;
}

static void count_no_stack(const struct elf_defect *d, void *ctx)
{
	if (d->kind == ELF_DEFECT_NO_GNU_STACK)
		++*(int *)ctx;
}

/* How many "no PT_GNU_STACK" defects the scan of @path finds; -1 when it cannot be read. */
static int no_stack_defects(const char *path)
{
	struct elf_object *o = elfobj__open(path);
	int n = 0;

	if (!o)
		return -1;
	elfdefects__scan(o, count_no_stack, &n);
	elfobj__free(o);
	return n;
}

int main(void)
{
	char native[] = "/tmp/test_elfdefects_XXXXXX", none[] = "/tmp/test_elfdefects_XXXXXX";
	int a = mkstemp(native), b = mkstemp(none);

	elf_version(EV_CURRENT);
	if (a < 0 || b < 0)
		return 1;
	close(a);
	close(b);
	CHECK(write_object(native, EM_X86_64, false) && write_object(none, EM_NONE, true),
	      "two objects written");
	CHECK(no_stack_defects(native) == 1,
	      "an x86-64 object without PT_GNU_STACK is said to have none");
	CHECK(no_stack_defects(none) == 0, "a file for no machine is not: no loader loads it");
	{
		struct elf_object *o = elfobj__open(none);

		/* lint called every Guile module "corrupt: .dynamic links to no string table". */
		CHECK(o && !elfobj__damage(o),
		      "a .dynamic that names no string needs no string table");
		if (o)
			elfobj__free(o);
	}
	unlink(native);
	unlink(none);
	return tap_done();
}
