/* The catalog of help messages for errors users can hit. Each topic has a
 * short name ("btl-unreachable"), a title, and a text with printf-style
 * placeholders that says what happened, where, and what to do. Components
 * declare their topics in a const array and register it with
 * BM_HELP_TOPICS_REGISTER (an ELF section, like the parameter tables), so
 * bm_info and tests can list every topic without a central file. A caller
 * reports an error with
 *
 *     bm_util_help_show("btl-unreachable", peer, peer_host, me, my_host, tried);
 *
 * which prints one framed, word-wrapped block to stderr in a single write,
 * headed by "[host:pid:rank]" like log lines. The arguments must match the
 * topic's placeholders, which each topic documents in its `args` field.
 * Texts are wrapped at 76 columns; a blank line separates paragraphs, and a
 * line that starts with a space or "- " is kept as its own line (lists,
 * commands), with continuation lines indented to match. */
#ifndef BM_UTIL_HELP_H
#define BM_UTIL_HELP_H

#include <stddef.h>

struct bm_util_help_topic {
    const char *name;  /* "btl-unreachable": lower case, dash separated */
    const char *title; /* one line, no placeholders */
    const char *args;  /* what the placeholders are, in order, for callers and bm_info */
    const char *text;  /* printf format: what happened, where, what to do */
};

struct bm_util_help_table {
    const struct bm_util_help_topic *topics;
    size_t count;
};

/* Register a const array of topics (any number of arrays per file). */
#define BM_HELP_TOPICS_REGISTER(arr)                                                               \
    static const struct bm_util_help_table bm_help_tbl_##arr = {arr,                               \
                                                                sizeof(arr) / sizeof((arr)[0])};   \
    static const struct bm_util_help_table *const bm_help_reg_##arr                                \
        __attribute__((used, section("bm_help"), aligned(sizeof(void *)))) = &bm_help_tbl_##arr

/* The topic of that name, or NULL. */
const struct bm_util_help_topic *bm_util_help_find(const char *name);

/* Visit every registered topic, sorted by name. */
void bm_util_help_foreach(void (*fn)(const struct bm_util_help_topic *t, void *arg), void *arg);

/* Format the framed message of a topic into buf (always terminated; cut
 * when too small). An unknown topic yields a frame saying so, naming it.
 * Returns the length that the whole message needs, like snprintf. */
size_t bm_util_help_format(char *buf, size_t len, const char *topic, ...);

/* Print the framed message to stderr in one write. Preserves errno. */
void bm_util_help_show(const char *topic, ...);

#endif
