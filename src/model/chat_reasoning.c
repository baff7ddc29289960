/* Replies read back (model/chat_template.h): a reasoning block split from
 * the answer, byte by byte so that a tag cut across tokens is still seen
 * (the serve engine feeds each token's piece as it is sampled and streams
 * both parts), and gpt-oss's harmony channels. */
#include <string.h>

#include "model/chat_template.h"

static const char OPEN[] = "<think>", CLOSE[] = "</think>";

/* contiguous bytes of one kind, handed to emit in runs */
typedef struct {
    lb_think_emit emit;
    void *ud;
    int kind;
    char buf[256];
    size_t n;
} out_run;

static void run_flush(out_run *o) {
    if (o->n) o->emit(o->ud, o->kind, o->buf, o->n);
    o->n = 0;
}

static void run_put(out_run *o, int reasoning, const char *p, size_t n) {
    if (o->kind != reasoning) run_flush(o);
    o->kind = reasoning;
    for (size_t i = 0; i < n; i++) {
        if (o->n == sizeof o->buf) run_flush(o);
        o->buf[o->n++] = p[i];
    }
}

static void put_newlines(out_run *o, size_t n) {
    for (; n; n--) run_put(o, 1, "\n", 1);
}

void lb_think_init(lb_think_split *t, int open) {
    memset(t, 0, sizeof *t);
    t->state = open ? 1 : 0;
    t->lead = 1;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* the reply's start: whitespace, then "<think>" or a prefix of it so far */
static void start_byte(lb_think_split *t, char c, out_run *o) {
    t->hold[t->n_hold++] = c;
    size_t k = 0;
    while (k < t->n_hold && is_space(t->hold[k])) k++;
    const size_t rest = t->n_hold - k;
    const int prefix = rest <= strlen(OPEN) && !memcmp(t->hold + k, OPEN, rest);
    if (prefix && rest == strlen(OPEN)) { /* the block opens */
        t->state = 1, t->n_hold = 0;
    } else if (!prefix || t->n_hold == sizeof t->hold) { /* no block: the reply is the answer, as it is */
        run_put(o, 0, t->hold, t->n_hold);
        t->state = 3, t->n_hold = 0;
    }
}

static void reasoning_byte(lb_think_split *t, char c, out_run *o) {
    if (t->n_hold) {
        if (c == CLOSE[t->n_hold]) {
            t->hold[t->n_hold++] = c;
            if (t->n_hold == strlen(CLOSE)) t->state = 2, t->n_hold = 0, t->n_nl = 0; /* trailing newlines dropped */
            return;
        }
        put_newlines(o, t->n_nl); /* not the tag: what was held is reasoning */
        run_put(o, 1, t->hold, t->n_hold);
        t->n_nl = 0, t->n_hold = 0, t->lead = 0;
    }
    if (c == '<') {
        t->hold[t->n_hold++] = c;
    } else if (c == '\n') {
        if (!t->lead) t->n_nl++;
    } else {
        put_newlines(o, t->n_nl);
        run_put(o, 1, &c, 1);
        t->n_nl = 0, t->lead = 0;
    }
}

void lb_think_feed(lb_think_split *t, const char *p, size_t n, lb_think_emit emit, void *ud) {
    out_run o = {emit, ud, 0, {0}, 0};
    for (size_t i = 0; i < n; i++) {
        const char c = p[i];
        switch (t->state) {
        case 0: start_byte(t, c, &o); break;
        case 1: reasoning_byte(t, c, &o); break;
        case 2: /* the answer's leading newlines */
            if (c == '\n') break;
            t->state = 3;
            /* fall through */
        default: run_put(&o, 0, &c, 1);
        }
    }
    run_flush(&o);
}

void lb_think_finish(lb_think_split *t, lb_think_emit emit, void *ud) {
    out_run o = {emit, ud, 0, {0}, 0};
    if (t->state == 0) run_put(&o, 0, t->hold, t->n_hold);
    if (t->state == 1 && t->n_hold) { /* a cut-off "</thi": reasoning, and the newlines before it */
        put_newlines(&o, t->n_nl);
        run_put(&o, 1, t->hold, t->n_hold);
    }
    t->n_hold = 0, t->n_nl = 0;
    run_flush(&o);
}

/* ---- gpt-oss's harmony replies ---- */

void lb_harmony_init(lb_harmony *h) { memset(h, 0, sizeof *h); } /* the prompt ends in a header */

lb_harmony_kind lb_harmony_step(lb_harmony *h, const char *text, const char *piece, size_t len) {
    if (!strcmp(text, "<|channel|>")) {
        h->state = 1, h->n_channel = 0, h->channel[0] = 0;
    } else if (!strcmp(text, "<|message|>")) {
        h->state = 2;
        h->answer = !strcmp(h->channel, "final");
    } else if (!strcmp(text, "<|end|>") || !strcmp(text, "<|start|>") || !strcmp(text, "<|return|>") ||
               !strcmp(text, "<|call|>")) {
        h->state = 0;
    } else if (h->state == 1) { /* the channel's name, possibly in pieces */
        const size_t room = sizeof h->channel - 1 - h->n_channel, k = len < room ? len : room;
        memcpy(h->channel + h->n_channel, piece, k);
        h->n_channel += k;
        h->channel[h->n_channel] = 0;
    } else if (h->state == 2) {
        return h->answer ? LB_HARMONY_ANSWER : LB_HARMONY_REASONING;
    }
    return LB_HARMONY_NONE; /* control tokens, channel names, headers ("assistant") */
}
