/* Secrets (tokens, webhook URLs, routing keys) are named, never written
 * in a config file: "file:PATH" reads the first line of a file (a mounted
 * Kubernetes secret, a 0600 file), "env:NAME" an environment variable. */
#ifndef CS_SECRET_H
#define CS_SECRET_H

#include <stddef.h>

#include "core/err.h"

/* -1 (err says which file or variable, never the value) when src is
 * neither form, the source is missing or empty, or it does not fit. */
int secret_read(const char *src, char *out, size_t cap, cs_err *err);

#endif
