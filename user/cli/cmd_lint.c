// SPDX-License-Identifier: GPL-2.0
/* dlscope lint: the ELF files under paths, checked by the file-level detectors. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "idxmap.h"
#include "check_opts.h"
#include "cliopt.h"
#include "commands.h"
#include "detector.h"
#include "elfobj.h"
#include "output.h"
#include "termsafe.h"
#include "version.h"

/*
 * lint: gather files, analyse each ELF object, run the file-level detectors on them all.
 * Symbolic links are followed, on the command line and in trees (a wheel's or a Debian
 * package's lib/ is often all links); each file and directory is visited once, by device and
 * inode, so two links to one object are one object and a link back up a tree is no loop.
 */
struct file_id {
	dev_t dev;
	ino_t ino;
};

struct lint_state {
	struct lint_file *files;
	size_t n, cap;
	size_t seen, unreadable, again;
	size_t foreign;	     /* ELF objects of another machine (32-bit i386, ARM...): skipped */
	struct file_id *ids; /* the files visited, */
	size_t n_ids, cap_ids;
	struct idxmap id_index; /* by dev and inode */
	bool progress, oom;
	struct timespec last;
	json_t *bad, *skipped;
};

static uint64_t file_id_hash(dev_t dev, ino_t ino)
{
	return idxmap__hash_u64((uint64_t)dev * 0x9e3779b97f4a7c15ULL ^ (uint64_t)ino);
}

static bool file_id_is(size_t idx, const void *ctx)
{
	const struct file_id *const *k = ctx; /* { ids, the id } */

	return k[0][idx].dev == k[1]->dev && k[0][idx].ino == k[1]->ino;
}

/* True when the file @st describes was visited before; records it otherwise. */
static bool lint_visited(struct lint_state *s, const struct stat *st)
{
	struct file_id id = { st->st_dev, st->st_ino ? st->st_ino : (ino_t)-1 };
	const struct file_id *key[2] = { NULL, &id };
	int added;

	if (ARRAY_RESERVE(s->ids, s->cap_ids, s->n_ids + 1)) {
		s->oom = true;
		return false; /* visit it again rather than not at all */
	}
	key[0] = s->ids;
	added = idxmap__insert(&s->id_index, file_id_hash(id.dev, id.ino), s->n_ids, file_id_is,
			       key, NULL);
	if (added < 0) {
		s->oom = true;
		return false;
	}
	if (!added)
		return true;
	s->ids[s->n_ids++] = id;
	return false;
}

static void lint_progress(struct lint_state *s, const char *path, bool force)
{
	struct timespec now;
	char shown[256];

	if (!s->progress)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!force && (now.tv_sec - s->last.tv_sec) * 1000000000L + now.tv_nsec - s->last.tv_nsec <
			      100000000L)
		return;
	s->last = now;
	/* Past the stderr guard (its own \r and erase-line), the path escaped by hand. */
	dprintf(STDERR_FILENO, "\rlint: %zu files, %zu ELF objects: %s\033[K", s->seen, s->n,
		termsafe__escape(path, 60, shown, sizeof(shown)));
}

/* A path inside a tree that is skipped: one warning line, and an "unreadable" entry. */
static void lint_skip(struct lint_state *s, const char *path, const char *why)
{
	if (s->progress)
		fputc('\n', stderr);
	dls_warn("lint: %s: %s; skipped", path, why);
	s->unreadable++;
	if (s->bad)
		json_array_append_new(s->bad, json_pack("{s:s, s:s}", "path", path, "error", why));
}

/* Why @path, which stat could not follow, is unusable: a dangling link or a loop of links. */
static void link_trouble(const char *path, int err, char *buf, size_t len)
{
	char target[PATH_MAX];
	ssize_t n = readlink(path, target, sizeof(target) - 1);

	if (n < 0) {
		snprintf(buf, len, "%s", strerror(err));
		return;
	}
	target[n] = '\0';
	if (err == ELOOP)
		snprintf(buf, len, "symbolic link to '%s' is part of a loop of links", target);
	else if (err == ENOENT || err == ENOTDIR)
		snprintf(buf, len, "dangling symbolic link to '%s'", target);
	else
		snprintf(buf, len, "symbolic link to '%s': %s", target, strerror(err));
}

/*
 * An ELF object that is not x86-64's (the 32-bit i386 objects of a multilib tree): its machine
 * ("i386") into @buf; false when @id (the file's first 20 bytes, @got of them read) is a 64-bit
 * object, which the checks read. Such a file is not unreadable: lint skips it, counted apart.
 */
