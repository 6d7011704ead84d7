/* SPDX-License-Identifier: MIT */
/* Models from a Hugging Face config.json. Each supported model_type is a row:
 * its family, the config fields read into model fields (names, defaults and
 * whether required, as the transformers configuration_<type>.py has them),
 * and, where a layout cannot be said with fields alone, a function that
 * derives it (as modeling_<type>.py builds its modules). */
#include "hf/hf.h"

#include "core/ctx.h"
#include "hf/json.h"
#include "model/model.h"

#include <stdio.h>
#include <string.h>

#define CONFIG_NAME "config.json"

enum hf_field_kind {
    REQ = 1, /* an integer the config must give */
    OPT,     /* a positive integer; absent or null gives the default, 0 is refused */
    FLAG,    /* a boolean; absent or null gives the default */
    CONST    /* no config field: the value itself */
};

typedef struct hf_field {
    int key;          /* llmem_model_key */
    int kind;
    int64_t value;    /* default (OPT, FLAG) or the value (CONST) */
    const char *names[3]; /* config names; aliases must agree when several are present */
} hf_field;

typedef struct reader reader;

/* The config keys of a model type's dropout probabilities, one a kind of site
 * (model/dropout.h), and its configuration class's defaults when a key is
 * absent or null. NULL: the type's code has no such site. */
typedef struct hf_dropouts {
    const char *names[DROPOUT_SITES];
    double def[DROPOUT_SITES];
} hf_dropouts;

/* A model type's sliding window: config key sliding_window, its configuration
 * class's default when absent (null is no window), and the boolean that
 * switches it on where there is one (Qwen2's use_sliding_window). */
typedef struct hf_window {
    int64_t def;
    const char *switch_name; /* NULL: the window alone decides */
} hf_window;

typedef struct hf_type {
    const char *model_type;
    int family;
    const hf_field *fields;
    size_t nfields;
    int (*layout)(reader *r); /* derivations the fields cannot express, or NULL */
    const hf_dropouts *dropouts;
    const hf_window *window;  /* NULL: the type's code has no sliding window */
    /* The field naming the MLP's activation (ACT2FN[...]) where the layout
     * does not read it; NULL: the family's own */
    const char *activation;
} hf_type;

struct reader {
    llmem_ctx *ctx;
    const hf_jv *root;
    const hf_type *type;
    int64_t f[MODEL_KEY_END];
    int set[MODEL_KEY_END];
    const char *from[MODEL_KEY_END]; /* config name each value came from, for messages */
    double dropout[DROPOUT_SITES];
};

/* ---- reading one config value ---------------------------------------- */

static int missing(reader *r, const char *name)
{
    return llmem__fail(r->ctx, LLMEM_EPARSE, CONFIG_NAME ": missing field '%s' for model_type '%s'",
                       name, r->type->model_type);
}

static int wrong_type(reader *r, const char *name, const char *want, const hf_jv *v)
{
    int type = llmem_hf_json_type(v);
    if (type == HF_JSTRING && strcmp(want, "a string") == 0)
        return llmem__fail(r->ctx, LLMEM_EPARSE, CONFIG_NAME ": field '%s' holds a NUL character",
                           name);
    /* A real number, shown as written: 256.0 or 2.56e2 has no fractional part
     * but is no JSON integer (transformers would build layers of a float). */
    if (type == HF_JDOUBLE) {
        static const char integer[] = "an integer";
        int is_int = strncmp(want, integer, sizeof integer - 1) == 0;
        return llmem__fail(r->ctx, LLMEM_EPARSE,
                           CONFIG_NAME ": field '%s' must be %s%s, not %s (%.40s)", name,
                           is_int ? "a JSON integer" : want,
                           is_int ? want + sizeof integer - 1 : "",
                           llmem_hf_json_type_name(type), llmem_hf_json_real_text(v));
    }
    return llmem__fail(r->ctx, LLMEM_EPARSE, CONFIG_NAME ": field '%s' must be %s, not %s", name,
                       want, llmem_hf_json_type_name(type));
}

/* The first of names present and not null (*name set to it), agreeing with
 * any other alias present. Returns 1 when found, 0 when not, <0 on error. */
static int lookup(reader *r, const char *const *names, size_t n, const hf_jv **out,
                  const char **name)
{
    *out = NULL;
    *name = names[0];
    for (size_t i = 0; i < n && names[i] != NULL; i++) {
        const hf_jv *v;
        if (!llmem_hf_json_member(r->root, names[i], &v) || v == NULL)
            continue;
        if (*out == NULL) {
            *out = v;
            *name = names[i];
            continue;
        }
        int64_t a, b;
        if (llmem_hf_json_int64(*out, &a) == 0 && llmem_hf_json_int64(v, &b) == 0 && a != b)
            return llmem__fail(r->ctx, LLMEM_EPARSE,
                               CONFIG_NAME ": fields '%s' (%lld) and '%s' (%lld) disagree", *name,
                               (long long)a, names[i], (long long)b);
    }
    return *out != NULL;
}

/* Whether the config gives any of names (not null). */
static int present(reader *r, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n && names[i] != NULL; i++) {
        const hf_jv *v;
        if (llmem_hf_json_member(r->root, names[i], &v) && v != NULL)
            return 1;
    }
    return 0;
}

/* An integer field: the first alias present, or the default when none is. */
static int get_int(reader *r, const char *const *names, size_t n, int required, int64_t dflt,
                   int64_t *out, const char **name)
{
    const hf_jv *v;
    int rc = lookup(r, names, n, &v, name);
    if (rc < 0)
        return rc;
    if (rc == 0) {
        if (required)
            return missing(r, names[0]);
        *out = dflt;
        return LLMEM_OK;
    }
    if (llmem_hf_json_int64(v, out) != 0) {
        if (llmem_hf_json_type(v) == HF_JINT)
            return llmem__fail(r->ctx, LLMEM_EPARSE,
                               CONFIG_NAME ": field '%s' does not fit in 64 bits", *name);
        return wrong_type(r, *name, "an integer", v);
    }
    return LLMEM_OK;
}

/* A boolean field, or dflt when absent or null. *out is written on failure
 * too (dflt): the compiler cannot see that wrong_type() returns an error, and
 * would warn that a caller's flag may be read uninitialized. */
static int flag_in(reader *r, const hf_jv *obj, const char *name, const char *shown, int dflt,
                   int *out)
{
    const hf_jv *v;
    *out = dflt;
    if (!llmem_hf_json_member(obj, name, &v) || v == NULL)
        return LLMEM_OK;
    int b = llmem_hf_json_bool(v);
    if (b < 0)
        return wrong_type(r, shown, "a boolean", v);
    *out = b;
    return LLMEM_OK;
}

static int get_flag(reader *r, const char *name, int dflt, int *out)
{
    return flag_in(r, r->root, name, name, dflt, out);
}

/* Sizes a layout reads are bounded before any arithmetic on them: no
 * published config comes near 2^32 in any of them. */
#define LAYOUT_MAX (INT64_C(1) << 32)

static int in_layout_range(reader *r, const char *name, int64_t v, int64_t min)
{
    if (v < min || v > LAYOUT_MAX)
        return llmem__fail(r->ctx, LLMEM_EPARSE,
                           CONFIG_NAME ": field '%s' = %lld is outside [%lld, %lld]", name,
                           (long long)v, (long long)min, (long long)LAYOUT_MAX);
    return LLMEM_OK;
}

