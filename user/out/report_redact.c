// SPDX-License-Identifier: GPL-2.0
/*
 * dlscope report --redact (report__redact): home directories, user and host names and
 * addresses in a report replaced by placeholders, one per distinct value.
 */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "report.h"

/* Placeholders, one per distinct value. */
struct redactor {
	struct {
		char *value;
		char *placeholder;
	} * map;
	size_t n, cap;
	unsigned int counts[4];
};

static const char *placeholder(struct redactor *r, const char *kind, int k, const char *value,
			       size_t len)
{
	char ph[32];

	for (size_t i = 0; i < r->n; i++)
		if (strlen(r->map[i].value) == len && !strncmp(r->map[i].value, value, len))
			return r->map[i].placeholder;
	if (ARRAY_RESERVE(r->map, r->cap, r->n + 1))
		return NULL;
	snprintf(ph, sizeof(ph), "<%s%u>", kind, ++r->counts[k]);
	r->map[r->n].value = strndup(value, len);
	r->map[r->n].placeholder = strdup(ph);
	if (!r->map[r->n].value || !r->map[r->n].placeholder)
		return NULL;
	return r->map[r->n++].placeholder;
}

/* Replace every match of @re (group @group, or the whole match) in *@text. */
static int replace_re(char **text, const char *re, int group, struct redactor *r, const char *kind,
		      int k)
{
	regex_t rx;
	regmatch_t m[4];
	size_t len = 0;
	char *out = NULL;
	const char *p = *text;
	FILE *f;

	if (regcomp(&rx, re, REG_EXTENDED))
		return -EINVAL;
	f = open_memstream(&out, &len);
	if (!f) {
		regfree(&rx);
		return -ENOMEM;
	}
	while (!regexec(&rx, p, 4, m, p == *text ? 0 : REG_NOTBOL)) {
		regoff_t so = m[group].rm_so, eo = m[group].rm_eo;
		const char *ph;

		if (eo <= so) {
			fwrite(p, 1, (size_t)m[0].rm_eo + 1, f);
			p += m[0].rm_eo + 1;
			if (!p[-1])
				break;
			continue;
		}
		ph = placeholder(r, kind, k, p + so, (size_t)(eo - so));
		fwrite(p, 1, (size_t)so, f);
		fputs(ph ? ph : "<redacted>", f);
		fwrite(p + eo, 1, (size_t)(m[0].rm_eo - eo), f);
		p += m[0].rm_eo;
	}
	fputs(p, f);
	fclose(f);
	regfree(&rx);
	free(*text);
	*text = out;
	return out ? 0 : -ENOMEM;
}

/*
 * A literal @word wherever no letter or digit touches it: inside names made of it too
 * ("alice_job", "vm-worker", "alice@host"), never inside another word ("malice").
 */
static int replace_word(char **text, const char *word, struct redactor *r, const char *kind, int k)
{
	char re[512];
	size_t n = 0;

	if (!word || strlen(word) < 2 || strlen(word) > 200)
		return 0;
	n += (size_t)snprintf(re, sizeof(re), "(^|[^A-Za-z0-9])(");
	for (const char *c = word; *c && n + 4 < sizeof(re); c++) {
		if (strchr(".[]()*+?{}|^$\\", *c))
			re[n++] = '\\';
		re[n++] = *c;
	}
	snprintf(re + n, sizeof(re) - n, ")([^A-Za-z0-9]|$)");
	/* Matches overlap by their borders: run until nothing changes. */
	for (int pass = 0; pass < 2; pass++)
		if (replace_re(text, re, 2, r, kind, k))
			return -ENOMEM;
	return 0;
}

char *report__redact(const char *text, const struct redact_hints *h)
{
	struct redactor r = { 0 };
	char *s = strdup(text);

	/* Home directories first (their user names go with them), then names, then addresses. */
	if (s &&
	    replace_re(&s, "(/home/[A-Za-z0-9_.-]+|/root)(/|[^A-Za-z0-9_.-]|$)", 1, &r, "home", 0))
		goto fail;
	for (size_t i = 0; s && h && h->users && h->users[i]; i++)
		if (replace_word(&s, h->users[i], &r, "user", 1))
			goto fail;
	for (size_t i = 0; s && h && h->hosts && h->hosts[i]; i++)
		if (replace_word(&s, h->hosts[i], &r, "host", 2))
			goto fail;
	/* IPv4 (each part at most 255) and IPv6 (hex groups with at least two colons). */
	if (s &&
	    replace_re(&s,
		       "(^|[^0-9.])((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|"
		       "1?[0-9]?[0-9])){3})([^0-9.]|$)",
		       2, &r, "ip", 3))
		goto fail;
	/*
	 * Full IPv6, or compressed with three groups or more; with two, only where the first
	 * group is of an assigned range (link-local fe80, unique-local fc/fd, multicast ff,
	 * global 2000-3fff): "c10::add" is C++, no address.
	 */
	if (s && replace_re(&s,
			    "(^|[^0-9A-Za-z_:])(([0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}|"
			    "([0-9A-Fa-f]{1,4}:){2,6}(:[0-9A-Fa-f]{1,4}){1,5}|"
			    "([0-9A-Fa-f]{1,4}:){1,5}(:[0-9A-Fa-f]{1,4}){2,6}|"
			    "([fF][cdefCDEF]|[23][0-9A-Fa-f])[0-9A-Fa-f]{0,2}::[0-9A-Fa-f]{1,4})"
			    "([^0-9A-Za-z_:]|$)",
			    2, &r, "ip", 3))
		goto fail;
	for (size_t i = 0; i < r.n; i++) {
		free(r.map[i].value);
		free(r.map[i].placeholder);
	}
	free(r.map);
	return s;
fail:
	for (size_t i = 0; i < r.n; i++) {
		free(r.map[i].value);
		free(r.map[i].placeholder);
	}
	free(r.map);
	free(s);
	return NULL;
}
