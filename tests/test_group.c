/*
 * Group membership (zkrecipes/group.h) against a real ensemble: joins,
 * updates and leaves seen by another member and by a watcher; the view
 * equal to the servers' children; a member re-created after its session
 * expired, with its latest data, told LOST then REGISTERED; an id held by
 * another live session registered only once that one goes; bad input
 * refused with nothing changed; and Curator's GroupMember on the same
 * group, both ways (CuratorPeer group).
 */
#include "config.h"

#include <string.h>

#include <glib.h>

#include "interop_peers.h"
#include "testutil.h"
#include "zkrecipes/group.h"

/* Every event a listener saw, as "type ID DATA" lines ("type" and its
 * reason, as zkt_reason_text() writes it, for events about no member:
 * "lost ZKRC_ESESSIONEXPIRED ZSESSIONEXPIRED"). */
typedef struct seen {
  GAsyncQueue *lines; /* of g_malloc'ed strings */
} seen;

/* The line of @p ev (g_free it). */
static char *event_line(const zkrc_group_event *ev) {
  const zkrc_group_member *m = ev->member;
  char why[64];
  return m ? g_strdup_printf("%s %s %s", zkrc_group_event_name(ev->type), m->id,
                             m->data ? m->data : "(null)")
           : g_strconcat(
                 zkrc_group_event_name(ev->type),
                 zkt_reason_text(why, sizeof why, ev->reason, ev->zk_error),
                 NULL);
}

static void record(zkrc_group *g, const zkrc_group_event *ev, void *arg) {
  (void)g;
  seen *s = arg;
  g_async_queue_push(s->lines, event_line(ev));
}

/* CU_ASSERT_STRING_EQUAL that prints both strings when they differ. */
#define ASSERT_TEXT(got, want)                                                 \
  do {                                                                         \
    const char *g_ = (got), *w_ = (want);                                      \
    if (g_ == NULL || strcmp(g_, w_) != 0)                                     \
      fprintf(stderr, "\n%s:%d: \"%s\", expected \"%s\"\n", __FILE__,          \
              __LINE__, g_ ? g_ : "(null)", w_);                               \
    CU_ASSERT_STRING_EQUAL(g_ ? g_ : "(null)", w_);                            \
  } while (0)

/* A listener that leaves the group from inside an event: on the event
 * line @p free_on it frees the group and records "FREED". */
typedef struct leaver {
  seen lines;
  const char *free_on;
} leaver;

static void leave_on(zkrc_group *g, const zkrc_group_event *ev, void *arg) {
  leaver *l = arg;
  record(g, ev, &l->lines);
  char *line = event_line(ev);
  if (strcmp(line, l->free_on) == 0) {
    zkrc_group_free(g);
    g_async_queue_push(l->lines.lines, g_strdup("FREED"));
  }
  g_free(line);
}

static void seen_init(seen *s) { s->lines = g_async_queue_new_full(g_free); }

/* Wait for the event line @p want, skipping others; non-zero when it came
 * within 10 s. */
static int wait_event(seen *s, const char *want) {
  int64_t end = zkt_now_ms() + 10000;
  while (zkt_now_ms() < end) {
    char *line = g_async_queue_timeout_pop(s->lines, 100 * 1000);
    int match = line && strcmp(line, want) == 0;
    g_free(line);
    if (match)
      return 1;
  }
  fprintf(stderr, "\nno event \"%s\" within 10 s\n", want);
  return 0;
}

/* Wait for either event line @p a or @p b, skipping others; non-zero when
 * one came within 10 s. */
static int wait_event_either(seen *s, const char *a, const char *b) {
  int64_t end = zkt_now_ms() + 10000;
  while (zkt_now_ms() < end) {
    char *line = g_async_queue_timeout_pop(s->lines, 100 * 1000);
    int match = line && (strcmp(line, a) == 0 || strcmp(line, b) == 0);
    g_free(line);
    if (match)
      return 1;
  }
  fprintf(stderr, "\nno event \"%s\" or \"%s\" within 10 s\n", a, b);
  return 0;
}

/* Wait until each of the @p n lines @p want has come, in any order,
 * skipping others; non-zero when they all came within 10 s. */
static int wait_all(seen *s, const char *const *want, int n) {
  int64_t end = zkt_now_ms() + 10000;
  int missing = n;
  gboolean *got = g_new0(gboolean, n);
  while (missing > 0 && zkt_now_ms() < end) {
    char *line = g_async_queue_timeout_pop(s->lines, 100 * 1000);
    for (int i = 0; line && i < n; i++)
      if (!got[i] && strcmp(line, want[i]) == 0) {
        got[i] = TRUE;
        missing--;
      }
    g_free(line);
  }
  for (int i = 0; i < n; i++)
    if (!got[i])
      fprintf(stderr, "\nno event \"%s\" within 10 s\n", want[i]);
  g_free(got);
  return missing == 0;
}

/* The next of this member's own events (registered, lost, closed, with
 * their reasons), view events skipped, within 10 s; "" when none came
 * (g_free it). */
static char *next_own_event(seen *s) {
  int64_t end = zkt_now_ms() + 10000;
  while (zkt_now_ms() < end) {
    char *line = g_async_queue_timeout_pop(s->lines, 100 * 1000);
    if (line &&
        (strcmp(line, "registered") == 0 || g_str_has_prefix(line, "lost") ||
         g_str_has_prefix(line, "closed")))
      return line;
    g_free(line);
  }
  return g_strdup("");
}

/* zkrc_group_new() of member @p id (NULL: none, a watcher) with @p len
 * bytes of @p data, the other options from @p opts (NULL: the defaults;
 * copied as they are, an uninitialized size included). */
