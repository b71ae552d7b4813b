/*
 * tools/tool.h - what the zkr subcommands share: exit statuses, options,
 * messages, signals, the hand-off from library callbacks to the main loop,
 * the supervised COMMAND, and listing a contender queue.
 *
 * Threading model of both tools: the main thread runs a poll() loop and does
 * all the work.  Signal handlers and library callbacks (which run on the
 * session's callback thread) only queue a record and write a byte to a pipe
 * the loop polls, so nothing complex happens outside the main thread.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#ifndef ZKR_TOOL_H
#define ZKR_TOOL_H

#include <stdint.h>
#include <sys/types.h>

#include <glib.h>

#include "zkrecipes.h"

/* Exit statuses (documented in --help and the man pages).  COMMAND's own
 * status is passed through otherwise. */
enum {
  TOOL_EXIT_OK = 0,
  TOOL_EXIT_NOT_ACQUIRED = 1, /* zkr-lock: busy (-n) or -w expired; -E */
  TOOL_EXIT_USAGE = 2,
  TOOL_EXIT_NO_LEADER = 3,    /* zkr-elect --leader: nobody leads */
  TOOL_EXIT_BAD_PATH = 65,    /* EX_DATAERR: the ZooKeeper path is invalid */
  TOOL_EXIT_NOHOST = 68,      /* EX_NOHOST: a server's name does not resolve */
  TOOL_EXIT_UNAVAILABLE = 69, /* EX_UNAVAILABLE: no server within timeout */
  TOOL_EXIT_OSERR = 71,       /* EX_OSERR: fork, pipe, ... failed */
  TOOL_EXIT_IOERR = 74,       /* EX_IOERR: standard output failed */
  TOOL_EXIT_LOST = 75,        /* EX_TEMPFAIL: lock or leadership lost */
  TOOL_EXIT_ZOOKEEPER = 76,   /* EX_PROTOCOL: ZooKeeper refused or failed */
  TOOL_EXIT_NOPERM = 77,      /* EX_NOPERM: credentials refused, or the
                                 ACL forbids what was asked */
  TOOL_EXIT_CANNOT_RUN = 126, /* COMMAND found but not executable */
  TOOL_EXIT_NOT_FOUND = 127   /* COMMAND not found */
};

/* ------------------------------------------------------------- options */

/* Options every subcommand takes (cli.c parses them). */
typedef struct tool_options {
  const char *servers;    /* --servers, else $ZKR_SERVERS, else
                             127.0.0.1:2181 */
  int session_timeout_ms; /* -t */
  int connect_timeout_ms; /* --connect-timeout: a connection and a session */
  int waits_for_nodes;    /* zkr watch, members --watch: a missing chroot
                             is waited for like any node, not an error */
  const char *id;         /* --id; NULL: the library's hostname:pid */
  int verbose;            /* -v */
  int lost_signal;        /* -k: sent to COMMAND when the lock is lost */
  int grace_ms;           /* -g: then SIGKILL after this long */
  int foreground;         /* --foreground: COMMAND in our process group */
  int server_tick_ms;     /* --server-tick: the servers' tickTime (0: the
                             library's assumption) */
  const char *auth_file;  /* --auth-file, else $ZKR_AUTH_FILE: digest
                             credentials "USER:PASSWORD", first line */
  char *auth_env;         /* $ZKR_AUTH, taken out of the environment (so
                             that COMMAND does not inherit it); NULL: none */
  const char *sasl_user;  /* --sasl-user, else $ZKR_SASL_USER: SASL, the
                             password on auth_file's first line */
  const char *tls_ca;     /* --tls-ca, --tls-cert, --tls-key, else */
  const char *tls_cert;   /* $ZKR_TLS_CA, $ZKR_TLS_CERT, $ZKR_TLS_KEY */
  const char *tls_key;
} tool_options;

/* The environment variables every tool reads, for its --help (the last
 * line, on $ZKR_AUTH, is the tool's to end). */
