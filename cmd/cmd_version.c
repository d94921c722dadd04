/* cascade version: the release this binary was built from. */
#include <stdio.h>

#include "cmd/cli.h"
#include "commit.h" /* CASCADE_COMMIT, written at build time */

int cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("cascade %s (commit %s)\n", CASCADE_VERSION, CASCADE_COMMIT);
    return 0;
}
