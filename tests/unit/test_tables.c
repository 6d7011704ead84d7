/* SPDX-License-Identifier: MIT */
/*
 * The library's tables, white-box: the field tables are dense and keyed as
 * the header numbers them; every value of the family, optimizer and precision
 * enumerations has its row, with rules and defaults the code understands.
 * A new enum value without a row fails here (or at compile time).
 */
#include "core/fields.h"
#include "layers/common.h"
#include "model/families.h"
#include "model/model.h"
#include "train/optimizers.h"
#include "train/precisions.h"
#include "train/train.h"

#include <criterion/criterion.h>
#include <string.h>

/* defaults: whether new handles take the table's defaults (the training
 * setup); a model's sizes start unset and its layout comes from the family. */
static void check_dense(const field_table *t, int key_end, int defaults)
{
    cr_expect_eq(llmem_fields_key_end(t), key_end, "%s: key end", t->object_name);
    for (size_t i = 0; i < t->count; i++) {
        const field_desc *f = &t->rows[i];
        cr_expect_eq(f->key, (int)i + 1, "%s row %zu has key %d", t->object_name, i, f->key);
        cr_expect_not_null(f->name);
        cr_expect_leq(f->min, f->max, "%s: bounds", f->name);
        cr_expect((f->kind == FIELD_ENUM || f->kind == FIELD_MASK) == (f->values != NULL),
                  "%s: named values exactly for enumerated and mask fields", f->name);
        /* The training setup's dropout defaults to the model's own, outside its bounds. */
        int model_dropout = t == &llmem_train_fields && f->key == LLMEM_TRAIN_DROPOUT &&
                            f->def == TRAIN_DROPOUT_MODEL;
        if (defaults && f->kind != FIELD_MASK && !model_dropout)
            cr_expect(f->def >= f->min && f->def <= f->max, "%s: default within bounds", f->name);
        for (size_t j = 0; j < i; j++)
            cr_expect_str_neq(t->rows[j].name, f->name, "%s: two fields named alike", f->name);
    }
}

Test(tables, field_tables_are_dense)
{
    check_dense(&llmem_model_fields, MODEL_KEY_END, 0);
    check_dense(&llmem_train_fields, TRAIN_KEY_END, 1);
}

Test(tables, every_family_has_a_row)
{
    cr_expect_eq(llmem_family_count(), (size_t)FAMILY_LAST);
    for (int v = 1; v <= FAMILY_LAST; v++) {
        const family_desc *f = llmem_family(v);
        cr_assert_not_null(f, "family %d has no row", v);
        cr_expect_eq(f->id.value, v);
        cr_expect_not_null(llmem_names_name(&llmem_names_norm, f->norm), "%s: norm", f->id.name);
        cr_expect_not_null(llmem_names_name(&llmem_names_mlp, f->mlp), "%s: mlp", f->id.name);
        cr_expect_not_null(llmem_names_name(&llmem_names_positions, f->positions), "%s: positions",
                           f->id.name);
        cr_expect(f->path >= PATH_NONE && f->path < PATH_COUNT, "%s: path %d", f->id.name, f->path);
        if (f->path != PATH_NONE)
            cr_expect_not_null(llmem_layer_path(f->path), "%s: path %d has no builder", f->id.name,
                               f->path);
        cr_expect(f->phased == 0 || f->path != PATH_NONE,
                  "%s: phased features without a code path", f->id.name);
        /* Dropout defaults are probabilities, 0 at a site the code lacks (a
         * family's own model must validate); every family has attention. */
        cr_expect(f->dropout_sites & DROPOUT_AT(DROPOUT_ATTENTION), "%s: attention dropout",
                  f->id.name);
        for (int site = 0; site < DROPOUT_SITES; site++)
            cr_expect(f->dropout[site] >= 0.0 && f->dropout[site] < 1.0 &&
                          (f->dropout[site] == 0.0 || (f->dropout_sites & DROPOUT_AT(site))),
                      "%s: dropout default %g at site %d", f->id.name, f->dropout[site], site);
    }
    cr_expect_null(llmem_family(0));
    cr_expect_null(llmem_family(FAMILY_LAST + 1));
}

