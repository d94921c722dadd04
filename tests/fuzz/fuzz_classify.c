/* Log lines through every signature of the built-in catalog (kernel, app
 * with traceback and report assembly, slurm, ray, and Kubernetes event
 * messages): the first byte picks the source; 5 reads the rest as a
 * stored assembly (what a restart reads back from Redis). A second
 * classifier, its Hyperscan prefilter off, reads the same inputs: any
 * difference in the facts is a line the prefilter wrongly ruled out. */
#include <stdlib.h>
#include <string.h>

#include "rules/classify.h"
#include "rules/playbooks.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static classifier *cls, *ref;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static const char *const src[] = {"kernel", "app", "slurm", "ray", "k8s"};
    fact facts[CLS_MAX_FACTS];
    cs_err err;
    sig s;

    if (!cls) {
        pb_catalog *cat = pb_catalog_embedded();
        if (!(cls = cls_new(cat, &err)) || !(ref = cls_new(cat, &err)))
            abort();
        cls_prefilter(ref, 0);
    }
    if (size < 1)
        return 0;
    char *line = strndup((const char *)data + 1, size - 1);
    int k = data[0] % 6;
    if (k == 5) {
        cls_tb_restore(cls, "default|g1|1|-1", line);
        cls_tb_restore(ref, "default|g1|1|-1", line);
        free(line);
        return 0;
    }
    json_t *o = k == 4
        ? json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}}", "ts",
                    "2026-03-02T08:00:00Z", "source", "k8s", "host", "g1",
                    "job", "1", "event", "reason", "FailedScheduling",
                    "message", line)
        : json_pack("{s:s, s:s, s:s, s:s, s:s}", "ts", "2026-03-02T08:00:00Z",
                    "source", src[k], "host", "g1", "job", "1", "line", line);
    if (o && sig_from_json(&s, o, &err) == 0) {
        sig head;
        fact other[CLS_MAX_FACTS];
        for (;;) {
            sig h2;
            int a = cls_report_next(cls, &s, NULL, s.ts, &head, facts);
            if (a != cls_report_next(ref, &s, NULL, s.ts, &h2, other))
                abort();
            if (a != 1)
                break;
            sig_free(&head);
            sig_free(&h2);
            if (memcmp(facts, other, sizeof *facts))
                abort();
        }
        int n = cls_classify(cls, &s, facts);
        if (n < 0 || n > CLS_MAX_FACTS)
            abort();
        if (cls_classify(ref, &s, other) != n ||
            (n > 0 && memcmp(facts, other, (size_t)n * sizeof *facts)))
            abort(); /* the prefilter changed the answer */
        sig_free(&s);
    }
    json_decref(o);
    free(line);
    return 0;
}
