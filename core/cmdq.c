#include "core/cmdq.h"

#include <string.h>

#include "core/mem.h"

/* lens[head, n): each command's length, oldest first: the first nflight
 * in flight, the rest held, whose bytes are buf[off, len) in order. */
struct cmdq {
    size_t window, flight;
    size_t *lens;
    size_t head, n, nflight, capl;
    char *buf;
    size_t off, len, cap;
};

cmdq *cq_new(size_t window)
{
    cmdq *q = xcalloc(1, sizeof *q);

    q->window = window ? window : 1;
    return q;
}

void cq_free(cmdq *q)
{
    if (!q)
        return;
    free(q->lens);
    free(q->buf);
    free(q);
}

size_t cq_held(const cmdq *q)
{
    return q->n - q->head - q->nflight;
}

size_t cq_flight(const cmdq *q)
{
    return q->flight;
}

/* Room for one more length, the answered ones dropped first when they
 * are half the array. */
static void push_len(cmdq *q, size_t len)
{
    if (q->head && q->head * 2 >= q->n) {
        memmove(q->lens, q->lens + q->head, (q->n - q->head) * sizeof *q->lens);
        q->n -= q->head;
        q->head = 0;
    }
    if (q->n == q->capl) {
        q->capl = q->capl ? q->capl * 2 : 64;
        q->lens = xrealloc(q->lens, q->capl * sizeof *q->lens);
    }
    q->lens[q->n++] = len;
}

int cq_may_send(const cmdq *q)
{
    return cq_held(q) == 0 && q->flight < q->window;
}

void cq_sent(cmdq *q, size_t len)
{
    if (cq_held(q) == 0) {
        push_len(q, len);
    } else { /* the first held one, given by cq_next */
        q->off += len;
        if (q->off == q->len)
            q->off = q->len = 0;
    }
    q->nflight++;
    q->flight += len;
}

void cq_hold(cmdq *q, const char *buf, size_t len)
{
    if (q->off && q->off * 2 >= q->len) {
        memmove(q->buf, q->buf + q->off, q->len - q->off);
        q->len -= q->off;
        q->off = 0;
    }
    if (q->len + len > q->cap) {
        size_t cap = q->cap ? q->cap : 4096;
        while (cap < q->len + len)
            cap *= 2;
        q->buf = xrealloc(q->buf, cap);
        q->cap = cap;
    }
    memcpy(q->buf + q->len, buf, len);
    q->len += len;
    push_len(q, len);
}

int cq_next(cmdq *q, const char **buf, size_t *len)
{
    if (cq_held(q) == 0 || q->flight >= q->window)
        return 0;
    *buf = q->buf + q->off;
    *len = q->lens[q->head + q->nflight];
    return 1;
}

void cq_answered(cmdq *q)
{
    if (!q->nflight)
        return;
    q->flight -= q->lens[q->head++];
    q->nflight--;
    if (q->head == q->n)
        q->head = q->n = 0;
}

void cq_clear(cmdq *q)
{
    q->head = q->n = q->nflight = 0;
    q->flight = 0;
    q->off = q->len = 0;
}
