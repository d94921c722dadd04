/* Compiles the built-in rule set's prefilter databases and writes them as
 * C source (rules/prefilter.h), so that cascade does not spend Hyperscan's
 * compile time (about 0.25 s) on every rule set it loads.
 *
 *   pfl_gen OUT.c
 */
#include <stdio.h>
#include <string.h>

#include "rules/playbooks.h"
#include "rules/prefilter.h"

int main(int argc, char **argv)
{
    char tmp[4096];
    pb_catalog *cat;
    cs_err err;
    FILE *out;
    int rc;

    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: pfl_gen OUT.c\n");
        return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    if (!(out = fopen(tmp, "w"))) {
        perror(tmp);
        return 1;
    }
    cat = pb_catalog_embedded();
    rc = pfl_write_c(pb_prefilter(cat), out, &err);
    if (fclose(out) != 0 && rc == 0) {
        cs_err_set(&err, "%s: cannot write", tmp);
        rc = -1;
    }
    pb_catalog_free(cat);
    if (rc == 0 && rename(tmp, argv[1]) != 0) {
        perror(argv[1]);
        return 1;
    }
    if (rc) {
        fprintf(stderr, "pfl_gen: %s\n", err.msg);
        remove(tmp);
        return 1;
    }
    return 0;
}