#define TOOL_ENVIRONMENT_HELP                                                  \
  "  ZKR_SERVERS      default server list\n"                                   \
  "  ZKR_LOG          log of zkrecipes and the ZooKeeper client on stderr:\n"  \
  "                   1 or warn, info, debug (default: silent)\n"              \
  "  ZKR_AUTH_FILE    default for --auth-file\n"                               \
  "  ZKR_SASL_USER    default for --sasl-user\n"                               \
  "  ZKR_TLS_CA, ZKR_TLS_CERT, ZKR_TLS_KEY  defaults for --tls-ca, ...\n"      \
  "  ZKR_AUTH         digest credentials USER:PASSWORD when there is no\n"

/* Set the program name (for messages) and the defaults. */
void tool_options_init(tool_options *o, const char *program);

/* Set the program name for messages ("zkr lock", "zkr-lock"). */
void tool_set_program(const char *name);

/* -v: report progress (tool_verbose()). */
void tool_set_verbose(tool_options *o);

/* The participant id: --id, else "HOSTNAME:PID" as the library makes it
 * (g_free it). */
char *tool_participant_id(const tool_options *o);

/* Exit with TOOL_EXIT_USAGE after "PROGRAM: <message>" and a hint. */
void tool_usage_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

/* A duration in seconds, fractions allowed ("1.5"), as milliseconds rounded
 * up; exits with a usage error naming @p what when it is not one. */
int tool_parse_seconds(const char *text, const char *what);
/* An integer in [min, max], or a usage error. */
int tool_parse_int(const char *text, int min, int max, const char *what);
/* A signal name ("TERM", "SIGTERM") or number, or a usage error. */
int tool_parse_signal(const char *text, const char *what);

/* COMMAND for -c STRING: /bin/sh -c STRING (as flock -c), NULL-terminated
 * (g_free the array; STRING stays the caller's). */
char **tool_shell_command(const char *string);

/* Add NAME=VALUE to @p env (of g_malloc'ed strings) for COMMAND, and
 * OLD_NAME=VALUE too when @p old_name is not NULL: a name kept for the
 * scripts of an earlier release. */
void tool_env_add(GPtrArray *env, const char *name, const char *old_name,
                  const char *value);

/* Check @p path with zkrc_path_validate(); exits TOOL_EXIT_BAD_PATH. */
void tool_check_path(const char *path);

/* ------------------------------------------------------------ messages */

/* "PROGRAM: message" on stderr. */
void tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same, only with -v. */
void tool_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *tool_program(void);

/* ---------------------------------------------------- signals, events */

/* Install the handlers (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
 * SIGCHLD), remember the dispositions COMMAND must get back, ignore
 * SIGPIPE, note the inherited file descriptors.  Call first in main(). */
int tool_runtime_init(void);

/* The descriptor that becomes readable when a signal was caught (for a
 * poll() of one's own; tool_next_signal() takes the signal). */
int tool_signal_fd(void);

/* A caught signal: its number, and whether the kernel sent it to our whole
 * process group (a terminal's ^C): then a COMMAND in our group got it too. */
typedef struct tool_signal {
  int signo;
  int from_terminal;
} tool_signal;
/* The next caught signal; 0 when there is none. */
int tool_next_signal(tool_signal *out);

/* SIGINT, SIGTERM, SIGHUP or SIGQUIT: what stops a subcommand. */
int tool_is_stop_signal(int sig);

/* Take the signals caught so far: 128+N for the first stop signal N among
 * them, else 0 (the others are let go: for waits where nothing runs yet
 * to pass them on to). */
int tool_stop_signal_caught(void);

/* What library callbacks hand to the main loop. */
typedef enum tool_event_kind {
  TOOL_EV_SESSION,  /* code: zkrc_session_event_type */
  TOOL_EV_LOCK,     /* code: zkrc_lock_event_type; reason, token, node */
  TOOL_EV_ACQUIRED, /* code: the acquisition's result; token, node */
  TOOL_EV_ELECTION, /* code: zkrc_election_event_type; reason, token, node */
  TOOL_EV_WATCH,    /* a ZooKeeper watch fired */
  TOOL_EV_BARRIER   /* code: zkrc_double_barrier_event_type; reason */
} tool_event_kind;

typedef struct tool_event {
  tool_event_kind kind;
  int code;
  int reason;
  int64_t token;
  char *node; /* malloc'ed or NULL; tool_event_clear() frees it */
} tool_event;

