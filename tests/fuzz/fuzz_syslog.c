/* libFuzzer target: raw syslog lines (ingest/syslog.c), as the collector
 * reads them from files it does not control. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/syslog.h"

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
    }
    free(line);
    return 0;
}
