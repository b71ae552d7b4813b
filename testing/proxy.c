/*
 * testing/proxy.c - the fault proxy: a loopback TCP proxy in front of each
 * member that can drop, delay, black-hole and refuse client connections.
 *
 * One thread serves every proxy of an ensemble with poll().  It owns all the
 * sockets and connections; the control functions only change a proxy's
 * fault settings under the lock, wake the thread through a pipe, and wait
 * until the thread has applied them - so a fault is in force when its call
 * returns, and no other thread ever closes a descriptor the thread polls.
 *
 * To swallow the reply to one request, the proxy follows ZooKeeper's framing
 * in both directions: every packet is a 4-byte big-endian length and a body.
 * The first packet each way is the connect handshake; after it, a request
 * body starts with {int32 xid, int32 type} and a reply body with {int32 xid,
 * int64 zxid, int32 err}.  Bytes are passed on as they arrive; only the
 * first bytes of each packet (length and xid, at most 8) are held back until
 * the packet's fate is known.
 *
 * Licensed under the Apache License, Version 2.0 (see COPYING).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Bytes read per recv(). */
#define READ_SIZE 65536
/* Stop reading a side while this much is queued for the other. */
#define MAX_QUEUED (4 * 1024 * 1024)
/* Connections per proxy; more are reset at once. */
#define MAX_CONNS 256
/* How long a control function waits for the thread to apply it. */
#define CONTROL_WAIT_MS 5000

/* Bytes on their way to one side, not to be sent before ready_ms (delay). */
typedef struct chunk {
  struct chunk *next;
  int64_t ready_ms;
  size_t len;  /* bytes in data */
  size_t sent; /* of which already sent */
  size_t cap;
  char data[];
} chunk;

/* Where a byte stream stands in ZooKeeper's packet framing. */
typedef struct framer {
  uint64_t packets;      /* packets started so far; 0: the handshake */
  uint32_t body_left;    /* bytes of the current packet still to pass */
  unsigned char head[8]; /* start of the next packet: length, xid */
  size_t head_len;
  size_t head_want; /* 4 until the length is known, then 4-8 */
} framer;

/* One direction of a connection. */
typedef struct flow {
  chunk *first, *last;
  size_t queued;
  framer framer;
  int eof;              /* the source side closed */
  int64_t eof_ready_ms; /* when to pass the close on (delay) */
  int write_blocked;    /* the last send() would block: wait POLLOUT */
} flow;

typedef struct conn {
  struct conn *next;
  int client_fd;
  int server_fd;         /* -1 until the upstream connect is started */
  int server_connecting; /* the non-blocking connect is in progress */
  flow up;               /* client -> member */
  flow down;             /* member -> client */
  int doomed;            /* swallow the member's reply to doomed_xid */
  int32_t doomed_xid;
  int cut;  /* that reply came: close once the rest is out */
  int dead; /* close at the end of this round */
} conn;

typedef struct proxy {
  int listen_fd;
  int port;
  int target_port;
  conn *conns;
  int conn_count;
  int64_t accept_paused_until_ms; /* after EMFILE: no busy accept loop */
  /* The faults, written by the control functions under the lock. */
  int delay_ms;
  int64_t blackhole_until_ms;
  int refuse;
  int armed; /* drop_after_next_request */
  int drop_requested;
} proxy;

/* What a pollfd entry stands for. */
typedef struct poll_ref {
  proxy *proxy;
  conn *conn;    /* NULL: the proxy's listener */
  int is_server; /* the conn's member side */
} poll_ref;

struct zkrc__proxies {
  int count;
  proxy proxies[ZKRC__MAX_MEMBERS];
  pthread_mutex_t lock;
  pthread_cond_t applied_cond;
  uint64_t requested; /* control calls made ... */
  uint64_t applied;   /* ... and applied by the thread */
  int stopping;
  int wake_read, wake_write;
  pthread_t thread;
  int thread_started;
  /* The thread's poll set, rebuilt every round. */
  struct pollfd *pfds;
  poll_ref *refs;
  size_t nfds, cap;
};

/* ---- sockets ------------------------------------------------------------ */

