#include "core/err.h"

#include <stdio.h>
#include <string.h>

void cs_err_set(cs_err *err, const char *fmt, ...)
{
    va_list ap;

    if (!err)
        return;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

void cs_err_prefix(cs_err *err, const char *fmt, ...)
{
    char head[128], old[sizeof err->msg];
    va_list ap;

    if (!err)
        return;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    size_t hl = strlen(head), ol = strlen(old);
    if (hl >= sizeof err->msg)
        hl = sizeof err->msg - 1;
    if (hl + ol >= sizeof err->msg)
        ol = sizeof err->msg - 1 - hl;
    memcpy(err->msg, head, hl);
    memcpy(err->msg + hl, old, ol);
    err->msg[hl + ol] = '\0';
}
