/* SPDX-License-Identifier: MIT */
/*
 * Layout fields one value of another gives meaning to: the hybrid shard
 * group, the interleaved schedule's virtual stages, DeepSpeed ZeRO's reduce
 * bucket. A layout refuses such a field set away from its default while the
 * other says otherwise (a silent default is a wrong answer);
 * llmem_parallel_unread() says why, so a front end can refuse the setting
 * even at its default.
 */
#include "parallel/parallel.h"

#include "core/ctx.h"

#define V(enum_value) (UINT32_C(1) << (enum_value))

static const struct unread_rule {
    int field;       /* the field ... */
    int key;         /* ... that this setting reads ... */
    uint32_t values; /* ... when its value is one of these (bits 1 << value) */
    const char *reason;
} rules[] = {
    { LLMEM_PARALLEL_SHARD_GROUP, LLMEM_PARALLEL_SHARDING, V(LLMEM_SHARDING_FSDP_HYBRID),
      "needs sharding fsdp-hybrid (FSDP's shard groups)" },
    { LLMEM_PARALLEL_VIRTUAL_STAGES, LLMEM_PARALLEL_SCHEDULE, V(LLMEM_SCHEDULE_INTERLEAVED),
      "needs schedule interleaved (Megatron's virtual stages)" },
    /* Only DeepSpeed's engine has a reduce bucket (estimate/shard.c). */
    { LLMEM_PARALLEL_BUCKET_ELEMENTS, LLMEM_PARALLEL_SHARDING,
      V(LLMEM_SHARDING_ZERO1) | V(LLMEM_SHARDING_ZERO2) | V(LLMEM_SHARDING_ZERO3),
      "needs sharding zero1, zero2 or zero3 (DeepSpeed ZeRO's reduce bucket)" },
};

#define RULE_COUNT (sizeof rules / sizeof rules[0])

static const struct unread_rule *broken(const llmem_parallel *p, int key)
{
    for (size_t i = 0; i < RULE_COUNT; i++) {
        int64_t v = p->i[rules[i].key];
        if (rules[i].field == key && !(v >= 0 && v < 32 && (rules[i].values >> v & 1)))
            return &rules[i];
    }
    return NULL;
}

const char *llmem_parallel_unread(const llmem_parallel *p, int key)
{
    if (p == NULL || key <= 0 || key >= PARALLEL_KEY_END)
        return NULL;
    const struct unread_rule *r = broken(p, key);
    return r != NULL ? r->reason : NULL;
}

int llmem_parallel_check_unread(llmem_ctx *ctx, const llmem_parallel *p)
{
    /* every estimate asks: one rule a field, the read case first */
    for (size_t i = 0; i < RULE_COUNT; i++) {
        int64_t v = p->i[rules[i].field], by = p->i[rules[i].key];
        if (by >= 0 && by < 32 && (rules[i].values >> by & 1))
            continue;
        const field_desc *f = llmem_fields_find(&llmem_parallel_fields, rules[i].field);
        if ((double)v == f->def)
            continue;
        const char *now = llmem_fields_value_name(&llmem_parallel_fields, rules[i].key,
                                                  p->i[rules[i].key]);
        return llmem__fail_field(ctx, LLMEM_OBJECT_PARALLEL, rules[i].field, LLMEM_EINCONSISTENT,
                                 "%s: %lld is not read: it %s, and the %s is %s; leave %s at its "
                                 "default (%lld)",
                                 f->name, (long long)v, rules[i].reason,
                                 llmem_fields_find(&llmem_parallel_fields, rules[i].key)->name,
                                 now != NULL ? now : "?", f->name, (long long)f->def);
    }
    return LLMEM_OK;
}
