/* Event time: microseconds since the Unix epoch, UTC. */
#ifndef CS_TS_H
#define CS_TS_H

#include <stddef.h>
#include <stdint.h>

#define TS_SEC  INT64_C(1000000)
#define TS_MIN  (60 * TS_SEC)
#define TS_HOUR (60 * TS_MIN)

/* RFC 3339 ("2026-03-02T08:00:00.000Z", offsets, 'T' or ' ', up to 9 fraction
 * digits). Returns 0, or -1 when the text is not a valid timestamp. */
int ts_parse_rfc3339(const char *s, int64_t *out);
/* Epoch seconds with an optional fraction. -1 outside 1970..9999. */
int ts_from_epoch(double secs, int64_t *out);
/* Always "YYYY-MM-DDTHH:MM:SS.mmmZ"; buf needs 25 bytes. */
void ts_format(int64_t ts, char *buf, size_t len);
/* Wall clock, for the live path only. */
int64_t ts_now(void);
/* A monotonic clock in us, for how long something took or waited. */
int64_t ts_mono(void);

#endif