/* An optional integer in [min, 2^32]. */
static int get_opt_int(reader *r, const char *name, int64_t dflt, int64_t min, int64_t *out)
{
    const char *names[1] = { name }, *used;
    int rc = get_int(r, names, 1, 0, dflt, out, &used);
    return rc != LLMEM_OK ? rc : in_layout_range(r, name, *out, min);
}

/* A required integer in [min, 2^32]. */
static int get_req_int(reader *r, const char *name, int64_t min, int64_t *out)
{
    const char *names[1] = { name }, *used;
    int rc = get_int(r, names, 1, 1, 0, out, &used);
    return rc != LLMEM_OK ? rc : in_layout_range(r, name, *out, min);
}

/* A fraction in (0, 1] (rotary_pct, partial_rotary_factor). */
static int get_fraction(reader *r, const char *name, double dflt, double *out)
{
    const hf_jv *v;
    if (!llmem_hf_json_member(r->root, name, &v) || v == NULL) {
        *out = dflt;
        return LLMEM_OK;
    }
    if (llmem_hf_json_number(v, out) != 0)
        return wrong_type(r, name, "a number", v);
    if (!(*out > 0.0 && *out <= 1.0))
        return llmem__fail(r->ctx, LLMEM_EPARSE, CONFIG_NAME ": field '%s' = %g is not in (0, 1]",
                           name, *out);
    return LLMEM_OK;
}

/* The type's dropout probabilities, each in [0, 1) (nn.Dropout refuses more
 * than 1, and p = 1 zeroes the activations). */
static int read_dropouts(reader *r)
{
    const hf_dropouts *d = r->type->dropouts;
    for (int site = 0; site < DROPOUT_SITES; site++) {
        const char *name = d->names[site];
        const hf_jv *v;
        r->dropout[site] = d->def[site];
        if (name == NULL || !llmem_hf_json_member(r->root, name, &v) || v == NULL)
            continue;
        if (llmem_hf_json_number(v, &r->dropout[site]) != 0)
            return wrong_type(r, name, "a number", v);
        if (!(r->dropout[site] >= 0.0 && r->dropout[site] < 1.0))
            return llmem__fail(r->ctx, LLMEM_EPARSE,
                               CONFIG_NAME ": field '%s' = %g is not a dropout probability in "
                                           "[0, 1)", name, r->dropout[site]);
    }
    return LLMEM_OK;
}

static void put(reader *r, int key, int64_t value, const char *from)
{
    r->f[key] = value;
    r->set[key] = 1;
    r->from[key] = from;
}

/* The sliding window as the type's model code takes it: sliding_window
 * (null: none), off when the type's switch is false. A switched-on Qwen2
 * window covers only the layers from max_window_layers on: refused, as
 * layers of two kinds of attention are not modelled there. */
static int read_window(reader *r)
{
    const hf_window *w = r->type->window;
    const hf_jv *v;
    int64_t window = 0;
    if (w == NULL)
        return LLMEM_OK; /* the family default (none) */
    if (w->switch_name != NULL) {
        int on, rc = get_flag(r, w->switch_name, 0, &on);
        if (rc != LLMEM_OK)
            return rc;
        if (on)
            return llmem__fail(r->ctx, LLMEM_ENOTSUP,
                               CONFIG_NAME ": field '%s' = true (sliding-window attention on "
                                           "the layers from max_window_layers on) is not "
                                           "supported", w->switch_name);
        put(r, LLMEM_MODEL_SLIDING_WINDOW, 0, w->switch_name);
        return LLMEM_OK;
    }
    if (!llmem_hf_json_member(r->root, "sliding_window", &v)) {
        window = w->def;
    } else if (v != NULL && llmem_hf_json_int64(v, &window) != 0) {
        if (llmem_hf_json_type(v) == HF_JINT)
            return llmem__fail(r->ctx, LLMEM_EPARSE,
                               CONFIG_NAME ": field 'sliding_window' does not fit in 64 bits");
        return wrong_type(r, "sliding_window", "an integer or null", v);
    } else if (v != NULL && window == 0) {
        /* not null: transformers' mask would then attend to no position */
        return llmem__fail(r->ctx, LLMEM_EPARSE,
                           CONFIG_NAME ": field 'sliding_window' = 0 attends to no position "
                                       "(null means no window)");
    }
    int rc = in_layout_range(r, "sliding_window", window, 0);
    if (rc == LLMEM_OK)
        put(r, LLMEM_MODEL_SLIDING_WINDOW, window, "sliding_window");
    return rc;
}

/* Value of key as read so far (0 when unset). */
static int64_t got(const reader *r, int key)
{
    return r->set[key] ? r->f[key] : 0;
}

/* A value within the model field's bounds (lib/model/model_fields.c). */
static int check_bounds(reader *r, int key, int64_t v, const char *from)
{
    const field_desc *fd = llmem_fields_find(&llmem_model_fields, key);
    long long min = (long long)fd->min, max = (long long)fd->max;
    if (v >= min && v <= max)
        return LLMEM_OK;
    if (from != NULL)
        return llmem__fail(r->ctx, LLMEM_EPARSE,
                           CONFIG_NAME ": field '%s' gives %s = %lld, outside [%lld, %lld]", from,
                           fd->name, (long long)v, min, max);
    return llmem__fail(r->ctx, LLMEM_EPARSE, CONFIG_NAME ": %s = %lld outside [%lld, %lld]",
                       fd->name, (long long)v, min, max);
}

static int read_fields(reader *r)
{
    const hf_type *t = r->type;
    for (size_t i = 0; i < t->nfields; i++) {
        const hf_field *fd = &t->fields[i];
        const char *name = fd->names[0];
        int64_t v = 0;
        int rc = LLMEM_OK, b;
        switch (fd->kind) {
        case REQ:
        case OPT:
            rc = get_int(r, fd->names, 3, fd->kind == REQ, fd->value, &v, &name);
            /* Absent with no default: the model field stays unset. */
            if (rc == LLMEM_OK && v == 0 && fd->value == 0 && !present(r, fd->names, 3))
                continue;
            /* Given as 0, a size transformers builds zero-wide layers from (or
             * divides by): the model field would read 0 as "derive it". */
            if (rc == LLMEM_OK && fd->kind == OPT && v == 0)
                return llmem__fail(r->ctx, LLMEM_EPARSE,
                                   CONFIG_NAME ": field '%s' = 0 must be positive (leave it out "
                                   "or null for the default)", name);
            break;
        case FLAG:
            rc = get_flag(r, name, (int)fd->value, &b);
            v = b;
            break;
        default:
            v = fd->value;
            name = NULL;
            break;
        }
        if (rc != LLMEM_OK)
            return rc;
        /* Bounds now, so layouts compute only with sane values. */
        if ((rc = check_bounds(r, fd->key, v, name)) != LLMEM_OK)
            return rc;
        put(r, fd->key, v, name);
    }
    return LLMEM_OK;
}

/* ---- layouts ------------------------------------------------------------ */

static int64_t head_dim_of(const reader *r)
{
    int64_t heads = got(r, LLMEM_MODEL_HEADS), d = got(r, LLMEM_MODEL_HEAD_DIM);
    return d > 0 ? d : (heads > 0 ? got(r, LLMEM_MODEL_HIDDEN) / heads : 0);
}

/* Partial rotary: int(head_dim * fraction), as GPT-NeoX (rotary_ndims) and
 * Phi (partial_rotary_factor) compute it. */