Test(tables, every_optimizer_and_precision_has_a_row)
{
    for (int v = 1; v <= LLMEM_OPTIMIZER_PAGED_LION; v++) {
        const optimizer_desc *o = llmem_optimizer(v);
        cr_assert_not_null(o, "optimizer %d has no row", v);
        cr_expect_eq(o->id.value, v);
        cr_expect(o->state_rule >= STATES_LIKE_PARAM && o->state_rule <= STATES_FP32, "%s: state rule",
                  o->id.name);
        for (int impl = LLMEM_OPTIMIZER_IMPL_FUSED; impl <= LLMEM_OPTIMIZER_IMPL_FORLOOP; impl++)
            cr_expect(o->step_rule[impl] >= STEP_IN_PLACE && o->step_rule[impl] <= STEP_FORLOOP_DENOM,
                      "%s: step rule of implementation %d", o->id.name, impl);
        /* A fused kernel holds no temporaries; a step counter only torch's Adam keeps. */
        cr_expect(o->step_rule[LLMEM_OPTIMIZER_IMPL_FUSED] != STEP_FOREACH_SQRT &&
                      o->step_rule[LLMEM_OPTIMIZER_IMPL_FUSED] != STEP_FORLOOP_DENOM,
                  "%s: fused step", o->id.name);
        cr_expect(!o->step_counter || o->state_rule == STATES_LIKE_PARAM, "%s: step counter",
                  o->id.name);
        cr_expect(o->states >= 0 && o->states <= 2, "%s: states", o->id.name);
        cr_expect(o->article_multiple >= 0 && o->article_bytes >= 0, "%s: article", o->id.name);
    }
    cr_expect_null(llmem_optimizer(0));
    cr_expect_null(llmem_optimizer(LLMEM_OPTIMIZER_PAGED_LION + 1));
    /* Every Trainer optim name maps to a row, and only torch AdamW's imply an
     * implementation. */
    for (size_t i = 0; i < llmem_names_count(&llmem_names_optimizer); i++) {
        const name_value *nv = llmem_names_at(&llmem_names_optimizer, i);
        cr_expect_not_null(llmem_optimizer(nv->value), "%s", nv->name);
        int impl = llmem_optimizer_implied_impl(nv->name);
        cr_expect(impl == 0 || nv->value == LLMEM_OPTIMIZER_ADAMW, "%s implies %d", nv->name, impl);
    }
    cr_expect_eq(llmem_optimizer_implied_impl("adamw_torch"), LLMEM_OPTIMIZER_IMPL_FOREACH);
    cr_expect_eq(llmem_optimizer_implied_impl("adamw_torch_fused"), LLMEM_OPTIMIZER_IMPL_FUSED);
    cr_expect_eq(llmem_optimizer_implied_impl("adamw"), 0);
    cr_expect_eq(llmem_optimizer_implied_impl(NULL), 0);
    for (int v = 1; v <= LLMEM_PRECISION_BF16_AUTOCAST; v++) {
        const precision_desc *p = llmem_precision(v);
        cr_assert_not_null(p, "precision %d has no row", v);
        cr_expect_eq(p->id.value, v);
        cr_expect(p->param_dt == 2 || p->param_dt == 4, "%s", p->id.name);
        cr_expect(p->compute_dt == 2 || p->compute_dt == 4, "%s", p->id.name);
        /* Weights wider than the matmuls need autocast; bf16-autocast has it
         * over bf16 weights (from_pretrained's dtype "auto" with bf16=True). */
        cr_expect(p->param_dt == p->compute_dt || p->autocast, "%s: mixed needs autocast",
                  p->id.name);
        cr_expect_eq(p->autocast, p->param_dt != p->compute_dt ||
                                      v == LLMEM_PRECISION_BF16_AUTOCAST,
                     "%s: autocast", p->id.name);
    }
    cr_expect_null(llmem_precision(LLMEM_PRECISION_BF16_AUTOCAST + 1));
    const precision_desc *ba = llmem_precision(LLMEM_PRECISION_BF16_AUTOCAST);
    cr_expect_str_eq(ba->id.name, "bf16-autocast");
    cr_expect(ba->param_dt == 2 && ba->compute_dt == 2 && ba->autocast);
}
