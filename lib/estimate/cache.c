/* SPDX-License-Identifier: MIT */
#include "estimate/cache.h"

#include <stddef.h>
#include <string.h>

void llmem_segcache_init(seg_cache *c)
{
    c->context_known = 0;
    memset(&c->context_name, 0, sizeof c->context_name);
    c->context = c->serial = c->clock = c->restarts = 0;
    c->context_entries = 0;
    c->pos = c->high = c->victim = 0;
    c->walk_start = 0;
    for (int i = 0; i < SEG_HINTS; i++)
        c->hint[i] = 0;
    c->walk = -1;
    for (int w = 0; w < SEG_WALKS; w++)
        c->walk_key[w] = 0;
    c->reset = 0;
    c->last = NULL;
    c->top = 0;
    for (int i = 0; i < SEG_CONTEXTS; i++)
        c->contexts[i].serial = 0;
}

/* Start over, keeping the serials growing (stale keys never match). */
static void start_over(seg_cache *c)
{
    uint64_t serial = c->serial, clock = c->clock, restarts = c->restarts;
    llmem_segcache_init(c);
    c->serial = serial;
    c->clock = clock;
    c->restarts = restarts + 1;
}

static int same_name(const seg_context_name *a, const seg_context_name *b)
{
    for (int i = 0; i < SEG_NAME_WORDS; i++)
        if (a->w[i] != b->w[i])
            return 0;
    return 1;
}

void llmem_segcache_begin(seg_cache *c, const seg_context_name *name, uint64_t walk_key)
{
    c->pos = 0;
    c->walk_start = ++c->clock;
    if (name->w[0] == 0 || !same_name(&c->context_name, name)) {
        c->context_known = 0;
        c->context_name = *name;
    }
    c->walk = walk_key ? llmem_walk_slot(walk_key) : -1;
    c->walk_full = 1;
    if (c->walk >= 0 && c->walk_key[c->walk] != walk_key) {
        c->walk_key[c->walk] = walk_key;
        for (int i = 0; i < SEG_HINTS; i++)
            c->walk_stamp[c->walk][i] = 0;
    }
}

/* Remember x as what this walk found at position pos. */
static void walk_found(seg_cache *c, int pos, const seg_entry *x)
{
    if (c->walk < 0 || pos >= SEG_HINTS)
        return;
    c->walk_entry[c->walk][pos] = (int)(x - c->entry);
    c->walk_stamp[c->walk][pos] = x->stamp;
}

static uint64_t *arena_words(seg_cache *c, size_t n)
{
    if (n > SEG_ARENA - c->top) {
        c->reset = 1;
        return NULL;
    }
    uint64_t *p = c->arena + c->top;
    c->top += n;
    return p;
}

/* A quick digest of a key's bytes (equal keys, equal digests; the bytes are
 * compared after). */
static uint64_t mix_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0x100000001b3u + (h >> 29);
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3u;
    return h;
}

/* The part of a model shape its context's digest covers: its family and
 * the sizes of its layers and vocabulary, which tell models and their
 * tensor-parallel splits apart (the whole shape is compared after). */
#define SHAPE_HASHED offsetof(model_shape, max_positions)

/* The walk's model shape and build settings: found or added (the least
 * recently used one goes). */
