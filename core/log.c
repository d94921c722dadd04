#include "core/log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int log_current_level = LOG_LVL_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level lvl)
{
    log_current_level = (int)lvl;
}

int log_parse_level(const char *name)
{
    for (int i = 0; i <= LOG_LVL_DEBUG; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

void log_write(enum log_level lvl, const char *component, const char *fmt, ...)
{
    char stamp[32];
    struct timespec now;
    struct tm tm;
    va_list ap;

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    /* One fprintf per line keeps lines whole when threads of librdkafka log. */
    char msg[2048];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s.%03ldZ %-5s %s: %s\n", stamp, now.tv_nsec / 1000000L,
            level_names[lvl], component, msg);
}
