#include "core/log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int log_current_level = LOG_LVL_INFO;
/* Set by the command line: a config file's level no longer applies. */
static int level_pinned;

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static int log_format, format_pinned;

void log_set_format(enum log_format f)
{
    if (!format_pinned)
        log_format = (int)f;
}

void log_pin_format(enum log_format f)
{
    log_format = (int)f;
    format_pinned = 1;
}

int log_parse_format(const char *name)
{
    return !strcmp(name, "text") ? LOG_FMT_TEXT
           : !strcmp(name, "json") ? LOG_FMT_JSON : -1;
}

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
static void escape(const char *in, char *out, size_t cap, int json)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;

    for (const unsigned char *c = (const unsigned char *)in; *c; c++) {
        if (o + 7 > cap)
            break;
        if (*c >= 0x20 && *c != 0x7f && !(json && (*c == '"' || *c == '\\'))) {
            out[o++] = (char)*c;
            continue;
        }
        out[o++] = '\\';
        if (*c == '"' || *c == '\\') {
            out[o++] = (char)*c; /* JSON only: text keeps them as they are */
        } else if (*c == '\n' || *c == '\r' || *c == '\t') {
            out[o++] = *c == '\n' ? 'n' : *c == '\r' ? 'r' : 't';
        } else {
            /* JSON's \u00NN; text's shorter \xNN */
            if (json) {
                out[o++] = 'u';
                out[o++] = '0';
                out[o++] = '0';
            } else {
                out[o++] = 'x';
            }
            out[o++] = hex[*c >> 4];
            out[o++] = hex[*c & 15];
        }
    }
    out[o] = '\0';
}

void log_write(enum log_level lvl, const char *component, const char *fmt, ...)
{
    char stamp[32], msg[2048], safe[6 * sizeof msg];
    struct timespec now;
    struct tm tm;
    va_list ap;

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    escape(msg, safe, sizeof safe, log_format == LOG_FMT_JSON);
    /* One fprintf per line keeps lines whole when threads of librdkafka log;
     * component names are cascade's own (no escaping needed). */
    if (log_format == LOG_FMT_JSON)
        fprintf(stderr, "{\"ts\":\"%s.%03ldZ\",\"level\":\"%s\",\"component\":"
                "\"%s\",\"msg\":\"%s\"}\n", stamp, now.tv_nsec / 1000000L,
                level_names[lvl], component, safe);
    else
        fprintf(stderr, "%s.%03ldZ %-5s %s: %s\n", stamp,
                now.tv_nsec / 1000000L, level_names[lvl], component, safe);
}
