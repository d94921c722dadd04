/* The head of an HTTP/1.x request as the listener (core/hlisten.c) reads
 * it before evhttp does, read the way evhttp 2.1 reads it, so that what
 * on_headers judges is what evhttp then serves: a line ends at LF (one CR
 * before it dropped); the request line is the method up to its first
 * space, the version after its last, the URI between; a field line is
 * NAME:VALUE (the spaces after the colon and the blanks at the end
 * dropped), and a line that starts with a space or a tab continues the
 * field before it. The head ends at its first empty line. */
#ifndef CS_HLHEAD_H
#define CS_HLHEAD_H

#include <stddef.h>

#include <event2/keyvalq_struct.h>

#include "core/hlisten.h"

struct evbuffer;
struct evhttp_uri;

typedef struct hlh {
    hl_head head;        /* what on_headers sees; points into this */
    const char *version; /* "HTTP/1.1" */
    int lengths;         /* how many Content-Length fields */
    char *text;          /* the head's copy, cut into strings */
    struct evkeyvalq fields;
    struct evhttp_uri *uri;
} hlh;

/* The head's length in buf, its empty line included, or 0 while that has
 * not come. *line gets the request line's length, its line end included,
 * once it has come. *scan keeps where the line not ended yet starts; both
 * are 0 the first time, so that lines already ended are not searched
 * again as more bytes arrive. */
size_t hlh_end(struct evbuffer *buf, size_t *scan, size_t *line);
/* Reads the head from the first len bytes of buf (left as they are): 0,
 * -1 when the request line cannot be read (evhttp cannot either), -2 when
 * a field line cannot (*why says so). Free h with hlh_free in every case. */
int hlh_read(hlh *h, struct evbuffer *buf, size_t len, const char **why);
void hlh_free(hlh *h);

#endif
