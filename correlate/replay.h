/* `cascade replay`: signals from files, through the live path's parsers,
 * classifier, engine and Redis windows, driven by event time; the final
 * state of every incident on stdout (docs/FORMATS.md). */
#ifndef CS_REPLAY_H
#define CS_REPLAY_H

#include <stdint.h>
#include <stdio.h>

#include "core/rtarget.h"

typedef struct replay_opts {
    const rtarget *redis; /* NULL: start a private redis-server */
    size_t batch;      /* signals per Redis pipeline */
    FILE *out;
    struct pb_catalog *rules; /* NULL: the built-in set; else taken over */
    int64_t now; /* the wall clock bounding event times (us); 0: the real one */
} replay_opts;

/* 0: every line accepted; 1: some lines rejected (reported on stderr);
 * 2: the run could not be made (I/O, Redis). */
int replay_run(char **files, int nfiles, const replay_opts *o);

#endif