static void set_nodelay(int fd) {
  /* ZooKeeper packets are small: Nagle would add 40 ms to each. */
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Close with an RST rather than a FIN. */
static void close_with_reset(int fd) {
  struct linger lg = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(fd);
}

static int listen_loopback(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  int one = 1;
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      listen(fd, 128) != 0 ||
      getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

/* Start the non-blocking connect to the member.  0, or -1 when it failed
 * at once. */
static int start_upstream(conn *c, int target_port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  set_nodelay(fd);
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)target_port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  c->server_fd = fd;
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0)
    return 0;
  if (errno == EINPROGRESS) {
    c->server_connecting = 1;
    return 0;
  }
  return -1;
}

static void finish_upstream(conn *c) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(c->server_fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
      err != 0)
    c->dead = 1; /* member down: the client sees its connection close */
  c->server_connecting = 0;
}

/* ---- queues ------------------------------------------------------------- */

static void flow_clear(flow *f) {
  while (f->first) {
    chunk *next = f->first->next;
    free(f->first);
    f->first = next;
  }
  f->last = NULL;
  f->queued = 0;
}

/* Queue @p len bytes to be sent at @p ready_ms.  Returns -1 when out of
 * memory. */
static int flow_push(flow *f, const void *data, size_t len, int64_t ready_ms) {
  if (len == 0)
    return 0;
  chunk *last = f->last;
  if (!last || last->ready_ms != ready_ms || last->cap - last->len < len) {
    size_t cap = len > READ_SIZE ? len : READ_SIZE;
    chunk *ch = malloc(sizeof *ch + cap);
    if (!ch)
      return -1;
    ch->next = NULL;
    ch->ready_ms = ready_ms;
    ch->len = ch->sent = 0;
    ch->cap = cap;
    if (f->last)
      f->last->next = ch;
    else
      f->first = ch;
    f->last = last = ch;
  }
  memcpy(last->data + last->len, data, len);
  last->len += len;
  f->queued += len;
  return 0;
}

/* Send what is due.  Sets write_blocked when the socket is full, and
 * c->dead when the peer is gone. */
static void flow_send(conn *c, flow *f, int fd, int64_t now) {
  f->write_blocked = 0;
  while (f->first && f->first->ready_ms <= now) {
    chunk *ch = f->first;
    ssize_t n = send(fd, ch->data + ch->sent, ch->len - ch->sent,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      f->write_blocked = 1;
      return;
    }
    if (n < 0) {
      c->dead = 1;
      return;
    }
    ch->sent += (size_t)n;
    f->queued -= (size_t)n;
    if (ch->sent == ch->len) {
      f->first = ch->next;
      if (!f->first)
        f->last = NULL;
      free(ch);
    }
  }
}

/* ---- framing ------------------------------------------------------------ */

static uint32_t read_be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

/* A packet's start is known (length and, when the body has 4 bytes, xid).
 * Returns 1 when the packet must be swallowed and the connection cut. */
static int inspect_packet(proxy *p, conn *c, int upstream, const framer *fr) {
  if (fr->packets == 0 || fr->head_len < 8)
    return 0; /* the handshake, or no room for an xid */
  int32_t xid = (int32_t)read_be32(fr->head + 4);
  if (upstream) {
    /* Negative xids are pings, auth, set-watches: not requests. */
    if (p->armed && !c->doomed && xid >= 0) {
      p->armed = 0;
      c->doomed = 1;
      c->doomed_xid = xid;
    }
    return 0;
  }
  return c->doomed && xid == c->doomed_xid;
}

/* Pass @p len bytes read from one side through the framer of flow @p f
 * (towards the other side), queueing them at @p ready_ms. */
