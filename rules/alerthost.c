#include "rules/alerthost.h"

#include <stdio.h>
#include <string.h>

#include "core/str.h"

/* dcgm-exporter conventions first (Hostname, gpu, err_code), then the
 * labels other exporters use. kube-state-metrics' alerts (their `job`
 * label, the scrape job, is "kube-state-metrics") name an object of the
 * API: their `instance` is the exporter's own address, not a host. */
const char *al_host(json_t *labels, char *buf, size_t len)
{
    static const char *const keys[] = {"Hostname", "hostname", "node",
                                       "nodename", "host", "instance"};
    const char *scrape = json_string_value(json_object_get(labels, "job"));
    size_t nkeys = sizeof keys / sizeof *keys;

    if (scrape && !strcmp(scrape, "kube-state-metrics"))
        nkeys--;
    for (size_t i = 0; i < nkeys; i++) {
        const char *v = json_string_value(json_object_get(labels, keys[i]));
        if (v && *v) { /* instance is HOST:PORT or [IPV6]:PORT */
            size_t n;
            const char *h = str_instance_host(v, &n);
            snprintf(buf, len, "%.*s", (int)n, h);
            return buf[0] ? buf : NULL;
        }
    }
    return NULL;
}
