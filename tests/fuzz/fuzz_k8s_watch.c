/* libFuzzer target: a Kubernetes watch answer as the API server streams
 * it (ingest/k8sframe.c), cut into chunks at places the input chooses,
 * and every document applied as the object kind the first byte picks
 * (ingest/k8sobj.c). Every signal the collector would publish must be
 * one cascade itself accepts (sig_adopt_json), and what the scanner
 * (ingest/jsonscan.c) reads of a document without building it must be
 * what jansson reads when it builds it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/signal.h"
#include "ingest/k8sframe.h"
#include "ingest/k8sobj.h"
#include "ingest/jsonscan.h"

static int check_signal(void *arg, json_t *o)
{
    sig s;
    cs_err err;

    (void)arg;
    json_object_set_new(o, "cluster", json_string("fuzz"));
    if (sig_adopt_json(&s, o, &err)) {
        /* the collector made a signal cascade refuses */
        fprintf(stderr, "refused: %s\n", err.msg);
        abort();
    }
    sig_free(&s);
    return 0;
}

/* The scanner against jansson on one path of a document jansson read. */
static void same_string(const char *raw, size_t len, json_t *doc,
                        const char *const *path)
{
    static char out[8192];
    json_t *v = doc;
    const char *s;
    size_t vlen;
    int rc;

    for (const char *const *k = path; *k && v; k++)
        v = json_is_object(v) ? json_object_get(v, *k) : NULL;
    /* Not finding one is safe (the collector builds the document then:
     * a key written with escapes is one); finding another is not. */
    rc = jsc_get(raw, len, path, &s, &vlen);
    if (rc != 1)
        return;
    if (!json_is_string(v))
        abort(); /* the scanner found a string jansson did not */
    if (json_string_length(v) < 4096 &&
        (jsc_unescape(s, vlen, out, sizeof out) ||
         strcmp(out, json_string_value(v))))
        abort(); /* read otherwise */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ko_opts o = {.max_age_s = 100L * 365 * 86400};
    ko_index *x;
    kf_framer *f;
    size_t at = 2, step;
    cs_err err;
    json_t *doc;
    int rc = 0;

    if (size < 2)
        return 0;
    x = ko_new(&o);
    f = kf_new();
    step = (size_t)data[1] % 64 + 1;
    while (at < size && rc >= 0) {
        size_t n = size - at < step ? size - at : step;
        if (kf_feed(f, (const char *)data + at, n, &err))
            break;
        at += n;
        const char *raw;
        size_t len;
        json_error_t je;
        while ((rc = kf_next_raw(f, &raw, &len, &err)) == 1) {
            static const char *const type_p[] = {"type", NULL};
            static const char *const reason_p[] = {"object", "reason", NULL};
            static const char *const rv_p[] = {"object", "metadata", "resourceVersion", NULL};
            const char *type;
            if (!(doc = json_loadb(raw, len, JSON_REJECT_DUPLICATES, &je)))
                continue;
            same_string(raw, len, doc, type_p);
            same_string(raw, len, doc, reason_p);
            same_string(raw, len, doc, rv_p);
            type = json_string_value(json_object_get(doc, "type"));
            ko_apply(x, (ko_kind)(data[0] % KO_NKINDS), type,
                     json_object_get(doc, "object"), 1788000000, check_signal, NULL);
            json_decref(doc);
        }
    }
    ko_expire(x, 1788000000 + 3600);
    kf_free(f);
    ko_free(x);
    return 0;
}
