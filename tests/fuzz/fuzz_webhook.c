/* Alertmanager webhook bodies as the receiver gets them from the network:
 * the body parser (version, alerts, labels, status, host from labels) and
 * then every signal it builds through the alert signatures of the built-in
 * catalog. (The JSON reader under it, core/jdoc.h, has its own target
 * against jansson: fuzz_jdoc.) */
#include <stdlib.h>
#include <string.h>

#include "ingest/pubwait.h"
#include "ingest/webhook.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static classifier *cls;

/* A signal's object without its time and id: an alert with no time of
 * its own takes now, which may differ between two calls. */
static json_t *timeless(const char *val, size_t len)
{
    cs_err err;
    sig s;
    json_t *o, *j;

    if (sig_parse_msgpack(&s, val, len, &err))
        abort(); /* the server's message must read back as a signal */
    j = sig_json(&s);
    o = j ? json_deep_copy(j) : NULL;
    json_decref(j);
    sig_free(&s);
    if (o) {
        json_object_del(o, "ts");
        json_object_del(o, "id");
    }
    return o;
}

/* What the server publishes (written directly) against the signals'
 * own encoding: the same accepted, the same messages. */
static void messages_check(const unsigned char *data, size_t size,
                           const sig *s, size_t n)
{
    cs_err err = {{0}};
    size_t nm = 0;
    pw_msg *m = wh_messages((const char *)data, size, &nm, &err);

    if (!s != !m || (m && nm != n))
        abort();
    for (size_t i = 0; m && i < n; i++) {
        char *want = NULL;
        size_t len = 0;
        json_t *a, *b;
        if (sig_to_msgpack(&s[i], &want, &len))
            abort();
        a = timeless(want, len);
        b = timeless(m[i].val, m[i].len);
        if (!a || !b || !json_equal(a, b) || strcmp(m[i].key, s[i].cluster))
            abort();
        json_decref(a);
        json_decref(b);
        free(want);
    }
    pw_msgs_free(m, nm);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    fact facts[CLS_MAX_FACTS];
    cs_err err = {{0}};
    size_t n = 0;
    sig *s;

    if (!cls && !(cls = cls_new(pb_catalog_embedded(), &err)))
        abort();
    s = wh_signals((const char *)data, size, &n, &err);
    messages_check(data, size, s, n);
    if (!s) {
        if (!err.msg[0]) /* a rejection must say why */
            abort();
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        int k = cls_classify(cls, &s[i], facts);
        if (k < 0 || k > CLS_MAX_FACTS)
            abort();
    }
    wh_free_signals(s, n);
    return 0;
}
