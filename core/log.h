/* Process-wide logger: the one piece of global state besides the config.
 * Macros test the level before formatting so that disabled debug lines cost
 * one comparison on the hot path. */
#ifndef CS_LOG_H
#define CS_LOG_H

#include <stdarg.h>

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

extern int log_current_level;

/* The level a config file asks for: ignored once log_pin_level ran. */
void log_set_level(enum log_level lvl);
/* The level the command line asks for (--log-level): flags win over the
 * config file, at start and at every reload. */
void log_pin_level(enum log_level lvl);
/* text (the default): "TIME LEVEL component: message"; json: one object
 * a line, {"ts","level","component","msg"}, for log shippers. Like the
 * level, the command line's choice pins it over the config file's. */
enum log_format { LOG_FMT_TEXT, LOG_FMT_JSON };
void log_set_format(enum log_format f);
void log_pin_format(enum log_format f);
/* Accepts text|json; -1 on anything else. */
int log_parse_format(const char *name);
/* Accepts error|warn|info|debug; returns -1 on anything else. */
int log_parse_level(const char *name);
void log_write(enum log_level lvl, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LOG_AT(lvl, comp, ...)                                                \
    do {                                                                      \
        if ((int)(lvl) <= log_current_level)                                  \
            log_write((lvl), (comp), __VA_ARGS__);                            \
    } while (0)
#define log_error(comp, ...) LOG_AT(LOG_LVL_ERROR, comp, __VA_ARGS__)
#define log_warn(comp, ...)  LOG_AT(LOG_LVL_WARN, comp, __VA_ARGS__)
#define log_info(comp, ...)  LOG_AT(LOG_LVL_INFO, comp, __VA_ARGS__)
#define log_debug(comp, ...) LOG_AT(LOG_LVL_DEBUG, comp, __VA_ARGS__)

#endif