static void find_context(seg_cache *c, const model_shape *m, const build *b)
{
    build settings;
    seg_context *slot = NULL;
    memcpy(&settings, b, sizeof settings);
    settings.g = NULL;
    settings.batch = settings.seq = settings.tokens = 0;
    settings.hold_input = 0;
    settings.loss_chunk = 0; /* the queries' piece says it */
    settings.model_locals = 0; /* the head's spec says it */
    uint64_t hash = mix_bytes(mix_bytes(0, m, SHAPE_HASHED), &settings, sizeof settings);
    for (int i = 0; i < SEG_CONTEXTS; i++) {
        seg_context *x = &c->contexts[i];
        if (x->serial == 0) {
            if (slot == NULL || slot->serial != 0)
                slot = x;
            continue;
        }
        if (x->hash == hash && memcmp(&x->shape, m, sizeof *m) == 0 &&
            memcmp(&x->settings, &settings, sizeof settings) == 0) {
            slot = x;
            goto found;
        }
        if (slot == NULL || (slot->serial != 0 && x->used < slot->used))
            slot = x;
    }
    memcpy(&slot->shape, m, sizeof *m);
    memcpy(&slot->settings, &settings, sizeof settings);
    slot->hash = hash;
    slot->serial = ++c->serial;
    c->context_entries = 0; /* a new context: nothing to look for yet */
    slot->used = ++c->clock;
    c->context = slot->serial;
    c->context_known = 1;
    return;
found:
    c->context_entries = 1;
    slot->used = ++c->clock;
    c->context = slot->serial;
    c->context_known = 1;
}

/* Bytes equal, a word at a time (n is a constant at every call). */
static int same_bytes(const void *a, const void *b, size_t n)
{
    const unsigned char *p = a, *q = b;
    uint64_t diff = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        memcpy(&x, p + i, 8);
        memcpy(&y, q + i, 8);
        diff |= x ^ y;
    }
    for (; i < n; i++)
        diff |= (uint64_t)(p[i] ^ q[i]);
    return diff == 0;
}

/* The key's scalars in one word, so a lookup mostly compares one word. */
static uint64_t query_tag(uint64_t context, const seg_query *q)
{
    uint64_t h = context * 0x9e3779b97f4a7c15u;
    h ^= (uint64_t)(uintptr_t)q->fn + 0x632be59bd9b4e019u + (h << 6) + (h >> 2);
    h ^= (uint64_t)q->regime << 8 | (uint64_t)q->grad_enabled << 4 |
         (uint64_t)q->mode << 2 | (uint64_t)q->hold_input;
    h ^= q->piece * 0xbf58476d1ce4e5b9u;
    h ^= q->at * 0x94d049bb133111ebu;
    return h;
}

static int matches(const seg_entry *x, uint64_t tag, uint64_t context, const seg_query *q)
{
    return x->tag == tag && x->context == context && x->fn == q->fn && x->regime == q->regime &&
           x->at == q->at && x->piece == q->piece && x->grad_enabled == q->grad_enabled &&
           x->mode == q->mode && x->hold_input == q->hold_input &&
           same_bytes(&x->spec, q->spec, sizeof x->spec);
}

static size_t values(const seg_entry *x)
{
    return (size_t)(COST_FIELDS + x->nfwd + x->nbwd);
}

static sample_view view(const seg_entry *x, int i)
{
    sample_view v = { x->sample[i].batch, x->sample[i].seq, x->y + (size_t)i * values(x) };
    return v;
}

/* Fits run in the cache's scratch room; what is kept is copied to the
 * arena: rows and columns whole (a full form is lifted from all their
 * values), a form that is the whole regime only with its fields and the
 * steps it keeps. */
static void scratch_form(seg_cache *c, compiled_form *f)
{
    f->coef = c->fit_coef;
    f->front = c->fit_front;
}