static int group_join(zkrc_group **out, zkrc_session *s, const char *path,
                      const char *id, const char *data, size_t len,
                      const zkrc_group_options *opts) {
  zkrc_group_options o;
  if (opts)
    o = *opts;
  else
    zkrc_group_options_init(&o);
  o.id = id;
  o.data = data;
  o.data_len = len;
  return zkrc_group_new(out, s, path, &o);
}

static zkrc_group *join(zkrc_session *s, const char *path, const char *id,
                        const char *data, seen *into) {
  zkrc_group_options o;
  zkrc_group_options_init(&o);
  o.on_event = into ? record : NULL;
  o.event_arg = into;
  o.id = id;
  o.data = data;
  o.data_len = strlen(data);
  zkrc_group *g = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_new(&g, s, path, &o));
  return g;
}

static zkrc_group *watch(zkrc_session *s, const char *path, seen *into) {
  zkrc_group_options o;
  zkrc_group_options_init(&o);
  o.on_event = record;
  o.event_arg = into;
  zkrc_group *g = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_new(&g, s, path, &o)); /* no id */
  return g;
}

/* The view as "id=data id=data ..." (sorted by id, as it comes). */
static char *view_text(zkrc_group *g) {
  zkrc_group_member *m = NULL;
  size_t n = 0;
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_members(g, &m, &n));
  GString *out = g_string_new(NULL);
  for (size_t i = 0; i < n; i++)
    g_string_append_printf(out, "%s%s=%s", i ? " " : "", m[i].id,
                           m[i].data ? m[i].data : "");
  zkrc_group_members_free(m, n);
  return g_string_free(out, FALSE);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The servers' children of @p path in the same form, read now. */
static char *servers_text(zhandle_t *zh, const char *path) {
  struct String_vector kids = {0, NULL};
  GString *out = g_string_new(NULL);
  if (zoo_get_children(zh, path, 0, &kids) == ZOK) {
    qsort(kids.data, (size_t)kids.count, sizeof(char *), by_name);
    for (int i = 0; i < kids.count; i++) {
      char *child = g_strdup_printf("%s/%s", path, kids.data[i]);
      char buf[256];
      int len = sizeof buf - 1;
      if (zoo_get(zh, child, 0, buf, &len, NULL) == ZOK) {
        buf[len < 0 ? 0 : len] = '\0';
        g_string_append_printf(out, "%s%s=%s", out->len ? " " : "",
                               kids.data[i], buf);
      }
      g_free(child);
    }
    deallocate_String_vector(&kids);
  }
  return g_string_free(out, FALSE);
}

/* The data of @p path and its ephemeral owner (-1 when it is missing). */
static int64_t node_owner(zhandle_t *zh, const char *path, char *buf,
                          int size) {
  struct Stat st;
  int len = size - 1;
  if (zoo_get(zh, path, 0, buf, &len, &st) != ZOK)
    return -1;
  buf[len < 0 ? 0 : len] = '\0';
  return st.ephemeralOwner;
}

/* The group's members' nodes are deleted in the background once freed:
 * wait until none is left under @p path (or it is gone, a container), at
 * most 10 s; non-zero when it happened. */
static int wait_empty(zhandle_t *zh, const char *path) {
  return zkt_wait_children_or_gone(zh, path, 0, 10000);
}

/* A joins, updates its data and leaves: member B and a watcher see
 * JOINED, UPDATED and LEFT with A's data; B's view holds both; nothing is
 * left behind. */
static void test_join_update_leave_seen(void) {
  char *path = zkt_path("group-basic");
  zkrc_session *sa = zkt_session(), *sb = zkt_session(), *sw = zkt_session();
  seen eb, ew, ea;
  seen_init(&eb);
  seen_init(&ew);
  seen_init(&ea);
  zkrc_group *b = join(sb, path, "b", "bee", &eb);
  zkrc_group *w = watch(sw, path, &ew);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(b, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(b, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(w, 10000));
  CU_ASSERT_TRUE(wait_event(&ew, "joined b bee"));
  CU_ASSERT_PTR_NULL(zkrc_group_id(w));
  CU_ASSERT_STRING_EQUAL(zkrc_group_id(b), "b");
  CU_ASSERT_STRING_EQUAL(zkrc_group_path(w), path);

  zkrc_group *a = join(sa, path, "a", "one", &ea);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(a, 10000));
  CU_ASSERT_TRUE(zkrc_group_is_registered(a));
  CU_ASSERT_TRUE(wait_event(&ea, "registered"));
  CU_ASSERT_TRUE(wait_event(&eb, "joined a one"));
  CU_ASSERT_TRUE(wait_event(&ew, "joined a one"));
  char *view = view_text(b);
  ASSERT_TEXT(view, "a=one b=bee");
  g_free(view);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_set_data(a, "two", 3, 10000));
  CU_ASSERT_TRUE(wait_event(&eb, "updated a two"));
  CU_ASSERT_TRUE(wait_event(&ew, "updated a two"));

  zkrc_group_free(a);
  CU_ASSERT_TRUE(wait_event(&eb, "left a two"));
  CU_ASSERT_TRUE(wait_event(&ew, "left a two"));
  view = view_text(w);
  ASSERT_TEXT(view, "b=bee");
  g_free(view);

  zkrc_group_free(b);
  CU_ASSERT_TRUE(wait_event(&ew, "left b bee"));
  zkrc_group_free(w);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  zookeeper_close(zh);
  g_async_queue_unref(ea.lines);
  g_async_queue_unref(eb.lines);
  g_async_queue_unref(ew.lines);
  zkrc_session_close(sa);
  zkrc_session_close(sb);
  zkrc_session_close(sw);
  g_free(path);
}

