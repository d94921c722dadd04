/* String-keyed hash map (open addressing, linear probing, tombstones).
 * Keys are copied; values are the caller's. Iteration order is the slot
 * order, so callers that need determinism sort what they collect. It
 * grows a few entries at each key added rather than all at once, so no
 * single call pays for the whole map. */
#ifndef CS_STRMAP_H
#define CS_STRMAP_H

#include <stddef.h>

typedef struct strmap strmap;

strmap *strmap_new(void);
/* Calls free_val on every value (when given) and frees the map. */
void strmap_free(strmap *m, void (*free_val)(void *));
void *strmap_get(const strmap *m, const char *key);
/* Inserts or replaces; returns the previous value or NULL. */
void *strmap_put(strmap *m, const char *key, void *val);
/* A lookup that may insert, with one hash and one probe: the slot of
 * key's value, the key added with a NULL value when absent (the caller
 * sets it). *key_copy: the map's copy of the key, valid until the entry
 * is deleted or the map freed, for a value that wants its key (key_copy
 * NULL: not wanted). The slot pointer is valid until the next insertion. */
void **strmap_slot(strmap *m, const char *key, const char **key_copy);
/* Removes and returns the value, or NULL when absent. */
void *strmap_del(strmap *m, const char *key);
size_t strmap_len(const strmap *m);
/* Walks live entries: *pos starts at 0; returns 0 when done. Adding a key
 * during a walk may move entries (the walk may then miss or repeat
 * some); lookups, replacing a value and deleting do not. */
int strmap_next(const strmap *m, size_t *pos, const char **key, void **val);

#endif
