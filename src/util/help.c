/* The help catalog (see help.h): the registry walk over the "bm_help"
 * section, the framing and word wrapping of messages, and the general
 * topics that every layer may use. Formatting goes through a small writer
 * that counts what it could not store, so bm_util_help_format has
 * snprintf's contract. */
#include "util/help.h"
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HELP_WIDTH    76
#define HELP_BODY_MAX 4096

extern const struct bm_util_help_table *const __start_bm_help[] __attribute__((weak));
extern const struct bm_util_help_table *const __stop_bm_help[] __attribute__((weak));

/* ---- registry --------------------------------------------------------- */

const struct bm_util_help_topic *bm_util_help_find(const char *name)
{
    if (!__start_bm_help || !__stop_bm_help || !name)
        return NULL;
    for (const struct bm_util_help_table *const *t = __start_bm_help; t < __stop_bm_help; t++)
        for (size_t i = 0; *t && i < (*t)->count; i++)
            if (strcmp((*t)->topics[i].name, name) == 0)
                return &(*t)->topics[i];
    return NULL;
}

static int help_topic_cmp(const void *a, const void *b)
{
    const struct bm_util_help_topic *x = *(const struct bm_util_help_topic *const *)a;
    const struct bm_util_help_topic *y = *(const struct bm_util_help_topic *const *)b;
    return strcmp(x->name, y->name);
}

void bm_util_help_foreach(void (*fn)(const struct bm_util_help_topic *t, void *arg), void *arg)
{
    if (!__start_bm_help || !__stop_bm_help)
        return;
    size_t n = 0;
    for (const struct bm_util_help_table *const *t = __start_bm_help; t < __stop_bm_help; t++)
        n += *t ? (*t)->count : 0;
    const struct bm_util_help_topic **all = calloc(n ? n : 1, sizeof(*all));
    if (!all)
        return;
    size_t m = 0;
    for (const struct bm_util_help_table *const *t = __start_bm_help; t < __stop_bm_help; t++)
        for (size_t i = 0; *t && i < (*t)->count; i++)
            all[m++] = &(*t)->topics[i];
    qsort(all, m, sizeof(*all), help_topic_cmp);
    for (size_t i = 0; i < m; i++)
        fn(all[i], arg);
    free(all);
}

/* ---- formatting ------------------------------------------------------- */

struct help_out {
    char *buf;
    size_t len, pos; /* pos counts every byte, stored or not */
};

static void help_put(struct help_out *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++, o->pos++)
        if (o->pos + 1 < o->len)
            o->buf[o->pos] = s[i];
}

static void help_pad(struct help_out *o, size_t n)
{
    while (n--)
        help_put(o, " ", 1);
}

static void help_rule(struct help_out *o)
{
    char rule[HELP_WIDTH + 1];
    memset(rule, '-', HELP_WIDTH);
    rule[HELP_WIDTH] = '\n';
    help_put(o, rule, sizeof(rule));
}

/* Where a line's words start, and where its continuation lines start:
 * "  - item" continues under "item"; "   cmd" under "cmd"; prose at 0. */
static size_t help_hang(const char *line, size_t n)
{
    size_t sp = 0;
    while (sp < n && line[sp] == ' ')
        sp++;
    if (sp + 1 < n && line[sp] == '-' && line[sp + 1] == ' ')
        return sp + 2;
    return sp;
}

/* Emit one source line (no '\n' inside), word-wrapped. */
static void help_wrap_line(struct help_out *o, const char *line, size_t n)
{
    size_t hang = help_hang(line, n), col = 0, i = 0;
    while (i < n && line[i] == ' ')
        i++;
    help_pad(o, i); /* keep the line's own indentation and bullet */
    col = i;
    bool first = true;
    while (i < n) {
        size_t w = i;
        while (w < n && line[w] != ' ')
            w++;
        size_t wlen = w - i;
        if (!first && col + 1 + wlen > HELP_WIDTH) {
            help_put(o, "\n", 1);
            help_pad(o, hang);
            col = hang;
        } else if (!first) {
            help_put(o, " ", 1);
            col++;
        }
        help_put(o, line + i, wlen);
        col += wlen;
        first = false;
        i = w;
        while (i < n && line[i] == ' ')
            i++;
    }
    help_put(o, "\n", 1);
}

static void help_wrap_text(struct help_out *o, const char *text)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        help_wrap_line(o, text, n);
        text += n + (nl != NULL);
    }
}