static int partial_rotary(reader *r, const char *name)
{
    double frac;
    int rc = get_fraction(r, name, 1.0, &frac);
    if (rc != LLMEM_OK)
        return rc;
    int64_t dims = (int64_t)((double)head_dim_of(r) * frac);
    if (frac < 1.0)
        put(r, LLMEM_MODEL_ROTARY_DIM, dims > 0 ? dims : 1, name);
    return LLMEM_OK;
}

/* transformers.activations.ACT2FN names of the activations the estimate
 * follows; the config field names the MLP's activation. */
static const struct {
    const char *name;
    int value;
} activations[] = {
    { "silu", LLMEM_ACTIVATION_SILU },
    { "swish", LLMEM_ACTIVATION_SILU },
    { "gelu", LLMEM_ACTIVATION_GELU },
    { "gelu_pytorch_tanh", LLMEM_ACTIVATION_GELU_TANH },
    { "gelu_new", LLMEM_ACTIVATION_GELU_NEW },
    { "gelu_fast", LLMEM_ACTIVATION_GELU_FAST },
    { "relu", LLMEM_ACTIVATION_RELU },
};

/* The activation named by config field name, when present (else the family's). */
static int read_activation(reader *r, const char *name)
{
    const hf_jv *v;
    if (!llmem_hf_json_member(r->root, name, &v) || v == NULL)
        return LLMEM_OK;
    const char *s = llmem_hf_json_string(v);
    if (s == NULL)
        return wrong_type(r, name, "a string", v);
    for (size_t i = 0; i < sizeof activations / sizeof activations[0]; i++) {
        if (strcmp(activations[i].name, s) == 0) {
            put(r, LLMEM_MODEL_ACTIVATION, activations[i].value, name);
            return LLMEM_OK;
        }
    }
    return llmem__fail(r->ctx, LLMEM_ENOTSUP, CONFIG_NAME ": field '%s' = '%.40s' is not an "
                       "activation the estimate models", name, s);
}

/* GPT2Config's switches for modules or code paths the estimate does not
 * build: add_cross_attention adds crossattention and ln_cross_attn to every
 * block (weights the count would lack); reorder_and_upcast_attn sends
 * GPT2Attention through its own _upcast_and_reordered_attn, not the
 * attention interface the estimate follows. Each true is refused. */
static const char *const gpt2_refused_flags[] = { "add_cross_attention",
                                                  "reorder_and_upcast_attn" };

/* GPT2MLP: inner = n_inner or 4 x n_embd, ACT2FN[activation_function]
 * (gelu_new by default; the phased estimate builds that one only and
 * refuses another, as it refuses --activation, naming the field). */
static int layout_gpt2(reader *r)
{
    for (size_t i = 0; i < sizeof gpt2_refused_flags / sizeof gpt2_refused_flags[0]; i++) {
        int on, rc = get_flag(r, gpt2_refused_flags[i], 0, &on);
        if (rc != LLMEM_OK)
            return rc;
        if (on)
            return llmem__fail(r->ctx, LLMEM_ENOTSUP,
                               CONFIG_NAME ": field '%s' = true is not supported (model_type "
                               "'gpt2' is estimated without it)", gpt2_refused_flags[i]);
    }
    if (got(r, LLMEM_MODEL_INTERMEDIATE) == 0)
        put(r, LLMEM_MODEL_INTERMEDIATE, 4 * got(r, LLMEM_MODEL_HIDDEN), "n_embd");
    return read_activation(r, "activation_function");
}

/* OPTDecoder: final_layer_norm only when do_layer_norm_before and not
 * _remove_final_layer_norm; OPTDecoderLayer normalizes after the residual
 * additions when do_layer_norm_before is false (OPT-350m);
 * layer_norm_elementwise_affine false would leave norms without weights,
 * which no published checkpoint does. */
static int layout_opt(reader *r)
{
    int removed, affine, before, rc;
    if ((rc = get_flag(r, "_remove_final_layer_norm", 0, &removed)) != LLMEM_OK ||
        (rc = get_flag(r, "layer_norm_elementwise_affine", 1, &affine)) != LLMEM_OK ||
        (rc = get_flag(r, "do_layer_norm_before", 1, &before)) != LLMEM_OK ||
        (rc = read_activation(r, "activation_function")) != LLMEM_OK)
        return rc;
    put(r, LLMEM_MODEL_POST_NORM, !before, "do_layer_norm_before");
    if (removed)
        put(r, LLMEM_MODEL_FINAL_NORM, 0, "_remove_final_layer_norm");
    if (!affine)
        return llmem__fail(r->ctx, LLMEM_ENOTSUP,
                           CONFIG_NAME ": layer_norm_elementwise_affine false is not supported");
    return LLMEM_OK;
}

/* BloomMLP: dense_h_to_4h is 4 x hidden. */
static int layout_bloom(reader *r)
{
    put(r, LLMEM_MODEL_INTERMEDIATE, 4 * got(r, LLMEM_MODEL_HIDDEN), "hidden_size");
    return LLMEM_OK;
}

static int layout_gpt_neox(reader *r)
{
    int rc = read_activation(r, "hidden_act");
    return rc != LLMEM_OK ? rc : partial_rotary(r, "rotary_pct");
}

/* FalconAttention: query_key_value is (2 x num_kv_heads + heads) x head_dim wide
 * with new_decoder_architecture, hidden + 2 x head_dim with multi_query, else
 * 3 x hidden. FalconDecoderLayer: ln_attn and ln_mlp when num_ln_in_parallel_attn
 * is 2 (the default with new_decoder_architecture), input_layernorm alone for
 * a parallel block, input and post-attention norms otherwise. FalconMLP:
 * ffn_hidden_size, default 4 x hidden. */
static int layout_falcon(reader *r)
{
    int new_arch, multi_query, parallel, alibi, rc;
    int64_t kv, norms, ffn, heads = got(r, LLMEM_MODEL_HEADS);
    /* The original RefinedWeb code (Falcon-40B) always had the new layout. */
    int new_default = strcmp(r->type->model_type, "RefinedWeb") == 0;
    if ((rc = get_flag(r, "new_decoder_architecture", new_default, &new_arch)) != LLMEM_OK ||
        (rc = get_flag(r, "multi_query", 1, &multi_query)) != LLMEM_OK ||
        (rc = get_flag(r, "parallel_attn", 1, &parallel)) != LLMEM_OK ||
        (rc = get_flag(r, "alibi", 0, &alibi)) != LLMEM_OK)
        return rc;
    if (new_arch) {
        static const char *const names[] = { "num_kv_heads", "n_head_kv", NULL };
        const char *used;
        if ((rc = get_int(r, names, 2, 0, heads, &kv, &used)) != LLMEM_OK)
            return rc;
        put(r, LLMEM_MODEL_KV_HEADS, kv, used);
    } else {
        put(r, LLMEM_MODEL_KV_HEADS, multi_query ? 1 : heads, "multi_query");
    }
    if ((rc = get_opt_int(r, "num_ln_in_parallel_attn", new_arch ? 2 : 1, 0, &norms)) != LLMEM_OK ||
        (rc = get_opt_int(r, "ffn_hidden_size", 4 * got(r, LLMEM_MODEL_HIDDEN), 1, &ffn)) !=
            LLMEM_OK)
        return rc;
    put(r, LLMEM_MODEL_NORMS_PER_LAYER, parallel ? (norms == 2 ? 2 : 1) : 2,
        "num_ln_in_parallel_attn");
    put(r, LLMEM_MODEL_PARALLEL_BLOCK, parallel, "parallel_attn");
    put(r, LLMEM_MODEL_INTERMEDIATE, ffn, "ffn_hidden_size");
    if (alibi)
        put(r, LLMEM_MODEL_POSITIONS, LLMEM_POSITIONS_ALIBI, "alibi");
    return read_activation(r, "activation"); /* FalconMLP: get_activation(config.activation) */
}

