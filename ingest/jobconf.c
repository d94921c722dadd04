#include "ingest/jobconf.h"

#include <stdlib.h>
#include <string.h>

#include "core/str.h"

#define JC_TOKEN 256

static const struct alias {
    const char *name, *key;
} aliases[] = {
    {"batch_size", "batch_size"},
    {"per_device_train_batch_size", "batch_size"},
    {"train_batch_size", "batch_size"},
    {"micro_batch_size", "batch_size"},
    {"num_workers", "num_workers"},
    {"dataloader_num_workers", "num_workers"},
    {"seq_len", "seq_len"},
    {"seq_length", "seq_len"},
    {"max_seq_len", "seq_len"},
    {"max_seq_length", "seq_len"},
    {"block_size", "seq_len"},
    {"precision", "precision"},
    {"gradient_checkpointing", "gradient_checkpointing"},
};

static const char *const env_prefixes[] = {"NCCL_", "TORCH_", "PYTORCH_",
                                           "CUDA_", "OMP_",   "UCX_",
                                           "GLOO_", "NVIDIA_"};

static const char *key_of(const char *name)
{
    for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
        if (!strcmp(name, aliases[i].name))
            return aliases[i].key;
    return NULL;
}

static int env_kept(const char *name)
{
    size_t n = strlen(name);

    /* whatever its prefix, a name that says secret is never copied */
    if (strstr(name, "KEY") || strstr(name, "TOKEN") ||
        strstr(name, "SECRET") || strstr(name, "PASSW") ||
        strstr(name, "CREDENTIAL"))
        return 0;

    for (size_t i = 0; i < sizeof env_prefixes / sizeof *env_prefixes; i++)
        if (!strncmp(name, env_prefixes[i], strlen(env_prefixes[i])))
            return 1;
    return n >= 10 && !strcmp(name + n - 10, "BATCH_SIZE");
}

/* A positive whole number, or -1. */
static long whole(const char *v)
{
    char *end;
    long n = strtol(v, &end, 10);

    return *v && !*end && n > 0 && n < 100000000 ? n : -1;
}

static const char *precision_of(const char *v)
{
    if (strstr(v, "bf16"))
        return "bf16";
    if (!strncmp(v, "16", 2) || strstr(v, "fp16") || !strcmp(v, "half"))
        return "fp16";
    if (!strncmp(v, "32", 2) || strstr(v, "fp32") || !strcmp(v, "full"))
        return "fp32";
    return NULL;
}

/* key = v in cfg unless it is there already (the first wins). */
static void put(json_t *cfg, const char *key, const char *v)
{
    json_t *val = NULL;

    if (json_object_get(cfg, key))
        return;
    if (!strcmp(key, "precision")) {
        const char *p = precision_of(v);
        val = p ? json_string(p) : NULL;
    } else if (!strcmp(key, "gradient_checkpointing")) {
        val = !*v || !strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "1")
                  ? json_true()
              : !strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "0")
                  ? json_false()
                  : NULL;
    } else if (whole(v) > 0) {
        val = json_integer(whole(v));
    }
    if (val)
        json_object_set_new(cfg, key, val);
}

/* name with '-' as '_', lower case; "" when it does not fit. */
static void normal(const char *s, size_t n, char *out, size_t cap)
{
    if (n >= cap) {
        out[0] = '\0';
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = s[i] == '-' ? '_' : s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] + 32) : s[i];
    out[n] = '\0';
}

