/* A cap on one kind of log line: at most `per_second` of them written in
 * any one-second window, the rest counted and then said in one line
 * ("N more WHAT not logged in the last S s"). A storm that opens 10,000
 * incidents in a second, or a producer that sends 10,000 malformed
 * messages, would otherwise write 10,000 lines and bury what else the
 * log says; the incidents and dead letters themselves are all on their
 * topics and in the metrics, the log is for reading. */
#ifndef CS_LOGCAP_H
#define CS_LOGCAP_H

#include <stddef.h>
#include <stdint.h>

#include "core/log.h"

typedef struct lcap lcap;

/* component and what are kept by reference (string literals); the summary
 * line is written at lvl, the level of the lines it stands for. */
lcap *lcap_new(const char *component, enum log_level lvl, const char *what,
               unsigned per_second);
void lcap_free(lcap *l);
/* 1: write the line (and it is counted against this second); 0: the
 * second's lines are used up, this one is counted as held back. now is
 * ts_mono()'s (core/ts.h). A window that is over is closed
 * first (lcap_flush). */
int lcap_take(lcap *l, int64_t now);
/* Once the window that held lines back is over: writes the summary line
 * and starts afresh. Returns the count it said (0: nothing due). For a
 * timer, so that the last second of a storm is said without a next
 * line; at exit pass INT64_MAX to say what is left. */
size_t lcap_flush(lcap *l, int64_t now);
/* Lines held back since the start. */
size_t lcap_held(const lcap *l);

#endif
