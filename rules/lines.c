/* Reading log lines the way the classifier needs them (rules/lines.h). */
#include "rules/lines.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rank prefix torchrun puts on a line ("[rank3]: ", "[RANK 3] "):
 * its length, 0 when there is none; *rank gets the number. Read by hand
 * since it is tried on every app line. */
static size_t rank_prefix(const char *l, int *rank)
{
    const char *p = l + 5;
    long r = 0;

    if (l[0] != '[' || !((l[1] == 'r' && l[2] == 'a' && l[3] == 'n' && l[4] == 'k') ||
                         (l[1] == 'R' && l[2] == 'A' && l[3] == 'N' && l[4] == 'K')))
        return 0;
    if (*p == ' ')
        p++;
    if (*p < '0' || *p > '9')
        return 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if (r < 100000000)
            r = r * 10 + (*p - '0');
    if (*p++ != ']')
        return 0;
    if (*p == ':')
        p++;
    if (*p == ' ')
        p++;
    *rank = (int)r;
    return (size_t)(p - l);
}

/* Digits at p: their value in *v (capped), the first byte after them. */
static const char *digits(const char *p, long *v)
{
    *v = 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if (*v < 100000000)
            *v = *v * 10 + (*p - '0');
    return p;
}

/* torchrun's --tee/--redirects tag "[default3]:" (role, local rank). */
static size_t role_prefix(const char *l, int *rank)
{
    const char *p;
    long r;

    if (strncmp(l, "[default", 8) || l[8] < '0' || l[8] > '9')
        return 0;
    p = digits(l + 8, &r);
    if (p[0] != ']' || p[1] != ':')
        return 0;
    p += 2;
    *rank = (int)r;
    return (size_t)(p - l + (*p == ' '));
}

/* mpirun --tag-output: "[1,3]<stderr>:" (job, rank; stdout or stderr). */
static size_t mpi_prefix(const char *l, int *rank)
{
    const char *p;
    long job, r;

    if (l[0] != '[' || l[1] < '0' || l[1] > '9')
        return 0;
    p = digits(l + 1, &job);
    if (*p != ',' || p[1] < '0' || p[1] > '9')
        return 0;
    p = digits(p + 1, &r);
    if (strncmp(p, "]<stderr>:", 10) && strncmp(p, "]<stdout>:", 10))
        return 0;
    *rank = (int)r;
    return (size_t)(p + 10 - l);
}

/* srun --label: "3: " (the task id, right-aligned by srun). */
static size_t task_prefix(const char *l, int *rank)
{
    const char *p = l;
    long r;

    while (*p == ' ' && p - l < 6)
        p++;
    if (*p < '0' || *p > '9')
        return 0;
    p = digits(p, &r);
    if (p[0] != ':' || p[1] != ' ' || p - l > 8)
        return 0;
    *rank = (int)r;
    return (size_t)(p + 2 - l);
}

/* Ray's tag on a worker's or a daemon's line as the driver prints it:
 * "(pid=123) ", "(RayTrainWorker pid=123, ip=10.0.0.5) ", "(raylet) ",
 * "(raylet, ip=10.0.0.5) ", "(gcs_server) ", "(autoscaler +1m2s) ". */
static size_t ray_prefix(const char *l)
{
    static const char *const daemons[] = {"raylet", "gcs_server",
                                          "autoscaler", "monitor",
                                          "dashboard", NULL};
    const char *close = l[0] == '(' ? strchr(l, ')') : NULL;
    size_t n;

    if (!close || close - l > 160 || close[1] != ' ')
        return 0;
    n = (size_t)(close - l);
    for (const char *p = l + 1; p + 4 <= close; p++)
        if (!strncmp(p, "pid=", 4) && p[4] >= '0' && p[4] <= '9')
            return n + 2;
    for (int i = 0; daemons[i]; i++) {
        size_t k = strlen(daemons[i]);
        if (!strncmp(l + 1, daemons[i], k) &&
            (l[1 + k] == ')' || l[1 + k] == ',' || l[1 + k] == ' '))
            return n + 2;
    }
    return 0;
}