static int layout_phi(reader *r)
{
    return partial_rotary(r, "partial_rotary_factor");
}

/* PhiMLP: ACT2FN[hidden_act] (gelu_new in every published Phi-1/1.5/2). */
static int layout_phi1(reader *r)
{
    int rc = read_activation(r, "hidden_act");
    return rc != LLMEM_OK ? rc : layout_phi(r);
}

/* Starcoder2MLP: ACT2FN[hidden_act]. */
static int layout_starcoder2(reader *r)
{
    return read_activation(r, "hidden_act");
}

/* Qwen2MoeDecoderLayer: the sparse block where layer_idx is not in
 * mlp_only_layers and (layer_idx + 1) % decoder_sparse_step == 0, a dense
 * Qwen2MoeMLP of intermediate_size elsewhere. The sparse block always has the
 * shared expert and its Linear(hidden, 1) gate. */
static int layout_qwen2_moe(reader *r)
{
    const hf_jv *list = NULL;
    int64_t step, layers = got(r, LLMEM_MODEL_LAYERS), dense = 0;
    int rc = get_opt_int(r, "decoder_sparse_step", 1, 1, &step);
    if (rc != LLMEM_OK)
        return rc;
    if (llmem_hf_json_member(r->root, "mlp_only_layers", &list) && list != NULL &&
        llmem_hf_json_type(list) != HF_JARRAY)
        return wrong_type(r, "mlp_only_layers", "an array", list);
    /* layers is within the field's bounds (2^20): one byte a layer. */
    unsigned char *only_mlp = llmem__calloc(r->ctx, (size_t)layers + 1);
    if (only_mlp == NULL)
        return llmem__fail(r->ctx, LLMEM_ENOMEM, CONFIG_NAME ": out of memory");
    for (size_t k = 0; k < llmem_hf_json_array_size(list); k++) {
        int64_t idx;
        if (llmem_hf_json_int64(llmem_hf_json_array_at(list, k), &idx) != 0) {
            llmem__free(r->ctx, only_mlp);
            return wrong_type(r, "mlp_only_layers", "an array of integers", list);
        }
        if (idx >= 0 && idx < layers)
            only_mlp[idx] = 1;
    }
    for (int64_t i = 0; i < layers; i++)
        dense += only_mlp[i] || (i + 1) % step != 0;
    llmem__free(r->ctx, only_mlp);
    put(r, LLMEM_MODEL_DENSE_LAYERS, dense, "mlp_only_layers");
    put(r, LLMEM_MODEL_SHARED_EXPERT_GATE, got(r, LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE) > 0,
        "shared_expert_intermediate_size");
    return LLMEM_OK;
}

/* DeepseekV2Attention / DeepseekV3Attention (multi-head latent attention) and
 * the decoder layer: experts from layer first_k_dense_replace on, every
 * moe_layer_freq-th (the reference modeling_deepseek.py; transformers' port
 * assumes 1), n_shared_experts x moe_intermediate_size for the shared experts,
 * and DeepSeek-V3's noaux_tc router with e_score_correction_bias. */
static int layout_deepseek(reader *r)
{
    int64_t rope, nope, v, q_rank, experts, shared, first_dense, freq, layers;
    const hf_jv *method;
    int rc;
    if ((rc = get_req_int(r, "qk_rope_head_dim", 1, &rope)) != LLMEM_OK ||
        (rc = get_req_int(r, "qk_nope_head_dim", 0, &nope)) != LLMEM_OK ||
        (rc = get_req_int(r, "v_head_dim", 1, &v)) != LLMEM_OK ||
        (rc = get_opt_int(r, "q_lora_rank", 0, 0, &q_rank)) != LLMEM_OK ||
        (rc = get_opt_int(r, "n_routed_experts", 0, 0, &experts)) != LLMEM_OK ||
        (rc = get_opt_int(r, "n_shared_experts", 0, 0, &shared)) != LLMEM_OK ||
        (rc = get_opt_int(r, "first_k_dense_replace", 0, 0, &first_dense)) != LLMEM_OK ||
        (rc = get_opt_int(r, "moe_layer_freq", 1, 1, &freq)) != LLMEM_OK)
        return rc;
    put(r, LLMEM_MODEL_HEAD_DIM, nope + rope, "qk_nope_head_dim");
    put(r, LLMEM_MODEL_ROTARY_DIM, rope, "qk_rope_head_dim");
    put(r, LLMEM_MODEL_V_HEAD_DIM, v, "v_head_dim");
    put(r, LLMEM_MODEL_Q_LORA_RANK, q_rank, "q_lora_rank");
    if (experts == 0) {
        put(r, LLMEM_MODEL_EXPERTS_PER_TOKEN, 0, "n_routed_experts");
        return LLMEM_OK;
    }
    int64_t moe_inner, top_k, dense = 0;
    if ((rc = get_req_int(r, "moe_intermediate_size", 1, &moe_inner)) != LLMEM_OK ||
        (rc = get_req_int(r, "num_experts_per_tok", 1, &top_k)) != LLMEM_OK)
        return rc;
    /* n_shared_experts x moe_intermediate_size must stay an element count. */
    if (shared > LAYOUT_MAX / moe_inner)
        return llmem__fail(r->ctx, LLMEM_EPARSE,
                           CONFIG_NAME ": fields 'n_shared_experts' (%lld) x "
                                       "'moe_intermediate_size' (%lld) exceed %lld",
                           (long long)shared, (long long)moe_inner, (long long)LAYOUT_MAX);
    layers = got(r, LLMEM_MODEL_LAYERS);
    for (int64_t i = 0; i < layers; i++) /* layers is within [1, 2^20] */
        dense += !(i >= first_dense && i % freq == 0);
    put(r, LLMEM_MODEL_EXPERTS, experts, "n_routed_experts");
    put(r, LLMEM_MODEL_EXPERTS_PER_TOKEN, top_k, "num_experts_per_tok");
    put(r, LLMEM_MODEL_EXPERT_INTERMEDIATE, moe_inner, "moe_intermediate_size");
    put(r, LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, shared * moe_inner, "n_shared_experts");
    put(r, LLMEM_MODEL_DENSE_LAYERS, dense, "first_k_dense_replace");
    if (llmem_hf_json_member(r->root, "topk_method", &method) && method != NULL &&
        llmem_hf_json_string(method) == NULL)
        return wrong_type(r, "topk_method", "a string", method);
    /* DeepseekV3TopkRouter always registers e_score_correction_bias (and runs
     * V3's sigmoid router); DeepseekV2MoEGate has none. */
    put(r, LLMEM_MODEL_ROUTER_BIAS, strcmp(r->type->model_type, "deepseek_v3") == 0,
        "model_type");
    return LLMEM_OK;
}

/* ---- the model types --------------------------------------------------- */

#define N(...) { __VA_ARGS__ }
#define ROWS(a) a, sizeof a / sizeof a[0]

