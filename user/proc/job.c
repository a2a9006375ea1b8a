// SPDX-License-Identifier: GPL-2.0
/* Rank identity from /proc/PID/environ and the launcher tree from the parents in /proc. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "job.h"
#include "procfs.h"
#include "runprog.h"

/* Rank, local rank and size variables of each scheme, in enum job_scheme's order. */
static const struct {
	const char *name, *rank, *local, *size;
} schemes[] = {
	[JOB_TORCHRUN] = { "torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE" },
	[JOB_OMPI] = { "OpenMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
		       "OMPI_COMM_WORLD_SIZE" },
	[JOB_PMIX] = { "PMIx", "PMIX_RANK", "PMIX_LOCAL_RANK", "PMIX_SIZE" },
	[JOB_PMI] = { "PMI", "PMI_RANK", "PMI_LOCAL_RANK", "PMI_SIZE" },
	[JOB_SLURM] = { "Slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS" },
};

#define STEP_TASKS "SLURM_STEP_NUM_TASKS"

const char *job__world_var(const char *name)
{
	if (name && !strcmp(name, STEP_TASKS))
		return STEP_TASKS;
	for (int s = 0; name && s < JOB_SCHEME_NONE; s++)
		if (!strcmp(name, schemes[s].size))
			return schemes[s].size;
	return NULL;
}

const char *job_scheme__name(enum job_scheme s)
{
	return s < JOB_SCHEME_NONE ? schemes[s].name : "none";
}

/* A decimal value of @name in @env, or -1 when unset or not a number. */
static int env_int(const char *env, size_t size, const char *name)
{
	const char *v = proc__environ_get(env, size, name);
	char *end;
	long x;

	if (!v || !isdigit((unsigned char)*v))
		return -1;
	x = strtol(v, &end, 10);
	return *end || x > 1 << 30 ? -1 : (int)x;
}

/*
 * What one scheme leaves unset, from the others (each launcher sets its own: Slurm's PMIx no
 * PMIX_SIZE, torchrun under srun both): the world size and the local rank.
 */
static void fill_from_other_schemes(const char *env, size_t size, struct job_identity *id)
{
	int step_tasks = env_int(env, size, STEP_TASKS);

	/* The step's own count before SLURM_NTASKS, the allocation's inside sbatch; never before
	 * a launcher's own (srun torchrun: WORLD_SIZE counts its ranks, the step its agents). */
	if (step_tasks >= 0 && (id->world_size < 0 || id->scheme == JOB_SLURM)) {
		id->world_size = step_tasks;
		id->world_var = STEP_TASKS;
	}
	for (int s = 0; s < JOB_SCHEME_NONE && id->world_size < 0; s++)
		if ((id->world_size = env_int(env, size, schemes[s].size)) >= 0)
			id->world_var = schemes[s].size;
	for (int s = 0; s < JOB_SCHEME_NONE && id->local_rank < 0; s++)
		id->local_rank = env_int(env, size, schemes[s].local);
}

/* Slurm's job, step and node of the environment @env. */
static void slurm_place(const char *env, size_t size, struct job_identity *id)
{
	const char *node = proc__environ_get(env, size, "SLURMD_NODENAME");
	int job = env_int(env, size, "SLURM_JOB_ID");

	id->slurm_job = job;
	id->slurm_step = job < 0 ? -1 : env_int(env, size, "SLURM_STEP_ID");
	id->slurm_nodes = env_int(env, size, "SLURM_STEP_NUM_NODES");
	if (id->slurm_nodes < 0)
		id->slurm_nodes = env_int(env, size, "SLURM_JOB_NUM_NODES");
	snprintf(id->node, sizeof(id->node), "%s", node ? node : "");
}

