/* The detector table (engine/detect.h): every scenario a detector opens
 * by name is in the built-in catalog, and a catalog that lacks some is
 * told which detector names which. */
#include <string.h>

#include "check.h"
#include "engine/detect.h"
#include "engine/engine.h"
#include "rules/playbooks.h"

typedef struct seen {
    int n, jobs_crash, cascades;
} seen;

static void note(void *arg, const char *detector, const char *id)
{
    seen *s = arg;

    s->n++;
    s->jobs_crash += !strcmp(detector, "jobs") && !strcmp(id, "cascade.node_crash");
    s->cascades += !strcmp(detector, "cascades");
}

static void quiet(void *arg, const char *where, const char *msg)
{
    (void)arg;
    fprintf(stderr, "%s: %s\n", where, msg);
}

/* Each detector has a name and the hooks it names are set; the
 * correlation rules come first (they see every fact, and take the rules'
 * own events), and no name repeats. */
static void test_table(void)
{
    size_t n = 0;

    CHECK_STR(eng_detectors[0]->name, "correlation");
    for (const eng_detector *const *d = eng_detectors; *d; d++, n++) {
        CHECK((*d)->name && (*d)->name[0]);
        for (const eng_detector *const *o = eng_detectors; o != d; o++)
            CHECK(strcmp((*o)->name, (*d)->name) != 0);
        for (const char *const *id = (*d)->scenarios; id && *id; id++)
            CHECK(strchr(*id, '.') != NULL);
    }
    CHECK(n >= 10);
}

static void test_builtin(void)
{
    pb_catalog *c = pb_catalog_embedded();
    seen s = {0};

    CHECK_INT(eng_check_scenarios(c, note, &s), 0);
    CHECK_INT(s.n, 0);
    pb_catalog_free(c);
}

/* bench/rules holds three correlations and none of the catalog's
 * scenarios: every id a detector names is missing there, and said so. */
static void test_other(const char *dir)
{
    pb_catalog *c = pb_catalog_new();
    seen s = {0};
    size_t n;

    CHECK_INT(pb_catalog_load_dir(c, dir, quiet, NULL), 0);
    n = eng_check_scenarios(c, note, &s);
    CHECK(n >= 20);
    CHECK_INT(s.n, n);
    CHECK_INT(s.jobs_crash, 1);
    CHECK_INT(s.cascades, 2);
    CHECK_INT(eng_check_scenarios(c, NULL, NULL), n);
    pb_catalog_free(c);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_detect RULES_DIR_WITHOUT_THE_CATALOG\n");
        return 2;
    }
    test_table();
    test_builtin();
    test_other(argv[1]);
    return check_report();
}
