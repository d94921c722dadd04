/* Reading log lines the way the classifier needs them (rules/lines.h). */
#include "rules/lines.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* The rank prefix torchrun puts on a line ("[rank3]: ", "[RANK 3] "):
 * its length, 0 when there is none; *rank gets the number. Read by hand
 * since it is tried on every app line. */
size_t ln_rank_prefix(const char *l, int *rank)
{
    const char *p = l + 5;
    long r = 0;

    if (l[0] != '[' || (strncmp(l + 1, "rank", 4) && strncmp(l + 1, "RANK", 4)))
        return 0;
    if (*p == ' ')
        p++;
    if (*p < '0' || *p > '9')
        return 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if (r < 100000000)
            r = r * 10 + (*p - '0');
    if (*p++ != ']')
        return 0;
    if (*p == ':')
        p++;
    if (*p == ' ')
        p++;
    *rank = (int)r;
    return (size_t)(p - l);
}

/* The text after "NVRM: " when the kernel line may be a piece of a driver
 * message printed over several lines, else NULL. An Xid report is one
 * line of its own: it neither starts nor continues such a message. */
const char *ln_kmsg_part(const char *line)
{
    const char *nv = strstr(line, "NVRM: ");

    if (!nv || strncmp(nv + 6, "Xid (", 5) == 0)
        return NULL;
    return nv + 6;
}

double ln_to_bytes(const char *num, const char *unit)
{
    double v = strtod(num, NULL);
    static const struct { const char *u; double m; } units[] = {
        {"B", 1},          {"bytes", 1},         {"KiB", 1024.0},
        {"KB", 1024.0},    {"MiB", 1048576.0},   {"MB", 1048576.0},
        {"GiB", 1073741824.0}, {"GB", 1073741824.0},
        {"TiB", 1099511627776.0}, {"TB", 1099511627776.0}};

    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcmp(unit, units[i].u) == 0)
            return v * units[i].m;
    return -1;
}

int ln_is_frame(const char *l)
{
    return l[0] == ' ' || l[0] == '\t';
}

/* One report line as the detail keeps it: no indent, no "- " bullet. */
const char *ln_report_piece(const char *line)
{
    while (isspace((unsigned char)*line))
        line++;
    if (line[0] == '-' && line[1] == ' ')
        line += 2;
    return line;
}

int ln_ends_with_colon(const char *t)
{
    size_t n = strlen(t);

    while (n && isspace((unsigned char)t[n - 1]))
        n--;
    return n && t[n - 1] == ':';
}

int ln_ends_sentence(const char *l)
{
    size_t n = strlen(l);

    while (n && isspace((unsigned char)l[n - 1]))
        n--;
    return n && strchr(".!?", l[n - 1]);
}
