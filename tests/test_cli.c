/*
 * The command line's parser and option table (tools/cli.c, issue 32),
 * without a server: which words are options, paths and COMMAND for each
 * layout (options anywhere before COMMAND, POSIXLY_CORRECT or not), and
 * the table's promise that a letter or a name means one option in every
 * subcommand.  The tools' tests (test_tools, test_zkr*) run the built
 * program through both names against an ensemble.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "cli.h"
#include "testutil.h"

/* What cli_split() made of argv: "o:1,2 p:3 c:4" (indices of option
 * words, of paths, and where COMMAND starts, or c:- for none). */
static char *split(cli_command cmd, cli_layout layout, const char **words) {
  int argc = 0;
  while (words[argc])
    argc++;
  int opts[64], paths[64], n_opts, n_paths;
  int c = cli_split(cmd, layout, argc, (char *const *)words, opts, &n_opts,
                    paths, &n_paths);
  GString *s = g_string_new("o:");
  for (int i = 0; i < n_opts; i++)
    g_string_append_printf(s, "%s%d", i ? "," : "", opts[i]);
  g_string_append(s, " p:");
  for (int i = 0; i < n_paths; i++)
    g_string_append_printf(s, "%s%d", i ? "," : "", paths[i]);
  if (c < argc)
    g_string_append_printf(s, " c:%d", c);
  else
    g_string_append(s, " c:-");
  return g_string_free(s, FALSE);
}

#define EXPECT_SPLIT(cmd, layout, want, ...)                                   \
  do {                                                                         \
    const char *w_[] = {__VA_ARGS__, NULL};                                    \
    char *got_ = split(cmd, layout, w_);                                       \
    if (strcmp(got_, want) != 0)                                               \
      fprintf(stderr, "\n  split: got '%s', want '%s'\n", got_, want);         \
    CU_ASSERT_STRING_EQUAL(got_, want);                                        \
    g_free(got_);                                                              \
  } while (0)

static void test_lock_words(void) {
  /* flock's -s: shared, no value; the example. */
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:1 p:2 c:4", "zkr-lock", "-s",
               "/locks/catalog", "--", "true");
  /* Options after the path, before -- or before COMMAND. */
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:2 p:1 c:4", "lock", "/p", "-n",
               "--", "true");
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:2 p:1 c:3", "lock", "/p", "-n",
               "true");
  /* COMMAND's own options stay COMMAND's. */
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o: p:1 c:2", "lock", "/p", "sh",
               "-c", "x");
  /* An absolute COMMAND without -- after it is COMMAND. */
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o: p:1 c:2", "lock", "/p",
               "/usr/bin/env", "x");
  /* Paths until a -- when the words from the second path to it are all
   * absolute paths; options before the second path are ours. */
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o: p:1,2 c:4", "lock", "/a", "/b",
               "--", "cmd");
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:2,3 p:1,4 c:6", "lock", "/a",
               "-w", "5", "/b", "--", "cmd");
  /* ... but any other word before it makes it COMMAND's, its options
   * too (they may be COMMAND's own: -c is sh's here, not ours; -n after
   * the second path is COMMAND's, as in 0.1). */
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o: p:1 c:2", "lock", "/locks/a",
               "/locks/b", "-n", "--", "job");
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o: p:1 c:2", "lock", "/locks/x",
               "/usr/bin/rsync", "-av", "--", "/src", "/dst");
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o: p:1 c:2", "lock", "/locks/db",
               "/bin/sh", "-c", "pg_dump", "--", "/backup/db");
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o: p:1 c:2", "lock", "/p", "find",
               ".", "--", "x");
  /* Held without COMMAND: one path, or paths then a last --. */
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o: p:1 c:-", "lock", "/p");
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o: p:1,2 c:-", "lock", "/a", "/b",
               "--");
}

/* A "--" before the path ends the options only (as getopt's did): the
 * path follows, then COMMAND as without it. */
static void test_dashes_before_the_path(void) {
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:1 p:3 c:4", "zkr-lock", "-n",
               "--", "/locks/x", "true");
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o: p:2,3 c:5", "lock", "--", "/a",
               "/b", "--", "cmd");
  EXPECT_SPLIT(CLI_ELECT, CLI_PATH_COMMAND, "o: p:2 c:3", "elect", "--", "/e",
               "true");
  /* After it nothing is an option: "-n" is COMMAND's. */
  EXPECT_SPLIT(CLI_ELECT, CLI_PATH_COMMAND, "o: p:2 c:3", "elect", "--", "/e",
               "-n");
  EXPECT_SPLIT(CLI_WATCH, CLI_PATH_DASH_COMMAND, "o: p:2 c:-", "watch", "--",
               "/p");
  EXPECT_SPLIT(CLI_WATCH, CLI_PATH_DASH_COMMAND, "o: p:2 c:4", "watch", "--",
               "/p", "--", "cmd");
}