int job__identity(pid_t pid, struct job_identity *out)
{
	size_t size = 0;
	char *env = NULL;
	int err = proc__environ(pid, &env, &size);

	*out = (struct job_identity){
		.scheme = JOB_SCHEME_NONE, .rank = -1, .slurm_job = -1, .slurm_step = -1
	};
	if (err)
		return err;
	slurm_place(env, size, out);
	for (int s = 0; s < JOB_SCHEME_NONE; s++) {
		int rank = env_int(env, size, schemes[s].rank);
		int local = env_int(env, size, schemes[s].local);
		int world = env_int(env, size, schemes[s].size);

		if (rank < 0)
			continue;
		/* A bare RANK is too common a name: torchrun always sets the other two. */
		if (s == JOB_TORCHRUN && local < 0 && world < 0)
			continue;
		out->scheme = s;
		out->rank = rank;
		out->local_rank = local;
		out->world_size = world;
		out->world_var = world >= 0 ? schemes[s].size : NULL;
		fill_from_other_schemes(env, size, out);
		break;
	}
	free(env);
	return 0;
}

/* Every process's parent, read once from /proc. */
struct ptable {
	struct pent {
		pid_t pid, ppid;
	} * p;
	size_t n;
};

static int read_ppid(pid_t pid, pid_t *ppid, char *comm, size_t commlen)
{
	char path[64], buf[1024], *close_paren, *open_paren;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (proc__read_small(path, buf, sizeof(buf)) <= 0)
		return -ESRCH;
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren[1] != ' ' || !close_paren[2])
		return -EINVAL;
	if (comm)
		snprintf(comm, commlen, "%.*s", (int)(close_paren - open_paren - 1),
			 open_paren + 1);
	*ppid = (pid_t)atoi(close_paren + 4); /* after ") S " */
	return 0;
}

static int ptable_read(struct ptable *t)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t cap = 0;

	t->p = NULL;
	t->n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name), ppid;

		if (pid <= 0 || read_ppid(pid, &ppid, NULL, 0))
			continue;
		if (t->n == cap) {
			if (ARRAY_GROW(t->p, cap, 512)) {
				closedir(d);
				return -ENOMEM;
			}
		}
		t->p[t->n++] = (struct pent){ pid, ppid };
	}
	closedir(d);
	return 0;
}

int job__descendants(pid_t root, pid_t **out, size_t *n)
{
	struct ptable t;
	pid_t *v;
	size_t k = 0;
	int err = ptable_read(&t);

	*out = NULL;
	*n = 0;
	if (err) {
		free(t.p);
		return err;
	}
	v = malloc((t.n + 1) * sizeof(*v));
	if (!v) {
		free(t.p);
		return -ENOMEM;
	}
	/* Breadth first: each process has one parent, so each is added once. */
	v[k++] = root;
	for (size_t i = 0; i < k; i++)
		for (size_t j = 0; j < t.n && k <= t.n; j++)
			if (t.p[j].ppid == v[i] && t.p[j].pid != root)
				v[k++] = t.p[j].pid;
	free(t.p);
	memmove(v, v + 1, (k - 1) * sizeof(*v));
	*out = v;
	*n = k - 1;
	return 0;
}

static pid_t ptable_parent(const struct ptable *t, pid_t pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->p[i].pid == pid)
			return t->p[i].ppid;
	return 0;
}

static bool same_identity(const struct job_identity *a, const struct job_identity *b)
{
	return a->scheme == b->scheme && a->rank == b->rank;
}

/*
 * The scheme of the ranks among @pid's children: children whose identity their parent does not
 * carry itself. The most specific scheme wins; JOB_SCHEME_NONE when none.
 */
static enum job_scheme children_scheme(const struct ptable *t, pid_t pid,
				       const struct job_identity *own)
{
	enum job_scheme best = JOB_SCHEME_NONE;

	for (size_t i = 0; i < t->n; i++) {
		struct job_identity id;

		if (t->p[i].ppid != pid || job__identity(t->p[i].pid, &id))
			continue;
		if (id.scheme != JOB_SCHEME_NONE && !same_identity(&id, own) && id.scheme < best)
			best = id.scheme;
	}
	return best;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct job_rank *x = a, *y = b;

	return x->rank != y->rank ? (x->rank > y->rank) - (x->rank < y->rank) :
				    (x->pid > y->pid) - (x->pid < y->pid);
}

static void read_cmdline(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	n = proc__read_small(path, buf, len);
	if (n <= 0) {
		buf[0] = '\0';
		return;
	}
	for (ssize_t i = 0; i < n - 1; i++)
		if (!buf[i])
			buf[i] = ' ';
}

