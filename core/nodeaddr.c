#include "core/nodeaddr.h"

#include <string.h>

int na_word(const char *a)
{
    return *a && strlen(a) < NA_ADDR_MAX && !strpbrk(a, " \t\r\n");
}

int na_loopback(const char *a)
{
    return !strncmp(a, "127.", 4) || !strcmp(a, "::1") ||
           !strcmp(a, "localhost") || !strncmp(a, "localhost.", 10);
}
