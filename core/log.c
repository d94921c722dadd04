#include "core/log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int log_current_level = LOG_LVL_INFO;
/* Set by the command line: a config file's level no longer applies. */
static int level_pinned;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level lvl)
{
    if (!level_pinned)
        log_current_level = (int)lvl;
}

void log_pin_level(enum log_level lvl)
{
    log_current_level = (int)lvl;
    level_pinned = 1;
}

int log_parse_level(const char *name)
{
    for (int i = 0; i <= LOG_LVL_DEBUG; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

/* Messages quote what clients sent (URIs, approval reasons, alert text):
 * a newline there would start a line of the client's making, an ESC would
 * drive the reader's terminal. Every C0 control and DEL is written as \n,
 * \r, \t or \xNN; the rest, UTF-8 included, as it is. */
static void escape(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;

    for (const unsigned char *c = (const unsigned char *)in; *c; c++) {
        if (o + 5 > cap)
            break;
        if (*c >= 0x20 && *c != 0x7f) {
            out[o++] = (char)*c;
            continue;
        }
        out[o++] = '\\';
        if (*c == '\n' || *c == '\r' || *c == '\t') {
            out[o++] = *c == '\n' ? 'n' : *c == '\r' ? 'r' : 't';
        } else {
            out[o++] = 'x';
            out[o++] = hex[*c >> 4];
            out[o++] = hex[*c & 15];
        }
    }
    out[o] = '\0';
}

void log_write(enum log_level lvl, const char *component, const char *fmt, ...)
{
    char stamp[32], msg[2048], safe[4 * sizeof msg];
    struct timespec now;
    struct tm tm;
    va_list ap;

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    escape(msg, safe, sizeof safe);
    /* One fprintf per line keeps lines whole when threads of librdkafka log. */
    fprintf(stderr, "%s.%03ldZ %-5s %s: %s\n", stamp, now.tv_nsec / 1000000L,
            level_names[lvl], component, safe);
}