/* The ranks of @scheme among the children of @launcher, into @j. */
static int collect_ranks(const struct ptable *t, struct job *j, const struct job_identity *lid)
{
	for (size_t i = 0; i < t->n; i++) {
		struct job_identity id;
		struct job_rank *nr;

		if (t->p[i].ppid != j->launcher || job__identity(t->p[i].pid, &id))
			continue;
		if (id.scheme != j->scheme || same_identity(&id, lid))
			continue;
		if (ARRAY_RESERVE(j->ranks, j->cap, j->n + 1))
			return -ENOMEM;
		nr = &j->ranks[j->n++];
		*nr = (struct job_rank){ .pid = t->p[i].pid,
					 .rank = id.rank,
					 .local_rank = id.local_rank,
					 .step = id.slurm_step };
		snprintf(nr->node, sizeof(nr->node), "%s", id.node);
		if (read_ppid(nr->pid, &(pid_t){ 0 }, nr->comm, sizeof(nr->comm)))
			snprintf(nr->comm, sizeof(nr->comm), "?");
		if (id.world_size > j->world_size) {
			j->world_size = id.world_size;
			j->world_var = id.world_var;
		}
	}
	qsort(j->ranks, j->n, sizeof(*j->ranks), cmp_rank);
	return 0;
}

int job__find(pid_t pid, struct job **out, char *why, size_t whylen)
{
	struct job_identity id, lid, pid_of_parent;
	struct ptable t = { 0 };
	struct job *j = NULL;
	char comm[64] = "?";
	pid_t ppid, rank_pid;
	int err;

	*out = NULL;
	if (read_ppid(pid, &ppid, comm, sizeof(comm))) {
		snprintf(why, whylen, "process %d does not exist", pid);
		return -ESRCH;
	}
	err = job__identity(pid, &id);
	if (err) {
		if (err == -EACCES || err == -EPERM)
			snprintf(why, whylen,
				 "process %d (%s): cannot read its environment (/proc/%d/environ): "
				 "%s; run dlscope as its user or as root",
				 pid, comm, pid, strerror(-err));
		else
			snprintf(why, whylen, "process %d (%s): cannot read its environment: %s",
				 pid, comm, strerror(-err));
		return err == -ESRCH ? -ESRCH : -EACCES;
	}
	j = calloc(1, sizeof(*j));
	if (!j || (err = ptable_read(&t))) {
		snprintf(why, whylen, "cannot list the processes in /proc: %s",
			 strerror(j ? -err : ENOMEM));
		free(j);
		return j ? err : -ENOMEM;
	}
	j->world_size = -1;
	j->asked = pid;
	/* A launcher (or agent): its children carry ranks it does not carry itself. */
	j->scheme = children_scheme(&t, pid, &id);
	if (j->scheme != JOB_SCHEME_NONE) {
		j->launcher = pid;
		lid = id;
		snprintf(j->asked_role, sizeof(j->asked_role), "the launcher");
	} else if (id.scheme != JOB_SCHEME_NONE) {
		/* A rank, or a rank's child: climb while the parent has the same rank. */
		rank_pid = pid;
		while ((ppid = ptable_parent(&t, rank_pid)) > 1 &&
		       !job__identity(ppid, &pid_of_parent) && same_identity(&pid_of_parent, &id))
			rank_pid = ppid;
		j->scheme = id.scheme;
		j->launcher = ptable_parent(&t, rank_pid);
		if (j->launcher <= 0 || job__identity(j->launcher, &lid))
			lid = (struct job_identity){ .scheme = JOB_SCHEME_NONE, .rank = -1 };
		if (rank_pid == pid)
			snprintf(j->asked_role, sizeof(j->asked_role), "rank %d", id.rank);
		else
			snprintf(j->asked_role, sizeof(j->asked_role), "a child of rank %d",
				 id.rank);
	} else {
		snprintf(why, whylen,
			 "process %d (%s) is not part of a multi-rank job: neither it nor its "
			 "children carry RANK (with WORLD_SIZE or LOCAL_RANK), "
			 "OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID",
			 pid, comm);
		free(t.p);
		free(j);
		return -ENOENT;
	}
	if (read_ppid(j->launcher, &ppid, j->launcher_comm, sizeof(j->launcher_comm)))
		snprintf(j->launcher_comm, sizeof(j->launcher_comm), "?");
	read_cmdline(j->launcher, j->launcher_cmd, sizeof(j->launcher_cmd));
	err = collect_ranks(&t, j, &lid);
	free(t.p);
	if (err || !j->n) {
		/* The rank itself exited between the reads. */
		snprintf(why, whylen, "process %d (%s): %s", pid, comm,
			 err ? strerror(-err) : "its job's ranks exited while being read");
		job__free(j);
		return err ? err : -ESRCH;
	}
	*out = j;
	return 0;
}

