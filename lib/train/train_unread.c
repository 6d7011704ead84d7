/* SPDX-License-Identifier: MIT */
/*
 * Fields a setting gives meaning to: the LoRA fields with a LoRA method,
 * the article's with its formula, and so on. An estimate refuses a field
 * it would not read when the caller set it away from its default (a
 * silent default is a wrong answer); llmem_train_unread() says why a field
 * is not read, so a front end can refuse the flag even at its default.
 */
#include "train/train.h"

#include "core/ctx.h"

#include <stdio.h>

#define F(key) (UINT32_C(1) << LLMEM_TRAIN_##key)
#define V(enum_value) (UINT32_C(1) << (enum_value))

/* Every key is a bit of a uint32_t. */
typedef char train_keys_fit_a_mask[TRAIN_KEY_END <= 32 ? 1 : -1];

static const struct unread_rule {
    uint32_t fields; /* bits 1 << key */
    int key;         /* the setting that reads them ... */
    uint32_t values; /* ... when its value is one of these (bits 1 << value) */
    const char *reason;
} rules[] = {
    /* First: a LoRA field needs the phased formula before a LoRA method. */
    { F(PRECISION) | F(GRAD_CKPT) | F(ATTENTION) | F(DROPOUT) | F(METHOD) | F(LORA_RANK) |
          F(LORA_TARGETS) | F(FROZEN_LAYERS) | F(LOSS) | F(GRAD_ACCUM) | F(OPTIMIZER_IMPL) |
          F(LORA_DROPOUT) | F(EXPERTS_IMPL),
      LLMEM_TRAIN_FORMULA, V(LLMEM_FORMULA_PHASED),
      "needs formula phased (the default): the article's sum reads only the model's "
      "parameter count, batch, seq, optimizer, gpu and the article-* fields" },
    { F(ARTICLE_TMP_FACTOR) | F(ARTICLE_PARAM_BYTES), LLMEM_TRAIN_FORMULA,
      V(LLMEM_FORMULA_ARTICLE), "needs formula article (the phased estimate does not read it)" },
    { F(LORA_RANK) | F(LORA_TARGETS) | F(LORA_DROPOUT), LLMEM_TRAIN_METHOD,
      V(LLMEM_METHOD_LORA) | V(LLMEM_METHOD_QLORA), "needs method lora or qlora" },
    { F(FROZEN_LAYERS), LLMEM_TRAIN_METHOD, V(LLMEM_METHOD_FREEZE), "needs method freeze" },
    /* torch.optim's AdamW, Adam and SGD take fused/foreach; the others
     * (transformers' Adafactor, bitsandbytes, lion-pytorch) run their own. */
    { F(OPTIMIZER_IMPL), LLMEM_TRAIN_OPTIMIZER,
      V(LLMEM_OPTIMIZER_ADAMW) | V(LLMEM_OPTIMIZER_ADAM) | V(LLMEM_OPTIMIZER_SGD) |
          V(LLMEM_OPTIMIZER_SGD_MOMENTUM),
      "needs a torch.optim optimizer (adamw, adam, sgd, sgd-momentum): the others run "
      "kernels of their own" },
};

#define RULE_COUNT (sizeof rules / sizeof rules[0])

static int rule_holds(const llmem_train *t, const struct unread_rule *r)
{
    int64_t v = t->i[r->key];
    return v >= 0 && v < 32 && (r->values >> v & 1);
}

/* The first rule that leaves the field unread, or NULL. */
static const struct unread_rule *broken(const llmem_train *t, int key)
{
    for (size_t i = 0; i < RULE_COUNT; i++)
        if ((rules[i].fields >> key & 1) && !rule_holds(t, &rules[i]))
            return &rules[i];
    return NULL;
}

static const char *reason(const llmem_train *t, int key)
{
    const struct unread_rule *r = broken(t, key);
    return r != NULL ? r->reason : NULL;
}

const char *llmem_train_unread(const llmem_train *t, int key)
{
    if (t == NULL || key <= 0 || key >= TRAIN_KEY_END)
        return NULL;
    return reason(t, key);
}

static int at_default(const llmem_train *t, const field_desc *f)
{
    if (f->kind == FIELD_REAL)
        return t->d[f->key] == f->def;
    if (f->key == LLMEM_TRAIN_LORA_TARGETS && t->lora_names != 0)
        return 0; /* chosen by name */
    return (double)t->i[f->key] == f->def;
}

int llmem_train_check_unread(llmem_ctx *ctx, const llmem_train *t)
{
    /* Every estimate asks: the fields set and unread, by masks, first. */
    uint32_t unread = 0;
    for (size_t i = 0; i < RULE_COUNT; i++)
        if (!rule_holds(t, &rules[i]))
            unread |= rules[i].fields;
    uint32_t suspect = t->given & unread;
    for (int key = 1; suspect >> key != 0; key++) {
        if (!(suspect >> key & 1))
            continue;
        const field_desc *f = llmem_fields_find(&llmem_train_fields, key);
        if (at_default(t, f))
            continue;
        char value[48];
        const char *name = f->kind == FIELD_ENUM ? llmem_fields_value_name(&llmem_train_fields,
                                                                           key, t->i[key])
                                                 : NULL;
        if (f->kind == FIELD_REAL)
            snprintf(value, sizeof value, "%g", t->d[key]);
        else if (name != NULL)
            snprintf(value, sizeof value, "%s", name);
        else if (f->kind == FIELD_MASK)
            snprintf(value, sizeof value, "%s", "the targets set");
        else
            snprintf(value, sizeof value, "%lld", (long long)t->i[key]);
        char def[56] = "";
        const char *def_name = f->kind == FIELD_ENUM ? llmem_fields_value_name(
                                                           &llmem_train_fields, key, (int64_t)f->def)
                                                     : NULL;
        if (def_name != NULL)
            snprintf(def, sizeof def, " (%s)", def_name);
        else if (f->kind == FIELD_REAL && f->def == TRAIN_DROPOUT_MODEL)
            snprintf(def, sizeof def, " (%s: the model's own)", TRAIN_DROPOUT_MODEL_NAME);
        else if (f->kind == FIELD_REAL)
            snprintf(def, sizeof def, " (%g)", f->def);
        else if (f->kind == FIELD_INT)
            snprintf(def, sizeof def, " (%lld)", (long long)f->def);
        /* and what the setting that would read it is now ("the method is full") */
        const struct unread_rule *r = broken(t, key);
        const char *now = llmem_fields_value_name(&llmem_train_fields, r->key, t->i[r->key]);
        return llmem__fail_field(ctx, LLMEM_OBJECT_TRAIN, key, LLMEM_EINCONSISTENT,
                                 "%s: %s is not read: it %s, and the %s is %s; leave %s at its "
                                 "default%s",
                                 f->name, value, r->reason,
                                 llmem_fields_find(&llmem_train_fields, r->key)->name,
                                 now != NULL ? now : "?", f->name, def);
    }
    return LLMEM_OK;
}
