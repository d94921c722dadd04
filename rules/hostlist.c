/* SLURM hostlists (rules/hostlist.h). */
#include "rules/hostlist.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* One bound of a hostlist range: 1..9 digits, nothing else (no sign, so
 * "[-002-05...]" cannot overflow). Returns its width or -1. */
static int range_bound(const char *q, const char **end, long *v)
{
    int w = 0;

    *v = 0;
    while (isdigit((unsigned char)q[w]) && w < 10)
        *v = *v * 10 + (q[w++] - '0');
    *end = q + w;
    return w == 0 || w > 9 ? -1 : w;
}

int hostlist_expand(const char *list, char names[][128], int max)
{
    int n = 0;
    const char *p = list;

    while (*p) {
        const char *lb = NULL, *end = p;
        int depth = 0;
        while (*end && (depth || *end != ',')) {
            if (*end == '[') {
                if (depth++ || lb)
                    return -1;
                lb = end;
            } else if (*end == ']') {
                if (!depth--)
                    return -1;
            }
            end++;
        }
        if (depth)
            return -1;
        if (!lb) {
            if (end - p >= 128 || end == p)
                return -1;
            if (n < max) {
                memcpy(names[n], p, (size_t)(end - p));
                names[n][end - p] = '\0';
                n++;
            }
        } else {
            const char *rb = strchr(lb, ']'), *q = lb + 1;
            int plen = (int)(lb - p);
            if (plen >= 100)
                return -1;
            while (q < rb) {
                const char *e;
                long a, b;
                int width = range_bound(q, &e, &a);
                if (width < 0)
                    return -1;
                b = a;
                if (*e == '-' && range_bound(e + 1, &e, &b) < 0)
                    return -1;
                if (b < a || b - a > 4096)
                    return -1;
                int slen = (int)(end - rb - 1);
                if (slen > 20)
                    return -1;
                for (long v = a; v <= b && n < max; v++, n++)
                    snprintf(names[n], 128, "%.*s%0*ld%.*s", plen, p, width, v,
                             slen, rb + 1);
                q = e;
                if (*q == ',')
                    q++;
                else if (q != rb)
                    return -1;
            }
        }
        p = *end ? end + 1 : end;
    }
    return n;
}