bool job__env_matters(const char *name)
{
	static const char *const exact[] = { "OMP_PROC_BIND",	     "OMP_PLACES",
					     "KMP_AFFINITY",	     "GOMP_CPU_AFFINITY",
					     "LD_LIBRARY_PATH",	     "LD_PRELOAD",
					     "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES" };
	size_t len = strlen(name);

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strcmp(name, exact[i]))
			return true;
	return !strncmp(name, "NCCL_", 5) || (len > 12 && !strcmp(name + len - 12, "_NUM_THREADS"));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int job__environment(pid_t pid, char ***vars, size_t *n)
{
	size_t size = 0, cap = 0;
	char *env = NULL, **v = NULL;
	int err = proc__environ(pid, &env, &size);

	*vars = NULL;
	*n = 0;
	if (err)
		return err;
	for (size_t off = 0; off < size; off += strlen(env + off) + 1) {
		char *eq = strchr(env + off, '=');

		if (!eq)
			continue;
		*eq = '\0';
		if (!job__env_matters(env + off)) {
			*eq = '=';
			continue;
		}
		*eq = '=';
		if (*n == cap && ARRAY_GROW(v, cap, 16)) {
			err = -ENOMEM;
			break;
		}
		if (!(v[*n] = strdup(env + off))) {
			err = -ENOMEM;
			break;
		}
		(*n)++;
	}
	free(env);
	if (err) {
		for (size_t i = 0; i < *n; i++)
			free(v[i]);
		free(v);
		*n = 0;
		return err;
	}
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_str);
	*vars = v;
	return 0;
}

int job__cpus_allowed(pid_t pid, cpu_set_t *set, char *list, size_t len)
{
	char path[64], buf[8192], *line, *p;

	CPU_ZERO(set);
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (proc__read_small(path, buf, sizeof(buf)) <= 0)
		return -ESRCH;
	line = strstr(buf, "\nCpus_allowed_list:");
	if (!line)
		return -ENOENT;
	p = line + strlen("\nCpus_allowed_list:");
	while (*p == ' ' || *p == '\t')
		p++;
	snprintf(list, len, "%.*s", (int)strcspn(p, "\n"), p);
	/* "0-3,8,10-11" */
	while (*p && *p != '\n') {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			return -EINVAL;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		for (long c = lo; c <= hi && c < CPU_SETSIZE; c++)
			CPU_SET((int)c, set);
		p = *end == ',' ? end + 1 : end;
	}
	return 0;
}

json_t *job__to_json(const struct job *j)
{
	char desc[128];
	json_t *o;

	job__describe_ranks(j, desc, sizeof(desc));
	o = json_pack("{s:s, s:{s:i, s:s, s:s}, s:o, s:i, s:s, s:{s:i, s:s}}", "scheme",
		      job_scheme__name(j->scheme), "launcher", "pid", j->launcher, "comm",
		      j->launcher_comm, "cmdline", j->launcher_cmd, "world_size",
		      j->world_size > 0 ? json_integer(j->world_size) : json_null(), "ranks_here",
		      (int)j->n, "description", desc, "asked", "pid", j->asked, "role",
		      j->asked_role);
	if (o && j->slurm_job > 0)
		json_object_set_new(
			o, "slurm",
			json_pack("{s:I, s:o, s:s}", "job", (json_int_t)j->slurm_job, "step",
				  j->slurm_step >= 0 ? json_integer(j->slurm_step) : json_null(),
				  "nodes", j->nodes));
	return o;
}

