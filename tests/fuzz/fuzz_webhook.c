/* Alertmanager webhook bodies as the receiver gets them from the network:
 * the body parser (version, alerts, labels, status, host from labels) and
 * then every signal it builds through the alert signatures of the built-in
 * catalog. */
#include <stdlib.h>

#include "ingest/webhook.h"
#include "rules/classify.h"
#include "rules/playbooks.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static classifier *cls;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    fact facts[CLS_MAX_FACTS];
    cs_err err = {{0}};
    size_t n = 0;
    sig *s;

    if (!cls && !(cls = cls_new(pb_catalog_embedded(), &err)))
        abort();
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