static void frame_and_queue(proxy *p, conn *c, flow *f, int upstream,
                            const unsigned char *data, size_t len,
                            int64_t ready_ms) {
  framer *fr = &f->framer;
  while (len > 0 && !c->dead) {
    if (fr->body_left > 0) {
      size_t n = len < fr->body_left ? len : fr->body_left;
      if (flow_push(f, data, n, ready_ms) != 0)
        c->dead = 1;
      fr->body_left -= (uint32_t)n;
      data += n;
      len -= n;
      continue;
    }
    /* At a packet start: gather the length, then up to 4 bytes of xid. */
    size_t n = fr->head_want - fr->head_len;
    if (n > len)
      n = len;
    memcpy(fr->head + fr->head_len, data, n);
    fr->head_len += n;
    data += n;
    len -= n;
    if (fr->head_len == 4 && fr->head_want == 4) {
      uint32_t body = read_be32(fr->head);
      fr->head_want = 4 + (body < 4 ? body : 4);
    }
    if (fr->head_len < fr->head_want)
      continue;
    if (inspect_packet(p, c, upstream, fr)) {
      c->cut = 1; /* drop this reply and everything after it */
      return;
    }
    if (flow_push(f, fr->head, fr->head_len, ready_ms) != 0)
      c->dead = 1;
    fr->body_left = read_be32(fr->head) - (uint32_t)(fr->head_len - 4);
    fr->packets++;
    fr->head_len = 0;
    fr->head_want = 4;
  }
}

/* ---- connections -------------------------------------------------------- */

static int blackholed(const proxy *p, int64_t now) {
  return now < p->blackhole_until_ms;
}

static void conn_free(conn *c) {
  close(c->client_fd);
  if (c->server_fd >= 0)
    close(c->server_fd);
  flow_clear(&c->up);
  flow_clear(&c->down);
  free(c);
}

static void close_all_conns(proxy *p) {
  while (p->conns) {
    conn *next = p->conns->next;
    conn_free(p->conns);
    p->conns = next;
  }
  p->conn_count = 0;
}

static void framer_init(framer *fr) {
  memset(fr, 0, sizeof *fr);
  fr->head_want = 4;
}

static void accept_clients(proxy *p, int64_t now) {
  for (int i = 0; i < 16; i++) {
    int fd = accept4(p->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
          errno == ENOBUFS) {
        fprintf(stderr, "zkrecipes-testing: proxy accept: %s\n",
                strerror(errno));
        p->accept_paused_until_ms = now + 100;
      }
      return; /* EAGAIN, or a connection that died in the backlog */
    }
    if (p->refuse || p->conn_count >= MAX_CONNS) {
      close_with_reset(fd);
      continue;
    }
    conn *c = calloc(1, sizeof *c);
    if (!c) {
      close_with_reset(fd);
      continue;
    }
    set_nodelay(fd);
    c->client_fd = fd;
    c->server_fd = -1;
    framer_init(&c->up.framer);
    framer_init(&c->down.framer);
    c->next = p->conns;
    p->conns = c;
    p->conn_count++;
  }
}

/* Read what one side sent and queue it for the other. */
static void read_side(proxy *p, conn *c, int from_server, int64_t now) {
  unsigned char buf[READ_SIZE];
  int fd = from_server ? c->server_fd : c->client_fd;
  flow *f = from_server ? &c->down : &c->up;
  ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  if (n <= 0) {
    f->eof = 1;
    f->eof_ready_ms = now + p->delay_ms;
    return;
  }
  frame_and_queue(p, c, f, !from_server, buf, (size_t)n, now + p->delay_ms);
}

static int wants_read(const proxy *p, const conn *c, int from_server,
                      int64_t now) {
  const flow *f = from_server ? &c->down : &c->up;
  if (blackholed(p, now) || c->cut || f->eof || f->queued >= MAX_QUEUED)
    return 0;
  return !from_server || (c->server_fd >= 0 && !c->server_connecting);
}

/* One round of work on a connection: connect, send what is due, decide
 * whether it is finished. */
static void pump_conn(proxy *p, conn *c, int64_t now) {
  if (c->dead || blackholed(p, now))
    return;
  if (c->server_fd < 0 && start_upstream(c, p->target_port) != 0) {
    c->dead = 1;
    return;
  }
  if (!c->server_connecting)
    flow_send(c, &c->up, c->server_fd, now);
  if (!c->dead)
    flow_send(c, &c->down, c->client_fd, now);
  /* A side closed, or the swallowed reply came: close once what came
   * before has been passed on. */
  if (c->up.eof && now >= c->up.eof_ready_ms &&
      (!c->up.first || c->server_connecting))
    c->dead = 1; /* (a member that does not accept gets nothing) */
  if (c->down.eof && !c->down.first && now >= c->down.eof_ready_ms)
    c->dead = 1;
  if (c->cut && !c->down.first)
    c->dead = 1;
}

