/* A Kubernetes watch answer cut into its events. The API server streams
 * one JSON document per event ({"type":"ADDED","object":{...}}), with a
 * newline after each in practice, over chunks that split documents
 * anywhere and may carry several at once. The framer keeps what is not
 * yet a whole document and parses only when a newline has come (or the
 * buffer has doubled since the last try), so a big object that arrives
 * in a thousand pieces is not scanned a thousand times. Pure: no I/O. */
#ifndef CS_K8SFRAME_H
#define CS_K8SFRAME_H

#include <stddef.h>

#include <jansson.h>

#include "core/err.h"

/* One document at most this big: etcd keeps objects under 1.5 MiB. */
#define KF_MAX_DOC (4u << 20)

typedef struct kf_framer kf_framer;

kf_framer *kf_new(void);
void kf_free(kf_framer *f);
/* Forgets what is buffered (a new watch). */
void kf_reset(kf_framer *f);
/* Appends n bytes. -1 (err) when the buffer would pass KF_MAX_DOC. */
int kf_feed(kf_framer *f, const char *p, size_t n, cs_err *err);
/* 1 and a document's bytes in *doc, *len (valid until the next call),
 * 0 when none is whole yet, -1 (err: what and at which byte of the
 * stream) when the stream is not JSON objects: the watch must be started
 * again. Only the document's nesting and strings are checked
 * (ingest/jsonscan.h). */
int kf_next_raw(kf_framer *f, const char **doc, size_t *len, cs_err *err);
/* kf_next_raw, parsed: the document in *out (the caller's). */
int kf_next(kf_framer *f, json_t **out, cs_err *err);
/* Bytes buffered, not yet a document (whitespace included). */
size_t kf_pending(const kf_framer *f);

#endif