static int keep_room(seg_cache *c, const seg_entry *x, compiled_form *f, int whole)
{
    int terms = llmem_form_terms(f->kind), nfront = f->nf + f->nb;
    size_t n = whole ? values(x) : (size_t)(COST_FIELDS + nfront);
    size_t steps = whole ? (size_t)(x->nfwd + x->nbwd) : (size_t)nfront;
    size_t coef = n * (size_t)terms, front = (steps * sizeof(int16_t) + 7) / 8;
    uint64_t *p = arena_words(c, coef + front);
    if (p == NULL)
        return 0;
    int64_t *kept = (int64_t *)p;
    int16_t *kept_front = (int16_t *)(p + coef);
    if (whole) {
        memcpy(kept, f->coef, coef * sizeof *kept);
        memcpy(kept_front, f->front, (size_t)nfront * sizeof *kept_front);
    } else {
        memcpy(kept, f->coef, COST_FIELDS * (size_t)terms * sizeof *kept);
        for (int j = 0; j < nfront; j++) {
            memcpy(kept + (size_t)(COST_FIELDS + j) * (size_t)terms,
                   f->coef + (size_t)f->front[j] * (size_t)terms, (size_t)terms * sizeof *kept);
            kept_front[j] = (int16_t)(COST_FIELDS + j);
        }
    }
    f->coef = kept;
    f->front = kept_front;
    return 1;
}

static const compiled_form *find_form(const seg_entry *x, int kind, uint64_t at)
{
    for (int i = 0; i < x->nforms; i++)
        if (x->form[i].kind == kind && x->form[i].at == at)
            return &x->form[i];
    return NULL;
}

/* Answer from a row, a column or a point simulated before. */
static int answer(const seg_entry *x, uint64_t batch, uint64_t seq, seg_cost *out)
{
    const compiled_form *f = find_form(x, FORM_ROW, seq);
    if (f == NULL)
        f = find_form(x, FORM_COL, batch);
    if (f != NULL) {
        llmem_form_eval(f, batch, seq, out);
        return 1;
    }
    for (int i = 0; i < x->nsamples; i++)
        if (x->sample[i].batch == batch && x->sample[i].seq == seq) {
            *out = x->sample[i].cost;
            return 1;
        }
    return 0;
}

static void keep_form(seg_cache *c, seg_entry *x, compiled_form *f)
{
    int whole = x->regime == REGIME_GENERAL;
    if (!keep_room(c, x, f, whole))
        return;
    if (!whole) {
        x->full = *f; /* a row (seq 1 to 3, or one seq) or column (batch 1) is the whole regime */
        return;
    }
    int i = x->nforms < SEG_FORMS ? x->nforms++ : x->next_form;
    x->next_form = (i + 1) % SEG_FORMS;
    x->form[i] = *f;
}

/* The full form from three rows or two columns, checked off them. */
static void lift(seg_cache *c, seg_entry *x)
{
    const compiled_form *rows[3], *cols[2];
    sample_view checks[SEG_SAMPLES];
    int nrows = 0, ncols = 0;
    x->lift = 0;
    for (int i = 0; i < x->nforms; i++) {
        if (x->form[i].kind == FORM_ROW && nrows < 3)
            rows[nrows++] = &x->form[i];
        if (x->form[i].kind == FORM_COL && ncols < 2)
            cols[ncols++] = &x->form[i];
    }
    for (int pass = 0; pass < 2; pass++) {
        int n = 0;
        if ((pass == 0 && nrows < 3) || (pass == 1 && ncols < 2))
            continue;
        for (int i = 0; i < x->nsamples; i++) {
            sample_view v = view(x, i);
            uint64_t at = pass == 0 ? v.seq : v.batch;
            int on = 0;
            for (int k = 0; k < (pass == 0 ? 3 : 2); k++)
                on |= (pass == 0 ? rows[k]->at : cols[k]->at) == at;
            if (!on)
                checks[n++] = v;
        }
        if (n == 0)
            continue; /* nothing to check it at yet */
        compiled_form f;
        scratch_form(c, &f);
        int ok = pass == 0 ? llmem_fit_rows(rows, checks, n, x->nfwd, x->nbwd, &f)
                           : llmem_fit_cols(cols, checks, n, x->nfwd, x->nbwd, &f);
        if (ok && keep_room(c, x, &f, 0)) {
            x->full = f;
            return;
        }
    }
}

/* Fit a row through the new sample's seq and a column through its batch,
 * when enough samples share them; else lift rows or columns that wait for a
 * check off them (this call already paid its simulation, not yet a fit). */