/* pdsh's "HOST: " (DeepSpeed's multi-node launcher), read only where it
 * hides what the classifier looks at: an indented frame, a traceback's
 * head or a rank prefix. A host name has a digit, which no exception
 * class ("RuntimeError: ") has. */
static size_t host_prefix(const char *l)
{
    const char *p = l;
    int digit = 0;

    for (;; p++) {
        char ch = *p;
        if (ch >= '0' && ch <= '9')
            digit = 1;
        else if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                   ch == '-' || ch == '.' || ch == '_'))
            break;
    }
    if (!digit || p[0] != ':' || p[1] != ' ' || p - l > 64)
        return 0;
    p += 2;
    if (*p == ' ' || *p == '\t' || *p == '[' ||
        !strncmp(p, "Traceback (most recent call last)", 33))
        return (size_t)(p - l);
    return 0;
}

/* vLLM's logger: "ERROR 10-25 13:08:43 [core.py:708] " (older: "INFO
 * 11-18 18:07:28 engine.py:366] "), before every line of a traceback it
 * logs; what follows keeps its own indentation. */
static size_t level_prefix(const char *l)
{
    const char *p = NULL, *q;

    switch (l[1]) { /* the second byte: "DCGM: " costs one compare */
    case 'N':
        p = !strncmp(l, "INFO ", 5) ? l + 5 : NULL;
        break;
    case 'R':
        p = !strncmp(l, "ERROR ", 6) ? l + 6 : !strncmp(l, "CRITICAL ", 9) ? l + 9 : NULL;
        break;
    case 'A':
        p = !strncmp(l, "WARNING ", 8) ? l + 8 : NULL;
        break;
    case 'E':
        p = !strncmp(l, "DEBUG ", 6) ? l + 6 : NULL;
        break;
    }
    /* MM-DD HH:MM:SS (read byte by byte: a short line ends the match),
     * then the source place up to "] " */
    if (!p)
        return 0;
    for (const char *f = "00-00 00:00:00"; *f; f++, p++)
        if (*f == '0' ? !isdigit((unsigned char)*p) : *p != *f)
            return 0;
    for (; *p == '.' || isdigit((unsigned char)*p); p++)
        ;
    if (*p++ != ' ')
        return 0;
    p += *p == '[';
    for (q = p; *q && *q != ']' && *q != ' ' && q - p < 100; q++)
        ;
    return q > p && q[0] == ']' && q[1] == ' ' ? (size_t)(q + 2 - l) : 0;
}

size_t ln_launcher_prefix(const char *l, int *rank)
{
    size_t at = 0, n = 1;

    /* Tried on every app line: dispatched on the first byte, so a line
     * with no tag costs a switch and, when it starts with a word, one
     * short scan of that word. */
    for (int round = 0; round < 4 && n; round++) {
        const char *p = l + at;
        switch (*p) {
        case '[':
            if (!(n = rank_prefix(p, rank)) && !(n = role_prefix(p, rank)))
                n = mpi_prefix(p, rank);
            break;
        case '(':
            n = ray_prefix(p);
            break;
        case ' ':
            n = task_prefix(p, rank);
            break;
        default:
            if (*p >= '0' && *p <= '9' && (n = task_prefix(p, rank)))
                break;
            if (*p >= 'C' && *p <= 'W' && (n = level_prefix(p)))
                break;
            n = host_prefix(p);
        }
        at += n;
    }
    return at;
}

/* The text after "NVRM: " when the kernel line may be a piece of a driver
 * message printed over several lines, else NULL. An Xid report is one
 * line of its own: it neither starts nor continues such a message. */
const char *ln_kmsg_part(const char *line)
{
    const char *nv = strstr(line, "NVRM: ");

    if (!nv || strncmp(nv + 6, "Xid (", 5) == 0)
        return NULL;
    return nv + 6;
}

double ln_to_bytes(const char *num, const char *unit)
{
    double v = strtod(num, NULL);
    static const struct { const char *u; double m; } units[] = {
        {"B", 1},          {"bytes", 1},         {"KiB", 1024.0},
        {"KB", 1024.0},    {"MiB", 1048576.0},   {"MB", 1048576.0},
        {"GiB", 1073741824.0}, {"GB", 1073741824.0},
        {"TiB", 1099511627776.0}, {"TB", 1099511627776.0}};

    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcmp(unit, units[i].u) == 0)
            return v * units[i].m;
    return -1;
}