static void reap_dead_conns(proxy *p) {
  conn **link = &p->conns;
  while (*link) {
    conn *c = *link;
    if (c->dead) {
      *link = c->next;
      conn_free(c);
      p->conn_count--;
    } else {
      link = &c->next;
    }
  }
}

/* ---- the thread --------------------------------------------------------- */

static int add_pollfd(zkrc__proxies *ps, int fd, short events, proxy *p,
                      conn *c, int is_server) {
  if (ps->nfds == ps->cap) {
    size_t cap = ps->cap ? ps->cap * 2 : 64;
    struct pollfd *pfds = realloc(ps->pfds, cap * sizeof *pfds);
    if (!pfds)
      return -1;
    ps->pfds = pfds;
    poll_ref *refs = realloc(ps->refs, cap * sizeof *refs);
    if (!refs)
      return -1;
    ps->refs = refs;
    ps->cap = cap;
  }
  ps->pfds[ps->nfds] = (struct pollfd){fd, events, 0};
  ps->refs[ps->nfds] = (poll_ref){p, c, is_server};
  ps->nfds++;
  return 0;
}

static void build_poll_set(zkrc__proxies *ps, int64_t now) {
  ps->nfds = 0;
  add_pollfd(ps, ps->wake_read, POLLIN, NULL, NULL, 0);
  for (int i = 0; i < ps->count; i++) {
    proxy *p = &ps->proxies[i];
    if (now >= p->accept_paused_until_ms)
      add_pollfd(ps, p->listen_fd, POLLIN, p, NULL, 0);
    for (conn *c = p->conns; c; c = c->next) {
      short client_events = (short)((wants_read(p, c, 0, now) ? POLLIN : 0) |
                                    (c->down.write_blocked ? POLLOUT : 0));
      if (client_events)
        add_pollfd(ps, c->client_fd, client_events, p, c, 0);
      if (c->server_fd < 0)
        continue;
      short server_events =
          (short)((wants_read(p, c, 1, now) ? POLLIN : 0) |
                  (c->server_connecting || c->up.write_blocked ? POLLOUT : 0));
      if (server_events)
        add_pollfd(ps, c->server_fd, server_events, p, c, 1);
    }
  }
}

static void handle_events(zkrc__proxies *ps, int64_t now) {
  for (size_t i = 0; i < ps->nfds; i++) {
    short revents = ps->pfds[i].revents;
    poll_ref *ref = &ps->refs[i];
    if (!revents)
      continue;
    if (!ref->proxy) {
      char drain[64];
      while (read(ps->wake_read, drain, sizeof drain) > 0) {
      }
    } else if (!ref->conn) {
      accept_clients(ref->proxy, now);
    } else if (ref->is_server && ref->conn->server_connecting) {
      finish_upstream(ref->conn);
    } else if ((revents & (POLLIN | POLLHUP | POLLERR)) &&
               wants_read(ref->proxy, ref->conn, ref->is_server, now)) {
      read_side(ref->proxy, ref->conn, ref->is_server, now);
    }
    /* POLLOUT needs nothing here: every round sends what is due. */
  }
  ps->nfds = 0;
}

/* Apply control calls.  Called with the lock held. */
static void apply_requests(zkrc__proxies *ps) {
  for (int i = 0; i < ps->count; i++) {
    proxy *p = &ps->proxies[i];
    if (p->drop_requested || p->refuse) {
      close_all_conns(p);
      p->drop_requested = 0;
    }
  }
  if (ps->applied != ps->requested) {
    ps->applied = ps->requested;
    pthread_cond_broadcast(&ps->applied_cond);
  }
}

static int64_t earlier(int64_t a, int64_t b) {
  return a < 0 || (b >= 0 && b < a) ? b : a;
}

/* Milliseconds until the next timed event (a delayed chunk or close, the end
 * of a blackhole or of an accept pause), or -1: none. */
