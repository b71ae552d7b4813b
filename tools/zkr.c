/*
 * zkr - the zkrecipes command line: one program, a subcommand per recipe
 * (zkr lock, zkr elect, zkr ls, zkr watch, zkr members) and zkr health.  Run by the name
 * zkr-SUBCOMMAND (the links make install puts beside it), it is that
 * subcommand, so that flock-style scripts and units written for the
 * single-purpose tools keep working.  See `zkr --help' or zkr(1).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tool.h"

typedef struct subcommand {
  const char *name;
  int (*run)(const char *program, int argc, char **argv);
  const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    {"lock", cmd_lock, "run COMMAND while holding a lock (flock(1) style)"},
    {"elect", cmd_elect, "run COMMAND while this host leads an election"},
    {"ls", cmd_ls, "who holds a lock or leads, who waits, and since when"},
    {"watch", cmd_watch, "print, or run COMMAND on, every change of a node"},
    {"members", cmd_members, "a group's members, or a service's instances"},
    {"health", cmd_health, "can ZooKeeper be used from here: member, session"},
    {"revoke", cmd_revoke, "ask a lock's holder to give it up (Curator's)"},
    {"counter", cmd_counter, "read or add to a counter (Curator's, kazoo's)"},
    {"barrier", cmd_barrier, "set, remove, or wait until gone, a barrier node"},
    {"double-barrier", cmd_double_barrier,
     "run COMMAND once N members are in; leave when all are done"},
};
#define N_SUBCOMMANDS (sizeof subcommands / sizeof subcommands[0])

static const subcommand *find(const char *name) {
  for (size_t i = 0; i < N_SUBCOMMANDS; i++)
    if (strcmp(subcommands[i].name, name) == 0)
      return &subcommands[i];
  return NULL;
}

static void print_help(FILE *out) {
  fputs("Usage: zkr SUBCOMMAND [OPTIONS] [ARGUMENTS]\n"
        "       zkr SUBCOMMAND --help\n"
        "       zkr --help | --version\n"
        "\n"
        "ZooKeeper coordination from the shell: locks, elections, "
        "listings and\n"
        "watches, on the nodes Apache Curator and kazoo use.\n"
        "\n"
        "Subcommands:\n",
        out);
  for (size_t i = 0; i < N_SUBCOMMANDS; i++)
    fprintf(out, "  %-9s %s\n", subcommands[i].name, subcommands[i].summary);
  fputs("\n"
        "Run by the name zkr-SUBCOMMAND (zkr-lock, zkr-elect, zkr-ls, "
        "zkr-watch,\n"
        "zkr-members), zkr is that subcommand.  Options mean the same in "
        "every\n"
        "subcommand; zkr(1) has the table of them all.\n",
        out);
}

int main(int argc, char **argv) {
  const char *base = strrchr(argv[0], '/');
  base = base ? base + 1 : argv[0];
  tool_set_program("zkr");
  /* zkr-lock and the others: the subcommand under its old name. */
  const subcommand *sub = strncmp(base, "zkr-", 4) == 0 ? find(base + 4) : NULL;
  if (sub)
    return sub->run(base, argc, argv);
  if (argc < 2) {
    print_help(stderr);
    return TOOL_EXIT_USAGE;
  }
  const char *word = argv[1];
  if (strcmp(word, "--help") == 0 || strcmp(word, "-h") == 0 ||
      strcmp(word, "help") == 0) {
    if (argc > 2 && (sub = find(argv[2])) != NULL) {
      char *help_argv[] = {argv[2], "--help", NULL};
      char program[32];
      snprintf(program, sizeof program, "zkr %s", sub->name);
      return sub->run(program, 2, help_argv);
    }
    print_help(stdout);
    return fflush(stdout) == 0 ? TOOL_EXIT_OK : TOOL_EXIT_IOERR;
  }
  if (strcmp(word, "--version") == 0 || strcmp(word, "-V") == 0) {
    printf("zkr (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
    return fflush(stdout) == 0 ? TOOL_EXIT_OK : TOOL_EXIT_IOERR;
  }
  sub = find(word);
  if (sub == NULL) {
    if (word[0] == '-')
      tool_usage_error("options go after the subcommand: zkr SUBCOMMAND "
                       "[OPTIONS] (%s)",
                       word);
    tool_usage_error("unknown subcommand: %s", word);
  }
  char program[32];
  snprintf(program, sizeof program, "zkr %s", sub->name);
  return sub->run(program, argc - 1, argv + 1);
}
