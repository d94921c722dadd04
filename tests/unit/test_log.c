/* The logger (core/log.c): a line built from outside text stays one line.
 * Newlines, carriage returns, tabs, ESC and the other control characters
 * in a message are written escaped (\n, \r, \t, \xNN), so that a value a
 * client sent (an approval reason, a URI) cannot forge a log line or drive
 * the terminal; everything else, UTF-8 included, is written as it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/log.h"

/* What one log_warn writes to stderr. */
static char *logged(const char *arg)
{
    check_capture cap;

    check_stderr_begin(&cap);
    log_warn("test", "reason: %s", arg);
    return check_stderr_end(&cap);
}

/* The line after "warn  test: ", which must be the whole output. */
static const char *message(const char *line)
{
    const char *m = strstr(line, " test: ");
    const char *nl = strchr(line, '\n');

    REQUIRE(m != NULL && nl != NULL);
    CHECK(nl[1] == '\0'); /* one line, ended once */
    return m + 7;
}

static void check_logged(const char *arg, const char *want)
{
    char *line = logged(arg), expect[512];

    snprintf(expect, sizeof expect, "reason: %s\n", want);
    CHECK_STR(message(line), expect);
    free(line);
}

/* --log-level (log_pin_level) wins over the config file's log.level,
 * also when a reload sets it again. */
static void check_pinned_level(void)
{
    log_set_level(LOG_LVL_WARN);
    CHECK(log_current_level == LOG_LVL_WARN);
    log_pin_level(LOG_LVL_DEBUG);
    log_set_level(LOG_LVL_INFO); /* the config file, after the flag */
    CHECK(log_current_level == LOG_LVL_DEBUG);
    log_pin_level(LOG_LVL_WARN);
    CHECK(log_current_level == LOG_LVL_WARN);
}

/* --log-format json: one object a line that a JSON parser reads back
 * with the message as it was given (quotes, backslashes, controls). */
static void check_json(void)
{
    check_capture cap;
    char *line;

    log_pin_format(LOG_FMT_JSON);
    check_stderr_begin(&cap);
    log_warn("test", "say \"hi\" \\ to\nme\x01");
    line = check_stderr_end(&cap);
    CHECK(strncmp(line, "{\"ts\":\"", 7) == 0);
    CHECK(strstr(line, "\"level\":\"warn\",\"component\":\"test\","
                       "\"msg\":\"say \\\"hi\\\" \\\\ to\\nme\\u0001\"}\n") != NULL);
    CHECK(strchr(line, '\n') == line + strlen(line) - 1);
    free(line);
    log_set_format(LOG_FMT_TEXT); /* pinned: the config's choice is ignored */
    line = logged("x");
    CHECK(line[0] == '{');
    free(line);
    log_pin_format(LOG_FMT_TEXT);
    CHECK_INT(log_parse_format("json"), LOG_FMT_JSON);
    CHECK_INT(log_parse_format("yaml"), -1);
}

int main(void)
{
    check_logged("plain text", "plain text");
    check_logged("forged\n2026-01-01T00:00:00.000Z info  approvals: bob x",
                 "forged\\n2026-01-01T00:00:00.000Z info  approvals: bob x");
    check_logged("a\rb\tc", "a\\rb\\tc");
    check_logged("\x1b[2J\x1b[31mred", "\\x1b[2J\\x1b[31mred");
    check_logged("\x01\x1f\x7f", "\\x01\\x1f\\x7f");
    /* UTF-8 and backslashes are left alone */
    check_logged("caf\xc3\xa9 \\n", "caf\xc3\xa9 \\n");
    check_pinned_level();
    check_json();
    return check_report();
}
