/* The commands a connection may have on the wire at once, and those that
 * wait their turn: a pipeline window in bytes.
 *
 * Why: hiredis keeps what it has not written yet in one buffer, and after
 * every partial write moves the rest of it down (sdsrange). A batch of
 * 20 MB (10,000 incidents opened in one second) written 200 KB a time
 * moved about a gigabyte: an eighth of the correlator's time in such a
 * burst. Held here, a command goes to hiredis only when the bytes sent
 * and not yet answered leave room in the window, so its buffer stays
 * small and each byte is moved a few times at most.
 *
 * Commands are preformatted (Redis's protocol), sent in the order given,
 * answered in that order. One command always fits, however large. */
#ifndef CS_CMDQ_H
#define CS_CMDQ_H

#include <stddef.h>

typedef struct cmdq cmdq;

/* window: bytes sent and not answered at most (> 0). */
cmdq *cq_new(size_t window);
void cq_free(cmdq *q);

/* Whether a new command may be sent at once: none waits, and the window
 * has room. */
int cq_may_send(const cmdq *q);
/* A command of len bytes was sent: in flight until answered. */
void cq_sent(cmdq *q, size_t len);
/* A command that must wait (cq_may_send said no): copied. */
void cq_hold(cmdq *q, const char *buf, size_t len);
/* The first waiting command when the window has room for it now: 1 with
 * *buf and *len (valid until the next call on q; pass it to cq_sent once
 * sent), 0 when none may go. */
int cq_next(cmdq *q, const char **buf, size_t *len);
/* The oldest command in flight was answered. */
void cq_answered(cmdq *q);
/* The connection is gone: nothing in flight, nothing waits. */
void cq_clear(cmdq *q);

/* Commands waiting; bytes in flight. */
size_t cq_held(const cmdq *q);
size_t cq_flight(const cmdq *q);

#endif