/* Queue a copy of @p ev (node copied) and wake the main loop.  Any thread. */
void tool_post_event(const tool_event *ev);
/* Take the next event; 0 when there is none. */
int tool_next_event(tool_event *out);
void tool_event_clear(tool_event *ev);

/* Wait until a signal or an event is pending, or @p timeout_ms passes (-1:
 * no limit).  Returns at once when something is pending. */
void tool_wait(int timeout_ms);

/* Milliseconds on a monotonic clock. */
int64_t tool_now_ms(void);
/* Milliseconds until @p deadline (0 if past; -1 for deadline -1), min'ed
 * with @p timeout (-1: none).  For computing poll timeouts. */
int tool_ms_until(int64_t deadline, int timeout);

/* ------------------------------------------------------------- session */

/* A session listener that posts TOOL_EV_SESSION events. */
void tool_session_listener(zkrc_session *s, const zkrc_session_event *ev,
                           void *arg);

/* Connect to the servers of @p o, waiting at most the session timeout, and
 * still answering signals meanwhile.  Returns 0 with *out set, or the exit
 * status to leave with (after a message): TOOL_EXIT_UNAVAILABLE, or 128+N
 * when interrupted by signal N. */
int tool_connect(tool_options *o, int no_reopen, zkrc_session **out);

/* Before a session: resolve every server of @p servers (its chroot left
 * out) and try a TCP connection to each address at once, for at most
 * @p timeout_ms.  Returns 0 as soon as one is accepted (or when the list
 * is malformed: the client says so), else the exit status after a message
 * saying what happened: TOOL_EXIT_NOHOST when a name does not resolve (a
 * temporary failure of the name service is tried again until the
 * timeout), TOOL_EXIT_UNAVAILABLE with "connection refused (host:port,
 * ...)" (at once), "no answer within N ms (...)" or the connection's
 * error; 128+N when stop signal N came meanwhile.  tools/reach.c. */
int tool_reach_servers(const char *servers, int timeout_ms);

/* "host:port" -> host and port (g_free both; the brackets of "[v6]:port"
 * removed); 0, or -1 when it has no port.  tools/reach.c. */
int tool_split_host_port(const char *hp, char **host, char **port);

/* A TCP connection to the first of @p ai's addresses that accepts one
 * within @p timeout_ms (all tried at once): its descriptor (non-blocking,
 * close-on-exec), or -1.  tools/reach.c. */
struct addrinfo;
int tool_connect_within(const struct addrinfo *ai, int timeout_ms);

/* tool_runtime_init() then tool_connect(): what every subcommand does
 * first, once its arguments are checked.  0 with *out set, or the exit
 * status to leave with. */
int tool_start_session(tool_options *o, int no_reopen, zkrc_session **out);

/* With -v: the session's id and password in hex, the way
 * `zkr-ensemble start' takes them ("expire ID PASSWD"). */
void tool_print_session(zkrc_session *s);

/* Map a recipe's error to an exit status after printing "what: error". */
int tool_fail(const char *what, int err);

/* --------------------------------------------------------------- child */

/* How long before the lease's deadline COMMAND gets SIGKILL: room for our
 * own wake-up and for the kernel to end the group before the deadline. */
#define TOOL_KILL_MARGIN_MS 50

/* COMMAND under supervision (tools/child.c). */
typedef struct tool_child {
  pid_t pid;         /* 0 when not running (or reaped) */
  pid_t group;       /* its process group, when it has its own; else 0 */
  int status;        /* once reaped: its status as a shell reports it */
  int64_t kill_at;   /* stopping: when to send SIGKILL (-1: not stopping) */
  int stop_signal;   /* the signal it was stopped with (0: not stopped) */
  int64_t deadline;  /* the lease's last known deadline (-1: none yet) */
  int lease_ran_out; /* stopped because the lease was running out */
  int killed;        /* SIGKILL sent: nothing more to send */
  pid_t guardian;    /* kills the group should we die (0: none) */
  int guardian_fd;   /* our end of the guardian's pipe */
} tool_child;

/* Start argv[0] (PATH searched) with the environment plus @p env
 * ("NAME=value" strings, NULL-terminated; overriding).  The child gets
 * @p o->lost_signal if this process dies (Linux parent-death signal), and
 * unless --foreground a guardian process in its group SIGKILLs the whole
 * group then.  COMMAND gets only the file descriptors this program
 * inherited.  Returns 0, or the exit status to leave with after a message
 * (TOOL_EXIT_NOT_FOUND, TOOL_EXIT_CANNOT_RUN, TOOL_EXIT_OSERR). */
