/* libFuzzer target: raw syslog lines (ingest/syslog.c), as the collector
 * reads them from files it does not control. A parsed line is also
 * encoded the two ways the collector can (sig_log_msgpack directly, or
 * the JSON object normalised and packed): where the direct one takes the
 * line, the bytes must be the same, and where it refuses, the object path
 * must see invalid text (replaced) or refuse it too. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/signal.h"
#include "ingest/syslog.h"

static void same_encoding(const slg_line *l, const char *cluster)
{
    const char *ts = "2024-05-01T00:00:00.000000Z", *id = "0123456789abcdef";
    char *a = NULL, *b = NULL;
    size_t alen, blen;
    cs_err err;
    sig s;
    int direct = sig_log_msgpack(ts, l->source, l->msg, l->host, l->job,
                                 cluster, id, &a, &alen);
    json_t *o = json_pack("{s:s, s:s, s:s*}", "ts", ts, "source",
                          sig_source_name(l->source), "line", l->msg);

    if (!o) { /* the line is not UTF-8: the direct path must refuse it */
        if (direct == 0)
            abort();
        return;
    }
    if (l->host[0])
        json_object_set_new(o, "host", json_string(l->host));
    if (l->job[0])
        json_object_set_new(o, "job", json_string(l->job));
    if (cluster)
        json_object_set_new(o, "cluster", json_string(cluster));
    json_object_set_new(o, "id", json_string(id));
    if (sig_adopt_json(&s, o, &err)) {
        if (direct == 0) /* taken directly, refused by the object path */
            abort();
        free(a);
        return;
    }
    sig_to_msgpack(&s, &b, &blen);
    /* a host or job that is not UTF-8 was dropped from the object above
     * (json_string NULL): only compare when the direct path took it */
    if (direct == 0 && (alen != blen || memcmp(a, b, alen)))
        abort();
    free(a);
    free(b);
    sig_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1);
    slg_line l;
    cs_err why;

    if (!line)
        return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    if (slg_parse(line, 2024, &l, &why) == 0) {
        /* the message lies inside the line */
        if (l.msg < line || l.msg > line + size)
            abort();
        (void)strlen(l.msg);
        same_encoding(&l, NULL);
        same_encoding(&l, size % 2 ? "prod" : "");
    }
    free(line);
    return 0;
}