/* Six members on two sessions and a node written by hand (a member of
 * another library): the watcher's view equals the servers' children, id
 * and data, once the last one is seen. */
static void test_view_equals_servers(void) {
  char *path = zkt_path("group-view");
  zkrc_session *s1 = zkt_session(), *s2 = zkt_session();
  seen ew;
  seen_init(&ew);
  zkrc_group *w = watch(s1, path, &ew);
  zkrc_group *m[6];
  for (int i = 0; i < 6; i++) {
    char id[16], data[16];
    g_snprintf(id, sizeof id, "m%d", 5 - i);
    g_snprintf(data, sizeof data, "d%d", i * 7);
    m[i] = join(i % 2 ? s1 : s2, path, id, data, NULL);
  }
  for (int i = 0; i < 6; i++)
    ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(m[i], 10000));
  zhandle_t *zh = zkt_raw();
  char *foreign = g_strdup_printf("%s/zz-by-hand", path);
  CU_ASSERT_EQUAL(zoo_create(zh, foreign, "x", 1, &ZOO_OPEN_ACL_UNSAFE,
                             ZOO_EPHEMERAL, NULL, 0),
                  ZOK);
  const char *const joined[] = {
      "joined m0 d35", "joined m1 d28", "joined m2 d21",      "joined m3 d14",
      "joined m4 d7",  "joined m5 d0",  "joined zz-by-hand x"};
  CU_ASSERT_TRUE(wait_all(&ew, joined, (int)G_N_ELEMENTS(joined)));
  char *view = view_text(w), *servers = servers_text(zh, path);
  ASSERT_TEXT(view, servers);
  ASSERT_TEXT(view, "m0=d35 m1=d28 m2=d21 m3=d14 m4=d7 m5=d0 zz-by-hand=x");
  g_free(view);
  g_free(servers);
  for (int i = 0; i < 6; i++)
    zkrc_group_free(m[i]);
  CU_ASSERT_EQUAL(zoo_delete(zh, foreign, -1), ZOK);
  const char *const left[] = {"left m0 d35",      "left m1 d28", "left m2 d21",
                              "left m3 d14",      "left m4 d7",  "left m5 d0",
                              "left zz-by-hand x"};
  CU_ASSERT_TRUE(wait_all(&ew, left, (int)G_N_ELEMENTS(left)));
  view = view_text(w);
  ASSERT_TEXT(view, "");
  g_free(view);
  zkrc_group_free(w);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  zookeeper_close(zh);
  g_async_queue_unref(ew.lines);
  zkrc_session_close(s1);
  zkrc_session_close(s2);
  g_free(foreign);
  g_free(path);
}

/* The member's session is expired on the servers: it is told LOST, then
 * REGISTERED once its node is created again by the new session, holding
 * the data set last; another member sees it back. */
static void test_recreated_after_expiry(void) {
  char *path = zkt_path("group-expiry");
  char *node = g_strdup_printf("%s/me", path);
  zkrc_session *s = zkt_session(), *so = zkt_session();
  seen ev, eo;
  seen_init(&ev);
  seen_init(&eo);
  zkrc_group *me = join(s, path, "me", "first", &ev);
  zkrc_group *other = join(so, path, "other", "o", &eo);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(me, 10000));
  char *own = next_own_event(&ev);
  ASSERT_TEXT(own, "registered");
  g_free(own);
  CU_ASSERT_TRUE(wait_event(&eo, "joined me first"));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(other, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_set_data(me, "latest", 6, 10000));
  CU_ASSERT_TRUE(wait_event(&eo, "updated me latest"));
  int64_t old_session = zkrc_session_id(s);

  zkt_expire(s);
  own = next_own_event(&ev);
  /* The expiry deletes the node: whichever the client hears first, the
   * deletion or the expiry, is the reason. */
  if (strcmp(own, "lost ZKRC_ENONODE ZNONODE") != 0)
    ASSERT_TEXT(own, "lost ZKRC_ESESSIONEXPIRED ZSESSIONEXPIRED");
  g_free(own);
  own = next_own_event(&ev);
  ASSERT_TEXT(own, "registered");
  g_free(own);
  CU_ASSERT_TRUE(zkrc_group_is_registered(me));
  zhandle_t *zh = zkt_raw();
  char buf[64];
  int64_t owner = node_owner(zh, node, buf, sizeof buf);
  ASSERT_TEXT(buf, "latest");
  CU_ASSERT_NOT_EQUAL(owner, old_session);
  CU_ASSERT_EQUAL(owner, zkrc_session_id(s));
  /* The other member saw it come back with the new session: JOINED after
   * a LEFT, or UPDATED when its cache read the new node before noticing
   * the old one was gone (zkrecipes/cache.h). */
  CU_ASSERT_TRUE(
      wait_event_either(&eo, "joined me latest", "updated me latest"));
  char *view = view_text(other);
  ASSERT_TEXT(view, "me=latest other=o");
  g_free(view);

  zkrc_group_free(me);
  zkrc_group_free(other);
  CU_ASSERT_TRUE(wait_empty(zh, path));
  zookeeper_close(zh);
  g_async_queue_unref(ev.lines);
  g_async_queue_unref(eo.lines);
  zkrc_session_close(s);
  zkrc_session_close(so);
  g_free(node);
  g_free(path);
}

/* The id is still held by the ephemeral node of another live session (a
 * previous run): the member is not registered while it lives; data set
 * meanwhile is kept; once that session closes the member registers, with
 * that data, as its own session's node. */