int ln_is_frame(const char *l)
{
    /* autograd's call into its engine is only ever a traceback's code
     * line, even where a paste lost its indentation */
    return l[0] == ' ' || l[0] == '\t' ||
           strncmp(l, "Variable._execution_engine.run_backward(", 40) == 0;
}

/* One report line as the detail keeps it: no indent, no "- " bullet. */
const char *ln_report_piece(const char *line)
{
    while (isspace((unsigned char)*line))
        line++;
    if (line[0] == '-' && line[1] == ' ')
        line += 2;
    return line;
}

int ln_ends_with_colon(const char *t)
{
    size_t n = strlen(t);

    while (n && isspace((unsigned char)t[n - 1]))
        n--;
    return n && t[n - 1] == ':';
}

int ln_ends_sentence(const char *l)
{
    size_t n = strlen(l);

    while (n && isspace((unsigned char)l[n - 1]))
        n--;
    return n && strchr(".!?", l[n - 1]);
}

int ln_backward_frame(const char *l)
{
    return strstr(l, "backward(") || strstr(l, "torch/autograd/") ||
           strstr(l, "_engine_run_backward") || strstr(l, "in backward");
}

/* A Python frame line ("  File \"x.py\", line 3, in f"). */
static int py_frame(const char *l)
{
    const char *p = l;

    while (*p == ' ' || *p == '\t')
        p++;
    return p != l && strncmp(p, "File \"", 6) == 0;
}

int ln_loose_frame(const char *l)
{
    return ln_is_frame(l) && (py_frame(l) || ln_backward_frame(l));
}

static int ends_with(const char *p, size_t n, const char *tail)
{
    size_t t = strlen(tail);

    return n >= t && strncmp(p + n - t, tail, t) == 0;
}

int ln_exception_line(const char *l)
{
    const char *p = l, *name;
    size_t n;

    while (*p == ' ' || *p == '\t')
        p++;
    name = p;
    while (isalnum((unsigned char)*p) || *p == '_' || *p == '.')
        p++;
    n = (size_t)(p - name);
    if (!(ends_with(name, n, "Error") || ends_with(name, n, "Exception")))
        return 0;
    if (*p == '(') { /* Ray's RayTaskError(RuntimeError) */
        const char *close = strchr(p, ')');
        if (!close || close - p > 64)
            return 0;
        p = close + 1;
    }
    return p[0] == ':' && (p[1] == ' ' || p[1] == '\0');
}

/* The start of the next column: after a run of two blanks or more. */
static const char *next_column(const char *p)
{
    for (; *p; p++)
        if (p[0] == ' ' && p[1] == ' ') {
            while (*p == ' ')
                p++;
            return *p ? p : NULL;
        }
    return NULL;
}

/* A reason's length: a letter, then letters and digits (Ext4Error). */
static size_t word_len(const char *p)
{
    size_t n = 0;

    if (!isalpha((unsigned char)*p))
        return 0;
    while (isalnum((unsigned char)p[n]))
        n++;
    return n;
}

/* An event's Age column: "16s", "2m41s", "3m (x4 over 5m)", "<unknown>",
 * "<invalid>". Every From column (kubelet, default-scheduler, "kubelet,
 * gpu-1") opens with a letter. */
static int is_age(const char *col)
{
    return isdigit((unsigned char)*col) || *col == '<';
}

/* The type column at c ("Warning", "Normal"): where its reason starts,
 * in the next column (*own 0) or in the same one, one blank after the
 * type as some pastes collapse it (*own 1); NULL when c is no type. */
static const char *kube_type(const char *c, const char *next, int *own)
{
    size_t t = !strncmp(c, "Warning ", 8) ? 8 : !strncmp(c, "Normal ", 7) ? 7 : 0;

    if (!t)
        return NULL;
    *own = c[t] != ' ';
    return *own ? c + t : next;
}

/* A describe row whose Type column the paste dropped: a reason (one
 * capitalised word), an age with its unit ("2m21s (x42 over 60m)"), From,
 * the message. Most lines fail at the first letter or the two blanks. */