/* Fields most decoder-only configs share (LlamaConfig names). */
#define COMMON_SIZES                                                                     \
    { LLMEM_MODEL_HIDDEN, REQ, 0, N("hidden_size") },                                    \
    { LLMEM_MODEL_LAYERS, REQ, 0, N("num_hidden_layers") },                              \
    { LLMEM_MODEL_HEADS, REQ, 0, N("num_attention_heads") },                             \
    { LLMEM_MODEL_KV_HEADS, OPT, 0, N("num_key_value_heads") },                          \
    { LLMEM_MODEL_VOCAB, REQ, 0, N("vocab_size") },                                      \
    { LLMEM_MODEL_MAX_POSITIONS, OPT, 0, N("max_position_embeddings") }

/* LlamaConfig: head_dim, attention_bias on q/k/v/o, mlp_bias, untied. */
static const hf_field llama_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_HEAD_DIM, OPT, 0, N("head_dim") },
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_QKV_BIAS, FLAG, 0, N("attention_bias") },
    { LLMEM_MODEL_OUT_BIAS, FLAG, 0, N("attention_bias") },
    { LLMEM_MODEL_MLP_BIAS, FLAG, 0, N("mlp_bias") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 0, N("tie_word_embeddings") },
};

/* MistralConfig: no biases (MistralAttention bias=False), untied. */
static const hf_field mistral_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_HEAD_DIM, OPT, 0, N("head_dim") },
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 0, N("tie_word_embeddings") },
};

/* MixtralConfig: num_local_experts experts of intermediate_size (w1, w2, w3),
 * router Linear(hidden, num_local_experts, bias=False). */
static const hf_field mixtral_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_HEAD_DIM, OPT, 0, N("head_dim") },
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_EXPERT_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_EXPERTS, REQ, 0, N("num_local_experts") },
    { LLMEM_MODEL_EXPERTS_PER_TOKEN, REQ, 0, N("num_experts_per_tok") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 0, N("tie_word_embeddings") },
};

/* Qwen2Attention: q, k, v with bias, o without. */
static const hf_field qwen2_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_HEAD_DIM, OPT, 0, N("head_dim") },
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_QKV_BIAS, CONST, 1, N(NULL) },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 0, N("tie_word_embeddings") },
};

/* Qwen2MoeConfig: qkv_bias (default true), experts of moe_intermediate_size,
 * the shared expert of shared_expert_intermediate_size. */
static const hf_field qwen2_moe_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_HEAD_DIM, OPT, 0, N("head_dim") },
    { LLMEM_MODEL_INTERMEDIATE, OPT, 0, N("intermediate_size") },
    { LLMEM_MODEL_QKV_BIAS, FLAG, 1, N("qkv_bias") },
    { LLMEM_MODEL_EXPERTS, REQ, 0, N("num_experts") },
    { LLMEM_MODEL_EXPERTS_PER_TOKEN, REQ, 0, N("num_experts_per_tok") },
    { LLMEM_MODEL_EXPERT_INTERMEDIATE, REQ, 0, N("moe_intermediate_size") },
    { LLMEM_MODEL_SHARED_EXPERT_INTERMEDIATE, REQ, 0, N("shared_expert_intermediate_size") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 0, N("tie_word_embeddings") },
};

/* Qwen3Config: head_dim (default 128), attention_bias on q/k/v/o, q_norm and
 * k_norm (Qwen3RMSNorm over head_dim). */
static const hf_field qwen3_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_HEAD_DIM, OPT, 128, N("head_dim") },
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_QKV_BIAS, FLAG, 0, N("attention_bias") },
    { LLMEM_MODEL_OUT_BIAS, FLAG, 0, N("attention_bias") },
    { LLMEM_MODEL_QK_NORM, CONST, 1, N(NULL) },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 0, N("tie_word_embeddings") },
};

/* GemmaConfig / Gemma2Config: head_dim (default 256), attention_bias, tied. */
static const hf_field gemma_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_HEAD_DIM, OPT, 256, N("head_dim") },
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_QKV_BIAS, FLAG, 0, N("attention_bias") },
    { LLMEM_MODEL_OUT_BIAS, FLAG, 0, N("attention_bias") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 1, N("tie_word_embeddings") },
};

/* PhiConfig: q/k/v/dense and fc1/fc2 with biases, qk_layernorm, lm_head with
 * bias, untied. */
static const hf_field phi_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_QK_NORM, FLAG, 0, N("qk_layernorm") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 0, N("tie_word_embeddings") },
};

/* Phi3Config: fused qkv_proj and gate_up_proj without biases, untied. */
static const hf_field phi3_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 0, N("tie_word_embeddings") },
};

/* GPT2Config: n_embd, n_layer, n_head, n_inner (null: 4 x n_embd),
 * n_positions; tied. */
static const hf_field gpt2_fields[] = {
    { LLMEM_MODEL_HIDDEN, REQ, 0, N("n_embd", "hidden_size") },
    { LLMEM_MODEL_LAYERS, REQ, 0, N("n_layer", "num_hidden_layers") },
    { LLMEM_MODEL_HEADS, REQ, 0, N("n_head", "num_attention_heads") },
    { LLMEM_MODEL_INTERMEDIATE, OPT, 0, N("n_inner") },
    { LLMEM_MODEL_VOCAB, REQ, 0, N("vocab_size") },
    { LLMEM_MODEL_MAX_POSITIONS, REQ, 0, N("n_positions", "max_position_embeddings") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 1, N("tie_word_embeddings") },
};

/* OPTConfig: ffn_dim, word_embed_proj_dim (project_in/out when it differs),
 * do_layer_norm_before (the final norm), enable_bias; tied. */
static const hf_field opt_fields[] = {
    { LLMEM_MODEL_HIDDEN, REQ, 0, N("hidden_size") },
    { LLMEM_MODEL_LAYERS, REQ, 0, N("num_hidden_layers") },
    { LLMEM_MODEL_HEADS, REQ, 0, N("num_attention_heads") },
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("ffn_dim") },
    { LLMEM_MODEL_VOCAB, REQ, 0, N("vocab_size") },
    { LLMEM_MODEL_MAX_POSITIONS, REQ, 0, N("max_position_embeddings") },
    { LLMEM_MODEL_EMBED_DIM, OPT, 0, N("word_embed_proj_dim") },
    { LLMEM_MODEL_FINAL_NORM, FLAG, 1, N("do_layer_norm_before") },
    { LLMEM_MODEL_QKV_BIAS, FLAG, 1, N("enable_bias") },
    { LLMEM_MODEL_OUT_BIAS, FLAG, 1, N("enable_bias") },
    { LLMEM_MODEL_MLP_BIAS, FLAG, 1, N("enable_bias") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 1, N("tie_word_embeddings") },
};

/* BloomConfig: n_embed overrides hidden_size; n_layer, n_head; tied. */
static const hf_field bloom_fields[] = {
    { LLMEM_MODEL_HIDDEN, REQ, 0, N("hidden_size", "n_embed") },
    { LLMEM_MODEL_LAYERS, REQ, 0, N("n_layer", "num_hidden_layers") },
    { LLMEM_MODEL_HEADS, REQ, 0, N("n_head", "num_attention_heads") },
    { LLMEM_MODEL_VOCAB, REQ, 0, N("vocab_size") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 1, N("tie_word_embeddings") },
};

/* GPTNeoXConfig: attention_bias (default true) on query_key_value and dense,
 * use_parallel_residual (default true), rotary_pct, untied embed_out. */
