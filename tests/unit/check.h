/* Minimal assertions for the unit tests: every failure names file, line and
 * the values; the process exits non-zero at the end if any check failed.
 * The closing line is "N passed, N failed" so runners can read it. */
#ifndef CS_CHECK_H
#define CS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (cond) {                                                            \
            check_passed++;                                                    \
        } else {                                                               \
            check_failed++;                                                    \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
        }                                                                      \
    } while (0)

#define CHECK_STR(a, b)                                                        \
    do {                                                                       \
        const char *a_ = (a), *b_ = (b);                                       \
        if (a_ && b_ && strcmp(a_, b_) == 0) {                                 \
            check_passed++;                                                    \
        } else {                                                               \
            check_failed++;                                                    \
            fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n",          \
                    __FILE__, __LINE__, #a, a_ ? a_ : "(null)",                \
                    b_ ? b_ : "(null)");                                       \
        }                                                                      \
    } while (0)

#define CHECK_INT(a, b)                                                        \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (a_ == b_) {                                                        \
            check_passed++;                                                    \
        } else {                                                               \
            check_failed++;                                                    \
            fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__,    \
                    __LINE__, #a, a_, b_);                                     \
        }                                                                      \
    } while (0)

/* For checks the rest of a test builds on: stop at the first failure. */
#define REQUIRE(cond)                                                          \
    do {                                                                       \
        if (!(cond)) {                                                         \
            check_failed++;                                                    \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
            exit(1);                                                           \
        }                                                                      \
        check_passed++;                                                        \
    } while (0)

/* A mkstemp/mkdtemp template under $TMPDIR (else /tmp). */
static inline void check_tmp_template(char *buf, size_t len, const char *name)
{
    const char *t = getenv("TMPDIR");
    snprintf(buf, len, "%s/%s-XXXXXX", t && *t ? t : "/tmp", name);
}

/* What the process writes to stderr (the log) between check_stderr_begin
 * and check_stderr_end, which returns it as a malloc'd string. */
typedef struct check_capture {
    int saved, fd;
    char path[256];
} check_capture;

static inline void check_stderr_begin(check_capture *c)
{
    check_tmp_template(c->path, sizeof c->path, "cascade-stderr");
    c->fd = mkstemp(c->path);
    c->saved = dup(2);
    fflush(stderr);
    REQUIRE(c->fd >= 0 && c->saved >= 0 && dup2(c->fd, 2) == 2);
}

static inline char *check_stderr_end(check_capture *c)
{
    FILE *f;
    long n;
    char *text;

    fflush(stderr);
    REQUIRE(dup2(c->saved, 2) == 2);
    close(c->saved);
    close(c->fd);
    f = fopen(c->path, "r");
    REQUIRE(f != NULL && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0);
    rewind(f);
    text = malloc((size_t)n + 1);
    REQUIRE(text != NULL && fread(text, 1, (size_t)n, f) == (size_t)n);
    text[n] = '\0';
    fclose(f);
    unlink(c->path);
    return text;
}

static inline int check_report(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