static void test_id_held_by_other_session(void) {
  char *path = zkt_path("group-held");
  char *node = g_strdup_printf("%s/worker", path);
  zhandle_t *zh = zkt_raw(), *previous = zkt_raw();
  zkt_make_path(zh, path);
  CU_ASSERT_EQUAL(zoo_create(previous, node, "old", 3, &ZOO_OPEN_ACL_UNSAFE,
                             ZOO_EPHEMERAL, NULL, 0),
                  ZOK);
  int64_t previous_id = zoo_client_id(previous)->client_id;
  zkrc_session *s = zkt_session();
  seen ev;
  seen_init(&ev);
  zkrc_group *g = join(s, path, "worker", "new", &ev);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(g, 10000));
  ZKT_ASSERT_RC(ZKRC_ETIMEDOUT, zkrc_group_wait_registered(g, 1000));
  CU_ASSERT_FALSE(zkrc_group_is_registered(g));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_set_data(g, "newer", 5, 5000));
  char buf[64];
  CU_ASSERT_EQUAL(node_owner(zh, node, buf, sizeof buf), previous_id);
  ASSERT_TEXT(buf, "old");

  zookeeper_close(previous);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(g, 10000));
  CU_ASSERT_EQUAL(node_owner(zh, node, buf, sizeof buf), zkrc_session_id(s));
  ASSERT_TEXT(buf, "newer");
  CU_ASSERT_TRUE(wait_event(&ev, "registered"));
  zkrc_group_free(g);
  CU_ASSERT_TRUE(wait_empty(zh, path));
  zookeeper_close(zh);
  g_async_queue_unref(ev.lines);
  zkrc_session_close(s);
  g_free(node);
  g_free(path);
}

/* A member may leave from its own listener: from an event of its node
 * (REGISTERED) and from an event of the view (another member JOINED).
 * Each free returns there, its node is deleted, and nothing follows. */
static void test_leave_from_listener(void) {
  char *path = zkt_path("group-leave-in-event");
  zkrc_session *s = zkt_session(), *so = zkt_session();
  leaver on_registered = {.free_on = "registered"};
  leaver on_joined = {.free_on = "joined late l"};
  seen_init(&on_registered.lines);
  seen_init(&on_joined.lines);
  zkrc_group_options o;
  zkrc_group_options_init(&o);
  o.on_event = leave_on;
  o.event_arg = &on_registered;
  zkrc_group *a = NULL, *b = NULL;
  ZKT_ASSERT_RC(ZKRC_OK, group_join(&a, s, path, "a", "x", 1, &o));
  CU_ASSERT_TRUE(wait_event(&on_registered.lines, "FREED"));
  o.event_arg = &on_joined;
  ZKT_ASSERT_RC(ZKRC_OK, group_join(&b, s, path, "b", "x", 1, &o));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(b, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(b, 10000));
  zkrc_group *late = join(so, path, "late", "l", NULL);
  CU_ASSERT_TRUE(wait_event(&on_joined.lines, "FREED"));
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_TRUE(zkt_wait_children(zh, path, 1, 10000)); /* a and b went */
  char *view = servers_text(zh, path);
  ASSERT_TEXT(view, "late=l");
  g_free(view);
  zkrc_group_free(late);
  CU_ASSERT_TRUE(wait_empty(zh, path));
  CU_ASSERT_EQUAL(g_async_queue_length(on_registered.lines.lines), 0);
  CU_ASSERT_EQUAL(g_async_queue_length(on_joined.lines.lines), 0);
  zookeeper_close(zh);
  g_async_queue_unref(on_registered.lines.lines);
  g_async_queue_unref(on_joined.lines.lines);
  zkrc_session_close(s);
  zkrc_session_close(so);
  g_free(path);
}

/* A watcher of @p path (its events into @p ew) and member "m" with data
 * "d" (into @p em), registered and seen by the watcher. */
static void watcher_and_member(zkrc_session *s, const char *path, seen *ew,
                               zkrc_group **w, seen *em, zkrc_group **m) {
  seen_init(ew);
  seen_init(em);
  *w = watch(s, path, ew);
  *m = join(s, path, "m", "d", em);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(*m, 10000));
  CU_ASSERT_TRUE(wait_event(ew, "joined m d"));
}

/* Once the watcher's (@p ew) and the member's (@p em) groups were freed
 * after CLOSED: nothing was told after it (said on stderr otherwise), and
 * no node is left under @p path.  Frees the queues. */
static void nothing_after_closed(seen *ew, seen *em, const char *path) {
  int after = 0;
  for (char *l; (l = g_async_queue_try_pop(ew->lines)) != NULL; g_free(l)) {
    fprintf(stderr, "\nwatcher event after CLOSED: %s\n", l);
    after++;
  }
  for (char *l; (l = g_async_queue_try_pop(em->lines)) != NULL; g_free(l)) {
    fprintf(stderr, "\nmember event after CLOSED: %s\n", l);
    after++;
  }
  CU_ASSERT_EQUAL(after, 0);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  zookeeper_close(zh);
  g_async_queue_unref(ew->lines);
  g_async_queue_unref(em->lines);
}

/* A session that is not reopened after its expiry ends the group: a
 * watcher and a member are told CLOSED (the member LOST first), and
 * nothing after. */
