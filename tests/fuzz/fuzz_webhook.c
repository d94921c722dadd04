/* Alertmanager webhook bodies as the receiver gets them from the network:
 * the body parser (version, alerts, labels, status, host from labels) and
 * then every signal it builds through the alert signatures of the built-in
 * catalog. And the canonical text an alert is named by (core/jcanon.h)
 * against jansson's own sorted dump, for any JSON the input holds. */
#include <stdlib.h>
#include <string.h>

#include "core/jcanon.h"

#include "ingest/webhook.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static classifier *cls;

static void canon_check(const unsigned char *data, size_t size)
{
    json_t *v = json_loadb((const char *)data, size,
                           JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
    char *want;
    const char *got;
    size_t len;
    jw w;

    if (!v)
        return;
    want = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    jw_init(&w);
    jcanon_write(&w, v);
    got = jw_text(&w, &len);
    if (!want || len != strlen(want) || memcmp(got, want, len))
        abort();
    free(want);
    free(jw_take(&w));
    json_decref(v);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    fact facts[CLS_MAX_FACTS];
    cs_err err = {{0}};
    size_t n = 0;
    sig *s;

    if (!cls && !(cls = cls_new(pb_catalog_embedded(), &err)))
        abort();
    canon_check(data, size);
    s = wh_signals((const char *)data, size, &n, &err);
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