static size_t help_vformat(char *buf, size_t len, const char *topic, va_list ap)
{
    struct help_out o = {buf, len, 0};
    const struct bm_util_help_topic *t = bm_util_help_find(topic);
    char prefix[96], body[HELP_BODY_MAX];
    bm_util_log_prefix(prefix, sizeof(prefix));
    if (t)
        vsnprintf(body, sizeof(body), t->text, ap);
    else
        snprintf(body, sizeof(body),
                 "Internal error: no help text for topic \"%s\". Please report this as a bug "
                 "in bitmover, with the messages printed before this one.",
                 topic ? topic : "(null)");
    help_rule(&o);
    help_put(&o, prefix, strlen(prefix));
    help_put(&o, " bitmover: ", 11);
    const char *title = t ? t->title : "Missing help topic";
    help_put(&o, title, strlen(title));
    help_put(&o, "\n\n", 2);
    help_wrap_text(&o, body);
    help_rule(&o);
    if (len)
        buf[o.pos < len ? o.pos : len - 1] = '\0';
    return o.pos;
}

size_t bm_util_help_format(char *buf, size_t len, const char *topic, ...)
{
    va_list ap;
    va_start(ap, topic);
    size_t n = help_vformat(buf, len, topic, ap);
    va_end(ap);
    return n;
}

void bm_util_help_show(const char *topic, ...)
{
    int saved_errno = errno;
    char msg[HELP_BODY_MAX + 1024];
    va_list ap;
    va_start(ap, topic);
    size_t n = help_vformat(msg, sizeof(msg), topic, ap);
    va_end(ap);
    if (n >= sizeof(msg))
        n = sizeof(msg) - 1;
    /* One write, so that messages from several ranks do not interleave. */
    ssize_t w = write(STDERR_FILENO, msg, n);
    (void)w;
    errno = saved_errno;
}

/* ---- general topics ---------------------------------------------------- */

static const struct bm_util_help_topic help_general_topics[] = {
    {"btl-unreachable", "A process cannot reach another one",
     "peer rank (int), peer host (string), local rank (int), local host (string), "
     "transports tried (string)",
     "Process %d on host %s cannot be reached from process %d on host %s: none of the "
     "transports tried (%s) has a path between them, so the job cannot run.\n"
     "\n"
     "What to do:\n"
     "  - If BM_BTL is set, make sure it includes a transport that spans hosts (tcp or "
     "dgram), or unset it to let bitmover choose.\n"
     "  - Check that both hosts have an interface up on a common network and that no "
     "firewall blocks it; the interfaces each transport uses are listed by "
     "`bm_info --params btl`.\n"
     "  - Run again with BM_VERBOSE=btl:4 to see which addresses each transport found "
     "and tried."},
    {"btl-no-transport", "No transport could be opened",
     "host (string), BM_BTL value or \"(unset)\" (string), why each transport failed (string)",
     "Process on host %s could not open any transport (BM_BTL=%s). Reasons: %s.\n"
     "\n"
     "What to do:\n"
     "  - Run `bm_info` on this host: it shows which transports are built and why the "
     "others are not usable here.\n"
     "  - Unset BM_BTL, or list a transport that bm_info reports as usable."},
    {"btl-link-failed", "A transport lost its path to a peer",
     "transport (string), local rank (int), local host (string), peer rank (int), peer host "
     "(string), cause (string), what happens now (string)",
     "Transport %s lost its path from process %d on host %s to process %d on host %s: %s. "
     "%s\n"
     "\n"
     "What to do:\n"
     "  - Nothing, if the job continues over another transport; check the link between "
     "the hosts (cable, switch port, interface state) to restore full bandwidth.\n"
     "  - If no other transport reaches the peer, the job ends: enable another one (see "
     "`bm_info`) to let bitmover fail over next time."},
    {"rte-no-launcher-contact", "Cannot contact the launcher",
     "launcher name (string), address (string), cause (string)",
     "This process was started by %s but cannot contact it at %s: %s.\n"
     "\n"
     "What to do:\n"
     "  - Start the program with bmrun (or srun/mpirun with PMIx), not by hand with the "
     "launcher's variables set; unset stale BMRUN_* or PMIX_* variables from your "
     "shell.\n"
     "  - If the launcher ran on another host, check that this host can reach that "
     "address (firewall, interface)."},
    {"mpi-abort", "MPI_Abort was called",
     "rank (int), host (string), error code (int), message or \"(none)\" (string)",
     "Process %d on host %s called MPI_Abort with error code %d. Its message: %s\n"
     "\n"
     "The launcher ends every process of the job; the exit status of the job is that "
     "error code.\n"
     "\n"
     "What to do:\n"
     "  - This was requested by the application: look at its output just before this "
     "message for the reason."},
};
BM_HELP_TOPICS_REGISTER(help_general_topics);
