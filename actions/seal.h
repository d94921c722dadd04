/* The seal on a journal entry (docs/ACTIONS.md, "The journal's seal"): an
 * HMAC-SHA256, under a key only the executor holds, over the action id and
 * every field of its entry that decides what runs: the request, state,
 * phase, step, the step running, who decided, the job a step made, and
 * the playbook with its version. Redis holds the entry; the seal says the
 * executor wrote it so. An entry whose seal does not verify is never run.
 *
 * Without a key of its own the executor makes one for the process: its
 * entries verify while it runs, and those of an earlier process do not. */
#ifndef CS_SEAL_H
#define CS_SEAL_H

#include <stddef.h>

#include "core/err.h"

/* The shortest key taken, in bytes (`openssl rand -hex 32` gives 64). */
#define SEAL_KEY_MIN 32
/* The seal as hex digits, with its NUL. */
#define SEAL_HEX 65

/* The sealed fields, in the order they are sealed. */
typedef enum {
    SEAL_REQ, SEAL_STATE, SEAL_PHASE, SEAL_STEP, SEAL_RUNNING, SEAL_WHO,
    SEAL_NEW_JOB, SEAL_PLAYBOOK, SEAL__COUNT
} seal_field;

/* An entry's sealed fields as journaled; NULL: not in the entry. */
typedef struct seal_entry {
    char *v[SEAL__COUNT];
} seal_entry;

typedef struct seal seal;

/* key: len bytes, at least SEAL_KEY_MIN; NULL: one made at random for
 * this process alone. */
seal *seal_new(const char *key, size_t len, cs_err *err);
void seal_free(seal *s);
/* Whether the key outlives the process (it was given). */
int seal_kept(const seal *s);

/* The field's index, or -1 when the seal does not cover it. */
int seal_field_of(const char *name);
/* Sets field f to v (copied; NULL: absent). */
void seal_entry_set(seal_entry *e, int f, const char *v);
void seal_entry_clear(seal_entry *e);

/* The seal of entry e of action id, as hex. */
void seal_sign(const seal *s, const char *id, const seal_entry *e,
               char out[SEAL_HEX]);
/* 0 when mac is e's seal; -1 when not (compared in constant time). */
int seal_verify(const seal *s, const char *id, const seal_entry *e,
                const char *mac);

#endif
