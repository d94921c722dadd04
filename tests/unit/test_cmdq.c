/* The pipeline window: commands go at once while the bytes in flight
 * leave room, wait otherwise, and come out in order as answers make room;
 * a command larger than the window still goes alone; a loss clears all.
 * Then a long random run against a plain model of the same queue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/cmdq.h"

/* Sends what the window allows: cq_next then cq_sent, as the link does.
 * The commands sent are appended to out (their text). */
static int drain(cmdq *q, char *out, size_t cap)
{
    const char *b;
    size_t len;
    int n = 0;

    while (cq_next(q, &b, &len)) {
        size_t at = strlen(out);
        REQUIRE(at + len < cap);
        memcpy(out + at, b, len);
        out[at + len] = '\0';
        cq_sent(q, len);
        n++;
    }
    return n;
}

static void window(void)
{
    cmdq *q = cq_new(10);
    char out[256] = "";

    CHECK(cq_may_send(q));
    cq_sent(q, 6); /* "aaaaaa" went at once */
    CHECK(cq_may_send(q));
    cq_sent(q, 6); /* 12 in flight: past the window by one command */
    CHECK_INT((int)cq_flight(q), 12);
    CHECK(!cq_may_send(q));
    cq_hold(q, "bbb", 3);
    cq_hold(q, "cccc", 4);
    CHECK_INT((int)cq_held(q), 2);
    CHECK_INT(drain(q, out, sizeof out), 0); /* no room yet */
    /* a command arriving while others wait waits behind them */
    cq_answered(q);
    CHECK(!cq_may_send(q));
    CHECK_INT(drain(q, out, sizeof out), 2); /* 6 + 3 + 4 */
    CHECK_STR(out, "bbbcccc");
    CHECK_INT((int)cq_flight(q), 13);
    CHECK_INT((int)cq_held(q), 0);
    cq_hold(q, "dd", 2);
    cq_answered(q); /* the second 6 */
    cq_answered(q); /* bbb */
    CHECK_INT((int)cq_flight(q), 4);
    CHECK_INT(drain(q, out, sizeof out), 1);
    CHECK_STR(out, "bbbccccdd");
    /* larger than the window: still goes, alone */
    cq_answered(q);
    cq_answered(q);
    CHECK_INT((int)cq_flight(q), 0);
    cq_hold(q, "eeeeeeeeeeeeeeeeeeee", 20);
    cq_hold(q, "f", 1);
    CHECK_INT(drain(q, out, sizeof out), 1);
    CHECK_STR(out, "bbbccccddeeeeeeeeeeeeeeeeeeee");
    cq_answered(q);
    CHECK_INT(drain(q, out, sizeof out), 1);
    /* an answer with nothing in flight changes nothing */
    cq_answered(q);
    cq_answered(q);
    CHECK_INT((int)cq_flight(q), 0);
    /* a loss: nothing in flight, nothing waits */
    cq_sent(q, 9);
    cq_sent(q, 9);
    cq_hold(q, "g", 1);
    cq_clear(q);
    CHECK_INT((int)cq_flight(q), 0);
    CHECK_INT((int)cq_held(q), 0);
    CHECK(cq_may_send(q));
    out[0] = '\0';
    CHECK_INT(drain(q, out, sizeof out), 0);
    cq_free(q);
}

/* Random sends, holds and answers against a model: every command sent
 * exactly once, in order, with its own bytes; the flight never past the
 * window but by the one command that opened it. */
static void model(void)
{
    enum { N = 200000, WIN = 4096 };
    cmdq *q = cq_new(WIN);
    size_t *lens = malloc(N * sizeof *lens);
    size_t next = 0, sent = 0, answered = 0, flight = 0;
    unsigned seed = 12345;
    int bad = 0;
    char cmd[700];

    REQUIRE(lens != NULL);
    while (answered < N) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = (seed >> 16) % 100;
        if (r < 55 && next < N) { /* a new command: id then padding */
            size_t len = 8 + (seed >> 8) % 600;
            snprintf(cmd, sizeof cmd, "%08zx", next);
            memset(cmd + 8, 'p', len - 8);
            lens[next++] = len;
            if (cq_may_send(q)) {
                if (sent != next - 1)
                    bad++;
                sent++;
                flight += len;
                cq_sent(q, len);
            } else {
                cq_hold(q, cmd, len);
            }
        } else if (sent > answered) {
            flight -= lens[answered++];
            cq_answered(q);
        }
        const char *b;
        size_t len;
        while (cq_next(q, &b, &len)) {
            char id[9];
            memcpy(id, b, 8);
            id[8] = '\0';
            if (strtoul(id, NULL, 16) != sent || len != lens[sent] ||
                flight >= WIN)
                bad++;
            for (size_t i = 8; i < len; i++)
                if (b[i] != 'p') {
                    bad++;
                    break;
                }
            flight += len;
            sent++;
            cq_sent(q, len);
        }
        if (cq_flight(q) != flight || cq_held(q) != next - sent)
            bad++;
        if (next == N && sent == answered && cq_held(q))
            bad++;
    }
    CHECK_INT(bad, 0);
    CHECK_INT((int)sent, N);
    CHECK_INT((int)cq_flight(q), 0);
    free(lens);
    cq_free(q);
}

int main(void)
{
    window();
    model();
    return check_report();
}
