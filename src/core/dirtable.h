/*
 * The directories a session has recently seen exist: a bounded table that
 * lets a contender's create skip the container creates of directories that
 * are there (each one, refused with NodeExists, would still cost the
 * ensemble a proposal: ZooKeeper logs a failed write as an error
 * transaction).  An entry may be stale (a container is removed once it is
 * empty): the create that fails with NoNode forgets it, and the next
 * attempt creates the directories again.  So the table only ever saves
 * proposals; it never decides anything that matters for correctness.
 *
 * Thread-safe: its own mutex, the last in the lock order of
 * session_private.h (taken with any other held, none taken under it).
 */
#ifndef ZKRC_DIRTABLE_H
#define ZKRC_DIRTABLE_H

#include <stddef.h>

#include <glib.h>

typedef struct zkrc__dirtable zkrc__dirtable;

/* Directories remembered by a session's table; the least recently used
 * go first. */
#define ZKRC__DIRTABLE_CAPACITY 1024

/* A table that holds at most @p capacity directories (at least 1). */
zkrc__dirtable *zkrc__dirtable_new(unsigned capacity);
void zkrc__dirtable_free(zkrc__dirtable *t);

/* How much of absolute path @p dir is known to exist: the length of the
 * longest known ancestor-or-self of @p dir ("/a/b" in "/a/b/c": 4), 0 when
 * none is.  strlen(dir) means that @p dir itself is known. */
size_t zkrc__dirtable_known(zkrc__dirtable *t, const char *dir);

/* @p dir exists (a node was just created in it): remember it and its
 * ancestors. */
void zkrc__dirtable_note(zkrc__dirtable *t, const char *dir);

/* @p dir, or one of its ancestors, may be gone: forget them all. */
void zkrc__dirtable_forget(zkrc__dirtable *t, const char *dir);

/* Whether to presume that @p dir, not known to exist, is missing: what the
 * last first touch of a sibling found (FALSE when there was none).  A
 * session usually either takes locks in places others use (the directory
 * exists: create our node alone, 1 proposal) or makes fresh ones (container
 * create first, 2 proposals); guessing wrong costs one proposal either way
 * (a refused container create, or a create refused with NoNode). */
gboolean zkrc__dirtable_children_fresh(zkrc__dirtable *t, const char *dir);

/* The first create in @p dir, a directory not known to exist, found it
 * @p was_missing: remember that for its siblings. */
void zkrc__dirtable_note_first_touch(zkrc__dirtable *t, const char *dir,
                                     gboolean was_missing);

/* Directories in the table (for tests). */
unsigned zkrc__dirtable_size(zkrc__dirtable *t);

#endif /* ZKRC_DIRTABLE_H */