static const hf_field gpt_neox_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_KV_HEADS, CONST, 0, N(NULL) }, /* query_key_value is 3 x hidden */
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_QKV_BIAS, FLAG, 1, N("attention_bias") },
    { LLMEM_MODEL_OUT_BIAS, FLAG, 1, N("attention_bias") },
    { LLMEM_MODEL_PARALLEL_BLOCK, FLAG, 1, N("use_parallel_residual") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 0, N("tie_word_embeddings") },
};

/* FalconConfig (and the older RefinedWeb configs): bias on every linear
 * layer, tied lm_head; the attention and norm layout in layout_falcon. */
static const hf_field falcon_fields[] = {
    { LLMEM_MODEL_HIDDEN, REQ, 0, N("hidden_size", "n_embed") },
    { LLMEM_MODEL_LAYERS, REQ, 0, N("num_hidden_layers", "n_layer") },
    { LLMEM_MODEL_HEADS, REQ, 0, N("num_attention_heads", "n_head") },
    { LLMEM_MODEL_VOCAB, REQ, 0, N("vocab_size") },
    { LLMEM_MODEL_MAX_POSITIONS, OPT, 0, N("max_position_embeddings") },
    { LLMEM_MODEL_QKV_BIAS, FLAG, 0, N("bias") },
    { LLMEM_MODEL_OUT_BIAS, FLAG, 0, N("bias") },
    { LLMEM_MODEL_MLP_BIAS, FLAG, 0, N("bias") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 1, N("tie_word_embeddings") },
};

/* Starcoder2Config: use_bias on q/k/v/o and c_fc/c_proj, tied. */
static const hf_field starcoder2_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_QKV_BIAS, FLAG, 1, N("use_bias") },
    { LLMEM_MODEL_OUT_BIAS, FLAG, 1, N("use_bias") },
    { LLMEM_MODEL_MLP_BIAS, FLAG, 1, N("use_bias") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 1, N("tie_word_embeddings") },
};

/* DeepseekV2Config / DeepseekV3Config: kv_lora_rank, attention_bias, the
 * dense MLP's intermediate_size; the rest in layout_deepseek. */
static const hf_field deepseek_fields[] = {
    COMMON_SIZES,
    { LLMEM_MODEL_KV_HEADS, CONST, 0, N(NULL) }, /* latent attention: no kv heads */
    { LLMEM_MODEL_INTERMEDIATE, REQ, 0, N("intermediate_size") },
    { LLMEM_MODEL_KV_LORA_RANK, REQ, 0, N("kv_lora_rank") },
    { LLMEM_MODEL_QKV_BIAS, FLAG, 0, N("attention_bias") },
    { LLMEM_MODEL_OUT_BIAS, FLAG, 0, N("attention_bias") },
    { LLMEM_MODEL_TIE_EMBEDDINGS, FLAG, 0, N("tie_word_embeddings") },
};

/* Dropout keys by kind of site: the attention probabilities, the attention
 * and MLP outputs, the embedding output (model/dropout.h), as each
 * modeling_<type>.py feeds them to its nn.Dropout and F.dropout calls, with
 * the configuration_<type>.py defaults. */
/* GPT2Config: attn_pdrop (attn_dropout), resid_pdrop (resid_dropout, the MLP's
 * dropout), embd_pdrop (GPT2Model.drop); all 0.1. */
static const hf_dropouts gpt2_dropouts = { { "attn_pdrop", "resid_pdrop", "embd_pdrop" },
                                           { 0.1, 0.1, 0.1 } };
/* LlamaConfig and the others of its code (and Gemma, DeepSeek): attention_dropout
 * only, 0.0. */
static const hf_dropouts attention_dropouts = { { "attention_dropout", NULL, NULL },
                                                { 0.0, 0.0, 0.0 } };
/* OPTConfig: attention_dropout (0.0) in OPTAttention, dropout (0.1) on the
 * attention and MLP outputs in OPTDecoderLayer; no embedding dropout. Its
 * activation_dropout feeds no layer; layerdrop (skipping whole layers, 0.0 in
 * every published config) is not modelled. */
static const hf_dropouts opt_dropouts = { { "attention_dropout", "dropout", NULL },
                                          { 0.0, 0.1, 0.0 } };
/* BloomConfig, FalconConfig: attention_dropout, hidden_dropout (dropout_add), 0.0. */
static const hf_dropouts hidden_dropouts = { { "attention_dropout", "hidden_dropout", NULL },
                                             { 0.0, 0.0, 0.0 } };
/* GPTNeoXConfig: attention_dropout; hidden_dropout feeds emb_dropout as well as
 * post_attention_dropout and post_mlp_dropout; 0.0. */
static const hf_dropouts gpt_neox_dropouts = {
    { "attention_dropout", "hidden_dropout", "hidden_dropout" }, { 0.0, 0.0, 0.0 } };
/* PhiConfig: attention_dropout, resid_pdrop, embd_pdrop; 0.0. */
static const hf_dropouts phi_dropouts = { { "attention_dropout", "resid_pdrop", "embd_pdrop" },
                                          { 0.0, 0.0, 0.0 } };
/* Phi3Config: attention_dropout, resid_pdrop (resid_attn_dropout and
 * resid_mlp_dropout); its embd_pdrop feeds no layer of Phi3Model. 0.0. */
static const hf_dropouts phi3_dropouts = { { "attention_dropout", "resid_pdrop", NULL },
                                           { 0.0, 0.0, 0.0 } };
/* Starcoder2Config: attention_dropout, residual_dropout, embedding_dropout; 0.0. */
static const hf_dropouts starcoder2_dropouts = {
    { "attention_dropout", "residual_dropout", "embedding_dropout" }, { 0.0, 0.0, 0.0 } };

/* Sliding windows: MistralConfig's default 4096, Gemma2Config's 4096;
 * MixtralConfig, Phi3Config, Starcoder2Config default to none; Qwen2Config
 * and Qwen3Config's use_sliding_window defaults to false. */
static const hf_window mistral_window = { 4096, NULL };
static const hf_window gemma2_window = { 4096, NULL };
static const hf_window none_window = { 0, NULL };
static const hf_window qwen2_window = { 0, "use_sliding_window" };

