/* SPDX-License-Identifier: MIT */
/* The model handle: fields set and read through the field engine. */
#include "model/model.h"

#include "core/ctx.h"
#include "model/families.h"

#include <string.h>

void llmem_model_family_defaults(int64_t *f, int family)
{
    const family_desc *d = llmem_family(family);
    if (d == NULL)
        return;
    f[LLMEM_MODEL_FAMILY] = family;
    f[LLMEM_MODEL_NORM] = d->norm;
    f[LLMEM_MODEL_MLP] = d->mlp;
    f[LLMEM_MODEL_POSITIONS] = d->positions;
    f[LLMEM_MODEL_QKV_BIAS] = d->qkv_bias;
    f[LLMEM_MODEL_OUT_BIAS] = d->out_bias;
    f[LLMEM_MODEL_MLP_BIAS] = d->mlp_bias;
    f[LLMEM_MODEL_NORM_BIAS] = d->norm_bias;
    f[LLMEM_MODEL_HEAD_BIAS] = d->head_bias;
    f[LLMEM_MODEL_TIE_EMBEDDINGS] = d->tie;
    f[LLMEM_MODEL_NORMS_PER_LAYER] = d->norms_per_layer;
    f[LLMEM_MODEL_FINAL_NORM] = d->final_norm;
    f[LLMEM_MODEL_EMBED_NORM] = d->embed_norm;
    f[LLMEM_MODEL_POSITION_OFFSET] = d->position_offset;
    f[LLMEM_MODEL_PARALLEL_BLOCK] = d->parallel_block;
    f[LLMEM_MODEL_ACTIVATION] = d->activation;
    f[LLMEM_MODEL_POST_NORM] = 0;
    f[LLMEM_MODEL_SLIDING_WINDOW] = d->sliding_window;
    f[LLMEM_MODEL_BNB_4BIT] = 0;
    for (int site = 0; site < DROPOUT_SITES; site++)
        llmem_model_put_real(f, MODEL_DROPOUT_KEY(site), d->dropout[site]);
}

int llmem_model_new(llmem_ctx *ctx, int family, llmem_model **out)
{
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, "model: out pointer is NULL");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    if (llmem_family(family) == NULL) {
        char list[160];
        llmem_names_list(&llmem_names_family, list, sizeof list);
        return llmem__fail_field(ctx, LLMEM_OBJECT_MODEL, LLMEM_MODEL_FAMILY, LLMEM_ERANGE,
                                 "family: unknown value %d (expected %s)", family, list);
    }
    llmem_model *m = llmem__calloc(ctx, sizeof *m);
    if (m == NULL)
        return llmem__fail(ctx, LLMEM_ENOMEM, "model: out of memory");
    m->ctx = ctx;
    llmem_model_family_defaults(m->field, family);
    *out = m;
    llmem__ok(ctx);
    return LLMEM_OK;
}

void llmem_model_free(llmem_model *m)
{
    if (m != NULL)
        llmem__free(m->ctx, m);
}

int llmem_model_set_int(llmem_model *m, int key, int64_t value)
{
    const field_desc *f;
    if (m == NULL)
        return LLMEM_EINVAL;
    int rc = llmem_fields_accept_int(m->ctx, &llmem_model_fields, key, value, &f);
    if (rc != LLMEM_OK)
        return rc;
    if (key == LLMEM_MODEL_FAMILY) /* a new family brings its layout; the sizes stay */
        llmem_model_family_defaults(m->field, (int)value);
    if (f->kind == FIELD_REAL)
        llmem_model_put_real(m->field, key, (double)value);
    else
        m->field[key] = value;
    llmem__ok(m->ctx);
    return LLMEM_OK;
}

int llmem_model_set_double(llmem_model *m, int key, double value)
{
    const field_desc *f;
    if (m == NULL)
        return LLMEM_EINVAL;
    int rc = llmem_fields_accept_real(m->ctx, &llmem_model_fields, key, value, &f);
    if (rc != LLMEM_OK)
        return rc;
    llmem_model_put_real(m->field, key, value);
    llmem__ok(m->ctx);
    return LLMEM_OK;
}