static void learn_forms(seg_cache *c, seg_entry *x, int newest)
{
    sample_view now = view(x, newest), others[3];
    int fitted = 0;
    /* A row takes two other samples, a column three: an entry's first
     * samples (a first run's) fit nothing. */
    int enough = x->nsamples >= 3;
    int want_row = enough && x->regime != REGIME_BATCH1 && find_form(x, FORM_ROW, now.seq) == NULL;
    int want_col = enough && (x->regime == REGIME_BATCH1 || x->regime == REGIME_GENERAL) &&
                   find_form(x, FORM_COL, now.batch) == NULL;
    for (int pass = 0; pass < 2; pass++) {
        int n = 0, need = pass == 0 ? 2 : 3;
        if (!(pass == 0 ? want_row : want_col))
            continue;
        for (int i = 0; i < x->nsamples && n < need; i++) {
            sample_view v = view(x, i);
            int same = pass == 0 ? v.seq == now.seq : v.batch == now.batch;
            uint64_t other = pass == 0 ? v.batch : v.seq;
            int fresh = other != (pass == 0 ? now.batch : now.seq);
            for (int k = 0; k < n; k++)
                fresh &= other != (pass == 0 ? others[k].batch : others[k].seq);
            if (i != newest && same && fresh)
                others[n++] = v;
        }
        if (n < need)
            continue;
        compiled_form f;
        scratch_form(c, &f);
        int ok = pass == 0 ? llmem_fit_row(&others[0], &others[1], &now, x->nfwd, x->nbwd, &f)
                           : llmem_fit_col(others, &now, x->nfwd, x->nbwd, &f);
        fitted = 1;
        if (ok)
            keep_form(c, x, &f);
    }
    if (x->regime == REGIME_GENERAL) {
        int rows = 0, cols = 0;
        for (int i = 0; i < x->nforms; i++) {
            rows += x->form[i].kind == FORM_ROW;
            cols += x->form[i].kind == FORM_COL;
        }
        x->lift = rows >= 3 || cols >= 2;
        /* A sweep with seq moving fastest fits a column at each batch and
         * moves on: no call is answered from them before they are evicted,
         * so the lift cannot wait for a cheap call. */
        if (x->lift && !fitted)
            lift(c, x);
    }
}

int llmem_segcache_lookup(seg_cache *c, const model_shape *m, const build *b, const seg_query *q,
                          seg_cost *out)
{
    seg_entry *x = NULL;
    if (c->reset)
        start_over(c);
    int at = c->pos++;
    if (c->walk >= 0 && at < SEG_HINTS && c->walk_stamp[c->walk][at] != 0 && c->context_known) {
        seg_entry *w = &c->entry[c->walk_entry[c->walk][at]];
        if (c->walk_entry[c->walk][at] < c->high && w->stamp == c->walk_stamp[c->walk][at] &&
            w->regime == q->regime && w->at == q->at && w->piece == q->piece) {
            x = w;
            c->last = x;
            goto found;
        }
    }
    if (!c->context_known)
        find_context(c, m, b);
    /* The walk asks for its segments in the same order every time: try the
     * entry after the last one found first. */
    uint64_t tag = query_tag(c->context, q);
    int pos = at < SEG_HINTS ? at : SEG_HINTS - 1, h = c->hint[pos];
    c->tag = tag;
    if (c->context_entries == 0)
        return c->last = NULL, c->walk_full = 0;
    if (h < c->high && matches(&c->entry[h], tag, c->context, q))
        x = &c->entry[h];
    for (int i = 0; x == NULL && i < c->high; i++)
        if (c->entry[i].tag == tag && matches(&c->entry[i], tag, c->context, q))
            x = &c->entry[i];
    if (x != NULL) {
        c->hint[pos] = (int)(x - c->entry);
        walk_found(c, at, x);
    }
    c->last = x;
    if (x == NULL)
        return c->walk_full = 0;
found:
    x->used = ++c->clock;
    if (x->full.kind != FORM_NONE) {
        llmem_form_eval(&x->full, b->batch, b->seq, out);
        return 1;
    }
    c->walk_full = 0;
    if (!answer(x, b->batch, b->seq, out))
        return 0;
    if (x->lift)
        lift(c, x); /* this call was cheap: it can afford the fit */
    return 1;
}