static const hf_type types[] = {
    { "llama", LLMEM_FAMILY_LLAMA, ROWS(llama_fields), NULL, &attention_dropouts, NULL,
      "hidden_act" },
    { "mistral", LLMEM_FAMILY_LLAMA, ROWS(mistral_fields), NULL, &attention_dropouts,
      &mistral_window, "hidden_act" },
    { "mixtral", LLMEM_FAMILY_LLAMA, ROWS(mixtral_fields), NULL, &attention_dropouts,
      &none_window, "hidden_act" },
    { "qwen2", LLMEM_FAMILY_LLAMA, ROWS(qwen2_fields), NULL, &attention_dropouts, &qwen2_window,
      "hidden_act" },
    { "qwen2_moe", LLMEM_FAMILY_LLAMA, ROWS(qwen2_moe_fields), layout_qwen2_moe,
      &attention_dropouts, &qwen2_window, "hidden_act" },
    { "qwen3", LLMEM_FAMILY_LLAMA, ROWS(qwen3_fields), NULL, &attention_dropouts, &qwen2_window,
      "hidden_act" },
    { "gemma", LLMEM_FAMILY_GEMMA, ROWS(gemma_fields), NULL, &attention_dropouts, NULL,
      "hidden_activation" },
    { "gemma2", LLMEM_FAMILY_GEMMA2, ROWS(gemma_fields), NULL, &attention_dropouts,
      &gemma2_window, "hidden_activation" },
    { "phi", LLMEM_FAMILY_PHI, ROWS(phi_fields), layout_phi1, &phi_dropouts, NULL, NULL },
    { "phi3", LLMEM_FAMILY_PHI3, ROWS(phi3_fields), layout_phi, &phi3_dropouts, &none_window,
      "hidden_act" },
    { "gpt2", LLMEM_FAMILY_GPT2, ROWS(gpt2_fields), layout_gpt2, &gpt2_dropouts, NULL, NULL },
    { "opt", LLMEM_FAMILY_OPT, ROWS(opt_fields), layout_opt, &opt_dropouts, NULL, NULL },
    { "bloom", LLMEM_FAMILY_BLOOM, ROWS(bloom_fields), layout_bloom, &hidden_dropouts, NULL,
      NULL },
    { "gpt_neox", LLMEM_FAMILY_GPT_NEOX, ROWS(gpt_neox_fields), layout_gpt_neox,
      &gpt_neox_dropouts, NULL, NULL },
    { "falcon", LLMEM_FAMILY_FALCON, ROWS(falcon_fields), layout_falcon, &hidden_dropouts, NULL,
      NULL },
    { "RefinedWeb", LLMEM_FAMILY_FALCON, ROWS(falcon_fields), layout_falcon, &hidden_dropouts,
      NULL, NULL },
    { "RefinedWebModel", LLMEM_FAMILY_FALCON, ROWS(falcon_fields), layout_falcon,
      &hidden_dropouts, NULL, NULL },
    { "starcoder2", LLMEM_FAMILY_STARCODER2, ROWS(starcoder2_fields), layout_starcoder2,
      &starcoder2_dropouts, &none_window, NULL },
    { "deepseek_v2", LLMEM_FAMILY_DEEPSEEK, ROWS(deepseek_fields), layout_deepseek,
      &attention_dropouts, NULL, "hidden_act" },
    { "deepseek_v3", LLMEM_FAMILY_DEEPSEEK, ROWS(deepseek_fields), layout_deepseek,
      &attention_dropouts, NULL, "hidden_act" },
};

/* torch_dtype (dtype since transformers 4.56) names and their element sizes. */
static const struct {
    const char *name;
    int bytes;
} dtype_sizes[] = {
    { "float32", 4 },       { "float", 4 },         { "float16", 2 },       { "half", 2 },
    { "bfloat16", 2 },      { "float64", 8 },       { "double", 8 },        { "float8_e4m3fn", 1 },
    { "float8_e5m2", 1 },   { "float8_e4m3fnuz", 1 }, { "float8_e5m2fnuz", 1 }, { "int8", 1 },
    { "uint8", 1 },
};

static int read_dtype(reader *r)
{
    static const char *const names[] = { "torch_dtype", "dtype" };
    for (size_t i = 0; i < 2; i++) {
        const hf_jv *v;
        if (!llmem_hf_json_member(r->root, names[i], &v) || v == NULL)
            continue;
        const char *s = llmem_hf_json_string(v);
        if (s == NULL)
            return wrong_type(r, names[i], "a string", v);
        if (strncmp(s, "torch.", 6) == 0)
            s += 6;
        for (size_t k = 0; k < sizeof dtype_sizes / sizeof dtype_sizes[0]; k++) {
            if (strcmp(dtype_sizes[k].name, s) == 0) {
                put(r, LLMEM_MODEL_DTYPE_BYTES, dtype_sizes[k].bytes, names[i]);
                return LLMEM_OK;
            }
        }
        return llmem__fail(r->ctx, LLMEM_EPARSE, CONFIG_NAME ": field '%s' = '%.40s' is not a "
                           "known dtype", names[i], s);
    }
    return LLMEM_OK;
}

/* ---- quantization_config --------------------------------------------- */

#define QUANT "quantization_config"

/* what: the kind of quantization, or the setting, the estimate lacks. */
static int quant_not_modelled(reader *r, const char *what)
{
    return llmem__fail(r->ctx, LLMEM_ENOTSUP,
                       CONFIG_NAME ": " QUANT ": %s is not modelled (the estimate would count "
                       "weights the checkpoint does not hold); remove " QUANT " to estimate "
                       "the unquantized model",
                       what);
}

/* A string member of quantization_config, or dflt when absent or null. */
static int quant_string(reader *r, const hf_jv *q, const char *name, const char *dflt,
                        const char **out)
{
    const hf_jv *v;
    char shown[64];
    *out = dflt;
    if (!llmem_hf_json_member(q, name, &v) || v == NULL)
        return LLMEM_OK;
    if ((*out = llmem_hf_json_string(v)) == NULL) {
        snprintf(shown, sizeof shown, QUANT ".%s", name);
        return wrong_type(r, shown, "a string", v);
    }
    return LLMEM_OK;
}

/* bitsandbytes keeps the output head unquantized whatever the list says
 * (transformers' get_keys_to_not_convert); any other module it is told to
 * skip stays in 16 bits, which the estimate does not model. */
static int quant_skipped(reader *r, const hf_jv *q)
{
    const hf_jv *v;
    if (!llmem_hf_json_member(q, "llm_int8_skip_modules", &v) || v == NULL)
        return LLMEM_OK;
    if (llmem_hf_json_type(v) != HF_JARRAY)
        return wrong_type(r, QUANT ".llm_int8_skip_modules", "an array", v);
    for (size_t i = 0; i < llmem_hf_json_array_size(v); i++) {
        const char *name = llmem_hf_json_string(llmem_hf_json_array_at(v, i));
        if (name == NULL)
            return llmem__fail(r->ctx, LLMEM_EPARSE,
                               CONFIG_NAME ": field '" QUANT ".llm_int8_skip_modules' must "
                               "hold strings");
        if (strcmp(name, "lm_head") != 0) {
            char what[96];
            snprintf(what, sizeof what, "llm_int8_skip_modules '%.40s' (left unquantized)", name);
            return quant_not_modelled(r, what);
        }
    }
    return LLMEM_OK;
}

/* What transformers' quantizer loads the checkpoint as (quantization_config,
 * written by BitsAndBytesConfig and the other quantizers' configs). QLoRA's
 * storage, bitsandbytes 4-bit with double quantization (Dettmers et al.
 * 2023; nf4 or fp4 take the same bytes: 4 bits a weight and one absmax a
 * 64-weight block), sets bnb-4bit; fp8 is read as its bf16 cast; every
 * other kind is refused, as the estimate would count the unquantized
 * weights (GPTQ's and AWQ's packed integers, bitsandbytes 8-bit). */