static int kube_untyped(const char *p, char *buf, size_t len)
{
    size_t rlen = word_len(p), d = 0;
    const char *age, *from, *msg;

    if (rlen < 3 || !isupper((unsigned char)*p) || p[rlen] != ' ' ||
        p[rlen + 1] != ' ' || !(age = next_column(p)))
        return 0;
    while (isdigit((unsigned char)age[d]))
        d++;
    if (!d || !age[d] || !strchr("smhd", age[d]) ||
        !(from = next_column(age)) || !(msg = next_column(from)))
        return 0;
    if (!buf)
        return 1;
    return snprintf(buf, len, "%.*s: %s", (int)rlen, p, msg) < (int)len;
}

int ln_kube_event(const char *l, char *buf, size_t len)
{
    const char *col[6], *p = l, *reason = NULL, *msg;
    size_t rlen;
    int type = -1, own = 0, n = 0, k;

    while (*p == ' ')
        p++;
    if (kube_untyped(p, buf, len))
        return 1;
    if (*p != 'W' && *p != 'N') {
        /* a short last-seen column first: looked for in its 12 bytes only
         * (every line no signature took comes here) */
        const char *q = p;
        while (q - p < 12 && *q && !(q[0] == ' ' && q[1] == ' '))
            q++;
        if (q[0] != ' ' || !(q = next_column(q)) || (*q != 'W' && *q != 'N'))
            return 0;
    }
    for (col[n++] = p; n < 6 && (p = next_column(p)) != NULL; n++)
        col[n] = p;
    if (n < 3)
        return 0;
    for (int i = 0; i < 2 && type < 0; i++)
        if ((reason = kube_type(col[i], col[i + 1], &own)))
            type = i;
    if (type < 0 || (rlen = word_len(reason)) < 3 || reason[rlen] != ' ')
        return 0;
    k = type + 2 - own; /* the first column after the reason */
    if (type == 0 && k < n && is_age(col[k]))
        k++; /* describe: Age, From, Message; or From, Message */
    if (k + 1 >= n)
        return 0; /* the message follows From (or get events' Object) */
    msg = col[k + 1];
    if (!buf) /* the shape is all that is asked */
        return 1;
    return snprintf(buf, len, "%.*s: %s", (int)rlen, reason, msg) < (int)len;
}

/* How events' messages open. reason NULL: the event's own "Reason:
 * message" form, as tooling prints it; else the reason the message
 * opening says, the kubelet's and controllers' wording. */
#define KM(s) s, sizeof s - 1
static const struct {
    const char *s;
    size_t n;
    const char *reason;
} kube_opens[] = {
    {KM("FailedMount: "), NULL},
    {KM("FailedAttachVolume: "), NULL},
    {KM("Failed: "), NULL},
    {KM("BackOff: "), NULL},
    {KM("Evicted: "), NULL},
    {KM("FailedScheduling: "), NULL},
    {KM("FailedCreatePodSandBox: "), NULL},
    {KM("UnexpectedAdmissionError: "), NULL},
    {KM("CreateContainerConfigError: "), NULL},
    {KM("ErrImagePull: "), NULL}, /* a container's waiting reason */
    {KM("ImagePullBackOff: "), NULL},
    {KM("MountVolume."), "FailedMount"},
    {KM("Unable to attach or mount volumes"), "FailedMount"},
    {KM("Unable to mount volumes"), "FailedMount"},
    {KM("AttachVolume.Attach failed"), "FailedAttachVolume"},
    {KM("Multi-Attach error for volume"), "FailedAttachVolume"},
    {KM("Failed to pull image"), "Failed"},
    {KM("Error:"), "Failed"}, /* CreateContainerConfigError's text */
    {KM("Back-off restarting failed container"), "BackOff"},
    {KM("Failed to create pod sandbox"), "FailedCreatePodSandBox"},
    {KM("Allocate failed due to"), "UnexpectedAdmissionError"},
    {KM("Pod Allocate failed due to"), "UnexpectedAdmissionError"},
    {KM("The node was low on resource"), "Evicted"},
    {KM("The node had condition"), "Evicted"},
    {KM("Pod ephemeral local storage usage exceeds"), "Evicted"},
    {KM("Usage of EmptyDir volume"), "Evicted"},
    /* "Container C exceeded its local ephemeral storage limit": the only
     * event message that opens with the word (Evicted's signatures read
     * on, no other reason's) */
    {KM("Container "), "Evicted"},
};
#undef KM

