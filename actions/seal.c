/* The seal on a journal entry (actions/seal.h): HMAC-SHA256 from
 * OpenSSL's libcrypto over a length-prefixed text of the entry, so no two
 * entries (a field moved into another, an absent field against an empty
 * one) ever seal alike. */
#include "actions/seal.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"

/* What the seal is over changes only with this tag. */
#define SEAL_TAG "cascade-journal-1\n"

static const char *const names[SEAL__COUNT] = {
    "req", "state", "phase", "step", "running", "who", "new_job", "playbook"};

struct seal {
    unsigned char *key;
    size_t len;
    int kept;
};

seal *seal_new(const char *key, size_t len, cs_err *err)
{
    seal *s;

    if (key && len < SEAL_KEY_MIN) {
        cs_err_set(err, "the journal key has %zu bytes; it needs %d at least "
                   "(openssl rand -hex 32)", len, SEAL_KEY_MIN);
        return NULL;
    }
    s = xcalloc(1, sizeof *s);
    s->kept = key != NULL;
    s->len = key ? len : SEAL_KEY_MIN;
    s->key = xmalloc(s->len);
    if (key) {
        memcpy(s->key, key, len);
    } else if (RAND_bytes(s->key, (int)s->len) != 1) {
        cs_err_set(err, "no random bytes for a journal key");
        seal_free(s);
        return NULL;
    }
    return s;
}

void seal_free(seal *s)
{
    if (!s)
        return;
    OPENSSL_cleanse(s->key, s->len);
    free(s->key);
    free(s);
}

int seal_kept(const seal *s)
{
    return s->kept;
}

int seal_field_of(const char *name)
{
    for (int i = 0; i < SEAL__COUNT; i++)
        if (!strcmp(names[i], name))
            return i;
    return -1;
}

void seal_entry_set(seal_entry *e, int f, const char *v)
{
    free(e->v[f]);
    e->v[f] = v ? xstrdup(v) : NULL;
}

void seal_entry_clear(seal_entry *e)
{
    for (int i = 0; i < SEAL__COUNT; i++)
        seal_entry_set(e, i, NULL);
}

/* Appends "NAME=LEN:VALUE\n", or "NAME!\n" for an absent field. */
static void put(char **buf, size_t *n, size_t *cap, const char *name,
                const char *v)
{
    size_t need = strlen(name) + (v ? strlen(v) : 0) + 32;

    if (*n + need > *cap) {
        *cap = 2 * (*n + need);
        *buf = xrealloc(*buf, *cap);
    }
    if (v)
        *n += (size_t)snprintf(*buf + *n, *cap - *n, "%s=%zu:%s\n", name,
                               strlen(v), v);
    else
        *n += (size_t)snprintf(*buf + *n, *cap - *n, "%s!\n", name);
}

void seal_sign(const seal *s, const char *id, const seal_entry *e,
               char out[SEAL_HEX])
{
    static const char digits[] = "0123456789abcdef";
    size_t n = 0, cap = 1024;
    char *buf = xmalloc(cap);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    put(&buf, &n, &cap, "tag", SEAL_TAG);
    put(&buf, &n, &cap, "id", id);
    for (int i = 0; i < SEAL__COUNT; i++)
        put(&buf, &n, &cap, names[i], e->v[i]);
    if (!HMAC(EVP_sha256(), s->key, (int)s->len, (unsigned char *)buf, n, md,
              &mdlen) || mdlen * 2 + 1 != SEAL_HEX)
        abort(); /* SHA-256 missing from libcrypto: nothing can be sealed */
    for (unsigned int i = 0; i < mdlen; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 15];
    }
    out[2 * mdlen] = '\0';
    free(buf);
}

int seal_verify(const seal *s, const char *id, const seal_entry *e,
                const char *mac)
{
    char want[SEAL_HEX];

    if (!mac || strlen(mac) != SEAL_HEX - 1)
        return -1;
    seal_sign(s, id, e, want);
    return CRYPTO_memcmp(want, mac, SEAL_HEX - 1) ? -1 : 0;
}
