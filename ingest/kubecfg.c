#include "ingest/kubecfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/secret.h"
#include "core/str.h"
#include "core/ydoc.h"

char *kc_base64(const char *in, size_t *len)
{
    size_t n = strlen(in), o = 0;
    char *out = malloc(n / 4 * 3 + 4);
    unsigned acc = 0;
    int bits = 0;

    if (!out)
        return NULL;
    for (; *in; in++) {
        const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *p;
        if (strchr(" \t\r\n", *in))
            continue;
        if (*in == '=')
            break;
        if (!(p = strchr(abc, *in))) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (unsigned)(p - abc);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[o] = 0;
    if (len)
        *len = o;
    return out;
}

/* A file's first line (a token, a namespace), as secrets are read. */
static int read_line(const char *path, char *buf, size_t cap, cs_err *err)
{
    char src[PATH_MAX + 8];

    snprintf(src, sizeof src, "file:%s", path);
    return secret_read(src, buf, cap, err);
}

int kc_reload(kc_conf *c, cs_err *err)
{
    char tok[sizeof c->token];
    int changed;

    if (!c->token_file[0])
        return 0;
    if (read_line(c->token_file, tok, sizeof tok, err))
        return -1;
    changed = strcmp(tok, c->token) != 0;
    str_copy(c->token, sizeof c->token, tok);
    explicit_bzero(tok, sizeof tok);
    return changed;
}

int kc_in_cluster(kc_conf *c, const char *sa_dir, cs_err *err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    char path[PATH_MAX];

    memset(c, 0, sizeof *c);
    if (!sa_dir)
        sa_dir = KC_SA_DIR;
    if (!host || !*host || !port || !*port) {
        cs_err_set(err, "not in a cluster: KUBERNETES_SERVICE_HOST and "
                   "KUBERNETES_SERVICE_PORT are not set (give --kubeconfig)");
        return -1;
    }
    /* JoinHostPort: an IPv6 address in brackets */
    snprintf(c->server, sizeof c->server, strchr(host, ':') ? "https://[%s]:%s"
                                                            : "https://%s:%s",
             host, port);
    snprintf(c->token_file, sizeof c->token_file, "%s/token", sa_dir);
    snprintf(c->ca_file, sizeof c->ca_file, "%s/ca.crt", sa_dir);
    if (kc_reload(c, err) < 0) {
        cs_err_prefix(err, "in-cluster service account: ");
        return -1;
    }
    snprintf(path, sizeof path, "%s/namespace", sa_dir);
    if (read_line(path, c->ns, sizeof c->ns, err))
        c->ns[0] = 0; /* optional: only a default */
    return 0;
}

/* ---- kubeconfig ---------------------------------------------------------- */

/* The entry of list (clusters, users, contexts) named name: its inner
 * mapping (cluster:, user:, context:), or NULL. */
static yaml_node_t *named(yd_doc *d, const char *list, const char *name,
                          const char *inner)
{
    yaml_node_t *l = yd_get(d, yd_root(d), list);

    for (size_t i = 0; l && l->type == YAML_SEQUENCE_NODE && i < yd_len(l); i++) {
        yaml_node_t *e = yd_item(d, l, i);
        const char *n = yd_scalar(yd_get(d, e, "name"));
        if (n && !strcmp(n, name))
            return yd_get(d, e, inner);
    }
    return NULL;
}

static const char *val(yd_doc *d, yaml_node_t *map, const char *key)
{
    const char *v = map ? yd_scalar(yd_get(d, map, key)) : NULL;

    return v && *v ? v : NULL;
}

/* A path of the kubeconfig, relative to its folder. */
static void rel_path(const char *file, const char *v, char *out, size_t cap)
{
    const char *slash = strrchr(file, '/');

    if (v[0] == '/' || !slash)
        str_copy(out, cap, v);
    else
        snprintf(out, cap, "%.*s/%s", (int)(slash - file), file, v);
}

/* key-data (base64 PEM) into *pem, else key (a path) into path. */
static int pem_or_path(yd_doc *d, yaml_node_t *map, const char *key,
                       char **pem, char *path, size_t cap, const char *file,
                       cs_err *err)
{
    char dkey[64];
    const char *v;

    snprintf(dkey, sizeof dkey, "%s-data", key);
    if ((v = val(d, map, dkey))) {
        if (!(*pem = kc_base64(v, NULL))) {
            yd_problem(d, yd_get(d, map, dkey), "%s is not base64", dkey);
            cs_err_set(err, "%s: %s is not base64", file, dkey);
            return -1;
        }
        return 0;
    }
    if ((v = val(d, map, key)))
        rel_path(file, v, path, cap);
    return 0;
}

static int kc_cluster(kc_conf *c, yd_doc *d, yaml_node_t *cl, const char *file,
                      cs_err *err)
{
    const char *server = val(d, cl, "server"), *insecure;
    size_t n;

    if (!server) {
        cs_err_set(err, "%s: the context's cluster has no server", file);
        return -1;
    }
    str_copy(c->server, sizeof c->server, server);
    n = strlen(c->server);
    while (n && c->server[n - 1] == '/')
        c->server[--n] = 0;
    insecure = val(d, cl, "insecure-skip-tls-verify");
    c->insecure = insecure && !strcmp(insecure, "true");
    return pem_or_path(d, cl, "certificate-authority", &c->ca_pem, c->ca_file,
                       sizeof c->ca_file, file, err);
}

static int kc_user(kc_conf *c, yd_doc *d, yaml_node_t *u, const char *file,
                   cs_err *err)
{
    const char *v;

    if (!u)
        return 0; /* anonymous */
    if (yd_get(d, u, "exec") || yd_get(d, u, "auth-provider")) {
        cs_err_set(err, "%s: the user authenticates with an %s plugin, which "
                   "cascade does not run: give it a service-account token "
                   "(token or tokenFile)", file,
                   yd_get(d, u, "exec") ? "exec" : "auth-provider");
        return -1;
    }
    if ((v = val(d, u, "token")))
        str_copy(c->token, sizeof c->token, v);
    if ((v = val(d, u, "tokenFile"))) {
        rel_path(file, v, c->token_file, sizeof c->token_file);
        if (kc_reload(c, err) < 0)
            return -1;
    }
    if (pem_or_path(d, u, "client-certificate", &c->cert_pem, c->cert_file,
                    sizeof c->cert_file, file, err) ||
        pem_or_path(d, u, "client-key", &c->key_pem, c->key_file,
                    sizeof c->key_file, file, err))
        return -1;
    if ((!c->cert_pem && !c->cert_file[0]) != (!c->key_pem && !c->key_file[0])) {
        cs_err_set(err, "%s: the user has a client certificate without its "
                   "key, or a key without its certificate", file);
        return -1;
    }
    return 0;
}

int kc_kubeconfig(kc_conf *c, const char *path, const char *context,
                  cs_err *err)
{
    yd_doc *d;
    yaml_node_t *ctx, *cl;
    const char *cname, *uname, *ns;
    int rc = -1;

    memset(c, 0, sizeof *c);
    if (!(d = yd_parse_file(path, yd_sink_first, err)))
        return -1;
    if (!context && !(context = val(d, yd_root(d), "current-context"))) {
        cs_err_set(err, "%s: no current-context (give --context)", path);
        goto out;
    }
    if (!(ctx = named(d, "contexts", context, "context"))) {
        cs_err_set(err, "%s: no context named \"%s\"", path, context);
        goto out;
    }
    cname = val(d, ctx, "cluster");
    uname = val(d, ctx, "user");
    if (!cname || !(cl = named(d, "clusters", cname, "cluster"))) {
        cs_err_set(err, "%s: context \"%s\": no cluster named \"%s\"", path,
                   context, cname ? cname : "");
        goto out;
    }
    if ((ns = val(d, ctx, "namespace")))
        str_copy(c->ns, sizeof c->ns, ns);
    if (kc_cluster(c, d, cl, path, err) ||
        kc_user(c, d, uname ? named(d, "users", uname, "user") : NULL, path, err))
        goto out;
    rc = 0;
out:
    yd_free(d);
    if (rc)
        kc_free(c);
    return rc;
}

static void scrub_free(char *p)
{
    if (p) {
        explicit_bzero(p, strlen(p));
        free(p);
    }
}

void kc_free(kc_conf *c)
{
    scrub_free(c->ca_pem);
    scrub_free(c->cert_pem);
    scrub_free(c->key_pem);
    c->ca_pem = c->cert_pem = c->key_pem = NULL;
    explicit_bzero(c->token, sizeof c->token);
}
