/*
 * tools/cli.h - the one command line of zkr: its subcommands, the table of
 * every option (one meaning per letter and per name, in every subcommand),
 * the parser all subcommands share and the --help it prints.
 *
 * Arguments: options may come anywhere before COMMAND (GNU permutation,
 * whatever POSIXLY_CORRECT says): before PATH, between paths, after PATH.
 * COMMAND starts at the first word after PATH that is not an option, or
 * after "--"; every word from there on is COMMAND's.  How the words that
 * are not options divide into paths and COMMAND is the subcommand's
 * layout (cli_layout).
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKR_CLI_H
#define ZKR_CLI_H

#include "tool.h"

/* The subcommands, as bits: an option's entry says which take it. */
typedef enum cli_command {
  CLI_LOCK = 1 << 0,
  CLI_ELECT = 1 << 1,
  CLI_LS = 1 << 2,
  CLI_WATCH = 1 << 3,
  CLI_MEMBERS = 1 << 4,
  CLI_HEALTH = 1 << 5,
  CLI_REVOKE = 1 << 6,
  CLI_COUNTER = 1 << 7,
  CLI_BARRIER = 1 << 8,
  CLI_DOUBLE_BARRIER = 1 << 9,
} cli_command;
#define CLI_ALL                                                                \
  (CLI_LOCK | CLI_ELECT | CLI_LS | CLI_WATCH | CLI_MEMBERS | CLI_HEALTH |      \
   CLI_REVOKE | CLI_COUNTER | CLI_BARRIER | CLI_DOUBLE_BARRIER)
/* Those that run a COMMAND. */
#define CLI_RUNS (CLI_LOCK | CLI_ELECT | CLI_WATCH | CLI_DOUBLE_BARRIER)

/* Options without a letter, numbered above every character. */
enum {
  OPT_SERVERS = 256,
  OPT_CONNECT_TIMEOUT,
  OPT_AUTH_FILE,
  OPT_TLS_CA,
  OPT_TLS_CERT,
  OPT_TLS_KEY,
  OPT_SASL_USER,
  OPT_SERVER_TICK,
  OPT_ID,
  OPT_FOREGROUND,
  OPT_HOLDERS,
  OPT_LIMIT,
  OPT_ONCE,
  OPT_LEADER,
  OPT_WATCH,
  OPT_REJOIN_DELAY,
  OPT_READY_ON,
  OPT_JSON,
  OPT_CHILDREN,
  OPT_COUNT,
  OPT_EXIT_ON_ERROR,
  OPT_SERVICE,
  OPT_REVOCABLE,
  OPT_FORMAT,
};

/* One option as one or more subcommands take it. */
typedef struct cli_option {
  int id;            /* its letter, or OPT_* */
  const char *name;  /* long name; NULL for a second letter (-e) */
  int letter;        /* the letter typed (-e for -x); 0: none */
  const char *value; /* the value's name in --help; NULL: takes none */
  unsigned commands; /* cli_command bits */
  unsigned flags;    /* CLI_* below */
  const char *help;  /* NULL: an alias, not listed in --help */
} cli_option;

/* With this option there is no COMMAND among the words (--holders,
 * --command STRING): they are all paths. */
#define CLI_NO_COMMAND 1u

/* Every entry, ended by one with id 0. */
extern const cli_option cli_options[];

/* How the words that are not options divide. */
typedef enum cli_layout {
  CLI_PATHS,             /* PATH... (zkr ls); "--" only ends options */
  CLI_PATH_COMMAND,      /* PATH [--] COMMAND... (zkr elect) */
  CLI_PATHS_COMMAND,     /* the same, or PATH... -- COMMAND (zkr lock):
                            several paths when every word before the
                            first "--" is an option or an absolute path */
  CLI_PATH_DASH_COMMAND, /* PATH [-- COMMAND...] (zkr watch) */
} cli_layout;

/* A subcommand: its name, layout and the prose of its --help, before and
 * after the options the table gives. */
typedef struct cli_spec {
  cli_command command;
  const char *name; /* "lock" */
  cli_layout layout;
  const char *help_head; /* usage lines and description */
  const char *help_tail; /* environment, exit statuses */
} cli_spec;

/* The words once options are taken out. */
typedef struct cli_args {
  char **paths; /* the words before COMMAND, in order (g_free the array;
                     its strings are argv's) */
  int n_paths;
  char **command; /* NULL-terminated, argv's; NULL: none */
  int dashes;     /* the last word was the "--" before COMMAND */
} cli_args;

/* A subcommand's own options, one call each, in the order given.
 * @p value is NULL for an option that takes none. */
typedef void (*cli_option_fn)(int id, const char *value, void *ctx);

/* Parse argv (argv[0] the program) for @p spec: the options every
 * subcommand shares go into @p o (tool_options_init() done here, with
 * @p program for messages); --help and --version print and exit; the others
 * go to @p fn.  Exits with a usage error (status 2) for an unknown option,
 * a missing value, or an option the subcommand does not take. */
void cli_parse(const cli_spec *spec, const char *program, tool_options *o,
               int argc, char **argv, cli_option_fn fn, void *ctx,
               cli_args *out);

/* The one PATH of @p args (whose paths array it frees): a usage error when
 * there is none or more than one, when COMMAND is missing though
 * @p command_wanted, or given though not. */
const char *cli_one_path(cli_args *args, int command_wanted);

/* Print @p spec's --help on @p out. */
void cli_print_help(const cli_spec *spec, FILE *out);

/* ------------------------------------------------ pure, for the tests */

/* Where COMMAND starts, for @p layout (with --holders and the like
 * already seen as CLI_PATHS): the prescan that decides which words are
 * options, values, paths and COMMAND, without acting on any.  Fills
 * @p option_words with the indices of option words and their values (at
 * most argc), @p path_words with those of paths, and returns the index of
 * COMMAND's first word (argc: none). */
int cli_split(cli_command command, cli_layout layout, int argc,
              char *const *argv, int *option_words, int *n_option_words,
              int *path_words, int *n_path_words);

#endif /* ZKR_CLI_H */
