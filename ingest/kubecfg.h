/* Where the Kubernetes API is and how to prove who we are, the way
 * client-go finds it:
 *
 * - in the cluster: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
 *   with the service account's token, ca.crt and namespace from
 *   /var/run/secrets/kubernetes.io/serviceaccount (or sa_dir). A bound
 *   token rotates (the kubelet writes a new one at 80% of its life), so
 *   its file is read again every minute and on a 401;
 * - from a kubeconfig: its current-context (or the one named): the
 *   cluster's server, certificate-authority(-data),
 *   insecure-skip-tls-verify; the user's token, tokenFile,
 *   client-certificate(-data) and client-key(-data). Relative paths are
 *   the file's. exec and auth-provider plugins are refused with what to
 *   use instead: a service-account token.
 *
 * Every problem names the file (and the key) it is about. */
#ifndef CS_KUBECFG_H
#define CS_KUBECFG_H

#include <limits.h>
#include <stddef.h>

#include "core/err.h"

#define KC_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

typedef struct kc_conf {
    char server[512];          /* "https://host:port", no trailing '/' */
    char token[8192];          /* "": none */
    char token_file[PATH_MAX]; /* "": none; read again by kc_reload */
    char ca_file[PATH_MAX];    /* "": ca_pem or the system's store */
    char cert_file[PATH_MAX], key_file[PATH_MAX];
    char *ca_pem, *cert_pem, *key_pem; /* decoded -data (malloc'd), or NULL */
    char ns[254];              /* the context's or the account's namespace */
    int insecure;
} kc_conf;

/* The in-cluster config. sa_dir NULL: KC_SA_DIR. */
int kc_in_cluster(kc_conf *c, const char *sa_dir, cs_err *err);
/* A kubeconfig file's context (NULL: its current-context). */
int kc_kubeconfig(kc_conf *c, const char *path, const char *context,
                  cs_err *err);
/* Reads token_file again; 1 when the token changed, 0 when not, -1
 * (err) when the file cannot be read (the old token stays). */
int kc_reload(kc_conf *c, cs_err *err);
/* Scrubs the secrets and frees what c holds. */
void kc_free(kc_conf *c);
/* Decodes base64 (RFC 4648, padding optional, whitespace skipped) into
 * a NUL-terminated malloc'd buffer; NULL when it is not base64. */
char *kc_base64(const char *in, size_t *len);

#endif