void job__free(struct job *j)
{
	if (!j)
		return;
	free(j->ranks);
	free(j);
}

void job__describe_ranks(const struct job *j, char *buf, size_t len)
{
	const char *var = j->world_var		       ? j->world_var :
			  j->scheme == JOB_SCHEME_NONE ? "" :
							 schemes[j->scheme].size;

	if (j->world_size > (int)j->n)
		snprintf(buf, len, "%zu of %s %d ranks %s", j->n, var, j->world_size,
			 j->slurm_job > 0 ? "read" : "on this host");
	else if (j->world_size > 0)
		snprintf(buf, len, "%zu rank%s (%s %d)", j->n, j->n == 1 ? "" : "s", var,
			 j->world_size);
	else
		snprintf(buf, len, "%zu rank%s", j->n, j->n == 1 ? "" : "s");
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

void job__format_ranks(int *ranks, size_t n, char *buf, size_t len)
{
	size_t used = 0, m = 0;

	buf[0] = '\0';
	if (!n)
		return;
	qsort(ranks, n, sizeof(*ranks), cmp_int);
	for (size_t i = 0; i < n; i++)
		if (!m || ranks[m - 1] != ranks[i])
			ranks[m++] = ranks[i];
	for (size_t i = 0; i < m && used < len;) {
		size_t k = i;
		int w;

		while (k + 1 < m && ranks[k + 1] == ranks[k] + 1)
			k++;
		if (k == i)
			w = snprintf(buf + used, len - used, "%s%d", i ? "," : "", ranks[i]);
		else
			w = snprintf(buf + used, len - used, "%s%d-%d", i ? "," : "", ranks[i],
				     ranks[k]);
		if (w < 0)
			break;
		used += (size_t)w;
		i = k + 1;
	}
}

/* A directory named @name at most @depth levels below @dir, breadth first by level. */
static int find_dir(const char *dir, const char *name, unsigned int depth, char *buf, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int err = -ENOENT;

	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (!strcmp(de->d_name, name)) {
			err = (size_t)snprintf(buf, len, "%s/%s", dir, name) < len ? 0 :
										     -ENAMETOOLONG;
			break;
		}
	}
	if (d)
		rewinddir(d);
	while (err == -ENOENT && depth > 1 && d && (de = readdir(d))) {
		char sub[4096];

		if (de->d_type == DT_DIR && de->d_name[0] != '.' &&
		    (size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) < sizeof(sub))
			err = find_dir(sub, name, depth - 1, buf, len);
	}
	if (d)
		closedir(d);
	return err;
}