int tool_child_start(tool_child *c, char *const *argv, char *const *env,
                     const tool_options *o);

/* The same with @p input_fd (>= 0) as COMMAND's standard input instead of
 * ours (zkr-watch: the new value).  The descriptor stays the caller's. */
int tool_child_start_with_input(tool_child *c, char *const *argv,
                                char *const *env, const tool_options *o,
                                int input_fd);

/* Send @p sig to COMMAND (its whole process group unless --foreground). */
void tool_child_signal(tool_child *c, int sig);

/* Pass a caught signal on to COMMAND, as flock(1) users expect: SIGCHLD
 * not; a terminal's signal not when COMMAND shares our group (it got it);
 * SIGCONT only while @p lease_ok (else COMMAND stays stopped until the
 * lease check kills it).  SIGTSTP then stops this process too, so that a
 * shell sees the job stopped.  Works without a COMMAND too. */
void tool_child_forward(tool_child *c, const tool_signal *sig,
                        const tool_options *o, int lease_ok);

/* Stop this process (SIGSTOP), as ^Z would. */
void tool_stop_self(void);

/* Stop COMMAND: @p sig now, SIGKILL after @p grace_ms if it is still
 * running.  Does not wait. */
void tool_child_stop(tool_child *c, int sig, int grace_ms);

/* Keep COMMAND dead by the lease's deadline.  Call before every wait with
 * @p remaining_ms, the library's remaining lease of the hold (0 once it is
 * lost: then its last deadline stands), and the session's lease floor.
 * With the grace period (-g) shortened to fit below the floor, COMMAND gets
 * the lost signal when the grace would end TOOL_KILL_MARGIN_MS before the
 * deadline, and SIGKILL at that moment at the latest (also when it is
 * being stopped for another reason).  Returns @p timeout (-1: none) min'ed
 * with the time until the next step is due. */
int tool_child_lease(tool_child *c, int remaining_ms, int floor_ms,
                     const tool_options *o, int timeout);

/* Whether a lease with @p remaining_ms left is long enough to start
 * COMMAND: tool_child_lease() would not stop it at once. */
int tool_lease_allows_start(int remaining_ms, int floor_ms,
                            const tool_options *o);

/* Reap COMMAND if it has exited, and send the SIGKILL that is due.  Returns
 * 1 when COMMAND was reaped by this call (c->status is then set); call
 * tool_child_end() then. */
int tool_child_poll(tool_child *c);

/* Poll timeout contribution of a stopping child (-1: none). */
int tool_child_timeout(const tool_child *c, int timeout);

/* After COMMAND was reaped: SIGKILL what is left of its process group when
 * @p kill_rest (the hold was lost), dismiss and reap its guardian. */
void tool_child_end(tool_child *c, int kill_rest);

/* Last resort before exiting: SIGKILL COMMAND (and its group) and reap it. */
void tool_child_kill_and_reap(tool_child *c);

/* --------------------------------------------------------------- systemd */

/* systemd's notifications (tools/notify.c): take $NOTIFY_SOCKET,
 * $WATCHDOG_USEC and $WATCHDOG_PID out of the environment (COMMAND does not
 * get them) and open the socket.  Without them the others do nothing. */
void tool_notify_init(void);

/* Send "KEY=VALUE" lines (READY=1, STATUS=..., STOPPING=1): one datagram,
 * best effort. */
void tool_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Feed the watchdog: WATCHDOG=1 when one is due and @p lease_live (the
 * session's lease: never while it is not).  Returns @p timeout (-1: none)
 * min'ed with the time until the next is due. */
int tool_notify_watchdog(int lease_live, int timeout);

/* ------------------------------------------------------------ watching */

/* Watch @p dir's children (or its creation while it does not exist): the
 * next change posts TOOL_EV_WATCH once.  The order of contenders itself
 * comes from the library (zkrc_lock_list, zkrc_election_list).
 * Returns ZKRC_OK or a recipe error. */
int tool_watch_children(zkrc_session *s, const char *dir);

#endif /* ZKR_TOOL_H */
