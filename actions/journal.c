#include "actions/journal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/mem.h"
#include "core/rlink.h"

typedef struct jcmd {
    char *buf;
    long long len;
    jr_reply_fn fn;
    void *arg;
    int wait; /* a write that a WAIT follows */
} jcmd;

/* A write's reply, kept until its WAIT answers. */
typedef struct held {
    int set, type;
    long long integer;
    char *str;
} held;

struct journal {
    rlink *link;
    jcmd *q;          /* FIFO: [head, sent) in flight, [sent, tail) waiting */
    size_t head, sent, tail, cap;
    held h;           /* the head's reply, when it waits for its WAIT */
};

/* What the executor sends that changes nothing: the rest are writes. */
static int is_read(const char *verb)
{
    static const char *const reads[] = {"HGET", "HGETALL", "HMGET", "ZRANGE",
                                        "ZRANGEBYSCORE", "ZSCORE", "ZCARD",
                                        "EXISTS", "PING"};

    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++)
        if (!strcasecmp(verb, reads[i]))
            return 1;
    return 0;
}

static void unhold(journal *j)
{
    free(j->h.str);
    memset(&j->h, 0, sizeof j->h);
}

/* The oldest command in flight is answered: its callback, with r. Redis
 * did what was asked (with its replicas, when they are waited for): the
 * back-off starts again from the shortest. */
static void deliver(journal *j, redisReply *r)
{
    jcmd c = j->q[j->head++];

    rlink_settle(j->link);
    if (c.fn)
        c.fn(c.arg, r);
    free(c.buf);
    if (j->head == j->tail)
        j->head = j->sent = j->tail = 0;
}

/* Replies come in the order sent: this one is the oldest in flight's, or
 * the WAIT's after it. */
static void on_reply(void *arg, redisReply *r)
{
    journal *j = arg;
    redisReply kept;

    if (!j->q[j->head].wait) {
        deliver(j, r);
        return;
    }
    if (!j->h.set) {
        j->h = (held){1, r->type, r->integer, r->str ? xstrdup(r->str) : NULL};
        return;
    }
    /* A refused write put nothing anywhere: no replica to wait for. */
    if (j->h.type != REDIS_REPLY_ERROR && !rlink_waited(j->link, r)) {
        rlink_reconnect(j->link, "has a journal write on too few replicas");
        return;
    }
    kept = (redisReply){.type = j->h.type, .integer = j->h.integer,
                        .str = j->h.str,
                        .len = j->h.str ? strlen(j->h.str) : 0};
    deliver(j, &kept);
    unhold(j);
}

static void send_waiting(void *arg)
{
    journal *j = arg;

    while (j->sent < j->tail) {
        jcmd *c = &j->q[j->sent];
        if (rlink_send(j->link, c->buf, (size_t)c->len) != 0 ||
            (c->wait && rlink_send_wait(j->link) != 1))
            return; /* the link is down or going: sent again on ready */
        j->sent++;
    }
}

static void on_down(void *arg)
{
    journal *j = arg;

    j->sent = j->head; /* unanswered commands go out again */
    unhold(j);
}

static const rlink_hooks hooks = {
    .ready = send_waiting, .reply = on_reply, .down = on_down};

journal *jr_new(struct event_base *base, const rtarget *t, cs_err *err)
{
    journal *j = calloc(1, sizeof *j);

    if (!j) {
        cs_err_set(err, "out of memory");
        return NULL;
    }
    j->link = rlink_new(base, t, "journal", &hooks, j);
    return j;
}

void jr_cmd(journal *j, jr_reply_fn fn, void *arg, int argc, const char **argv)
{
    jcmd c = {.fn = fn, .arg = arg};

    c.len = redisFormatCommandArgv(&c.buf, argc, argv, NULL);
    if (c.len < 0)
        abort();
    c.wait = rlink_waits(j->link) > 0 && !is_read(argv[0]);
    if (j->tail == j->cap) {
        if (j->head > 0) { /* slide the live part to the front */
            memmove(j->q, j->q + j->head, (j->tail - j->head) * sizeof *j->q);
            j->tail -= j->head;
            j->sent -= j->head;
            j->head = 0;
        }
        if (j->tail == j->cap) {
            j->cap = j->cap ? j->cap * 2 : 64;
            j->q = xrealloc(j->q, j->cap * sizeof *j->q);
        }
    }
    j->q[j->tail++] = c;
    send_waiting(j);
}

unsigned long jr_pending(const journal *j)
{
    return (unsigned long)(j->tail - j->head);
}

int jr_connected(const journal *j)
{
    return rlink_up(j->link);
}

void jr_free(journal *j)
{
    if (!j)
        return;
    rlink_free(j->link); /* first: no reply may come during the loop below */
    unhold(j);
    for (size_t i = j->head; i < j->tail; i++) {
        if (j->q[i].fn)
            j->q[i].fn(j->q[i].arg, NULL);
        free(j->q[i].buf);
    }
    free(j->q);
    free(j);
}