/* The entry of kube_opens that p opens with, among those with a reason
 * (own 0) or without (own 1); -1 when none. */
static int kube_open(const char *p, int own)
{
    for (size_t i = 0; i < sizeof kube_opens / sizeof *kube_opens; i++)
        if ((kube_opens[i].reason == NULL) == own && *p == *kube_opens[i].s &&
            !strncmp(p, kube_opens[i].s, kube_opens[i].n))
            return (int)i;
    return -1;
}

int ln_kube_message(const char *l, char *buf, size_t len)
{
    const char *p = l;
    int k;

    while (*p == ' ' || *p == '\t')
        p++;
    /* every line no signature took comes here: one byte decides most */
    if (!*p || !strchr("ABCEFMPTU(m", *p))
        return 0;
    if (kube_open(p, 1) >= 0)
        return !buf || snprintf(buf, len, "%s", p) < (int)len;
    if (*p == 'm' && !strncmp(p, "message: ", 9)) { /* a pod's status, as YAML */
        p += 9;
        if (*p == '\'' || *p == '"')
            p++;
    } else if (*p == 'M' && !strncmp(p, "Message: ", 9)) {
        /* `kubectl describe pod`'s field, its value aligned by blanks */
        for (p += 9; *p == ' ' || *p == '\t'; p++)
            ;
    }
    if (*p == '(' && !strncmp(p, "(combined from similar events): ", 32))
        p += 32;
    if ((k = kube_open(p, 0)) < 0)
        return 0;
    return !buf ||
           snprintf(buf, len, "%s: %s", kube_opens[k].reason, p) < (int)len;
}

int ln_kube_recorded(const char *l, char *buf, size_t len)
{
    const char *p = strstr(l, "): type: '"), *r, *e;

    if (!p || !(r = strstr(p, "' reason: '")))
        return 0;
    r += 11;
    if (!(e = strchr(r, '\'')) || e == r || e[1] != ' ')
        return 0;
    return !buf || snprintf(buf, len, "%.*s: %s", (int)(e - r), r, e + 2) <
                       (int)len;
}

int ln_kube_text(const char *l, char *buf, size_t len)
{
    return ln_kube_event(l, buf, len) || ln_kube_message(l, buf, len) ||
           ln_kube_recorded(l, buf, len);
}

int ln_raise_text(const char *l, char *buf, size_t len)
{
    const char *p = l, *name, *msg, *end;
    char quote;

    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "raise ", 6))
        return 0;
    name = p += 6;
    while (isalnum((unsigned char)*p) || *p == '_' || *p == '.')
        if (*p++ == '.')
            name = p; /* the class, not its module */
    if (p == name || *p++ != '(')
        return 0;
    if (*p == 'f' || *p == 'r')
        p++;
    if (*p != '"' && *p != '\'')
        return 0;
    quote = *p++;
    msg = p;
    end = strchr(msg, quote);
    if ((end ? end : msg + strlen(msg)) - msg < 8)
        return 0; /* too short to say anything */
    return snprintf(buf, len, "%.*s: %.*s", (int)(strchr(name, '(') - name),
                    name, (int)(end ? end - msg : (long)strlen(msg)), msg) <
           (int)len;
}

int ln_backward_op(const char *text)
{
    const char *op = strstr(text, "[Op:"), *end;

    /* TF 2's eager op name: the gradient kernels end in "Grad" */
    if (op && (end = strchr(op, ']')) && end - op > 8 &&
        !strncmp(end - 4, "Grad", 4))
        return 1;
    return strstr(text, "gradients/") || strstr(text, "gradient_tape/") ||
           strstr(text, "_grad/");
}

int ln_trace_head(const char *l)
{
    return strncmp(l, "Traceback (most recent call last)", 33) == 0;
}
