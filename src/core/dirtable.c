/*
 * The directories a session has recently seen exist (dirtable.h): a hash
 * table of paths, each with its link in a queue kept in order of use, so
 * that the least recently used goes when the table is full.  Each entry
 * also keeps what the last first touch of one of its children found.
 */
#include "config.h"

#include <string.h>

#include "core/dirtable.h"

/* A directory known to exist. */
typedef struct entry {
  /* The last child directory first touched in it was missing. */
  gboolean children_fresh;
  char path[]; /* the key */
} entry;

struct zkrc__dirtable {
  GMutex mu;
  unsigned capacity;
  GHashTable *links; /* path → its GList link in lru (of an entry) */
  GQueue lru;        /* of entry*, most recently used first */
};

zkrc__dirtable *zkrc__dirtable_new(unsigned capacity) {
  zkrc__dirtable *t = g_new0(zkrc__dirtable, 1);
  g_mutex_init(&t->mu);
  t->capacity = MAX(capacity, 1);
  t->links = g_hash_table_new(g_str_hash, g_str_equal);
  g_queue_init(&t->lru);
  return t;
}

void zkrc__dirtable_free(zkrc__dirtable *t) {
  if (t == NULL)
    return;
  g_hash_table_destroy(t->links);
  g_queue_clear_full(&t->lru, g_free);
  g_mutex_clear(&t->mu);
  g_free(t);
}

/* @p path's entry, or NULL.  A hit makes it the most recently used. */
static entry *lookup_locked(zkrc__dirtable *t, const char *path) {
  GList *link = g_hash_table_lookup(t->links, path);
  if (link == NULL)
    return NULL;
  g_queue_unlink(&t->lru, link);
  g_queue_push_head_link(&t->lru, link);
  return link->data;
}

/* The table without @p path (a no-op when it is not there). */
static void remove_locked(zkrc__dirtable *t, const char *path) {
  GList *link = g_hash_table_lookup(t->links, path);
  if (link == NULL)
    return;
  g_hash_table_remove(t->links, path);
  g_queue_unlink(&t->lru, link);
  g_free(link->data);
  g_list_free_1(link);
}

/* @p path's entry, made the most recently used (added if need be). */
static entry *add_locked(zkrc__dirtable *t, const char *path) {
  entry *e = lookup_locked(t, path);
  if (e)
    return e;
  while (t->lru.length >= t->capacity)
    remove_locked(t, ((entry *)g_queue_peek_tail(&t->lru))->path);
  size_t len = strlen(path);
  e = g_malloc(sizeof *e + len + 1);
  e->children_fresh = FALSE;
  memcpy(e->path, path, len + 1);
  g_queue_push_head(&t->lru, e);
  g_hash_table_insert(t->links, e->path, t->lru.head);
  return e;
}

size_t zkrc__dirtable_known(zkrc__dirtable *t, const char *dir) {
  char *path = g_strdup(dir);
  size_t known = 0;
  g_mutex_lock(&t->mu);
  /* From the directory up: a fresh lock's directory is usually missing and
   * its parent known, so this stops after two lookups. */
  for (char *end = path + strlen(path); end > path;) {
    *end = '\0';
    if (lookup_locked(t, path)) {
      known = (size_t)(end - path);
      break;
    }
    end = strrchr(path, '/');
  }
  g_mutex_unlock(&t->mu);
  g_free(path);
  return known;
}

void zkrc__dirtable_note(zkrc__dirtable *t, const char *dir) {
  char *path = g_strdup(dir);
  g_mutex_lock(&t->mu);
  /* The directory last, so that it is the most recently used. */
  for (char *end = strchr(path + 1, '/'); end; end = strchr(end + 1, '/')) {
    *end = '\0';
    add_locked(t, path);
    *end = '/';
  }
  add_locked(t, path);
  g_mutex_unlock(&t->mu);
  g_free(path);
}

void zkrc__dirtable_forget(zkrc__dirtable *t, const char *dir) {
  char *path = g_strdup(dir);
  g_mutex_lock(&t->mu);
  for (char *end = path + strlen(path); end > path; end = strrchr(path, '/')) {
    *end = '\0';
    remove_locked(t, path);
  }
  g_mutex_unlock(&t->mu);
  g_free(path);
}

/* @p dir's parent, "/" for a top-level directory.  g_free it.  ("/" is
 * an entry only for what its children were: zkrc__dirtable_known() never
 * looks it up, the root always exists.) */
static char *parent_of(const char *dir) {
  gsize len = (gsize)(strrchr(dir, '/') - dir);
  return len ? g_strndup(dir, len) : g_strdup("/");
}

gboolean zkrc__dirtable_children_fresh(zkrc__dirtable *t, const char *dir) {
  char *parent = parent_of(dir);
  g_mutex_lock(&t->mu);
  entry *e = lookup_locked(t, parent);
  gboolean fresh = e && e->children_fresh;
  g_mutex_unlock(&t->mu);
  g_free(parent);
  return fresh;
}

void zkrc__dirtable_note_first_touch(zkrc__dirtable *t, const char *dir,
                                     gboolean was_missing) {
  char *parent = parent_of(dir);
  g_mutex_lock(&t->mu);
  add_locked(t, parent)->children_fresh = was_missing;
  g_mutex_unlock(&t->mu);
  g_free(parent);
}

unsigned zkrc__dirtable_size(zkrc__dirtable *t) {
  g_mutex_lock(&t->mu);
  unsigned n = t->lru.length;
  g_mutex_unlock(&t->mu);
  return n;
}
