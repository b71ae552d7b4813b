/*
 * The servers' dynamic configuration read as client addresses
 * (src/core/ensemble_config.c), without a server: the lines ZooKeeper 3.8
 * writes to /zookeeper/config, members without a client address, wildcard
 * and IPv6 client hosts, observers, the version, and malformed text.
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "core/ensemble_config.h"
#include "testutil.h"

/* Parse @p text: "HOSTS@VERSION/MEMBERS/SERVERS" (HOSTS "-" for none), or
 * the error's name. */
static char *parsed(const char *text) {
  zkrc__ensemble_config c;
  int rc = zkrc__ensemble_config_parse(text, strlen(text), &c);
  if (rc != ZKRC_OK)
    return g_strdup(zkrc_err_name(rc));
  char *r =
      g_strdup_printf("%s@%llx/%d/%d", c.hosts ? c.hosts : "-",
                      (unsigned long long)c.version, c.members, c.servers);
  zkrc__ensemble_config_clear(&c);
  return r;
}

typedef struct row {
  const char *text, *want;
} row;

static void test_rows(void) {
  static const row rows[] = {
      /* As a 3.8 member writes it after a reconfig. */
      {"server.1=127.0.0.1:2888:3888:participant;0.0.0.0:2181\n"
       "server.2=127.0.0.2:2889:3889:participant;127.0.0.2:2182\n"
       "version=100000003",
       "127.0.0.1:2181,127.0.0.2:2182@100000003/2/2"},
      /* In id order, whatever the text's; observers too; a client port
       * alone takes the member's host. */
      {"server.3=h3:1:2:observer;2183\nserver.1=h1:1:2;h1:2181\n",
       "h1:2181,h3:2183@0/2/2"},
      /* A static configuration's members have no client address. */
      {"server.1=127.0.0.1:2888:3888:participant\nversion=0", "-@0/0/1"},
      {"server.1=127.0.0.1:2888:3888;\n", "-@0/0/1"},
      /* IPv6, bracketed; a wildcard IPv6 client host. */
      {"server.1=[::1]:2888:3888;[::1]:2181\nserver.2=[::1]:2889:3889;[::]:"
       "2182",
       "[::1]:2181,[::1]:2182@0/2/2"},
      /* Spaces, CRLF, comments and other keys. */
      {"# comment\r\n  server.7 = h7:1:2 ; 0.0.0.0:9\r\ngroup.1=7\r\n",
       "h7:9@0/1/1"},
      {"", "-@0/0/0"},
      /* A static configuration read from one member: only its own client
       * address (the tracker does not follow such a list). */
      {"server.1=a:1:2:participant;a:5\nserver.2=b:1:2:participant\n",
       "a:5@0/1/2"},
      /* Malformed: nothing taken. */
      {"server.x=h:1:2;2181", "ZKRC_EBADNODE"},
      {"server.1=h1;2181", "ZKRC_EBADNODE"},
      {"server.1=h:1:2;h:99999", "ZKRC_EBADNODE"},
      {"server.1=h:1:2;h:", "ZKRC_EBADNODE"},
      {"server.1=[::1:1:2;2181", "ZKRC_EBADNODE"},
      {"server.1=h:1:2;1\nserver.1=g:1:2;2", "ZKRC_EBADNODE"},
      {"version=zz", "ZKRC_EBADNODE"},
      {"version=", "ZKRC_EBADNODE"},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
    char *got = parsed(rows[i].text);
    if (strcmp(got, rows[i].want) != 0)
      fprintf(stderr, "row %zu: \"%s\", expected \"%s\"\n", i, got,
              rows[i].want);
    CU_ASSERT_STRING_EQUAL(got, rows[i].want);
    g_free(got);
  }
}

/* The text need not end with a NUL: only @p len bytes are read. */
static void test_length(void) {
  const char text[] = "server.1=h:1:2;5\nserver.2=g:1:2;6";
  zkrc__ensemble_config c;
  CU_ASSERT_EQUAL(zkrc__ensemble_config_parse(text, 16, &c), ZKRC_OK);
  CU_ASSERT_STRING_EQUAL(c.hosts ? c.hosts : "-", "h:5");
  zkrc__ensemble_config_clear(&c);
  CU_ASSERT_PTR_NULL(c.hosts);
  zkrc__ensemble_config_clear(NULL);
}

static void add_suites(void) {
  ZKT_SUITE("ensemble config", {"rows", test_rows}, {"length", test_length});
}

int main(void) { return zkt_run("test_ensemble_config", add_suites); }
