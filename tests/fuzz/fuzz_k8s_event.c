/* Kubernetes Event objects as a collector reads them from the API server
 * (core/v1 or events.k8s.io/v1, any wording): the input is the event's
 * JSON, wrapped in a k8s signal, validated, and classified against the
 * scheduling signatures of the built-in catalog. */
#include <stdlib.h>

#include "rules/classify.h"
#include "rules/playbooks.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static classifier *cls;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    fact facts[CLS_MAX_FACTS];
    cs_err err = {{0}};
    json_t *ev, *o;
    sig s;

    if (!cls && !(cls = cls_new(pb_catalog_embedded(), &err)))
        abort();
    ev = json_loadb((const char *)data, size, 0, NULL);
    if (!ev)
        return 0;
    o = json_pack("{s:s, s:s, s:s, s:s, s:o}", "ts", "2026-03-02T08:00:00Z",
                  "source", "k8s", "host", "g1", "job", "1", "event", ev);
    if (!o)
        abort();
    if (sig_from_json(&s, o, &err) == 0) {
        int n = cls_classify(cls, &s, facts);
        if (n < 0 || n > CLS_MAX_FACTS)
            abort();
        sig_free(&s);
    } else if (!err.msg[0]) {
        abort();
    }
    json_decref(o);
    return 0;
}