int llmem_model_get_double(const llmem_model *m, int key, double *out)
{
    const field_desc *f;
    if (m == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(m->ctx, LLMEM_EINVAL, "llmem_model_get_double: out is NULL");
    int rc = llmem_fields_row(m->ctx, &llmem_model_fields, key, &f);
    if (rc != LLMEM_OK)
        return rc;
    if (f->kind != FIELD_REAL)
        return llmem__fail_field(m->ctx, LLMEM_OBJECT_MODEL, key, LLMEM_EINVAL,
                                 "%s: not a real field (read it as an integer)", f->name);
    *out = llmem_model_real(m->field, key);
    return LLMEM_OK;
}

int llmem_model_field_is_real(int key)
{
    const field_desc *f = llmem_fields_find(&llmem_model_fields, key);
    return f == NULL ? LLMEM_EINVAL : f->kind == FIELD_REAL;
}

int llmem_model_set_str(llmem_model *m, int key, const char *value)
{
    const field_desc *f;
    int64_t v = 0;
    double unused = 0;
    if (m == NULL)
        return LLMEM_EINVAL;
    int rc = llmem_fields_row(m->ctx, &llmem_model_fields, key, &f);
    if (rc != LLMEM_OK)
        return rc;
    /* Documented for named fields; sizes are set as integers, probabilities as reals. */
    if (f->values == NULL)
        return llmem__fail_field(m->ctx, LLMEM_OBJECT_MODEL, key, LLMEM_EINVAL,
                                 "%s: not a named field (set it as %s)", f->name,
                                 f->kind == FIELD_REAL ? "a real" : "an integer");
    rc = llmem_fields_accept_str(m->ctx, &llmem_model_fields, key, value, &v, &unused, &f);
    return rc != LLMEM_OK ? rc : llmem_model_set_int(m, key, v);
}

int llmem_model_get_int(const llmem_model *m, int key, int64_t *out)
{
    const field_desc *f;
    if (m == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(m->ctx, LLMEM_EINVAL, "llmem_model_get_int: out is NULL");
    int rc = llmem_fields_row(m->ctx, &llmem_model_fields, key, &f);
    if (rc != LLMEM_OK)
        return rc;
    if (f->kind == FIELD_REAL) /* its slot holds a double's bits */
        return llmem__fail_field(m->ctx, LLMEM_OBJECT_MODEL, key, LLMEM_EINVAL,
                                 "%s: a real field (read it with llmem_model_get_double)",
                                 f->name);
    int64_t v = m->field[key];
    if (key == LLMEM_MODEL_KV_HEADS && v == 0)
        v = m->field[LLMEM_MODEL_HEADS];
    else if (key == LLMEM_MODEL_HEAD_DIM && v == 0 && m->field[LLMEM_MODEL_HEADS] > 0)
        v = m->field[LLMEM_MODEL_HIDDEN] / m->field[LLMEM_MODEL_HEADS];
    else if (key == LLMEM_MODEL_EMBED_DIM && v == 0)
        v = m->field[LLMEM_MODEL_HIDDEN];
    else if ((key == LLMEM_MODEL_ROTARY_DIM || key == LLMEM_MODEL_V_HEAD_DIM) && v == 0)
        return llmem_model_get_int(m, LLMEM_MODEL_HEAD_DIM, out);
    *out = v;
    return LLMEM_OK;
}

int llmem_model_validate(llmem_model *m)
{
    model_shape s;
    model_params p;
    if (m == NULL)
        return LLMEM_EINVAL;
    int rc = llmem_model_resolve(m, &s, &p);
    if (rc == LLMEM_OK)
        llmem__ok(m->ctx);
    return rc;
}

int llmem_model_param_count(llmem_model *m, uint64_t *out)
{
    model_shape s;
    model_params p;
    if (m == NULL)
        return LLMEM_EINVAL;
    if (out == NULL)
        return llmem__fail(m->ctx, LLMEM_EINVAL, "llmem_model_param_count: out is NULL");
    int rc = llmem_model_resolve(m, &s, &p);
    if (rc != LLMEM_OK)
        return rc;
    *out = p.total;
    llmem__ok(m->ctx);
    return LLMEM_OK;
}

int llmem_model_field_info(int key, const char **name, int64_t *min, int64_t *max)
{
    return llmem_fields_info(&llmem_model_fields, key, name, min, max, NULL);
}

const char *llmem_model_value_name(int key, int64_t value)
{
    return llmem_fields_value_name(&llmem_model_fields, key, value);
}

const char *llmem_model_choice(int key, size_t index, int64_t *value)
{
    return llmem_fields_choice(&llmem_model_fields, key, index, value);
}