/* One token of a command line, and the next (an option's value). */
static int token(json_t *cfg, const char *tok, const char *next)
{
    char name[JC_TOKEN];
    const char *eq = strchr(tok, '='), *key, *dot;

    if (!strncmp(tok, "--", 2)) {
        tok += 2;
        normal(tok, eq ? (size_t)(eq - tok) : strlen(tok), name, sizeof name);
        if (!strcmp(name, "bf16") || !strcmp(name, "fp16")) {
            put(cfg, "precision", name);
            return 0;
        }
        if (!(key = key_of(name)))
            return 0;
        if (eq) {
            put(cfg, key, eq + 1);
            return 0;
        }
        if (!strcmp(key, "gradient_checkpointing") &&
            (!next || !strncmp(next, "-", 1))) {
            put(cfg, key, "");
            return 0;
        }
        if (next) {
            put(cfg, key, next);
            return 1;
        }
        return 0;
    }
    if (!eq || tok[0] == '-')
        return 0;
    /* Hydra: a.b.name=VALUE */
    dot = memrchr(tok, '.', (size_t)(eq - tok));
    dot = dot ? dot + 1 : tok;
    normal(dot, (size_t)(eq - dot), name, sizeof name);
    if ((key = key_of(name)))
        put(cfg, key, eq + 1);
    return 0;
}

/* A shell assignment at the line's start: [export] NAME=VALUE. */
static void assignment(json_t *env, char **tok, size_t n)
{
    size_t i = n > 1 && !strcmp(tok[0], "export") ? 1 : 0;
    char *eq;

    if (i >= n || !(eq = strchr(tok[i], '=')) || eq == tok[i])
        return;
    for (char *p = tok[i]; p < eq; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
              (*p >= '0' && *p <= '9') || *p == '_'))
            return;
    *eq = '\0';
    if (env_kept(tok[i]) && !json_object_get(env, tok[i]) &&
        str_utf8_valid(eq + 1, strlen(eq + 1)))
        json_object_set_new(env, tok[i], json_string(eq + 1));
    *eq = '=';
}

/* Splits a line at blanks, quotes and a line-continuation removed (a
 * launcher's options are plain words; what is not is not read). */
static size_t split(char *line, char **tok, size_t max)
{
    size_t n = 0;

    for (char *p = line; *p && n < max;) {
        while (*p == ' ' || *p == '\t' || *p == '\\')
            p++;
        if (!*p || *p == '#')
            break;
        char *start = p, *w = p;
        while (*p && *p != ' ' && *p != '\t') {
            if (*p != '"' && *p != '\'')
                *w++ = *p;
            p++;
        }
        if (*p)
            p++;
        *w = '\0';
        if (w > start)
            tok[n++] = start;
    }
    return n;
}

static void read_line(json_t *cfg, json_t *env, char *line)
{
    char *tok[256];
    size_t n;

    while (*line == ' ' || *line == '\t')
        line++;
    if (*line == '#')
        return; /* comments, #SBATCH, the shebang */
    n = split(line, tok, sizeof tok / sizeof *tok);
    assignment(env, tok, n);
    for (size_t i = 0; i < n; i++)
        i += (size_t)token(cfg, tok[i], i + 1 < n ? tok[i + 1] : NULL);
}

json_t *jc_parse(const char *script, size_t len)
{
    json_t *cfg = json_object(), *env = json_object();
    char *copy;

    if (len > JC_MAX_SCRIPT)
        len = JC_MAX_SCRIPT;
    if (!cfg || !env || !(copy = malloc(len + 1))) {
        json_decref(cfg);
        json_decref(env);
        return NULL;
    }
    memcpy(copy, script, len);
    copy[len] = '\0';
    /* a continued command is one line: "\\\n" joins */
    for (char *p = copy; (p = strstr(p, "\\\n")); p += 2)
        p[0] = p[1] = ' ';
    for (char *line = copy, *nl; line; line = nl ? nl + 1 : NULL) {
        if ((nl = strchr(line, '\n')))
            *nl = '\0';
        read_line(cfg, env, line);
    }
    free(copy);
    if (!json_object_get(cfg, "batch_size")) {
        json_t *v;
        const char *k;
        json_object_foreach(env, k, v) {
            if (strlen(k) >= 10 && !strcmp(k + strlen(k) - 10, "BATCH_SIZE") &&
                whole(json_string_value(v)) > 0) {
                put(cfg, "batch_size", json_string_value(v));
                break;
            }
        }
    }
    if (json_object_size(env))
        json_object_set_new(cfg, "env", env);
    else
        json_decref(env);
    return cfg;
}
