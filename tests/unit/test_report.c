// SPDX-License-Identifier: GPL-2.0
/* dlscope report's pure parts: --redact's replacements and the size limit. */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "tap.h"

static void test_redact(void)
{
	const char *users[] = { "alice", NULL }, *hosts[] = { "gpu-node-7", NULL };
	struct redact_hints h = { hosts, users };
	char *r = report__redact(
		"alice ran /home/alice/train.py on gpu-node-7 (10.0.0.5, fe80::1:2:3); "
		"/home/alice/lib.so again; glibc 2.36, torch 1.13.0, c10::add at 16:40:56; "
		"alice@gpu-node-7.example; "
		"malice and alicex stay; 10.0.0.5 again; 300.1.2.3 is no address; /root/x; "
		"comm alice_job, thread alice-io, gpu-node-7-worker; fe80::1 and fd00::2 and "
		"2001:db8::7; std::abs and cafe::beef stay",
		&h);

	CHECK(r != NULL, "redacts");
	if (!r)
		return;
	CHECK(!strstr(r, "/home/alice") && strstr(r, "<home1>/train.py") &&
		      strstr(r, "<home1>/lib.so"),
	      "a home directory: one placeholder everywhere");
	CHECK(strstr(r, "<user1> ran") && strstr(r, "<user1>@<host1>"), "the user name, as a word");
	CHECK(strstr(r, "malice") && strstr(r, "alicex"), "not inside other words");
	CHECK(!strstr(r, "gpu-node-7") && strstr(r, "on <host1>"), "the host name");
	CHECK(!strstr(r, "10.0.0.5") && strstr(r, "(<ip1>,") && strstr(r, "<ip1> again"),
	      "an IPv4 address, the same placeholder each time");
	CHECK(!strstr(r, "fe80::1:2:3") && strstr(r, "<ip2>)"), "an IPv6 address");
	CHECK(strstr(r, "glibc 2.36") && strstr(r, "torch 1.13.0"), "versions are no addresses");
	CHECK(strstr(r, "c10::add at 16:40:56"), "nor are C++ names and times");
	CHECK(strstr(r, "300.1.2.3"), "nor is an out-of-range dotted quad");
	CHECK(strstr(r, "<home2>/x"), "/root is a home too, with its own placeholder");
	CHECK(strstr(r, "comm <user1>_job, thread <user1>-io, <host1>-worker"),
	      "user and host names inside the names of processes and threads");
	CHECK(!strstr(r, "fe80::1 ") && !strstr(r, "fd00::2") && !strstr(r, "2001:db8::7"),
	      "IPv6 addresses with two groups");
	CHECK(strstr(r, "std::abs and cafe::beef stay"), "C++ names with two parts stay");
	free(r);
}

static void test_limit(void)
{
	json_t *fds = json_array(), *check;
	struct report_in in = { .title = "t",
				.invocation = "dlscope report 1",
				.captured = "now",
				.version = "0",
				.companion = "r.extra.md" };
	char *md = NULL, *extra = NULL;

	for (int i = 0; i < 40; i++)
		json_array_append_new(fds, json_pack("{s:s, s:s, s:s, s:[s], s:s, s:s}", "id",
						     "dup-openmp", "severity", "error", "title",
						     "two runtimes", "evidence",
						     "a rather long line of evidence about a copy",
						     "why", "because", "remedy", "fix it"));
	check = json_pack("{s:[{s:i, s:s, s:[], s:o}]}", "processes", "pid", 1, "comm", "x",
			  "runtimes", "findings", fds);
	in.check = check;
	in.env = json_pack("{s:s}", "kernel", "6.18");
	in.reproduce = json_pack("[s]", "dlscope check 1");
	CHECK(!report__write(&in, 65536, &md, &extra) && md && !extra, "fits: no companion");
	free(md);
	free(extra);
	CHECK(!report__write(&in, 2000, &md, &extra) && md && extra, "too long: a companion");
	CHECK(md && strlen(md) <= 2000 && strstr(md, "cut here"), "cut at the limit, and said");
	CHECK(extra && strstr(extra, "## Findings") && strstr(extra, "## Reproduce"),
	      "the companion has everything");
	free(md);
	free(extra);
	json_decref(check);
	json_decref(in.env);
	json_decref(in.reproduce);
}

int main(void)
{
	test_redact();
	test_limit();
	return tap_done();
}