static int read_quantization(reader *r)
{
    const hf_jv *q;
    const char *method, *type;
    int in4, in8, nested, rc;
    if (!llmem_hf_json_member(r->root, QUANT, &q) || q == NULL)
        return LLMEM_OK;
    if (llmem_hf_json_type(q) != HF_JOBJECT)
        return wrong_type(r, QUANT, "an object", q);
    /* Configs saved before quant_method was written are BitsAndBytesConfig's. */
    if ((rc = quant_string(r, q, "quant_method", "bitsandbytes", &method)) != LLMEM_OK)
        return rc;
    /* DeepSeek-V3's block-wise fp8 weights: fine-tuning starts from their
     * bf16 cast (the model's torch_dtype; DeepSeek-V3's README, "BF16
     * weights": inference/fp8_cast_bf16.py), which is what the estimate
     * counts. */
    if (strcmp(method, "fp8") == 0)
        return LLMEM_OK;
    if (strcmp(method, "bitsandbytes") != 0) {
        char what[64];
        snprintf(what, sizeof what, "quant_method '%.40s'", method);
        return quant_not_modelled(r, what);
    }
    if ((rc = flag_in(r, q, "load_in_4bit", QUANT ".load_in_4bit", 0, &in4)) != LLMEM_OK ||
        (rc = flag_in(r, q, "load_in_8bit", QUANT ".load_in_8bit", 0, &in8)) != LLMEM_OK ||
        (rc = flag_in(r, q, "bnb_4bit_use_double_quant", QUANT ".bnb_4bit_use_double_quant", 0,
                      &nested)) != LLMEM_OK ||
        (rc = quant_string(r, q, "bnb_4bit_quant_type", "fp4", &type)) != LLMEM_OK)
        return rc;
    if (in8)
        return quant_not_modelled(r, "bitsandbytes 8-bit (load_in_8bit)");
    if (!in4)
        return LLMEM_OK; /* nothing quantized */
    if (strcmp(type, "nf4") != 0 && strcmp(type, "fp4") != 0)
        return llmem__fail(r->ctx, LLMEM_EPARSE,
                           CONFIG_NAME ": field '" QUANT ".bnb_4bit_quant_type' = '%.40s' is "
                           "neither nf4 nor fp4", type);
    if (!nested)
        return quant_not_modelled(r, "4-bit without double quantization "
                                     "(bnb_4bit_use_double_quant false)");
    if ((rc = quant_skipped(r, q)) != LLMEM_OK)
        return rc;
    put(r, LLMEM_MODEL_BNB_4BIT, 1, QUANT);
    return LLMEM_OK;
}

/* "llama, mistral, ...": the model types of the table, for messages. */
static void supported_types(char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof types / sizeof types[0] && used < cap; i++) {
        int n = snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", types[i].model_type);
        if (n < 0)
            return;
        used += (size_t)n;
    }
}

static const hf_type *find_type(const char *name)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(types[i].model_type, name) == 0)
            return &types[i];
    return NULL;
}

/* Fields into a new model, each checked against the field table's bounds. */
static int build_model(reader *r, llmem_model **out)
{
    llmem_model *m;
    int rc = llmem_model_new(r->ctx, r->type->family, &m);
    if (rc != LLMEM_OK)
        return rc;
    for (int key = 0; key < MODEL_KEY_END; key++) {
        if (!r->set[key] || key == LLMEM_MODEL_FAMILY)
            continue;
        if ((rc = check_bounds(r, key, r->f[key], r->from[key])) != LLMEM_OK) {
            llmem_model_free(m);
            return rc;
        }
        m->field[key] = r->f[key];
    }
    for (int site = 0; site < DROPOUT_SITES; site++) /* read in [0, 1) */
        llmem_model_put_real(m->field, MODEL_DROPOUT_KEY(site), r->dropout[site]);
    if ((rc = llmem_model_validate(m)) != LLMEM_OK) {
        char why[LLMEM_ERROR_CAP];
        snprintf(why, sizeof why, "%s", llmem_ctx_error(r->ctx));
        llmem_model_free(m);
        return llmem__fail(r->ctx, rc == LLMEM_EOVERFLOW ? rc : LLMEM_EPARSE,
                           CONFIG_NAME " (model_type '%s'): %s", r->type->model_type, why);
    }
    *out = m;
    return LLMEM_OK;
}

static int from_root(llmem_ctx *ctx, const hf_jv *root, llmem_model **out)
{
    reader r;
    const hf_jv *mt;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.root = root;
    if (llmem_hf_json_type(root) != HF_JOBJECT)
        return llmem__fail(ctx, LLMEM_EPARSE, CONFIG_NAME ": top level is %s, not an object",
                           llmem_hf_json_type_name(llmem_hf_json_type(root)));
    if (!llmem_hf_json_member(root, "model_type", &mt) || mt == NULL)
        return llmem__fail(ctx, LLMEM_EPARSE, CONFIG_NAME ": missing field 'model_type'");
    const char *name = llmem_hf_json_string(mt);
    if (name == NULL)
        return wrong_type(&r, "model_type", "a string", mt);
    if ((r.type = find_type(name)) == NULL) {
        char supported[400];
        supported_types(supported, sizeof supported);
        return llmem__fail(ctx, LLMEM_ENOTSUP,
                           CONFIG_NAME ": unsupported model_type '%.40s' (supported: %s)", name,
                           supported);
    }
    int rc = read_fields(&r);
    if (rc == LLMEM_OK && r.type->layout != NULL)
        rc = r.type->layout(&r);
    if (rc == LLMEM_OK && r.type->activation != NULL)
        rc = read_activation(&r, r.type->activation);
    if (rc == LLMEM_OK)
        rc = read_dtype(&r);
    if (rc == LLMEM_OK)
        rc = read_dropouts(&r);
    if (rc == LLMEM_OK)
        rc = read_window(&r);
    if (rc == LLMEM_OK)
        rc = read_quantization(&r);
    if (rc == LLMEM_OK)
        rc = build_model(&r, out);
    return rc;
}

int llmem_model_new_hf_config_json(llmem_ctx *ctx, const char *json, size_t len,
                                   llmem_model **out)
{
    char err[160];
    hf_jv *root;
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, CONFIG_NAME ": NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    if (json == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, CONFIG_NAME ": text is NULL");
    if (llmem_hf_json_parse(json, len, &root, err, sizeof err) != 0)
        return llmem__fail(ctx, LLMEM_EPARSE, CONFIG_NAME ": %s", err);
    int rc = from_root(ctx, root, out);
    llmem_hf_json_free(root);
    if (rc == LLMEM_OK)
        llmem__ok(ctx);
    return rc;
}

int llmem_model_new_hf_config(llmem_ctx *ctx, const char *path, llmem_model **out)
{
    char *text, *file = NULL;
    size_t len;
    int rc;
    if (out == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, CONFIG_NAME ": NULL argument");
    *out = NULL;
    if (ctx == NULL)
        return LLMEM_EINVAL;
    if (path == NULL)
        return llmem__fail(ctx, LLMEM_EINVAL, CONFIG_NAME ": path is NULL");
    int kind;
    if ((rc = llmem_hf_path_kind(ctx, path, &kind)) != LLMEM_OK)
        return rc;
    if (kind == HF_PATH_MISSING)
        return llmem__fail(ctx, LLMEM_EIO, "%s: no such file or directory", path);
    if (kind == HF_PATH_DIR) {
        if ((file = llmem_hf_path_join(ctx, path, CONFIG_NAME)) == NULL)
            return llmem__fail(ctx, LLMEM_ENOMEM, CONFIG_NAME ": out of memory");
        if ((rc = llmem_hf_path_kind(ctx, file, &kind)) == LLMEM_OK && kind == HF_PATH_MISSING)
            rc = llmem__fail(ctx, LLMEM_EIO, "%s: no " CONFIG_NAME " in this directory", path);
        if (rc != LLMEM_OK) {
            llmem__free(ctx, file);
            return rc;
        }
    }
    /* A FIFO, device or socket is refused here, before a read could block. */
    rc = llmem_hf_read_file(ctx, file ? file : path, HF_CONFIG_MAX_BYTES, &text, &len);
    llmem__free(ctx, file);
    if (rc != LLMEM_OK)
        return rc;
    rc = llmem_model_new_hf_config_json(ctx, text, len, out);
    llmem__free(ctx, text);
    return rc;
}
