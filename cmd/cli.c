/* Helpers every command may use (cmd/cli.h). */
#include "cmd/cli.h"
#include "core/log.h"
#include "rules/playbooks.h"

/* Problems of a rule folder go to the log, one per line, FILE:LINE:COL. */
static void rules_problem(void *arg, const char *where, const char *msg)
{
    log_error("cascade", "%s: %s: %s", (const char *)arg, where, msg);
}

/* The rule set of rules.dir, or NULL (with the problems logged and counted
 * in err) when the folder cannot be read or any file has a problem: a
 * half-valid rule set is never used. Empty dir: the built-in set. */
pb_catalog *cli_load_rules(const char *dir, const char *who, cs_err *err)
{
    pb_catalog *c;
    int n;

    if (!dir[0])
        return pb_catalog_embedded();
    c = pb_catalog_new();
    n = pb_catalog_load_dir(c, dir, rules_problem, (void *)who);
    if (n < 0)
        cs_err_set(err, "rules.dir %s: cannot read the folder", dir);
    else if (n > 0)
        cs_err_set(err, "rules.dir %s: %d problem%s (above)", dir, n,
                   n == 1 ? "" : "s");
    if (n != 0) {
        pb_catalog_free(c);
        return NULL;
    }
    return c;
}