static seg_entry *add_entry(seg_cache *c, const seg_query *q)
{
    seg_entry *x = NULL;
    if (c->high < SEG_ENTRIES) {
        x = &c->entry[c->high++];
    } else {
        /* Round robin, sparing the entries this walk uses (a second chance). */
        for (int k = 0; k < SEG_ENTRIES && x == NULL; k++) {
            seg_entry *e = &c->entry[c->victim];
            c->victim = c->victim + 1 == SEG_ENTRIES ? 0 : c->victim + 1;
            if (e->used < c->walk_start)
                x = e;
        }
        if (x == NULL)
            x = &c->entry[c->victim];
    }
    c->context_entries = 1;
    x->nsamples = x->next_sample = x->nforms = x->next_form = 0;
    x->unstable = x->lift = 0;
    x->y = NULL;
    x->full.kind = FORM_NONE;
    x->stamp = ++c->clock;
    x->tag = c->tag;
    x->context = c->context;
    x->fn = q->fn;
    memcpy(&x->spec, q->spec, sizeof x->spec);
    x->grad_enabled = q->grad_enabled;
    x->mode = q->mode;
    x->hold_input = q->hold_input;
    x->regime = q->regime;
    x->at = q->at;
    x->piece = q->piece;
    x->used = ++c->clock;
    return x;
}

void llmem_segcache_learn(seg_cache *c, const seg_query *q, uint64_t batch, uint64_t seq,
                          const seg_cost *cost, int nevents_forward, int nevents)
{
    seg_entry *x = c->last;
    if (x == NULL) {
        x = c->last = add_entry(c, q);
        walk_found(c, c->pos - 1, x);
    }
    if (x->unstable)
        return;
    if (llmem_regime_is_point(x->regime)) { /* its cost is all there is to keep */
        x->sample[0].batch = batch;
        x->sample[0].seq = seq;
        x->sample[0].cost = *cost;
        x->nsamples = 1;
        return;
    }
    if (x->y == NULL) {
        x->nfwd = nevents_forward;
        x->nbwd = nevents - nevents_forward;
        x->y = arena_words(c, SEG_SAMPLES * values(x));
        if (x->y == NULL)
            return;
    } else if (x->nfwd != nevents_forward || x->nbwd != nevents - nevents_forward) {
        x->unstable = 1; /* the tape changed within the regime: never fit it */
        return;
    }
    int slot = x->next_sample;
    x->next_sample = (slot + 1) % SEG_SAMPLES;
    if (x->nsamples < SEG_SAMPLES)
        x->nsamples++;
    x->sample[slot].batch = batch;
    x->sample[slot].seq = seq;
    x->sample[slot].cost = *cost;
    llmem_sample_pack(cost, c->log, nevents, x->y + (size_t)slot * values(x));
    learn_forms(c, x, slot);
}

int llmem_segcache_walk_forms(const seg_cache *c, int n, const compiled_form *seg[SEG_HINTS])
{
    if (c->walk < 0 || n > SEG_HINTS)
        return 0;
    for (int p = 0; p < n; p++) {
        int i = c->walk_entry[c->walk][p];
        const seg_entry *x = &c->entry[i];
        if (c->walk_stamp[c->walk][p] == 0 || i >= c->high ||
            x->stamp != c->walk_stamp[c->walk][p] || x->full.kind == FORM_NONE)
            return 0;
        seg[p] = &x->full;
    }
    return 1;
}
