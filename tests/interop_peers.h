/*
 * Peers of the interoperability tests: Apache Curator (tests/peers/
 * CuratorPeer.java), kazoo (tests/peers/kazoo_peer.py) and zkrecipes'
 * interopworker, each a separate process driven through its stdin and
 * stdout, one line per command and per event.  Every read of a peer has a
 * deadline; every peer is SIGKILLed when the test program exits (and when it
 * dies), whatever happened.  Shared by test_interop and test_interop_rwlock.
 */
#ifndef ZKT_INTEROP_PEERS_H
#define ZKT_INTEROP_PEERS_H

#include <glib.h>
#include <sys/types.h>

/* How long a JVM (or Python) may take to start and connect. */
#define START_MS 30000
/* How long any other single step may take. */
#define STEP_MS 10000

typedef struct peer {
  char *name; /* for messages */
  pid_t pid;  /* 0 once reaped */
  int in_fd;  /* its stdin, -1 once closed */
  int out_fd; /* its stdout */
  GString *partial;
  GQueue lines; /* complete lines not consumed yet (char *) */
  gboolean eof;
} peer;

/* Kill every peer left over (by a failed test, or at exit). */
void kill_live_peers(void);
void peer_kill(peer *p);
void peer_free(peer *p);
/* Start @p argv with pipes on its stdin and stdout; NULL (and a failed
 * assertion) on failure. */
peer *peer_start(const char *name, char **argv);
/* Read what the peer wrote within @p timeout_ms: 1 something, 0 timeout, -1
 * end of output. */
int peer_fill(peer *p, int timeout_ms);
/* Does @p line start with the word @p kw?  Sets *rest to what follows. */
gboolean line_is(const char *line, const char *kw, const char **rest);
void peer_report(peer *p, const char *what);
/* The rest of the first line starting with @p kw within @p timeout_ms
 * (g_free it), or NULL; other lines stay queued. */
char *peer_expect(peer *p, const char *kw, int timeout_ms);
/* The next line (any), or NULL after @p timeout_ms. */
char *peer_next(peer *p, int timeout_ms);
/* Has the peer written a line starting with @p kw by now?  (No wait.) */
gboolean peer_said(peer *p, const char *kw);
gboolean peer_send(peer *p, const char *line);
/* Send @p cmd and return the rest of the reply line starting with @p kw. */
char *peer_ask(peer *p, const char *cmd, const char *kw);
/* Close its stdin and wait for it to exit: its status, 128+signal, or -1
 * (then killed).  Frees the peer. */
int peer_finish(peer *p, int timeout_ms);
/* A peer of each kind: (name, mode, path, args..., NULL); the servers'
 * address is passed after the mode. */
G_GNUC_NULL_TERMINATED peer *curator_peer(const char *name, const char *mode,
                                          const char *path, ...);
G_GNUC_NULL_TERMINATED peer *kazoo_peer(const char *name, const char *mode,
                                        const char *path, ...);
/* A peer of another class compiled beside CuratorPeer (CuratorRevokePeer):
 * (name, class, mode, args..., NULL); the servers' address is passed
 * after the mode. */
G_GNUC_NULL_TERMINATED peer *
curator_class_peer(const char *name, const char *cls, const char *mode, ...);
G_GNUC_NULL_TERMINATED peer *zkrc_worker(const char *name, const char *mode,
                                         const char *path, ...);

#endif /* ZKT_INTEROP_PEERS_H */
