#include "core/secret.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"

static int from_env(const char *name, char *out, size_t cap, cs_err *err)
{
    const char *v = getenv(name);

    if (!v || !*v) {
        cs_err_set(err, "environment variable %s is not set", name);
        return -1;
    }
    if (strlen(v) >= cap) {
        cs_err_set(err, "environment variable %s is longer than %zu bytes",
                   name, cap - 1);
        return -1;
    }
    str_copy(out, cap, v);
    return 0;
}

static int from_file(const char *path, char *out, size_t cap, cs_err *err)
{
    FILE *f = fopen(path, "r");
    size_t n;
    int more;

    if (!f) {
        cs_err_set(err, "secret file %s: %s", path, strerror(errno));
        return -1;
    }
    n = fread(out, 1, cap - 1, f);
    more = n == cap - 1 && fgetc(f) != EOF;
    fclose(f);
    out[n] = 0;
    out[strcspn(out, "\r\n")] = 0;
    n = strlen(out);
    while (n && out[n - 1] == ' ')
        out[--n] = 0;
    if (more && n == cap - 1) {
        cs_err_set(err, "secret file %s: first line longer than %zu bytes",
                   path, cap - 1);
        return -1;
    }
    if (!n) {
        cs_err_set(err, "secret file %s is empty", path);
        return -1;
    }
    return 0;
}

int secret_read(const char *src, char *out, size_t cap, cs_err *err)
{
    if (!strncmp(src, "env:", 4))
        return from_env(src + 4, out, cap, err);
    if (!strncmp(src, "file:", 5))
        return from_file(src + 5, out, cap, err);
    cs_err_set(err, "a secret must be file:PATH or env:NAME (never the "
               "value itself)");
    return -1;
}