static void test_closed_for_good(void) {
  char *path = zkt_path("group-closed");
  zkrc_session *s = zkt_session_with(ZKT_SESSION_TIMEOUT_MS, 1);
  seen ew, em;
  zkrc_group *w, *m;
  watcher_and_member(s, path, &ew, &w, &em, &m);
  char *own = next_own_event(&em);
  ASSERT_TEXT(own, "registered");
  g_free(own);
  zkt_expire(s);
  /* The session closed itself after its expiry: both say so. */
  CU_ASSERT_TRUE(
      wait_event(&ew, "closed ZKRC_ESESSIONEXPIRED ZSESSIONEXPIRED"));
  own = next_own_event(&em);
  /* The expiry deletes the node: whichever the client hears first, the
   * deletion or the expiry, is the reason. */
  if (strcmp(own, "lost ZKRC_ENONODE ZNONODE") != 0)
    ASSERT_TEXT(own, "lost ZKRC_ESESSIONEXPIRED ZSESSIONEXPIRED");
  g_free(own);
  own = next_own_event(&em);
  ASSERT_TEXT(own, "closed ZKRC_ESESSIONEXPIRED ZSESSIONEXPIRED");
  g_free(own);
  CU_ASSERT_FALSE(zkrc_group_is_registered(m));
  ZKT_ASSERT_RC(ZKRC_ECLOSED, zkrc_group_wait_registered(m, 1000));
  zkrc_group_free(m);
  zkrc_group_free(w);
  nothing_after_closed(&ew, &em, path);
  zkrc_session_close(s);
  g_free(path);
}

/* A member and a watcher outlive their session's zkrc_session_close():
 * both told CLOSED (ZKRC_ECLOSED), freed after it, nothing told after. */
static void test_freed_after_close(void) {
  char *path = zkt_path("group-after-close");
  zkrc_session *s = zkt_session();
  seen ew, em;
  zkrc_group *w, *m;
  watcher_and_member(s, path, &ew, &w, &em, &m);
  /* The member's view read: its events come before the close's. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(m, 10000));
  CU_ASSERT_TRUE(wait_event(&em, "initialized"));
  zkrc_session_close(s);
  CU_ASSERT_TRUE(wait_event(&ew, "closed ZKRC_ECLOSED"));
  CU_ASSERT_TRUE(wait_event(&em, "closed ZKRC_ECLOSED"));
  zkrc_group_free(m);
  zkrc_group_free(w);
  nothing_after_closed(&ew, &em, path);
  g_free(path);
}

/* Bad arguments are refused with ZKRC_EINVAL before anything is sent: the
 * group's path is never created.  The longest id is accepted. */
static void test_bad_input(void) {
  char *path = zkt_path("group-bad");
  zkrc_session *s = zkt_session();
  zkrc_group *g = NULL;
  zkrc_group_options o, uninit;
  zkrc_group_options_init(&o);
  memset(&uninit, 0, sizeof uninit);
  char long_id[ZKRC_GROUP_ID_MAX + 2];
  memset(long_id, 'i', sizeof long_id - 1);
  long_id[sizeof long_id - 1] = '\0';
  const char *bad_ids[] = {"", "a/b", ".", "..", "ctl\x01", long_id, NULL};
  for (int i = 0; i < (int)G_N_ELEMENTS(bad_ids); i++)
    ZKT_ASSERT_RC(ZKRC_EINVAL, group_join(&g, s, path, bad_ids[i], "d", 1, &o));
  ZKT_ASSERT_RC(ZKRC_EINVAL, group_join(NULL, s, path, "x", "d", 1, &o));
  ZKT_ASSERT_RC(ZKRC_EINVAL, group_join(&g, NULL, path, "x", "d", 1, &o));
  ZKT_ASSERT_RC(ZKRC_EINVAL, group_join(&g, s, "no-slash", "x", "d", 1, &o));
  ZKT_ASSERT_RC(ZKRC_EINVAL, group_join(&g, s, "/", "x", "d", 1, &o));
  ZKT_ASSERT_RC(ZKRC_EINVAL, group_join(&g, s, path, "x", NULL, 1, &o));
  ZKT_ASSERT_RC(ZKRC_ETOOBIG,
                group_join(&g, s, path, "x", "d", (size_t)1024 * 1024 + 1, &o));
  ZKT_ASSERT_RC(ZKRC_EINVAL, group_join(&g, s, path, "x", "d", 1, &uninit));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_new(&g, s, "/a//b", NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_new(&g, s, path, &uninit));
  CU_ASSERT_PTR_NULL(g);
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_wait_registered(NULL, 10));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_members(NULL, NULL, NULL));
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_FALSE(zkt_exists(zh, path));

  /* A watcher has no node: nothing to register or update. */
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_new(&g, s, path, NULL));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_wait_registered(g, 10));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_set_data(g, "d", 1, 1000));
  CU_ASSERT_FALSE(zkrc_group_is_registered(g));
  zkrc_group_free(g);
  CU_ASSERT_FALSE(zkt_exists(zh, path));

  /* The longest id, and bad updates of a member. */
  long_id[ZKRC_GROUP_ID_MAX] = '\0';
  g = join(s, path, long_id, "d", NULL);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(g, 10000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_set_data(g, NULL, 1, 1000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_set_data(g, "d", 1, -5));
  char *want = g_strdup_printf("%s=d", long_id);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(g, 10000));
  char *view = view_text(g);
  ASSERT_TEXT(view, want);
  g_free(view);
  g_free(want);
  zkrc_group_free(g);
  zkrc_group_free(NULL);
  CU_ASSERT_TRUE(wait_empty(zh, path));
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(path);
}

/* Curator's GroupMember and ours in one group: each is in the other's
 * view with its payload, updates travel both ways, and each one's leaving
 * is seen by the other. */
