/* Grammar-constrained sampling, inside (the API is in lowbit.h).
 *
 * A grammar is GBNF, the notation llama.cpp's --grammar reads: rules
 * `name ::= alternatives`, literals "...", classes [a-z] and [^...], `.`,
 * groups ( ), repetitions * + ? {m} {m,} {m,n}, comments after #.
 *
 * Compiled form: every rule is a run of elements in one array,
 *     alt 1 ... GE_ALT  alt 2 ... GE_END
 * where an alternative is a sequence of symbols: GE_REF (another rule) or a
 * character group: GE_CHAR / GE_NOT (negated class) / GE_ANY, each followed
 * by GE_RNG_HI (the group's last value was a range's low end) and GE_CHAR_ALT
 * (one more value or range of the same class). Repetitions and groups become
 * rules of their own at parse time (x* is R ::= x R | ε), so matching needs
 * only sequences, alternatives and references.
 *
 * Matching state: a set of stacks of element indices, each a way the text
 * so far can continue. The top of a stack is always a character group (the
 * next code point must match it); below it, where to continue in the rules
 * that referenced the rule being matched. An empty stack: the text so far
 * is a whole sentence of the grammar. */
#ifndef LB_GRAMMAR_IMPL_H
#define LB_GRAMMAR_IMPL_H

#include <stdint.h>

#include "core/common.h"

enum { GE_END, GE_ALT, GE_REF, GE_CHAR, GE_NOT, GE_RNG_HI, GE_CHAR_ALT, GE_ANY };

typedef struct {
    uint32_t type : 8;
    uint32_t v : 24; /* a code point (up to 0x10FFFF) or a rule id */
} lb_gel;

typedef struct {
    lb_gel *el;
    int n_el, cap_el;
    int *rule_start; /* element index of each rule's first alternative; -1 until defined */
    char **names;
    int n_rules, cap_rules;
    int root;
} lb_grules;

/* Parses GBNF text into rules (root rule "root"), checking that every
 * referenced rule is defined and that no rule is left-recursive. On error
 * returns LB_ERR_ARG with "grammar: line L, column C: problem". */
lb_status lb_grules_parse(const char *text, lb_grules *out);
void lb_grules_free(lb_grules *g);

/* Whether code point cp matches the character group at element index pos,
 * and the index just past that group. */
int lb_gel_match(const lb_gel *el, int pos, uint32_t cp);
int lb_gel_skip(const lb_gel *el, int pos);

#endif