static int next_timeout(zkrc__proxies *ps, int64_t now) {
  int64_t next = -1;
  for (int i = 0; i < ps->count; i++) {
    proxy *p = &ps->proxies[i];
    if (p->accept_paused_until_ms > now)
      next = earlier(next, p->accept_paused_until_ms);
    if (blackholed(p, now)) {
      next = earlier(next, p->blackhole_until_ms);
      continue;
    }
    for (conn *c = p->conns; c; c = c->next) {
      const flow *flows[2] = {&c->up, &c->down};
      for (int k = 0; k < 2; k++) {
        const flow *f = flows[k];
        if (f->first && f->first->ready_ms > now)
          next = earlier(next, f->first->ready_ms);
        if (f->eof && !f->first && f->eof_ready_ms > now)
          next = earlier(next, f->eof_ready_ms);
      }
    }
  }
  if (next < 0)
    return -1;
  int64_t wait = next - now;
  return wait > 60000 ? 60000 : (int)(wait < 1 ? 1 : wait);
}

static void *proxy_thread(void *arg) {
  zkrc__proxies *ps = arg;
  pthread_mutex_lock(&ps->lock);
  for (;;) {
    int64_t now = zkrc__now_ms();
    handle_events(ps, now);
    apply_requests(ps);
    if (ps->stopping)
      break;
    for (int i = 0; i < ps->count; i++) {
      proxy *p = &ps->proxies[i];
      for (conn *c = p->conns; c; c = c->next)
        pump_conn(p, c, now);
      reap_dead_conns(p);
    }
    now = zkrc__now_ms();
    build_poll_set(ps, now);
    int timeout = next_timeout(ps, now);
    pthread_mutex_unlock(&ps->lock);
    int n = poll(ps->pfds, ps->nfds, timeout);
    if (n < 0 && errno != EINTR) {
      fprintf(stderr, "zkrecipes-testing: proxy poll: %s\n", strerror(errno));
      zkrc__sleep_ms(10);
    }
    if (n <= 0)
      for (size_t i = 0; i < ps->nfds; i++)
        ps->pfds[i].revents = 0;
    pthread_mutex_lock(&ps->lock);
  }
  for (int i = 0; i < ps->count; i++)
    close_all_conns(&ps->proxies[i]);
  pthread_mutex_unlock(&ps->lock);
  return NULL;
}

/* ---- the control functions ---------------------------------------------- */

typedef enum fault {
  FAULT_DROP_ALL,
  FAULT_DROP_AFTER_NEXT_REQUEST,
  FAULT_DELAY,
  FAULT_BLACKHOLE,
  FAULT_REFUSE
} fault;

static void set_fault(proxy *p, fault what, int value) {
  switch (what) {
  case FAULT_DROP_ALL:
    p->drop_requested = 1;
    break;
  case FAULT_DROP_AFTER_NEXT_REQUEST:
    p->armed = 1;
    break;
  case FAULT_DELAY:
    p->delay_ms = value > 0 ? value : 0;
    break;
  case FAULT_BLACKHOLE:
    p->blackhole_until_ms = value > 0 ? zkrc__now_ms() + value : 0;
    break;
  case FAULT_REFUSE:
    p->refuse = value != 0;
    break;
  }
}

static void wake_thread(zkrc__proxies *ps) {
  char byte = 1;
  /* A full pipe is fine: the thread is woken already. */
  ssize_t unused = write(ps->wake_write, &byte, 1);
  (void)unused;
}

