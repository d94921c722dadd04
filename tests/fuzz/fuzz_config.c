/* The process configuration (YAML) through cfg_load: operators write it
 * by hand and reload it into a running daemon, so a bad file must be
 * refused with its place, never crash it or change what runs. */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/config.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    int fd = memfd_create("fuzz-config", 0);
    cs_config c, before;
    cs_err err;
    char path[64];

    if (fd < 0)
        abort();
    if (write(fd, data, size) != (ssize_t)size)
        abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    cfg_defaults(&c);
    before = c;
    if (cfg_load(&c, path, &err) != 0 && memcmp(&c, &before, sizeof c))
        abort(); /* a refused file left something behind */
    close(fd);
    return 0;
}
