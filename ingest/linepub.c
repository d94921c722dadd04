#include "ingest/linepub.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"

static int produce(kfk_producer *p, kfk_tracker **t, const char *topic,
                   const char *key, char *val, size_t len, cs_err *err)
{
    if (!*t && !(*t = kfk_tracker_new())) {
        free(val);
        cs_err_set(err, "out of memory");
        return -1;
    }
    return kfk_produce_take(p, topic, key, key ? strlen(key) : 0, val, len,
                            *t, err);
}

int lp_line(ll_encoder *e, kfk_producer *p, const ll_origin *from, char *line,
            size_t len, const char *name, unsigned long lineno,
            const char *who, kfk_tracker **t, lp_outcome *out, cs_err *err)
{
    const char *key;
    char *buf, *dl;
    size_t blen;
    cs_err why = {{0}};
    /* two answers, kept apart: the encoder's (0 a signal, 1 invalid, 2
     * dropped, 3 blank) and the producer's (KFK_*) */
    int enc = ll_encode(e, from, line, len, &key, &buf, &blen, &why), rc;

    if (enc == 0) {
        rc = produce(p, t, KFK_TOPIC_SIGNALS, key, buf, blen, err);
        if (rc == KFK_OK) {
            *out = LP_PUBLISHED;
            return KFK_OK;
        }
        if (rc != KFK_TOO_BIG)
            return rc; /* queue full: this line again, later */
        why = *err; /* no retry helps: dead-lettered */
        enc = 1;
    }
    if (enc != 1) {
        *out = enc == 2 ? LP_DROPPED : LP_BLANK;
        return KFK_OK;
    }
    if (!(dl = ll_dead_letter(name, lineno, why.msg, line, len))) {
        cs_err_set(err, "%s: cannot encode a dead-letter record", name);
        return -1;
    }
    rc = produce(p, t, KFK_TOPIC_DEADLETTER, NULL, dl, strlen(dl), err);
    if (rc == KFK_TOO_BIG)
        return -1;
    if (rc != KFK_OK)
        return rc;
    log_warn(who, "%s:%lu: %s", name, lineno, why.msg);
    *out = LP_REJECTED;
    return KFK_OK;
}