/* Set a fault and wait until the thread has seen it. */
static int control(zkrc__proxies *ps, int i, fault what, int value) {
  if (!ps || i < 0 || i >= ps->count)
    return -1;
  struct timespec deadline;
  clock_gettime(CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += CONTROL_WAIT_MS / 1000;

  pthread_mutex_lock(&ps->lock);
  set_fault(&ps->proxies[i], what, value);
  uint64_t ticket = ++ps->requested;
  wake_thread(ps);
  int rc = 0;
  while (ps->applied < ticket && rc == 0) {
    if (pthread_cond_timedwait(&ps->applied_cond, &ps->lock, &deadline) ==
        ETIMEDOUT)
      rc = -1;
  }
  pthread_mutex_unlock(&ps->lock);
  if (rc != 0)
    fprintf(stderr, "zkrecipes-testing: the proxy thread does not answer\n");
  return rc;
}

int zkrc__proxy_drop_all(zkrc__proxies *ps, int i) {
  return control(ps, i, FAULT_DROP_ALL, 0);
}

int zkrc__proxy_drop_after_next_request(zkrc__proxies *ps, int i) {
  return control(ps, i, FAULT_DROP_AFTER_NEXT_REQUEST, 0);
}

int zkrc__proxy_delay(zkrc__proxies *ps, int i, int ms) {
  return control(ps, i, FAULT_DELAY, ms);
}

int zkrc__proxy_blackhole(zkrc__proxies *ps, int i, int ms) {
  return control(ps, i, FAULT_BLACKHOLE, ms);
}

int zkrc__proxy_refuse(zkrc__proxies *ps, int i, int refuse) {
  return control(ps, i, FAULT_REFUSE, refuse);
}

int zkrc__proxy_port(const zkrc__proxies *ps, int i) {
  return ps && i >= 0 && i < ps->count ? ps->proxies[i].port : -1;
}

/* ---- start and stop ----------------------------------------------------- */

static int init_sync(zkrc__proxies *ps) {
  pthread_condattr_t attr;
  if (pthread_condattr_init(&attr) != 0)
    return -1;
  int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (rc == 0)
    rc = pthread_cond_init(&ps->applied_cond, &attr);
  pthread_condattr_destroy(&attr);
  if (rc != 0)
    return -1;
  if (pthread_mutex_init(&ps->lock, NULL) != 0) {
    pthread_cond_destroy(&ps->applied_cond);
    return -1;
  }
  return 0;
}

zkrc__proxies *zkrc__proxies_start(int count, const int *target_ports) {
  if (count < 1 || count > ZKRC__MAX_MEMBERS)
    return NULL;
  zkrc__proxies *ps = calloc(1, sizeof *ps);
  if (!ps)
    return NULL;
  ps->wake_read = ps->wake_write = -1;
  for (int i = 0; i < ZKRC__MAX_MEMBERS; i++)
    ps->proxies[i].listen_fd = -1;
  if (init_sync(ps) != 0) {
    free(ps);
    fprintf(stderr, "zkrecipes-testing: cannot create the proxy lock\n");
    return NULL;
  }
  ps->count = count;

  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    fprintf(stderr, "zkrecipes-testing: pipe: %s\n", strerror(errno));
    zkrc__proxies_stop(ps);
    return NULL;
  }
  ps->wake_read = wake[0];
  ps->wake_write = wake[1];
  for (int i = 0; i < count; i++) {
    proxy *p = &ps->proxies[i];
    p->target_port = target_ports[i];
    p->listen_fd = listen_loopback(&p->port);
    if (p->listen_fd < 0) {
      fprintf(stderr, "zkrecipes-testing: proxy listen: %s\n", strerror(errno));
      zkrc__proxies_stop(ps);
      return NULL;
    }
  }
  int rc = pthread_create(&ps->thread, NULL, proxy_thread, ps);
  if (rc != 0) {
    fprintf(stderr, "zkrecipes-testing: pthread_create: %s\n", strerror(rc));
    zkrc__proxies_stop(ps);
    return NULL;
  }
  ps->thread_started = 1;
  return ps;
}

void zkrc__proxies_stop(zkrc__proxies *ps) {
  if (!ps)
    return;
  if (ps->thread_started) {
    pthread_mutex_lock(&ps->lock);
    ps->stopping = 1;
    wake_thread(ps);
    pthread_mutex_unlock(&ps->lock);
    pthread_join(ps->thread, NULL);
  }
  for (int i = 0; i < ps->count; i++) {
    close_all_conns(&ps->proxies[i]);
    if (ps->proxies[i].listen_fd >= 0)
      close(ps->proxies[i].listen_fd);
  }
  if (ps->wake_read >= 0)
    close(ps->wake_read);
  if (ps->wake_write >= 0)
    close(ps->wake_write);
  free(ps->pfds);
  free(ps->refs);
  pthread_cond_destroy(&ps->applied_cond);
  pthread_mutex_destroy(&ps->lock);
  free(ps);
}
