/* Grammar flags (run, chat, serve), as llama.cpp spells them: --grammar
 * GBNF, --grammar-file FILE, -j/--json-schema SCHEMA, --json-schema-file
 * FILE. One of them at most; the text is read and, for a schema, turned
 * into GBNF when the flag is parsed, so a bad file or schema stops the
 * command before the model loads. The grammar is checked again against the
 * model's vocabulary by cli_grammar_new. */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/common.h"

static int set_text(cli_args *a, cli_grammar *g, const char *flag, char *text) {
    if (g->gbnf) {
        fprintf(stderr, "lowbit %s: %s: only one of --grammar, --grammar-file, --json-schema, --json-schema-file\n",
                a->cmd, flag);
        free(text);
        a->bad = 1;
        return 1;
    }
    g->gbnf = text;
    return 1;
}

int cli_grammar_flag(cli_args *a, cli_grammar *g) {
    const int file = cli_flag(a, "--grammar-file", NULL) || cli_flag(a, "--json-schema-file", "-jf");
    const int schema = !file && cli_flag(a, "-j", "--json-schema");
    const int inline_gbnf = !file && !schema && cli_flag(a, "--grammar", NULL);
    if (!file && !schema && !inline_gbnf) return 0;
    const char *flag = a->argv[a->i], *v = cli_value(a);
    if (!v) return 1;
    char *text = NULL;
    size_t len = 0;
    lb_status s = LB_OK;
    if (file) {
        s = lb_read_file(v, &text, &len);
        if (!s && strlen(text) != len) s = lb_fail(LB_ERR_ARG, "%s contains a NUL byte: not a text file", v);
    } else if (!(text = strdup(v))) s = lb_fail(LB_ERR_NOMEM, "out of memory");
    else len = strlen(text);
    const int is_schema = schema || (file && !strcmp(flag, "--json-schema-file")) || (file && !strcmp(flag, "-jf"));
    if (!s && is_schema) {
        char *gbnf = NULL;
        s = lb_json_schema_to_grammar(text, len, &gbnf);
        free(text);
        text = gbnf;
    }
    if (s) {
        fprintf(stderr, "lowbit %s: %s: %s\n", a->cmd, flag, lb_last_error());
        free(text);
        a->bad = 1;
        return 1;
    }
    return set_text(a, g, flag, text);
}

lb_status cli_grammar_new(const cli_grammar *g, const lb_model *m, lb_grammar **out) {
    *out = NULL;
    if (!g->gbnf) return LB_OK;
    return lb_grammar_new(m, g->gbnf, out);
}

void cli_grammar_free(cli_grammar *g) {
    free(g->gbnf);
    g->gbnf = NULL;
}