static void test_values_are_not_paths(void) {
  /* A value that looks like a path, inline values, a cluster ending in a
   * letter that takes the next word. */
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:1,2 p:3 c:4", "lock", "--id",
               "/x", "/p", "true");
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:1 p:2 c:3", "lock", "-w5", "/p",
               "true");
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:1 p:2 c:3", "lock", "--wait=5",
               "/p", "true");
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:1,2 p:3 c:4", "lock", "-nw", "5",
               "/p", "x");
  /* An unambiguous prefix of a long option with a value. */
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:1,2 p:3 c:4", "lock", "--sess",
               "500", "/p", "x");
}

static void test_no_command_options(void) {
  /* --holders and -c leave no COMMAND among the words: all are paths. */
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:2 p:1,3 c:-", "lock", "/a",
               "--holders", "/b");
  EXPECT_SPLIT(CLI_LOCK, CLI_PATHS_COMMAND, "o:2,3 p:1 c:-", "lock", "/p", "-c",
               "echo hi");
  EXPECT_SPLIT(CLI_ELECT, CLI_PATH_COMMAND, "o:1 p:2 c:-", "elect", "--leader",
               "/p");
  /* Without them, elect's second word is COMMAND. */
  EXPECT_SPLIT(CLI_ELECT, CLI_PATH_COMMAND, "o:2,3 p:1 c:4", "elect", "/p",
               "--rejoin-delay", "2", "/bin/true");
}

static void test_other_layouts(void) {
  /* ls: every word a path; -- only ends the options. */
  EXPECT_SPLIT(CLI_LS, CLI_PATHS, "o:2 p:1,3,5 c:-", "ls", "/a", "-r", "/b",
               "--", "-r");
  /* watch: COMMAND only after --. */
  EXPECT_SPLIT(CLI_WATCH, CLI_PATH_DASH_COMMAND, "o:2 p:1 c:4", "watch", "/a",
               "-r", "--", "cmd", "-x");
  EXPECT_SPLIT(CLI_WATCH, CLI_PATH_DASH_COMMAND, "o: p:1,2 c:-", "watch", "/a",
               "/b");
  EXPECT_SPLIT(CLI_MEMBERS, CLI_PATHS, "o:1,3,4 p:2 c:-", "members", "--watch",
               "/g", "--count", "3");
}

/* cli_parse(): the shared options into tool_options, the others to the
 * subcommand in order, the words divided; the same with POSIXLY_CORRECT,
 * which would stop getopt_long at the first path. */
typedef struct seen {
  GString *ids;
} seen;

static void note_option(int id, const char *value, void *ctx) {
  seen *s = ctx;
  g_string_append_printf(s->ids, "%s%d=%s", s->ids->len ? " " : "", id,
                         value ? value : "");
}

static void parse_once(void) {
  char *argv[] = {"zkr-lock", "/p",  "-n",          "--servers", "h:1",  "-t",
                  "500",      "-w5", "--id=worker", "--",        "true", NULL};
  tool_options o;
  seen s = {g_string_new("")};
  cli_args args;
  const cli_spec spec = {CLI_LOCK, "lock", CLI_PATHS_COMMAND, "", ""};
  cli_parse(&spec, "zkr-lock", &o, 11, argv, note_option, &s, &args);
  CU_ASSERT_STRING_EQUAL(o.servers, "h:1");
  CU_ASSERT_EQUAL(o.session_timeout_ms, 500);
  CU_ASSERT_STRING_EQUAL(o.id, "worker");
  CU_ASSERT_STRING_EQUAL(s.ids->str, "110= 119=5"); /* 'n', then 'w' 5 */
  CU_ASSERT_EQUAL(args.n_paths, 1);
  CU_ASSERT_STRING_EQUAL(args.paths[0], "/p");
  CU_ASSERT_PTR_NOT_NULL_FATAL(args.command);
  CU_ASSERT_STRING_EQUAL(args.command[0], "true");
  CU_ASSERT_PTR_NULL(args.command[1]);
  g_free(args.paths);
  g_string_free(s.ids, TRUE);
  g_free(o.auth_env);
}

static void test_parse(void) {
  parse_once();
  g_setenv("POSIXLY_CORRECT", "1", TRUE);
  parse_once();
  g_unsetenv("POSIXLY_CORRECT");
}

/* ------------------------------------------------------------ the table */

static const cli_command all_commands[] = {CLI_LOCK,   CLI_ELECT,   CLI_LS,
                                           CLI_WATCH,  CLI_MEMBERS, CLI_HEALTH,
                                           CLI_REVOKE, CLI_COUNTER};