static void test_curator_group_member_both_ways(void) {
  char *path = zkt_path("group-curator");
  zkrc_session *s = zkt_session();
  seen ev;
  seen_init(&ev);
  peer *p = curator_peer("curator", "group", path, "java", "java-payload",
                         (char *)NULL);
  char *line = peer_expect(p, "joined", START_MS);
  CU_ASSERT_PTR_NOT_NULL(line);
  g_free(line);
  zkrc_group *g = join(s, path, "c-member", "c-payload", &ev);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(g, 10000));
  CU_ASSERT_TRUE(wait_event(&ev, "joined java java-payload"));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(g, 10000));
  char *view = view_text(g);
  ASSERT_TEXT(view, "c-member=c-payload java=java-payload");
  g_free(view);
  line = peer_ask(p, "await c-member=c-payload", "members");
  ASSERT_TEXT(line ? line : "", "c-member=c-payload java=java-payload");
  g_free(line);

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_set_data(g, "c2", 2, 10000));
  line = peer_ask(p, "await c-member=c2", "members");
  ASSERT_TEXT(line ? line : "", "c-member=c2 java=java-payload");
  g_free(line);
  line = peer_ask(p, "set java2", "set");
  CU_ASSERT_PTR_NOT_NULL(line);
  g_free(line);
  CU_ASSERT_TRUE(wait_event(&ev, "updated java java2"));

  zkrc_group_free(g);
  line = peer_ask(p, "awaitgone c-member", "members");
  g_free(line);
  /* Curator's view of its own data comes from its cache too: await it. */
  line = peer_ask(p, "await java=java2", "members");
  ASSERT_TEXT(line ? line : "", "java=java2");
  g_free(line);
  zkrc_group *w = watch(s, path, &ev);
  CU_ASSERT_TRUE(wait_event(&ev, "joined java java2"));
  CU_ASSERT_EQUAL(peer_finish(p, STEP_MS), 0);
  CU_ASSERT_TRUE(wait_event(&ev, "left java java2"));
  zkrc_group_free(w);
  zhandle_t *zh = zkt_raw();
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  zookeeper_close(zh);
  g_async_queue_unref(ev.lines);
  zkrc_session_close(s);
  g_free(path);
}

/* Issue 30: a member's data one byte over what its node's create can
 * carry, envelope included, is ZKRC_ETOOBIG at once (join and set_data),
 * nothing sent and no connection dropped; at the limit the member
 * registers and its node holds the data whole. */
static void test_size_limit(void) {
  char *path = zkt_path("group-size");
  const char *id = "a-member-id-long-enough-for-the-envelope-to-decide";
  char *node = g_strdup_printf("%s/%s", path, id);
  size_t max = ZKT_PACKET_MAX - zkt_create_envelope(node);
  CU_ASSERT_TRUE(max < ZKT_DATA_MAX);
  char *data = zkt_pattern(max + 1);
  zkrc_session *s = zkt_session();
  zhandle_t *zh = zkt_raw();
  uint64_t sent = zkt_requests_but_renewals(s), lost = zkt_suspensions(s);
  zkrc_group *g = NULL;
  ZKT_ASSERT_RC(ZKRC_ETOOBIG, group_join(&g, s, path, id, data, max + 1, NULL));
  CU_ASSERT_PTR_NULL(g);
  CU_ASSERT_EQUAL(zkt_requests_but_renewals(s), sent);
  CU_ASSERT_FALSE(zkt_exists(zh, path));
  ZKT_ASSERT_RC(ZKRC_OK, group_join(&g, s, path, id, data, max, NULL));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(g, 10000));
  CU_ASSERT_TRUE(zkt_data_is(zh, node, data, max));
  ZKT_ASSERT_RC(ZKRC_ETOOBIG, zkrc_group_set_data(g, data, max + 1, 5000));
  CU_ASSERT_TRUE(zkt_data_is(zh, node, data, max));
  CU_ASSERT_TRUE(zkrc_group_is_registered(g));
  CU_ASSERT_EQUAL(zkt_suspensions(s), lost);
  zkrc_group_free(g);
  zookeeper_close(zh);
  zkrc_session_close(s);
  g_free(data);
  g_free(node);
  g_free(path);
}

/* ========================================================== ending */

/* A plain handle to the member itself, past its proxy (which a test may
 * freeze). */
static zhandle_t *direct(void) {
  return zkt_raw_to(zkrc_ensemble_direct_connect_string(zkt_ensemble()));
}

/* A listener that ends its group with zkrc_group_free_async(): on the
 * event line free_on (NULL: never) it calls it from the callback; on the
 * line hold_on it holds the executor until release_hold().  `done` pushes
 * "done" and notes whether node (read through zh) still existed. */
typedef struct ender {
  seen lines;
  const char *free_on, *hold_on;
  int free_rc;
  zhandle_t *zh;
  const char *node; /* NULL: a watcher, no node */
  int node_at_done;
  GMutex mu;
  GCond cond;
  int hold;
} ender;

static void ender_init(ender *e, zhandle_t *zh, const char *node) {
  memset(e, 0, sizeof *e);
  seen_init(&e->lines);
  e->zh = zh;
  e->node = node;
  e->node_at_done = -1;
  g_mutex_init(&e->mu);
  g_cond_init(&e->cond);
}

static void ender_clear(ender *e) {
  g_async_queue_unref(e->lines.lines);
  g_mutex_clear(&e->mu);
  g_cond_clear(&e->cond);
}

static void ended(void *arg) {
  ender *e = arg;
  e->node_at_done = e->node ? zkt_exists(e->zh, e->node) : -1;
  g_async_queue_push(e->lines.lines, g_strdup("done"));
}

