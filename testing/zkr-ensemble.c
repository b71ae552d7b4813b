/*
 * zkr-ensemble - a local ZooKeeper ensemble for humans and scripts, built on
 * libzkrecipes-testing.  See usage() or `zkr-ensemble --help`.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zkrecipes/testing.h"

#define EXIT_USAGE 2

static const char usage_text[] =
    "Usage: zkr-ensemble start [OPTIONS]\n"
    "       zkr-ensemble run [OPTIONS] -- COMMAND [ARG...]\n"
    "       zkr-ensemble --help | --version\n"
    "\n"
    "Runs a local ZooKeeper ensemble (the installed server, on free loopback\n"
    "ports, data in a temporary directory that is removed afterwards).\n"
    "\n"
    "  start   Start the ensemble and print its connect string as the first\n"
    "          line of standard output.  Then run until SIGINT or SIGTERM.\n"
    "          When standard input is not a terminal, read commands from it,\n"
    "          one per line (below), answering each on standard output; end "
    "of\n"
    "          input on a pipe or socket means `quit'.\n"
    "  run     Start the ensemble, run COMMAND with ZKR_SERVERS set to the\n"
    "          connect string, stop the ensemble when COMMAND exits, and exit\n"
    "          with COMMAND's status (128+N when killed by signal N).  SIGINT\n"
    "          and SIGTERM are passed on to COMMAND.\n"
    "\n"
    "Options:\n"
    "  -n, --members N            members, 1 to 5 (default 1)\n"
    "  -t, --tick MS              tickTime in ms (default 200)\n"
    "  -p, --proxies              put a fault proxy in front of each member;\n"
    "                             the connect string names the proxies\n"
    "  -F, --no-fsync             members do not fsync (faster; not for\n"
    "                             measuring)\n"
    "  -s, --max-session-timeout MS\n"
    "                             maxSessionTimeout (default 20 ticks)\n"
    "  -w, --timeout MS           how long to wait for the ensemble to serve\n"
    "                             (default 60000)\n"
    "  -d, --dir DIR              where to create the ensemble's directory\n"
    "                             (default $TMPDIR or /tmp)\n"
    "      --tls                  members serve clients over TLS only, with\n"
    "                             client certificates; credentials made in\n"
    "                             DIR/zkr-ensemble-*/tls (see `tls NAME')\n"
    "      --sasl                 members know SASL DIGEST-MD5 users zkrc and\n"
    "                             alice (see `sasl I')\n"
    "      --ttl                  members accept TTL nodes\n"
    "                             (zookeeper.extendedTypesEnabled)\n"
    "      --reconfig             members allow dynamic reconfiguration\n"
    "                             (reconfigEnabled, skipACL; not with --tls):\n"
    "                             /zookeeper/config lists their client\n"
    "                             addresses (see `add' and `remove I')\n"
    "  -h, --help                 show this help and exit\n"
    "  -V, --version              show the version and exit\n"
    "\n"
    "Commands of `start' (I is a member index from 0; answers are `ok',\n"
    "`error: ...' or a value):\n"
    "  kill I | stop I | restart I | pause I | resume I\n"
    "                     SIGKILL / SIGTERM and wait / start again with its\n"
    "                     data / SIGSTOP / SIGCONT member I\n"
    "  wait I [MS]        wait until member I serves in the quorum (I = -1:\n"
    "                     until a quorum agrees on a leader); default 30000 "
    "ms\n"
    "  leader             index of the leader a quorum agrees on, or -1 (none\n"
    "                     yet; never a deposed leader that still claims to "
    "be)\n"
    "  pid I | port I | address I\n"
    "                     member I's pid (-1: not running), client port, and\n"
    "                     address for clients (its proxy's, if any)\n"
    "  connect | direct   the connect string; the one naming members directly\n"
    "  tls NAME           with --tls: the path of credential NAME: ca,\n"
    "                     client-cert, client-key, client-keystore, other-ca,\n"
    "                     other-client-cert, other-client-key, "
    "server-keystore\n"
    "                     (key stores: PKCS12, password zkrecipes-test)\n"
    "  sasl I             with --sasl: user I (0 or 1) and its password file\n"
    "  4lw I WORD         send four-letter word WORD to member I; the answer\n"
    "                     is its text followed by an empty line.  Shorthands:\n"
    "                     srvr I, mntr I, stat I, cons I, wchc I, wchp I, ...\n"
    "  mntr-sum KEY       sum of mntr value KEY over the running members\n"
    "  add [MS]           with --reconfig: start a new member and add it by\n"
    "                     reconfiguration; answers its index (default 90000 "
    "ms)\n"
    "  remove I [MS]      with --reconfig: remove member I from the\n"
    "                     configuration (it keeps running; default 30000 ms)\n"
    "  expire SESSION [PASSWD]\n"
    "                     expire a session (id and password in hex; without\n"
    "                     the password, the one the servers derive from the "
    "id)\n"
    "  drop I             proxy I: close every connection now\n"
    "  drop-next I        proxy I: swallow the reply to the next request and\n"
    "                     close that connection\n"
    "  delay I MS         proxy I: delay traffic by MS (0 ends it)\n"
    "  blackhole I MS     proxy I: pass nothing for MS\n"
    "  refuse I 1|0       proxy I: refuse connections, or stop refusing\n"
    "  quit               stop the ensemble and exit\n"
    "\n"
    "With --tls or --sasl, `start' also writes where the credentials are to\n"
    "standard error, and `run' gives COMMAND ZKR_TLS_CA, ZKR_TLS_CLIENT_CERT,\n"
    "ZKR_TLS_CLIENT_KEY, ZKR_TLS_OTHER_CA (and the others of `tls NAME',\n"
    "upper case, - as _), and ZKR_SASL_USER, ZKR_SASL_PASSWORD_FILE (user 0),\n"
    "ZKR_SASL_USER_1, ZKR_SASL_PASSWORD_FILE_1.\n"
    "\n"
    "Environment: ZKR_ENSEMBLE_LOG=1 sends the members' logs to stderr;\n"
    "ZKR_ENSEMBLE_KEEP=1 keeps the directory; ZKR_JAVA and\n"
    "ZKR_ZOOKEEPER_CLASSPATH choose the server.\n"
    "\n"
    "Exit status: 0 (start), COMMAND's status (run), 1 when the ensemble "
    "could\n"
    "not start, 2 on bad usage.\n";

/* ---- signals ------------------------------------------------------------ */

/* SIGINT, SIGTERM, SIGHUP and SIGCHLD arrive as a byte on this pipe, so the
 * main loop can poll() for them along with standard input. */
static int signal_pipe[2] = {-1, -1};

static void on_signal(int sig) {
  int saved = errno;
  unsigned char byte = (unsigned char)sig;
  ssize_t unused = write(signal_pipe[1], &byte, 1);
  (void)unused;
  errno = saved;
}

static int catch_signals(void) {
  if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    perror("zkr-ensemble: pipe");
    return -1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  static const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
    if (sigaction(signals[i], &sa, NULL) != 0) {
      perror("zkr-ensemble: sigaction");
      return -1;
    }
  }
  /* A reader that went away shows up as a write error, not a death. */
  signal(SIGPIPE, SIG_IGN);
  return 0;
}

