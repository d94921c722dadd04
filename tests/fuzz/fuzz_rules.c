/* Rule files (YAML) through the catalog loader: operators edit them by
 * hand, and a bad one must be reported, never crash the daemon. */
#include <stdlib.h>

#include "rules/playbooks.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void ignore(void *arg, const char *where, const char *msg)
{
    (void)arg;
    (void)where;
    (void)msg;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    pb_catalog *c = pb_catalog_new();

    pb_catalog_add(c, "fuzz.yaml", (const char *)data, size, ignore, NULL);
    for (size_t i = 0; i < pb_catalog_count(c); i++)
        (void)pb_find(c, "hw.gpu_off_bus");
    pb_catalog_free(c);
    return 0;
}