static void end_on(zkrc_group *g, const zkrc_group_event *ev, void *arg) {
  ender *e = arg;
  record(g, ev, &e->lines);
  char *line = event_line(ev);
  if (e->free_on && strcmp(line, e->free_on) == 0)
    e->free_rc = zkrc_group_free_async(g, ended, e);
  if (e->hold_on && strcmp(line, e->hold_on) == 0) {
    g_mutex_lock(&e->mu);
    while (e->hold)
      g_cond_wait(&e->cond, &e->mu);
    g_mutex_unlock(&e->mu);
  }
  g_free(line);
}

static void release_hold(ender *e) {
  g_mutex_lock(&e->mu);
  e->hold = 0;
  g_cond_broadcast(&e->cond);
  g_mutex_unlock(&e->mu);
}

/* A group on @p s at @p path told to @p e: member @p id, or a watcher. */
static zkrc_group *ender_group(zkrc_session *s, const char *path,
                               const char *id, ender *e) {
  zkrc_group_options o;
  zkrc_group_options_init(&o);
  o.on_event = end_on;
  o.event_arg = e;
  zkrc_group *g = NULL;
  ZKT_ASSERT_RC(ZKRC_OK,
                group_join(&g, s, path, id, id ? "d" : NULL, id ? 1 : 0, &o));
  return g;
}

/* Nothing more may come (300 ms). */
static void nothing_more(ender *e) {
  char *after = g_async_queue_timeout_pop(e->lines.lines, 300 * 1000);
  if (after)
    fprintf(stderr, "\nevent after done: %s\n", after);
  CU_ASSERT_PTR_NULL(after);
  g_free(after);
}

/* Skip lines until "done" (10 s at most): non-zero when it came.  Then
 * nothing more may come. */
static int done_then_nothing(ender *e) {
  int done = wait_event(&e->lines, "done");
  nothing_more(e);
  return done;
}

/* The next line, within 10 s ("" when none came; g_free it). */
static char *next_line(ender *e) {
  char *line = g_async_queue_timeout_pop(e->lines.lines, 10 * 1000 * 1000);
  return line ? line : g_strdup("");
}

/* free_async from the group's own callback: a member on its REGISTERED,
 * a watcher on its INITIALIZED.  It returns ZKRC_OK there; `done` comes
 * once the member's node is deleted, and nothing after. */
static void test_free_async_from_its_callback(void) {
  char *path = zkt_path("group-fa-self");
  char *node = g_strdup_printf("%s/m", path);
  zhandle_t *zh = direct();
  zkrc_session *s = zkt_session();
  ender em, ew;
  ender_init(&em, zh, node);
  ender_init(&ew, zh, NULL);
  em.free_on = "registered";
  ew.free_on = "initialized";
  ender_group(s, path, NULL, &ew);
  ender_group(s, path, "m", &em);
  CU_ASSERT_TRUE(done_then_nothing(&em));
  CU_ASSERT_TRUE(done_then_nothing(&ew));
  ZKT_ASSERT_RC(ZKRC_OK, em.free_rc);
  ZKT_ASSERT_RC(ZKRC_OK, ew.free_rc);
  CU_ASSERT_EQUAL(em.node_at_done, 0);
  ender_clear(&em);
  ender_clear(&ew);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(node);
  g_free(path);
}

/* free_async while the group's events wait behind one being told: a
 * watcher of a group with one member reads JOINED and INITIALIZED at once;
 * the executor is held in JOINED's callback, and free_async is called from
 * another thread.  INITIALIZED, queued before, is still told, then `done`,
 * and nothing after. */
static void test_free_async_tells_what_was_queued(void) {
  char *path = zkt_path("group-fa-order");
  char *node = g_strdup_printf("%s/a", path);
  zhandle_t *zh = direct();
  zkt_make_path(zh, path);
  CU_ASSERT_EQUAL(zoo_create(zh, node, "x", 1, &ZOO_OPEN_ACL_UNSAFE,
                             ZOO_EPHEMERAL, NULL, 0),
                  ZOK);
  zkrc_session *s = zkt_session();
  ender ew;
  ender_init(&ew, zh, NULL);
  ew.hold_on = "joined a x";
  ew.hold = 1;
  zkrc_group *w = ender_group(s, path, NULL, &ew);
  char *line = next_line(&ew);
  ASSERT_TEXT(line, "joined a x"); /* its callback holds the executor now */
  g_free(line);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_free_async(w, ended, &ew));
  release_hold(&ew);
  line = next_line(&ew);
  ASSERT_TEXT(line, "initialized");
  g_free(line);
  line = next_line(&ew);
  ASSERT_TEXT(line, "done");
  g_free(line);
  nothing_more(&ew);
  ender_clear(&ew);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(node);
  g_free(path);
}

/* free_async of a member and a watcher before the session's close (done
 * with the member's node deleted) and after it (CLOSED told, then done),
 * and free after it, at once; nothing after done.  Bad input: ZKRC_EINVAL
 * and nothing changed. */