/* The next signal number on the pipe, or 0. */
static int next_signal(void) {
  unsigned char byte;
  return read(signal_pipe[0], &byte, 1) == 1 ? byte : 0;
}

/* ---- options ------------------------------------------------------------ */

static void print_version(void) {
  printf("zkr-ensemble (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
}

static void usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "zkr-ensemble: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\nTry `zkr-ensemble --help'.\n");
  exit(EXIT_USAGE);
}

static int parse_int(const char *text, int min, int max, const char *what) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < min || v > max)
    usage_error(what, text);
  return (int)v;
}

/* Long options without a letter. */
enum { OPT_TLS = 256, OPT_SASL, OPT_TTL, OPT_RECONFIG };

/* Parse the options after the subcommand; returns the index of the first
 * argument after them. */
static int parse_options(int argc, char **argv, zkrc_ensemble_options *opts) {
  static const struct option longopts[] = {
      {"members", required_argument, NULL, 'n'},
      {"tick", required_argument, NULL, 't'},
      {"proxies", no_argument, NULL, 'p'},
      {"no-fsync", no_argument, NULL, 'F'},
      {"max-session-timeout", required_argument, NULL, 's'},
      {"timeout", required_argument, NULL, 'w'},
      {"dir", required_argument, NULL, 'd'},
      {"tls", no_argument, NULL, OPT_TLS},
      {"sasl", no_argument, NULL, OPT_SASL},
      {"ttl", no_argument, NULL, OPT_TTL},
      {"reconfig", no_argument, NULL, OPT_RECONFIG},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  zkrc_ensemble_options_init(opts);
  optind = 1;
  opterr = 0; /* our messages name the program, not the subcommand */
  int c;
  /* '+': stop at the first non-option, which starts run's COMMAND. */
  while ((c = getopt_long(argc, argv, "+:n:t:pFs:w:d:hV", longopts, NULL)) !=
         -1) {
    switch (c) {
    case 'n':
      opts->members = parse_int(optarg, 1, 5, "members must be 1 to 5: %s");
      break;
    case 't':
      opts->tick_ms = parse_int(optarg, 1, 60000, "bad --tick: %s");
      break;
    case 'p':
      opts->with_proxies = 1;
      break;
    case 'F':
      opts->no_fsync = 1;
      break;
    case 's':
      opts->max_session_timeout_ms =
          parse_int(optarg, 1, INT_MAX, "bad --max-session-timeout: %s");
      break;
    case 'w':
      opts->start_timeout_ms =
          parse_int(optarg, 1, INT_MAX, "bad --timeout: %s");
      break;
    case 'd':
      opts->base_dir = optarg;
      break;
    case OPT_TLS:
      opts->tls = 1;
      break;
    case OPT_SASL:
      opts->sasl = 1;
      break;
    case OPT_TTL:
      opts->extended_types = 1;
      break;
    case OPT_RECONFIG:
      opts->reconfig = 1;
      break;
    case 'h':
      fputs(usage_text, stdout);
      exit(0);
    case 'V':
      print_version();
      exit(0);
    case ':':
      usage_error("option %s needs a value", argv[optind - 1]);
      break;
    default:
      usage_error("unknown option: %s", argv[optind - 1]);
      break;
    }
  }
  return optind;
}

/* ---- the commands of `start' -------------------------------------------- */

/* Split @p line into at most @p max words (in place). */
static int split_words(char *line, char **words, int max) {
  int n = 0;
  for (char *save = NULL, *w = strtok_r(line, " \t\r", &save); w && n < max;
       w = strtok_r(NULL, " \t\r", &save))
    words[n++] = w;
  return n;
}

/* A member index, or -2 (after answering with an error) when bad. */
static int member_arg(zkrc_ensemble *e, const char *text, int allow_all) {
  char *end;
  long i = text ? strtol(text, &end, 10) : -2;
  if (!text || *end || i < (allow_all ? -1 : 0) || i >= zkrc_ensemble_size(e)) {
    printf("error: bad member index: %s\n", text ? text : "(none)");
    return -2;
  }
  return (int)i;
}

static void answer_rc(int rc) { puts(rc == 0 ? "ok" : "error: failed"); }

static int is_four_letter_word(const char *w) {
  if (strlen(w) != 4)
    return 0;
  for (int i = 0; i < 4; i++)
    if (!islower((unsigned char)w[i]))
      return 0;
  return 1;
}

static void answer_four_letter(zkrc_ensemble *e, int i, const char *word) {
  char *text = NULL;
  if (zkrc_ensemble_four_letter(e, i, word, &text) != 0) {
    puts("error: no answer");
    return;
  }
  size_t len = strlen(text);
  fputs(text, stdout);
  /* The text, then an empty line: where the answer ends. */
  if (len > 0 && text[len - 1] != '\n')
    putchar('\n');
  putchar('\n');
  free(text);
}

/* Hex @p text into @p out (exactly @p size bytes).  0 or -1. */
static int parse_hex(const char *text, unsigned char *out, size_t size) {
  if (strlen(text) != 2 * size)
    return -1;
  for (size_t i = 0; i < size; i++) {
    unsigned v;
    if (!isxdigit((unsigned char)text[2 * i]) ||
        !isxdigit((unsigned char)text[2 * i + 1]) ||
        sscanf(text + 2 * i, "%2x", &v) != 1)
      return -1;
    out[i] = (unsigned char)v;
  }
  return 0;
}

static void answer_expire(zkrc_ensemble *e, char **w, int n) {
  clientid_t id;
  memset(&id, 0, sizeof id);
  char *end;
  const char *hex = n > 1 ? w[1] : "";
  if (strncmp(hex, "0x", 2) == 0)
    hex += 2;
  errno = 0;
  id.client_id = (int64_t)strtoull(hex, &end, 16);
  if (n < 2 || n > 3 || !*hex || *end || errno ||
      (n == 3 &&
       parse_hex(w[2], (unsigned char *)id.passwd, sizeof id.passwd) != 0)) {
    puts("error: usage: expire SESSION_ID_HEX [PASSWORD_HEX (16 bytes)]");
    return;
  }
  if (n == 2) /* the servers derive it from the id */
    zkrc_ensemble_session_password(id.client_id, id.passwd);
  answer_rc(zkrc_ensemble_expire_session(e, &id, 10000));
}

/* ---- credentials -------------------------------------------------------- */

/* The names of a TLS ensemble's credentials, for `tls NAME' and run's
 * environment (ZKR_TLS_ + NAME in upper case, - as _). */
static const struct {
  const char *name;
  zkrc_tls_file file;
} tls_names[] = {
    {"ca", ZKRC_TLS_CA},
    {"client-cert", ZKRC_TLS_CLIENT_CERT},
    {"client-key", ZKRC_TLS_CLIENT_KEY},
    {"client-keystore", ZKRC_TLS_CLIENT_KEYSTORE},
    {"other-ca", ZKRC_TLS_OTHER_CA},
    {"other-client-cert", ZKRC_TLS_OTHER_CLIENT_CERT},
    {"other-client-key", ZKRC_TLS_OTHER_CLIENT_KEY},
    {"server-keystore", ZKRC_TLS_SERVER_KEYSTORE},
};
#define TLS_NAMES (sizeof tls_names / sizeof tls_names[0])

static void answer_tls(zkrc_ensemble *e, char **w, int n) {
  for (size_t k = 0; n == 2 && k < TLS_NAMES; k++) {
    if (strcmp(w[1], tls_names[k].name) != 0)
      continue;
    const char *path = zkrc_ensemble_tls_file(e, tls_names[k].file);
    if (path)
      puts(path);
    else
      puts("error: not a TLS ensemble (--tls)");
    return;
  }
  puts("error: usage: tls ca|client-cert|client-key|client-keystore|"
       "other-ca|other-client-cert|other-client-key|server-keystore");
}

static void answer_sasl(zkrc_ensemble *e, char **w, int n) {
  const char *user, *file;
  char *end;
  long i = n == 2 ? strtol(w[1], &end, 10) : -1;
  if (n != 2 || *end || i < 0 || i > 1)
    puts("error: usage: sasl 0|1");
  else if (zkrc_ensemble_sasl_user(e, (int)i, &user, &file) != 0)
    puts("error: not a SASL ensemble (--sasl)");
  else
    printf("%s %s\n", user, file);
}

/* "ZKR_TLS_CLIENT_CERT" for "client-cert" (free it), or NULL. */
static char *tls_variable(const char *name) {
  size_t len = strlen(name);
  char *v = malloc(sizeof "ZKR_TLS_" + len);
  if (!v)
    return NULL;
  strcpy(v, "ZKR_TLS_");
  for (size_t i = 0; i <= len; i++)
    v[8 + i] = name[i] == '-' ? '_' : (char)toupper((unsigned char)name[i]);
  return v;
}

/* Where the credentials are: on standard error (start), or in the
 * environment of COMMAND (run).  0, or -1 when setenv failed. */
static int show_credentials(zkrc_ensemble *e, int to_environment) {
  for (size_t k = 0; k < TLS_NAMES; k++) {
    const char *path = zkrc_ensemble_tls_file(e, tls_names[k].file);
    if (!path)
      break;
    if (!to_environment) {
      fprintf(stderr, "zkr-ensemble: tls %s %s\n", tls_names[k].name, path);
      continue;
    }
    char *var = tls_variable(tls_names[k].name);
    int rc = var ? setenv(var, path, 1) : -1;
    free(var);
    if (rc != 0)
      return -1;
  }
  for (int i = 0; i < 2; i++) {
    const char *user, *file;
    if (zkrc_ensemble_sasl_user(e, i, &user, &file) != 0)
      break;
    if (!to_environment) {
      fprintf(stderr, "zkr-ensemble: sasl %d %s %s\n", i, user, file);
      continue;
    }
    if (setenv(i ? "ZKR_SASL_USER_1" : "ZKR_SASL_USER", user, 1) != 0 ||
        setenv(i ? "ZKR_SASL_PASSWORD_FILE_1" : "ZKR_SASL_PASSWORD_FILE", file,
               1) != 0)
      return -1;
  }
  return 0;
}

/* Member commands taking just an index. */
static int member_command(zkrc_ensemble *e, char **w, int n) {
  static const struct {
    const char *name;
    int (*fn)(zkrc_ensemble *, int);
  } table[] = {
      {"kill", zkrc_ensemble_kill},
      {"stop", zkrc_ensemble_stop_member},
      {"restart", zkrc_ensemble_restart},
      {"pause", zkrc_ensemble_pause},
      {"resume", zkrc_ensemble_resume},
      {"drop", zkrc_proxy_drop_all},
      {"drop-next", zkrc_proxy_drop_after_next_request},
  };
  for (size_t k = 0; k < sizeof table / sizeof table[0]; k++) {
    if (strcmp(w[0], table[k].name) != 0)
      continue;
    int i = member_arg(e, n > 1 ? w[1] : NULL, 0);
    if (i >= 0)
      answer_rc(table[k].fn(e, i));
    return 1;
  }
  return 0;
}

/* Proxy commands taking an index and a number. */
static int proxy_command(zkrc_ensemble *e, char **w, int n) {
  static const struct {
    const char *name;
    int (*fn)(zkrc_ensemble *, int, int);
  } table[] = {
      {"delay", zkrc_proxy_delay},
      {"blackhole", zkrc_proxy_blackhole},
      {"refuse", zkrc_proxy_refuse},
  };
  for (size_t k = 0; k < sizeof table / sizeof table[0]; k++) {
    if (strcmp(w[0], table[k].name) != 0)
      continue;
    int i = member_arg(e, n > 1 ? w[1] : NULL, 0);
    if (i < 0)
      return 1;
    char *end;
    long v = n > 2 ? strtol(w[2], &end, 10) : -1;
    if (n != 3 || *end || v < 0 || v > INT_MAX)
      printf("error: usage: %s I NUMBER\n", w[0]);
    else
      answer_rc(table[k].fn(e, i, (int)v));
    return 1;
  }
  return 0;
}

static void answer_value_of(zkrc_ensemble *e, char **w, int n) {
  int i = member_arg(e, n > 1 ? w[1] : NULL, 0);
  if (i < 0)
    return;
  if (strcmp(w[0], "pid") == 0)
    printf("%d\n", zkrc_ensemble_member_pid(e, i));
  else if (strcmp(w[0], "port") == 0)
    printf("%d\n", zkrc_ensemble_member_port(e, i));
  else
    printf("%s\n", zkrc_ensemble_member_address(e, i));
}

static void answer_wait(zkrc_ensemble *e, char **w, int n) {
  int i = member_arg(e, n > 1 ? w[1] : NULL, 1);
  if (i < -1)
    return;
  int ms = 30000;
  if (n > 2) {
    char *end;
    long v = strtol(w[2], &end, 10);
    if (*end || v < 0 || v > INT_MAX) {
      puts("error: usage: wait I [MS]");
      return;
    }
    ms = (int)v;
  }
  puts(zkrc_ensemble_wait_serving(e, i, ms) == 0 ? "ok" : "error: timeout");
}

/* A timeout in ms from word @p text (NULL: @p fallback); -1 when bad. */
static int ms_arg(const char *text, int fallback) {
  if (!text)
    return fallback;
  char *end;
  long v = strtol(text, &end, 10);
  return *end || v <= 0 || v > INT_MAX ? -1 : (int)v;
}

/* add [MS]: the new member's index. */
static void answer_add(zkrc_ensemble *e, char **w, int n) {
  int ms = ms_arg(n > 1 ? w[1] : NULL, 90000);
  if (n > 2 || ms < 0) {
    puts("error: usage: add [MS]");
    return;
  }
  int i = zkrc_ensemble_add_member(e, ms);
  if (i >= 0)
    printf("%d\n", i);
  else
    puts("error: failed (see standard error)");
}

/* remove I [MS] */
static void answer_remove(zkrc_ensemble *e, char **w, int n) {
  int i = member_arg(e, n > 1 ? w[1] : NULL, 0);
  if (i < 0)
    return;
  int ms = ms_arg(n > 2 ? w[2] : NULL, 30000);
  if (n > 3 || ms < 0)
    puts("error: usage: remove I [MS]");
  else
    answer_rc(zkrc_ensemble_remove_member(e, i, ms));
}

/* Answer one command line.  Returns 1 when it was `quit'. */
static int run_command(zkrc_ensemble *e, char *line) {
  char *w[4];
  int n = split_words(line, w, 4);
  if (n == 0 || w[0][0] == '#')
    return 0;
  if (strcmp(w[0], "quit") == 0 || strcmp(w[0], "exit") == 0) {
    puts("ok");
    return 1;
  }
  if (member_command(e, w, n) || proxy_command(e, w, n))
    return 0;
  if (strcmp(w[0], "leader") == 0) {
    printf("%d\n", zkrc_ensemble_leader(e));
  } else if (strcmp(w[0], "connect") == 0) {
    puts(zkrc_ensemble_connect_string(e));
  } else if (strcmp(w[0], "direct") == 0) {
    puts(zkrc_ensemble_direct_connect_string(e));
  } else if (strcmp(w[0], "pid") == 0 || strcmp(w[0], "port") == 0 ||
             strcmp(w[0], "address") == 0) {
    answer_value_of(e, w, n);
  } else if (strcmp(w[0], "wait") == 0) {
    answer_wait(e, w, n);
  } else if (strcmp(w[0], "tls") == 0) {
    answer_tls(e, w, n);
  } else if (strcmp(w[0], "sasl") == 0) { /* before the four-letter words */
    answer_sasl(e, w, n);
  } else if (strcmp(w[0], "4lw") == 0) {
    int i = member_arg(e, n > 1 ? w[1] : NULL, 0);
    if (i >= 0 && (n != 3 || !is_four_letter_word(w[2])))
      puts("error: usage: 4lw I WORD");
    else if (i >= 0)
      answer_four_letter(e, i, w[2]);
  } else if (is_four_letter_word(w[0]) && n == 2) {
    int i = member_arg(e, w[1], 0);
    if (i >= 0)
      answer_four_letter(e, i, w[0]);
  } else if (strcmp(w[0], "mntr-sum") == 0 && n == 2) {
    printf("%lld\n", (long long)zkrc_ensemble_mntr_sum(e, w[1]));
  } else if (strcmp(w[0], "expire") == 0) {
    answer_expire(e, w, n);
  } else if (strcmp(w[0], "add") == 0) {
    answer_add(e, w, n);
  } else if (strcmp(w[0], "remove") == 0) {
    answer_remove(e, w, n);

  } else {
    printf("error: unknown command: %s (see zkr-ensemble --help)\n", w[0]);
  }
  return 0;
}

/* ---- start -------------------------------------------------------------- */

/* Standard input as a command source. */
typedef struct command_input {
  int fd;        /* -1: not reading */
  int eof_quits; /* a pipe or socket: its end means quit */
  char buf[4096];
  size_t len;
} command_input;

static void command_input_init(command_input *in) {
  struct stat st;
  in->len = 0;
  in->fd = isatty(0) ? -1 : 0;
  in->eof_quits =
      fstat(0, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

/* Read what is there and run each complete line.  Returns 1 to quit. */
static int read_commands(zkrc_ensemble *e, command_input *in) {
  ssize_t n = read(in->fd, in->buf + in->len, sizeof in->buf - 1 - in->len);
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return 0;
  if (n <= 0) {
    in->fd = -1;
    return in->eof_quits;
  }
  in->len += (size_t)n;
  char *line = in->buf, *nl;
  while ((nl = memchr(line, '\n', in->len - (size_t)(line - in->buf)))) {
    *nl = '\0';
    int quit = run_command(e, line);
    if (fflush(stdout) != 0 || ferror(stdout))
      return 1; /* nobody reads our answers any more */
    if (quit)
      return 1;
    line = nl + 1;
  }
  in->len -= (size_t)(line - in->buf);
  memmove(in->buf, line, in->len);
  if (in->len == sizeof in->buf - 1) {
    puts("error: line too long");
    fflush(stdout);
    in->len = 0;
  }
  return 0;
}

static int cmd_start(int argc, char **argv) {
  zkrc_ensemble_options opts;
  int first = parse_options(argc, argv, &opts);
  if (first < argc)
    usage_error("start takes no arguments: %s", argv[first]);
  if (catch_signals() != 0)
    return 1;
  zkrc_ensemble *e;
  if (zkrc_ensemble_start(&e, &opts) != 0)
    return 1;
  printf("%s\n", zkrc_ensemble_connect_string(e));
  fflush(stdout);
  show_credentials(e, 0);

  command_input in;
  command_input_init(&in);
  for (int quit = 0; !quit;) {
    struct pollfd pfds[2] = {{signal_pipe[0], POLLIN, 0}, {in.fd, POLLIN, 0}};
    if (poll(pfds, in.fd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR)
        continue;
      perror("zkr-ensemble: poll");
      break;
    }
    for (int sig; (sig = next_signal());)
      quit |= sig != SIGCHLD; /* members are watched by the library */
    if (!quit && in.fd >= 0 && pfds[1].revents)
      quit = read_commands(e, &in);
  }
  zkrc_ensemble_stop(e);
  return 0;
}

/* ---- run ---------------------------------------------------------------- */

static pid_t spawn_command(char **argv) {
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  /* Ignored signals stay ignored across exec: give COMMAND the defaults. */
  signal(SIGPIPE, SIG_DFL);
  execvp(argv[0], argv);
  fprintf(stderr, "zkr-ensemble: cannot run %s: %s\n", argv[0],
          strerror(errno));
  _exit(127);
}

/* Wait for COMMAND, passing SIGINT/SIGTERM/SIGHUP on.  Returns its exit
 * status as a shell reports it. */
static int wait_command(pid_t pid) {
  for (;;) {
    int status;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r < 0 && errno != EINTR) {
      perror("zkr-ensemble: waitpid");
      return 1;
    }
    struct pollfd pfd = {signal_pipe[0], POLLIN, 0};
    if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
      perror("zkr-ensemble: poll");
      return 1;
    }
    for (int sig; (sig = next_signal());)
      if (sig != SIGCHLD)
        kill(pid, sig);
  }
}

static int cmd_run(int argc, char **argv) {
  zkrc_ensemble_options opts;
  int first = parse_options(argc, argv, &opts);
  /* getopt_long consumed a "--" ending the options. */
  if (first >= argc)
    usage_error("%s", "run needs a COMMAND: run [OPTIONS] -- COMMAND [ARG...]");
  if (catch_signals() != 0)
    return 1;
  zkrc_ensemble *e;
  if (zkrc_ensemble_start(&e, &opts) != 0)
    return 1;
  if (setenv("ZKR_SERVERS", zkrc_ensemble_connect_string(e), 1) != 0 ||
      show_credentials(e, 1) != 0) {
    perror("zkr-ensemble: setenv");
    zkrc_ensemble_stop(e);
    return 1;
  }
  fflush(NULL);
  pid_t pid = spawn_command(argv + first);
  int status = 1;
  if (pid < 0)
    perror("zkr-ensemble: fork");
  else
    status = wait_command(pid);
  zkrc_ensemble_stop(e);
  return status;
}

int main(int argc, char **argv) {
  if (argc < 2)
    usage_error("%s", "missing subcommand: start or run");
  const char *sub = argv[1];
  if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 ||
      strcmp(sub, "help") == 0) {
    fputs(usage_text, stdout);
    return 0;
  }
  if (strcmp(sub, "--version") == 0 || strcmp(sub, "-V") == 0) {
    print_version();
    return 0;
  }
  if (strcmp(sub, "start") == 0)
    return cmd_start(argc - 1, argv + 1);
  if (strcmp(sub, "run") == 0)
    return cmd_run(argc - 1, argv + 1);
  usage_error("unknown subcommand: %s", sub);
  return EXIT_USAGE;
}
