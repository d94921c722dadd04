/* Signals through the whole engine: each line of the input a signal JSON
 * line (docs/FORMATS.md), fed to one engine of the built-in catalog and flushed
 * after each, as a batch of one. Everything the engine writes as JSON (the
 * incidents, their state records) must read back as JSON: text from the
 * signals is cut into fixed fields there, and a record that cannot be
 * encoded aborts the correlator on that signal after every restart. The
 * engine is reset per input, so inputs do not pile up state. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void w_add(void *c, const char *k, int64_t ts, const char *m)
{
    (void)c, (void)k, (void)ts, (void)m;
}

static void w_trim(void *c, const char *k, int64_t before)
{
    (void)c, (void)k, (void)before;
}

static void h_put(void *c, const char *key, const char *f, const char *v)
{
    json_error_t je;
    json_t *o;

    (void)c, (void)f;
    if (!strstr(key, ":state") && !strstr(key, ":incidents"))
        return;
    if (!(o = json_loads(v, 0, &je)))
        abort();
    json_decref(o);
}

static void h_del(void *c, const char *k, const char *f)
{
    (void)c, (void)k, (void)f;
}

static const eng_store_ops ops = {w_add, w_trim, h_put, h_del};
static engine *eng;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    cs_err err;

    if (!eng && !(eng = eng_new(&ops, NULL, &err)))
        abort();
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        sig s;

        if (!sig_parse_json(&s, p, n, &err)) {
            eng_feed(eng, &s);
            sig_free(&s);
            eng_flush(eng, NULL, NULL);
        }
        p += n + 1;
    }
    if (eng_reset(eng, &err))
        abort();
    return 0;
}
