/*
 * The directories a session has recently seen exist (dirtable.h): a hash
 * table of paths, each with its link in a queue kept in order of use, so
 * that the least recently used goes when the table is full.
 */
#include "config.h"

#include <string.h>

#include "dirtable.h"

struct zkrc__dirtable {
  GMutex mu;
  unsigned capacity;
  GHashTable *links; /* path → its GList link in lru (the key is link->data) */
  GQueue lru;        /* of char* paths, most recently used first */
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

/* Is @p path in the table?  A hit makes it the most recently used. */
static gboolean lookup_locked(zkrc__dirtable *t, const char *path) {
  GList *link = g_hash_table_lookup(t->links, path);
  if (link == NULL)
    return FALSE;
  g_queue_unlink(&t->lru, link);
  g_queue_push_head_link(&t->lru, link);
  return TRUE;
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

static void add_locked(zkrc__dirtable *t, const char *path) {
  if (lookup_locked(t, path))
    return;
  while (t->lru.length >= t->capacity)
    remove_locked(t, g_queue_peek_tail(&t->lru));
  g_queue_push_head(&t->lru, g_strdup(path));
  g_hash_table_insert(t->links, t->lru.head->data, t->lru.head);
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

unsigned zkrc__dirtable_size(zkrc__dirtable *t) {
  g_mutex_lock(&t->mu);
  unsigned n = t->lru.length;
  g_mutex_unlock(&t->mu);
  return n;
}