int job__slurm_cgroup(const char *jobid, char *buf, size_t len)
{
	char name[64];

	for (const char *p = jobid; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
	if (!jobid[0] || (size_t)snprintf(name, sizeof(name), "job_%s", jobid) >= sizeof(name))
		return -EINVAL;
	/* system.slice/slurmstepd.scope/job_ID on a unified hierarchy; one level more on a
	 * hybrid one (unified/). */
	return find_dir("/sys/fs/cgroup", name, 4, buf, len);
}

/* A shell a task may run its program under (srun bash -c 'python x.py'). */
static bool is_shell(const char *comm)
{
	static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ksh", "tcsh", "csh" };

	for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
		if (!strcmp(comm, shells[i]))
			return true;
	return false;
}

/* Below wrapper shells: the one child each runs, while it is the only one (else @pid). */
static pid_t below_shells(const struct ptable *t, pid_t pid, char *comm, size_t commlen)
{
	for (int depth = 0; depth < 8 && is_shell(comm); depth++) {
		pid_t only = 0, pp;
		size_t kids = 0;

		for (size_t i = 0; i < t->n; i++)
			if (t->p[i].ppid == pid) {
				only = t->p[i].pid;
				kids++;
			}
		if (kids != 1 || read_ppid(only, &pp, comm, commlen))
			break;
		pid = only;
	}
	return pid;
}

static int cmp_task(const void *a, const void *b)
{
	const struct job_rank *x = a, *y = b;

	if (x->step != y->step)
		return (x->step > y->step) - (x->step < y->step);
	return cmp_rank(a, b);
}

/* Whether @pid is a task of the job asked: slurmstepd's child with the job's place. */
static bool slurm_task(const struct ptable *t, pid_t pid, long jobid, int step, const char *node,
		       int own_step, struct job_identity *id)
{
	char pcomm[64];
	pid_t pp;

	if (job__identity(pid, id) || id->slurm_job != jobid || id->slurm_step < 0 ||
	    id->slurm_step == own_step || (step >= 0 && id->slurm_step != step) ||
	    (node && strcmp(node, id->node)))
		return false;
	pp = ptable_parent(t, pid);
	return pp > 0 && !read_ppid(pp, &(pid_t){ 0 }, pcomm, sizeof(pcomm)) &&
	       !strcmp(pcomm, "slurmstepd");
}

/* The world size and scheme of the job @j from a rank's identity @id. */
static void take_identity(struct job *j, const struct job_identity *id)
{
	if (id->scheme < j->scheme)
		j->scheme = id->scheme;
	if (id->world_size > j->world_size) {
		j->world_size = id->world_size;
		j->world_var = id->world_var;
	}
}

/*
 * A launcher run as a task (srun torchrun ...): its children that carry a rank of a scheme of
 * their own are the job's ranks, appended to @j as @task's node and step. How many, or -ENOMEM.
 */
static int launched_ranks(const struct ptable *t, const struct job_rank *task,
			  enum job_scheme task_scheme, struct job *j, size_t *cap)
{
	size_t first = j->n;
	int n = 0;

	for (size_t i = 0; i < t->n; i++) {
		struct job_identity id;
		struct job_rank *r;

		/* A scheme the task does not carry itself: a rank's own children (DataLoader
		 * workers) inherit its PMIX_RANK, its ranks are no launcher's. */
		if (t->p[i].ppid != task->pid || job__identity(t->p[i].pid, &id) ||
		    id.scheme == JOB_SCHEME_NONE || id.scheme == JOB_SLURM ||
		    id.scheme == task_scheme)
			continue;
		if (j->n == *cap && ARRAY_GROW(j->ranks, *cap, 16))
			return -ENOMEM;
		r = &j->ranks[j->n++];
		*r = (struct job_rank){ .pid = t->p[i].pid,
					.rank = id.rank,
					.local_rank = id.local_rank,
					.step = task->step };
		snprintf(r->node, sizeof(r->node), "%s", task->node);
		if (read_ppid(r->pid, &(pid_t){ 0 }, r->comm, sizeof(r->comm)))
			snprintf(r->comm, sizeof(r->comm), "?");
		take_identity(j, &id);
		n++;
	}
	/* A launcher's ranks are ranks apart: children that share one rank are a process's
	 * helpers that were given its variables, and the task stays the rank. */
	for (size_t a = first; a < j->n; a++)
		for (size_t b = a + 1; b < j->n; b++)
			if (j->ranks[a].rank == j->ranks[b].rank) {
				j->n = first;
				return 0;
			}
	return n;
}

/* Task @pid (its identity @id) of @t into @j: itself, or the ranks it launched. */
static int add_task(const struct ptable *t, pid_t pid, const struct job_identity *id, struct job *j,
		    size_t *cap)
{
	struct job_rank task = { .pid = pid,
				 .rank = id->scheme == JOB_SCHEME_NONE ? -1 : id->rank,
				 .local_rank = id->local_rank,
				 .step = id->slurm_step };
	int launched;

	snprintf(task.node, sizeof(task.node), "%s", id->node);
	if (read_ppid(pid, &(pid_t){ 0 }, task.comm, sizeof(task.comm)))
		snprintf(task.comm, sizeof(task.comm), "?");
	task.pid = below_shells(t, pid, task.comm, sizeof(task.comm));
	/* dlscope's own steps beside the job (its recorders) are no ranks of it. */
	if (!strcmp(task.comm, "dlscope"))
		return 0;
	launched = launched_ranks(t, &task, id->scheme, j, cap);
	if (launched < 0)
		return launched;
	if (!launched) {
		if (j->n == *cap && ARRAY_GROW(j->ranks, *cap, 16))
			return -ENOMEM;
		j->ranks[j->n++] = task;
		take_identity(j, id);
	}
	/* The ranks' parent: slurmstepd, or the launcher the task runs. */
	if (!j->launcher)
		j->launcher = launched ? task.pid : ptable_parent(t, pid);
	if (id->slurm_nodes < 0 || j->step_nodes < 0)
		j->step_nodes = -1;
	else if (id->slurm_nodes > j->step_nodes)
		j->step_nodes = id->slurm_nodes;
	return 0;
}

int job__slurm_tasks(long jobid, int step, const char *node, int own_step, struct job **out,
		     char *why, size_t whylen)
{
	struct ptable t = { 0 };
	struct job *j = calloc(1, sizeof(*j));
	size_t cap = 0;
	int err;

	*out = NULL;
	if (!j || (err = ptable_read(&t))) {
		snprintf(why, whylen, "cannot list the processes in /proc: %s",
			 strerror(j ? -err : ENOMEM));
		free(t.p);
		free(j);
		return j ? err : -ENOMEM;
	}
	*j = (struct job){ .scheme = JOB_SCHEME_NONE, .world_size = -1, .step_nodes = 0 };
	for (size_t i = 0; i < t.n; i++) {
		struct job_identity id;

		if (!slurm_task(&t, t.p[i].pid, jobid, step, node, own_step, &id))
			continue;
		if (add_task(&t, t.p[i].pid, &id, j, &cap)) {
			free(t.p);
			job__free(j);
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
	}
	free(t.p);
	if (!j->n) {
		snprintf(why, whylen, "Slurm job %ld has no task%s%s here", jobid,
			 node ? " on node " : "", node ? node : "");
		job__free(j);
		return -ENOENT;
	}
	qsort(j->ranks, j->n, sizeof(*j->ranks), cmp_task);
	if (read_ppid(j->launcher, &(pid_t){ 0 }, j->launcher_comm, sizeof(j->launcher_comm)))
		snprintf(j->launcher_comm, sizeof(j->launcher_comm), "?");
	read_cmdline(j->launcher, j->launcher_cmd, sizeof(j->launcher_cmd));
	*out = j;
	return 0;
}

int job__parse_slurm_id(const char *s, long *jobid, int *step)
{
	char *end;
	long j, st = -1;

	errno = 0;
	j = strtol(s, &end, 10);
	if (errno || end == s || j <= 0 || !isdigit((unsigned char)*s))
		return -EINVAL;
	if (*end == '.') {
		const char *p = end + 1;

		st = strtol(p, &end, 10);
		if (errno || end == p || st < 0 || st > 1 << 30 || !isdigit((unsigned char)*p))
			return -EINVAL;
	}
	if (*end)
		return -EINVAL;
	*jobid = j;
	*step = (int)st;
	return 0;
}

int job__slurm_step_of_srun(pid_t pid, long *jobid, int *step)
{
	char *argv[] = { "scontrol", "--oneliner", "show", "step", NULL };
	char host[256], want[320], *out, *line, *save = NULL;
	int status, err = -ENOENT;

	if (gethostname(host, sizeof(host)))
		return -errno;
	host[sizeof(host) - 1] = '\0';
	/* scontrol names srun's host as its short name. */
	host[strcspn(host, ".")] = '\0';
	snprintf(want, sizeof(want), "SrunHost:Pid=%s:%d", host, pid);
	out = runprog__capture(NULL, argv, false, NULL, &status);
	/* One step a line: "StepId=12.0 ... SrunHost:Pid=host:1234 ..." */
	for (line = out ? strtok_r(out, "\n", &save) : NULL; line && err;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *id = strstr(line, "StepId="), *at = strstr(line, want);
		char idbuf[64];

		if (!id || !at || (at[strlen(want)] && at[strlen(want)] != ' '))
			continue;
		snprintf(idbuf, sizeof(idbuf), "%.*s", (int)strcspn(id + 7, " "), id + 7);
		if (!job__parse_slurm_id(idbuf, jobid, step))
			err = 0;
	}
	free(out);
	return err;
}