static bool foreign_object(const unsigned char *id, ssize_t got, char *buf, size_t len)
{
	unsigned int machine;
	const char *name;

	if (got < EI_NIDENT + 4 || id[EI_CLASS] != ELFCLASS32)
		return false;
	machine = id[EI_DATA] == ELFDATA2MSB ? (unsigned)id[18] << 8 | id[19] :
					       (unsigned)id[19] << 8 | id[18];
	switch (machine) {
	case EM_386: name = "i386"; break;
	case EM_X86_64: name = "x32"; break;
	case EM_ARM: name = "ARM"; break;
	case EM_MIPS: name = "MIPS"; break;
	case EM_PPC: name = "PowerPC"; break;
	case EM_RISCV: name = "RISC-V"; break;
	default: name = NULL; break;
	}
	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "machine %u", machine);
	return true;
}

/*
 * Check @path if it is an ELF object. Returns 0, 1 when it was skipped for a reason the user
 * should hear about when they named it (not ELF, unreadable, corrupt), or -ENOMEM. An object of
 * another machine is skipped, not unreadable: counted apart, said when named, not an error.
 */
static int lint_add(struct lint_state *s, const char *path, bool named)
{
	struct elf_object *elf;
	unsigned char magic[EI_NIDENT + 4];
	char why[256];
	ssize_t got;
	int fd;

	s->seen++;
	lint_progress(s, path, false);
	/* O_NONBLOCK: a FIFO that stat saw as a file must not hang the walk. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		lint_skip(s, path, strerror(errno));
		return 1;
	}
	got = pread(fd, magic, sizeof(magic), 0);
	close(fd);
	if (got < 4 || memcmp(magic, "\177ELF", 4)) {
		/* Inside a tree, other files are normal; a file named on its own is said. */
		if (named)
			dls_warn("lint: %s: not an ELF object (%s)", path,
				 got == 0 ? "empty file" :
				 got < 0  ? strerror(errno) :
					    "no ELF magic");
		return named;
	}
	if (foreign_object(magic, got, why, sizeof(why))) {
		/* A multilib tree holds them as a matter of course: counted, said when named. */
		if (named)
			dls_warn("lint: %s: a 32-bit %s object, not x86-64; skipped", path, why);
		s->foreign++;
		if (s->skipped)
			json_array_append_new(s->skipped,
					      json_pack("{s:s, s:s, s:s}", "path", path, "reason",
							"not x86-64", "machine", why));
		return 0;
	}
	elf = elfobj__open(path);
	if (!elf) {
		lint_skip(s, path, elfobj__strerror(errno));
		return 1;
	}
	if (elfobj__damage(elf)) {
		snprintf(why, sizeof(why), "corrupt: %s", elfobj__damage(elf));
		lint_skip(s, path, why);
		elfobj__free(elf);
		return 1;
	}
	if (s->n == s->cap) {
		if (ARRAY_GROW(s->files, s->cap, 256)) {
			elfobj__free(elf);
			return -ENOMEM;
		}
	}
	s->files[s->n].path = strdup(path);
	s->files[s->n++].elf = elf;
	return 0;
}

/* A regular file reached by any path: checked the first time only. */
static int lint_file(struct lint_state *s, const char *path, const struct stat *st, bool named)
{
	if (lint_visited(s, st)) {
		s->again++;
		return 0;
	}
	return lint_add(s, path, named);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory @dir, sorted (a stable order: the first path to a file names it). */
static int read_names(const char *dir, char ***out, size_t *n)
{
	size_t cap = 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	int err = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == cap && ARRAY_GROW(*out, cap, 64)) {
			err = -ENOMEM;
			break;
		}
		if (!((*out)[*n] = strdup(de->d_name))) {
			err = -ENOMEM;
			break;
		}
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(*out, *n, sizeof(**out), cmp_names);
	return err;
}

/*
 * Walk directory @dir, already recorded as visited, following links: each subdirectory is
 * entered once whatever the path (a link back up the tree is no loop), and a link that leads
 * nowhere is one warning. Its names are read and the directory closed before going down, so a
 * deep tree holds no descriptors. Returns 0, or -ENOMEM.
 */
