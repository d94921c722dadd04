/* Error reasons travel with return codes: a function that fails returns -1
 * (or NULL) and writes one human sentence into the caller's cs_err. */
#ifndef CS_ERR_H
#define CS_ERR_H

#include <stdarg.h>

typedef struct cs_err {
    char msg[512];
} cs_err;

void cs_err_set(cs_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prepends context ("line 7: ") to a reason already recorded. */
void cs_err_prefix(cs_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
