/* Log lines through every line signature (kernel, app with traceback
 * assembly, slurm): the first byte picks the source. */
#include <stdlib.h>
#include <string.h>

#include "rules/classify.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static classifier *cls;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static const char *const src[] = {"kernel", "app", "slurm"};
    fact facts[CLS_MAX_FACTS];
    cs_err err;
    sig s;

    if (!cls && !(cls = cls_new(&err)))
        abort();
    if (size < 1)
        return 0;
    char *line = strndup((const char *)data + 1, size - 1);
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "ts",
                          "2026-03-02T08:00:00Z", "source", src[data[0] % 3],
                          "host", "g1", "job", "1", "line", line);
    if (o && sig_from_json(&s, o, &err) == 0) {
        int n = cls_classify(cls, &s, facts);
        if (n < 0 || n > CLS_MAX_FACTS)
            abort();
        sig_free(&s);
    }
    json_decref(o);
    free(line);
    return 0;
}