static int lint_dir(struct lint_state *s, const char *dir)
{
	size_t n = 0, dlen = strlen(dir);
	char **names, why[PATH_MAX + 64];
	int err = read_names(dir, &names, &n);

	if (err && err != -ENOMEM) {
		snprintf(why, sizeof(why), "cannot read the directory: %s", strerror(-err));
		lint_skip(s, dir, why);
		err = 0;
	}
	for (size_t i = 0; i < n && !err; i++) {
		char *path = NULL;
		struct stat st;

		if (asprintf(&path, "%s%s%s", dir, dlen && dir[dlen - 1] == '/' ? "" : "/",
			     names[i]) < 0) {
			err = -ENOMEM;
			break;
		}
		if (stat(path, &st)) {
			int e = errno;
			struct stat lst;

			if (!lstat(path, &lst) && S_ISLNK(lst.st_mode))
				link_trouble(path, e, why, sizeof(why));
			else
				snprintf(why, sizeof(why), "%s", strerror(e));
			lint_skip(s, path, why);
		} else if (S_ISDIR(st.st_mode)) {
			if (!lint_visited(s, &st))
				err = lint_dir(s, path);
		} else if (S_ISREG(st.st_mode)) {
			err = lint_file(s, path, &st, false);
			if (err > 0)
				err = 0;
		} /* devices, FIFOs and sockets hold no objects */
		free(path);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return err;
}

/* Whether @text names @path whole (not a prefix of a longer path). */
static bool names_path(const char *text, const char *path)
{
	size_t len = strlen(path);

	for (const char *hit = text; hit && (hit = strstr(hit, path)); hit++)
		if ((hit == text || strchr(" :(", hit[-1])) &&
		    (!hit[len] || strchr(": ,)", hit[len])))
			return true;
	return false;
}

/*
 * lint's findings as check's, each with "paths": the checked files its evidence names (a
 * script reads which files to fix without parsing the evidence's text).
 */
static json_t *lint_findings_json(const struct findings *fs, const struct lint_file *files,
				  size_t n)
{
	json_t *arr = findings__to_json(fs), *f;
	size_t i;

	json_array_foreach (arr, i, f) {
		json_t *paths = json_array(), *ev;
		size_t k;

		for (size_t j = 0; j < n; j++) {
			const char *title = json_string_value(json_object_get(f, "title"));
			bool named = names_path(title, files[j].path);

			json_array_foreach (json_object_get(f, "evidence"), k, ev)
				named = named || names_path(json_string_value(ev), files[j].path);
			if (named)
				json_array_append_new(paths, json_string(files[j].path));
		}
		json_object_set_new(f, "paths", paths);
	}
	return arr;
}

static const struct cliopt_def lint_defs[] = {
	{ .name = "json", .letter = 'j', .help = "one JSON document" },
	CHECK_OPTS_SHARED_DEFS,
	{},
};

const struct cliopt_cmd lint_cli = {
	.name = "lint",
	.usage = "lint [OPTIONS] PATH...",
	.about = "The object-level checks on files and directory trees, with no process: a JIT\n"
		 "kernel cache full of .o files, a wheel's unpacked tree, a site-packages. Finds\n"
		 "sections with conflicting flags, W+X segments, executable stacks, statically\n"
		 "linked C++ runtimes, and one build present as several files. Symbolic links are\n"
		 "followed; a file reached by several paths is checked once.\n",
	.opts = lint_defs,
	.after = "Objects of another machine (32-bit i386, ARM) are skipped and counted as such.\n"
		 "\n"
		 "Exit status: 0 nothing at or above --fail-on, 1 findings, 2 usage error,\n"
		 "3 a path named on the command line could not be read, or no ELF object was\n"
		 "found to check. Files inside a tree that could not be read are warned about,\n"
		 "counted as unreadable and skipped; they do not change the exit status. Findings\n"
		 "at or above --fail-on (1) win over a path that could not be read (3).\n",
	.operands = CLIOPT_OP_FILE,
};

/*
 * A path named on the command line: a tree walked, a file checked. Returns how many named paths
 * could not be checked (0 or 1), after one line; *@failed set then.
 */
static size_t lint_named(struct lint_state *s, const char *path, bool *failed)
{
	struct stat st;

	if (stat(path, &st)) {
		char why[PATH_MAX + 64];
		int err = errno;
		struct stat lst;

		if (!lstat(path, &lst) && S_ISLNK(lst.st_mode))
			link_trouble(path, err, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "%s", strerror(err));
		dls_err("lint: cannot read %s: %s", path, why);
		*failed = true;
		return 1;
	}
	if (S_ISDIR(st.st_mode)) {
		if (!lint_visited(s, &st) && lint_dir(s, path))
			s->oom = true;
	} else if (!S_ISREG(st.st_mode)) {
		dls_err("lint: %s is not a regular file or a directory", path);
		*failed = true;
		return 1;
	} else {
		size_t unreadable = s->unreadable;
		int err = lint_file(s, path, &st, true);

		/* Named on the command line, a file that could not be checked is an error. */
		s->oom |= err < 0;
		*failed |= err > 0;
		return err > 0 && s->unreadable == unreadable;
	}
	return 0;
}

/* lint's text: what was seen, checked, skipped and not read, then the findings. */
static void print_lint(const struct lint_state *s, const struct findings *fs,
		       const struct check_opts *o, size_t named_bad)
{
	printf("lint: %zu file%s", s->seen, s->seen == 1 ? "" : "s");
	if (s->again)
		printf(" (and %zu more path%s to them)", s->again, s->again == 1 ? "" : "s");
	printf(", %zu ELF object%s checked", s->n, s->n == 1 ? "" : "s");
	/* Skipped, not unreadable: other machines' objects are no error (exit status). */
	if (s->foreign)
		printf(", %zu skipped (not x86-64)", s->foreign);
	/* The line agrees with the exit status: a named path that failed is said too. */
	printf(", %zu unreadable", s->unreadable);
	if (named_bad)
		printf(", %zu named path%s not checked", named_bad, named_bad == 1 ? "" : "s");
	printf(", %zu finding%s", fs->n, fs->n == 1 ? "" : "s");
	if (fs->n && findings__max_severity(fs) < o->fail_on)
		printf(" (none at or above %s)", severity__name(o->fail_on));
	putchar('\n');
	if (fs->n) {
		putchar('\n');
		findings__print(fs, stdout);
	}
}

/* lint --json: the counts, the unreadable and skipped files, the findings, into @doc. */
static void lint_doc(json_t *doc, const struct lint_state *s, const struct findings *fs)
{
	json_object_set_new(doc, "files_seen", json_integer((json_int_t)s->seen));
	json_object_set_new(doc, "reached_again", json_integer((json_int_t)s->again));
	json_object_set_new(doc, "objects_checked", json_integer((json_int_t)s->n));
	json_object_set_new(doc, "unreadable", s->bad);
	json_object_set_new(doc, "skipped", s->skipped);
	json_object_set_new(doc, "findings", lint_findings_json(fs, s->files, s->n));
}

/* A run that checked nothing must not pass for a clean one: why, in one line. */
static void say_nothing_checked(const struct lint_state *s)
{
	const char *others = s->unreadable ? " (the others were skipped, see above)" : "";

	if (s->foreign)
		dls_err("lint: nothing checked: the %zu ELF object%s found %s not x86-64%s",
			s->foreign, s->foreign == 1 ? "" : "s", s->foreign == 1 ? "is" : "are",
			others);
	else if (s->seen)
		dls_err("lint: nothing checked: no ELF object among the %zu file%s found%s",
			s->seen, s->seen == 1 ? "" : "s", others);
	else
		dls_err("lint: nothing checked: no files found%s", others);
}

int cmd_lint(int argc, char **argv)
{
	struct check_opts o = { 0 };
	struct findings fs = { 0 };
	struct lint_state s = { 0 };
	bool list = false, failed = false;
	json_t *doc = NULL;
	struct cliopt cl;
	size_t named_bad = 0; /* paths named on the command line that could not be checked */
	int ret;

	ret = check_opts__parse(argc, argv, &o, &lint_cli, &list, &cl, NULL, NULL, NULL);
	if (ret >= 0)
		return ret == 100 ? DLS_EXIT_OK : ret;
	if (list) {
		check_opts__list_detectors();
		return DLS_EXIT_OK;
	}
	if (!cl.n_ops)
		return cliopt__usage("lint", "no file or directory given");
	s.progress = o.progress && !o.json;
	if (o.json) {
		doc = json_pack("{s:s}", "dlscope", DLSCOPE_VERSION);
		s.bad = json_array();
		s.skipped = json_array();
	}
	for (int i = 0; i < cl.n_ops; i++)
		named_bad += lint_named(&s, cl.ops[i], &failed);
	if (s.oom) {
		dls_err("lint: out of memory");
		failed = true;
	}
	if (s.progress) {
		lint_progress(&s, "done", true);
		fputc('\n', stderr);
	}
	for (size_t i = 0; i < n_detectors; i++)
		if (detectors[i].files && check_opts__selected(&o, detectors[i].id))
			detectors[i].files(s.files, s.n, &fs);
	if (doc)
		lint_doc(doc, &s, &fs);
	else if (s.n || failed)
		print_lint(&s, &fs, &o, named_bad);
	if (!s.n && !failed) {
		say_nothing_checked(&s);
		failed = true;
	}
	ret = check_opts__finish(&fs, &o, doc, failed);
	for (size_t i = 0; i < s.n; i++) {
		free((char *)s.files[i].path);
		elfobj__free(s.files[i].elf);
	}
	free(s.files);
	free(s.ids);
	idxmap__free(&s.id_index);
	findings__free(&fs);
	return ret;
}
