/* The executor's memory in Redis: one hash per action (its request, state
 * and the step it is at), the budget ledger and the approvals waiting.
 * Commands go out in order on the reconnecting link (core/rlink.h); while
 * Redis is away they wait and are sent again on reconnect, so every
 * callback fires once, with the reply, in the order commands were given.
 * Writes are idempotent (HSET of a state, ZADD and ZREM of a member), so a
 * resend changes nothing, and neither does sending again a run of
 * commands already applied: the last of each run wins, as it did.
 *
 * With redis.wait_replicas N, a write is followed by WAIT N, and its
 * callback runs only once N replicas have it: a step never starts on a
 * journal entry a failover could take back. Too few: the connection is
 * made again (the master may have changed) and everything unanswered goes
 * again. Such a write's callback gets a copy of its reply without its
 * elements (a write's reply is a status, an integer or an error). */
#ifndef CS_JOURNAL_H
#define CS_JOURNAL_H

#include <hiredis/hiredis.h>

#include "core/err.h"
#include "core/rtarget.h"

struct event_base;

typedef struct journal journal;

/* t is copied. Connects in the background. */
journal *jr_new(struct event_base *base, const rtarget *t, cs_err *err);
void jr_free(journal *j);

/* reply is NULL only when the journal is freed with the command pending. */
typedef void (*jr_reply_fn)(void *arg, redisReply *reply);

/* Queues one command (hiredis' argv form); fn may be NULL. */
void jr_cmd(journal *j, jr_reply_fn fn, void *arg, int argc, const char **argv);
/* Commands sent and not yet answered, and queued. */
unsigned long jr_pending(const journal *j);
int jr_connected(const journal *j);

#endif
