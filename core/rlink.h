/* A reconnecting asynchronous Redis connection on the event loop: the
 * store's and the journal's link to Redis. It owns the connection only:
 * the address, the hiredis context, the retry timer and its back-off, the
 * up/down state. Commands and what to send again are the owner's.
 *
 * Contract:
 * - Commands are preformatted (Redis's protocol) and go out in the order
 *   given. Their replies come back in that order, one per command, to
 *   hooks.reply. A command sent on a connection that is lost gets no reply
 *   at all (its reply, if one still came, is dropped here): after
 *   hooks.down the owner counts it as not sent.
 * - hooks.ready says the owner may send what is pending: a retry opened a
 *   new connection (hiredis holds commands until it is up), or a retry the
 *   owner asked for fell due on a live one.
 * - Lost or refused, the link tries again after a back-off that doubles
 *   from 100 ms to 5 s, logging a warning under `who` each time; the
 *   back-off starts again from 100 ms only when the owner says Redis did
 *   what was asked (rlink_settle).
 * - No hook runs from rlink_new or rlink_free. */
#ifndef CS_RLINK_H
#define CS_RLINK_H

#include <hiredis/hiredis.h>
#include <stddef.h>

struct event_base;

typedef struct rlink rlink;

typedef struct rlink_hooks {
    /* Required. reply is never NULL; hiredis frees it on return. */
    void (*ready)(void *arg);
    void (*reply)(void *arg, redisReply *reply);
    /* Optional: the connection is up (Redis accepted it). */
    void (*up)(void *arg);
    /* Optional: the connection was lost. */
    void (*down)(void *arg);
} rlink_hooks;

/* addr as core/redisaddr.h reads it; who: the log subsystem ("store").
 * Connects in the background; hooks and arg are the owner's. */
rlink *rlink_new(struct event_base *base, const char *addr, const char *who,
                 const rlink_hooks *hooks, void *arg);
/* Replies still pending are dropped, none reaches the owner. */
void rlink_free(rlink *l);

/* Queues one command: 0, or -1 when there is no connection to take it
 * (the owner keeps it and sends it on ready). */
int rlink_send(rlink *l, const char *buf, size_t len);
/* Whether the connection is up. */
int rlink_up(const rlink *l);
/* Redis refused what was sent: ready runs again after the back-off. */
void rlink_retry(rlink *l);
/* Redis did what was asked: the next back-off is the shortest. */
void rlink_settle(rlink *l);

#endif