static void test_free_async_around_close(void) {
  char *path = zkt_path("group-fa-close");
  char *n1 = g_strdup_printf("%s/m1", path),
       *n2 = g_strdup_printf("%s/m2", path);
  zhandle_t *zh = direct();
  zkrc_session *s = zkt_session();
  ender e1, w1, e2, w2, e3;
  ender_init(&e1, zh, n1);
  ender_init(&w1, zh, NULL);
  ender_init(&e2, zh, n2);
  ender_init(&w2, zh, NULL);
  ender_init(&e3, zh, NULL);
  zkrc_group *m1 = ender_group(s, path, "m1", &e1);
  zkrc_group *m2 = ender_group(s, path, "m2", &e2);
  zkrc_group *m3 = ender_group(s, path, "m3", &e3);
  zkrc_group *g1 = ender_group(s, path, NULL, &w1);
  zkrc_group *g2 = ender_group(s, path, NULL, &w2);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(m1, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(m2, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(m3, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(g1, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(g2, 10000));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_free_async(NULL, ended, &e1));
  ZKT_ASSERT_RC(ZKRC_EINVAL, zkrc_group_free_async(m1, NULL, &e1));
  CU_ASSERT_TRUE(zkrc_group_is_registered(m1));

  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_free_async(m1, ended, &e1));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_free_async(g1, ended, &w1));
  CU_ASSERT_TRUE(done_then_nothing(&e1));
  CU_ASSERT_TRUE(done_then_nothing(&w1));
  CU_ASSERT_EQUAL(e1.node_at_done, 0);
  zkrc_session_close(s);
  CU_ASSERT_TRUE(wait_event(&e2.lines, "closed ZKRC_ECLOSED"));
  CU_ASSERT_TRUE(wait_event(&w2.lines, "closed ZKRC_ECLOSED"));
  CU_ASSERT_TRUE(wait_event(&e3.lines, "closed ZKRC_ECLOSED"));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_free_async(m2, ended, &e2));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_free_async(g2, ended, &w2));
  CU_ASSERT_TRUE(done_then_nothing(&e2));
  CU_ASSERT_TRUE(done_then_nothing(&w2));
  CU_ASSERT_EQUAL(e2.node_at_done, 0); /* the close took it */
  int64_t t0 = zkt_now_ms();
  zkrc_group_free(m3);
  CU_ASSERT_TRUE(zkt_now_ms() - t0 < 500);
  CU_ASSERT_EQUAL(g_async_queue_length(e3.lines.lines), 0);
  CU_ASSERT_EQUAL(zkt_nodes_left(zh, path), 0);
  ender_clear(&e1);
  ender_clear(&w1);
  ender_clear(&e2);
  ender_clear(&w2);
  ender_clear(&e3);
  zookeeper_close(zh);
  g_free(n1);
  g_free(n2);
  g_free(path);
}

/* The connection freezes (nothing passes the proxy; the client does not
 * know yet): zkrc_group_free and zkrc_group_free_async return at once,
 * well under the session timeout, the delete's reply impossible
 * meanwhile; the nodes are still there.  Once the connection flows again,
 * `done` comes with the node gone, and the other node goes too, on the
 * same ZooKeeper session (the deletes, not an expiry). */
static void test_free_while_frozen(void) {
  char *path = zkt_path("group-frozen");
  char *n1 = g_strdup_printf("%s/m1", path),
       *n2 = g_strdup_printf("%s/m2", path);
  zhandle_t *zh = direct();
  zkrc_session *s = zkt_session();
  ender e1, e2;
  ender_init(&e1, zh, n1);
  ender_init(&e2, zh, n2);
  zkrc_group *m1 = ender_group(s, path, "m1", &e1);
  zkrc_group *m2 = ender_group(s, path, "m2", &e2);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(m1, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_registered(m2, 10000));
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_wait_initialized(m1, 10000));
  int64_t sid = zkrc_session_id(s);
  CU_ASSERT_EQUAL_FATAL(
      zkrc_proxy_blackhole(zkt_ensemble(), 0, 4 * ZKT_SESSION_TIMEOUT_MS), 0);
  int64_t t0 = zkt_now_ms();
  zkrc_group_free(m1);
  ZKT_ASSERT_RC(ZKRC_OK, zkrc_group_free_async(m2, ended, &e2));
  int64_t took = zkt_now_ms() - t0;
  printf("\n    free and free_async took %lld ms with the connection frozen\n",
         (long long)took);
  CU_ASSERT_TRUE(took < ZKT_SESSION_TIMEOUT_MS / 4);
  CU_ASSERT_TRUE(zkt_exists(zh, n1));
  CU_ASSERT_TRUE(zkt_exists(zh, n2));
  CU_ASSERT_EQUAL(zkrc_proxy_blackhole(zkt_ensemble(), 0, 0), 0);
  CU_ASSERT_TRUE(done_then_nothing(&e2));
  CU_ASSERT_EQUAL(e2.node_at_done, 0);
  CU_ASSERT_TRUE(
      zkt_wait_children_or_gone(zh, path, 0, 3 * ZKT_SESSION_TIMEOUT_MS));
  CU_ASSERT_EQUAL(zkrc_session_id(s), sid);
  ender_clear(&e1);
  ender_clear(&e2);
  zkrc_session_close(s);
  zookeeper_close(zh);
  g_free(n1);
  g_free(n2);
  g_free(path);
}

static void add_suites(void) {
  zkt_configure(1, 1); /* a proxy, to freeze the connection */
  ZKT_SUITE(
      "group",
      {"join, update, leave seen by others", test_join_update_leave_seen},
      {"view equals the servers' children", test_view_equals_servers},
      {"re-created after expiry, LOST then REGISTERED",
       test_recreated_after_expiry},
      {"id held by another session", test_id_held_by_other_session},
      {"leave from the listener", test_leave_from_listener},
      {"session closed for good", test_closed_for_good},
      {"bad input changes nothing", test_bad_input},
      {"curator group member both ways", test_curator_group_member_both_ways},
      {"size limit, envelope included", test_size_limit},
      {"freed after close", test_freed_after_close});
  ZKT_SUITE(
      "group ending",
      {"free_async from its own callback", test_free_async_from_its_callback},
      {"free_async tells what was queued, then done",
       test_free_async_tells_what_was_queued},
      {"free_async and free around the session's close",
       test_free_async_around_close},
      {"free while the connection is frozen", test_free_while_frozen});
}

int main(void) { return zkt_run("test_group", add_suites); }