static void test_one_meaning(void) {
  for (const cli_option *a = cli_options; a->id; a++) {
    CU_ASSERT(a->commands != 0);
    CU_ASSERT(a->name != NULL || a->help == NULL); /* listed: has a name */
    for (const cli_option *b = a + 1; b->id; b++) {
      /* A letter or a name: one option, whichever subcommand. */
      if (a->letter && a->letter == b->letter && a->id != b->id)
        fprintf(stderr, "\n  -%c means two options\n", a->letter);
      CU_ASSERT(!(a->letter && a->letter == b->letter) || a->id == b->id);
      if (a->name && b->name && strcmp(a->name, b->name) == 0) {
        CU_ASSERT_EQUAL(a->id, b->id);
        /* Twice for one subcommand would be two entries in --help. */
        CU_ASSERT_EQUAL(a->commands & b->commands, 0);
      }
      /* Two entries of one option agree on whether it takes a value. */
      if (a->id == b->id)
        CU_ASSERT_EQUAL(a->value == NULL, b->value == NULL);
    }
  }
}

static int takes(cli_command cmd, const char *name) {
  for (const cli_option *o = cli_options; o->id; o++)
    if ((o->commands & cmd) && o->name && strcmp(o->name, name) == 0)
      return 1;
  return 0;
}

static void test_every_subcommand_has_the_basics(void) {
  const char *basics[] = {"servers",     "session-timeout", "auth-file",
                          "server-tick", "verbose",         "help",
                          "version"};
  for (size_t c = 0; c < G_N_ELEMENTS(all_commands); c++)
    for (size_t i = 0; i < G_N_ELEMENTS(basics); i++)
      CU_ASSERT(takes(all_commands[c], basics[i]));
  /* Those that print take --json; those that run COMMAND take -c. */
  CU_ASSERT(takes(CLI_LS, "json") && takes(CLI_WATCH, "json") &&
            takes(CLI_MEMBERS, "json") && takes(CLI_LOCK, "json") &&
            takes(CLI_ELECT, "json") && takes(CLI_HEALTH, "json"));
  CU_ASSERT(takes(CLI_LOCK, "command") && takes(CLI_ELECT, "command") &&
            takes(CLI_WATCH, "command"));
}

/* How many lines of @p text list the option --NAME ("  -x, --NAME" or
 * "      --NAME" at the start, then a space or the line's end). */
static int option_lines(const char *text, const char *name) {
  int n = 0;
  gchar **lines = g_strsplit(text, "\n", -1);
  for (int i = 0; lines[i]; i++) {
    const char *l = lines[i];
    const char *opt = g_str_has_prefix(l, "      --") ? l + 6
                      : (strlen(l) > 6 && l[0] == ' ' && l[1] == ' ' &&
                         l[2] == '-' && l[4] == ',' && l[5] == ' ')
                          ? l + 6
                          : NULL;
    size_t len = strlen(name);
    if (opt && strncmp(opt + 2, name, len) == 0 &&
        (opt[2 + len] == ' ' || opt[2 + len] == '\0'))
      n++;
  }
  g_strfreev(lines);
  return n;
}

/* --help lists every named option the subcommand takes that has a help
 * text, each once, and no other. */
static void test_help_lists_the_table(void) {
  for (size_t c = 0; c < G_N_ELEMENTS(all_commands); c++) {
    const cli_spec spec = {all_commands[c], "x", CLI_PATHS, "HEAD\n", "TAIL\n"};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cli_print_help(&spec, f);
    fclose(f);
    CU_ASSERT(g_str_has_prefix(text, "HEAD\n"));
    CU_ASSERT(g_str_has_suffix(text, "TAIL\n"));
    for (const cli_option *o = cli_options; o->id; o++) {
      if (!o->name)
        continue;
      int listed = option_lines(text, o->name);
      int wanted = 0; /* an entry of this name for this subcommand */
      for (const cli_option *e = cli_options; e->id; e++)
        wanted |= e->name && strcmp(e->name, o->name) == 0 &&
                  (e->commands & all_commands[c]) && e->help;
      if (listed != wanted)
        fprintf(stderr, "\n  --%s listed %d times for %#x\n", o->name, listed,
                all_commands[c]);
      CU_ASSERT_EQUAL(listed, wanted);
    }
    free(text);
  }
}

static void add_suites(void) {
  ZKT_SUITE("words", {"lock", test_lock_words},
            {"values are not paths", test_values_are_not_paths},
            {"-- before the path", test_dashes_before_the_path},
            {"options that leave no COMMAND", test_no_command_options},
            {"other layouts", test_other_layouts},
            {"parse, POSIXLY_CORRECT or not", test_parse});
  ZKT_SUITE(
      "table", {"one meaning per letter and name", test_one_meaning},
      {"every subcommand has the basics", test_every_subcommand_has_the_basics},
      {"--help lists the table", test_help_lists_the_table});
}

int main(void) { return zkt_run("test_cli", add_suites); }
