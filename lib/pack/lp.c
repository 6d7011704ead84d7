/* SPDX-License-Identifier: MIT */
/*
 * The configuration linear program (Gilmore-Gomory): with fillings F_j (class
 * counts one GPU holds) and class demands n,
 *
 *     minimize sum_j x_j  subject to  sum_j F_j x_j >= n,  x >= 0.
 *
 * Any layout is an integer solution, so the optimum is a lower bound on the
 * GPUs. It is solved by the revised simplex method (simplex.c) over the
 * classes (a K x K basis), from the basis of each class's singleton filling. The bound is
 * taken from the dual, not the primal: y = max(pi, 0), scaled so that every
 * filling has F_j . y <= 1, is feasible for the dual, and by weak duality
 * n . y is a lower bound however the simplex ended; it is rounded up after
 * a relative tolerance of 1e-9 against floating-point error.
 *
 * A fleet with counts L_t: the LP above first; should its solution use more
 * GPUs of a limited type than it has, the LP with a row per limited type,
 * sum_{F of type t} x_F <= L_t (lp_limited), whose primal gives the limited
 * GPUs the fillings that save the most. Either way the bound is taken from
 * the duals for the fleet as it is (counted_bound).
 */
#include "pack/pack.h"

#include "core/ctx.h"
#include "pack/simplex.h"

#include <math.h>
#include <string.h>

/* Each filling's counts of the active classes, dense ([m][k]: the start and
 * the bound read rows) and as the simplex's sparse columns (cost -1: the
 * minimum as a maximum), rows in order. */
static size_t fill_columns(const double *a, size_t m, uint32_t k, size_t *start, uint32_t *row,
                           double *val, double *cost)
{
    size_t e = 0;
    for (size_t j = 0; j < m; j++) {
        start[j] = e;
        cost[j] = -1.0;
        for (uint32_t i = 0; i < k; i++)
            if (a[j * k + i] != 0) {
                row[e] = i;
                val[e++] = a[j * k + i];
            }
    }
    start[m] = e;
    return e;
}

/* The start of the simplex: for each row i, the filling with units of its
 * class alone and the most of them (the first of equals in fill[] order),
 * on a type without a limit where one holds it (lrow[type] UINT32_MAX; lrow
 * NULL: no type has one): basis[i] (SIZE_MAX when none) and most[i]. One
 * pass over the fillings, each one's only row found once, where a search
 * per row read every filling's k counts (k^2 m: most of an LP's time with
 * thousands of fillings). 0 when out of memory. */
static int singleton_starts(const pack_run *r, const double *a, size_t m, uint32_t k,
                            const uint32_t *lrow, size_t *basis, double *most)
{
    int *free_type = llmem__calloc(r->p->ctx, (k + 1) * sizeof *free_type);
    if (free_type == NULL)
        return 0;
    for (uint32_t i = 0; i < k; i++) {
        basis[i] = SIZE_MAX;
        most[i] = 0;
    }
    for (size_t j = 0; j < m; j++) {
        uint32_t i = UINT32_MAX, units = 0;
        for (uint32_t c = 0; c < k; c++)
            if (a[j * k + c] != 0) {
                i = c;
                units++;
            }
        if (units != 1)
            continue;
        int is_free = lrow == NULL || lrow[r->fill[j].type] == UINT32_MAX;
        if (free_type[i] && !is_free)
            continue;
        if ((is_free && !free_type[i]) || a[j * k + i] > most[i]) {
            most[i] = a[j * k + i];
            basis[i] = j;
            free_type[i] = is_free;
        }
    }
    llmem__free(r->p->ctx, free_type);
    return 1;
}

/* The bound of class prices y >= 0 on a fleet with room[t] GPUs of type t:
 * one of type t covers at most m_t = max over its fillings of F . y, and the
 * GPUs must cover n . y (llmem_pack_cover). */
static uint64_t counted_bound(const pack_run *r, const double *a, const double *n, uint32_t k,
                              const double *y, const uint64_t *room)
{
    double cover[PACK_MAX_TYPES] = { 0 }, value = 0;
    for (uint32_t i = 0; i < k; i++)
        value += n[i] * y[i];
    for (size_t j = 0; j < r->nfill; j++) {
        double sum = 0;
        for (uint32_t i = 0; i < k; i++)
            sum += a[j * k + i] * y[i];
        if (sum > cover[r->fill[j].type])
            cover[r->fill[j].type] = sum;
    }
    return llmem_pack_cover(r, room, cover, value);
}

/*
 * The configuration LP with counts: rows 0..k-1 as above, then one per
 * limited type t, -sum_{F of type t} x_F + v_t - s_t = -L_t, its surplus s_t >= 0
 * keeping sum x_F <= L_t and an artificial v_t >= 0 making the start
 * feasible where the singletons use more than L_t GPUs of t. Phase 1
 * maximizes -sum v; phase 2, each v out of the basis and dropped, the minimum
 * of sum x. The bound: with y the class rows' duals clipped at 0, a GPU of
 * type t covers at most m_t = max over its fillings of F . y and the GPUs must
 * cover n . y, so llmem_pack_cover() of those: valid whatever y is. Returns 0
 * when not solved, or when the counts leave no fractional layout.
 */
static int lp_limited(pack_run *r, const double *a, const double *n, uint32_t k,
                      const uint64_t *room, uint64_t *bound, double *x)
{
    llmem_ctx *ctx = r->p->ctx;
    size_t nf = r->nfill;
    uint32_t q = 0, lrow[PACK_MAX_TYPES];
    int solved = 0;
    for (int t = 0; t < r->ntypes; t++)
        lrow[t] = room[t] != PACK_NO_LIMIT ? k + q++ : UINT32_MAX;
    uint32_t m = k + q;
    size_t cols = nf + q, entries = q;
    for (size_t j = 0; j < nf; j++) {
        for (uint32_t i = 0; i < k; i++)
            entries += a[j * k + i] != 0;
        entries += lrow[r->fill[j].type] != UINT32_MAX;
    }
    simplex l = { .m = m, .n = cols, .logical = -1.0, .clamp = 1 };
    size_t *start = llmem__alloc(ctx, (cols + 1) * sizeof *start);
    uint32_t *row = llmem__alloc(ctx, (entries + 1) * sizeof *row);
    double *val = llmem__alloc(ctx, (entries + 1) * sizeof *val);
    double *cost = llmem__alloc(ctx, 2 * cols * sizeof *cost);
    double *b = llmem__alloc(ctx, (size_t)m * sizeof *b);
    int ready = llmem_simplex_alloc(ctx, &l);
    if (start == NULL || row == NULL || val == NULL || cost == NULL || b == NULL || !ready)
        goto done;
    l.b = b;
    /* Phase 1's costs (cost) and phase 2's (cost + cols). */
    size_t e = 0;
    for (size_t j = 0; j < nf; j++) {
        start[j] = e;
        for (uint32_t i = 0; i < k; i++)
            if (a[j * k + i] != 0) {
                row[e] = i;
                val[e++] = a[j * k + i];
            }
        if (lrow[r->fill[j].type] != UINT32_MAX) {
            row[e] = lrow[r->fill[j].type];
            val[e++] = -1.0;
        }
        cost[j] = 0;
        cost[cols + j] = -1.0;
    }
    for (uint32_t v = 0; v < q; v++) {
        start[nf + v] = e;
        row[e] = k + v;
        val[e++] = 1.0;
        cost[nf + v] = -1.0;
    }
    start[cols] = e;
    l.start = start;
    l.row = row;
    l.val = val;
    l.cost = cost;
    for (uint32_t i = 0; i < k; i++)
        b[i] = n[i];
    for (int t = 0; t < r->ntypes; t++)
        if (lrow[t] != UINT32_MAX)
            b[lrow[t]] = -(double)room[t];
    /* Start: each class's singleton, on a type without a limit where one
     * holds it; the limit rows' surplus, or their artificial where the
     * singletons exceed the count. */
    double usage[PACK_MAX_TYPES] = { 0 };
    /* l.xb, which the inversion sets, holds the singletons' counts meanwhile. */
    if (!singleton_starts(r, a, nf, k, lrow, l.basis, l.xb))
        goto done;
    for (uint32_t i = 0; i < k; i++) {
        if (l.basis[i] == SIZE_MAX)
            goto done;
        usage[r->fill[l.basis[i]].type] += n[i] / l.xb[i];
    }
    int artificial = 0;
    for (int t = 0; t < r->ntypes; t++) {
        if (lrow[t] == UINT32_MAX)
            continue;
        int over = usage[t] > (double)room[t];
        l.basis[lrow[t]] = over ? nf + (lrow[t] - k) : cols + lrow[t];
        artificial |= over;
    }
    if (!llmem_simplex_invert(&l))
        goto done;
    if (artificial) {
        double total = 0;
        if (!llmem_simplex_run(&l))
            goto done;
        for (uint32_t i = 0; i < k; i++)
            total += n[i];
        for (uint32_t p = 0; p < m; p++)
            if (l.basis[p] >= nf && l.basis[p] < cols && l.xb[p] > 1e-9 * (1 + total))
                goto done; /* the counts leave no fractional layout */
        /* Each artificial left in the basis (at 0) out, for a logical. */
        if (!llmem_simplex_drive_out(&l, nf, cols))
            goto done;
    }
    /* Phase 2 without the artificials: the logicals renumbered after the
     * fillings. */
    for (uint32_t p = 0; p < m; p++)
        if (l.basis[p] >= cols)
            l.basis[p] -= q;
    l.n = nf;
    l.cost = cost + cols;
    if (!llmem_simplex_invert(&l) || !llmem_simplex_run(&l))
        goto done;
    memset(x, 0, nf * sizeof *x);
    for (uint32_t p = 0; p < m; p++)
        if (l.basis[p] < nf && l.xb[p] > 0)
            x[l.basis[p]] += l.xb[p];
    for (uint32_t i = 0; i < k; i++)
        l.pi[i] = -l.pi[i] > 0 ? -l.pi[i] : 0;
    *bound = counted_bound(r, a, n, k, l.pi, room);
    solved = 1;
done:
    llmem__free(ctx, start);
    llmem__free(ctx, row);
    llmem__free(ctx, val);
    llmem__free(ctx, cost);
    llmem__free(ctx, b);
    llmem_simplex_free(ctx, &l);
    return solved;
}

/* Rounds of column generation at most: each prices every type once. */
#define GENERATE_MAX_ROUNDS 300

/*
 * The configuration LP by column generation, for fleets whose fillings are
 * too many to list (fill_complete 0): fill[] holds those generated so far
 * (kept from one call to the next), and the LP over them (the restricted
 * LP) is solved, its duals priced against every filling of every type
 * (llmem_pack_price, exact), the fillings that would improve it added, until
 * none would: the restricted LP's optimum is then the full LP's. The same
 * rows as lp_limited (with room, one per limited type), the columns
 * [0, q) its artificials, then fill[] in order, so x[] is indexed as fill[].
 * Phase 1 (when the singletons exceed a count) generates as phase 2 does,
 * with its own costs. Stops after GENERATE_MAX_ROUNDS rounds or when fill[]
 * is full: x is then a solution of the restricted LP, not always optimal,
 * and the bound (from the prices, priced exactly) still holds. Returns 1
 * with price[class] (the class rows' duals clipped at 0, 0 for classes
 * without demand) and x[nfill], 0 when not solved (or the counts leave no
 * fractional layout).
 */
/* Phase 2's columns: the artificials (columns [0, q), one entry each)
 * emptied, never to enter, and the fillings' cost -1. */
static void drop_artificials(simplex *l, uint32_t q, double *val, double *cost)
{
    for (uint32_t v = 0; v < q; v++) {
        val[l->start[v]] = 0;
        cost[v] = 0;
    }
    for (size_t j = q; j < l->n; j++)
        cost[j] = -1.0;
}

static int generate(pack_run *r, const uint64_t *demand, const uint64_t *room, double *price,
                    double *x)
{
    llmem_ctx *ctx = r->p->ctx;
    uint32_t nc = r->nclasses, k = 0, q = 0, lrow[PACK_MAX_TYPES];
    int solved = 0;
    for (uint32_t c = 0; c < nc; c++)
        k += demand[c] > 0;
    for (int t = 0; t < r->ntypes; t++)
        lrow[t] = room != NULL && room[t] != PACK_NO_LIMIT ? k + q++ : UINT32_MAX;
    uint32_t m = k + q;
    size_t cols = q + r->fill_max;
    size_t entries = q + r->fill_max * (PACK_MAX_UNITS + 1);
    simplex l = { .m = m, .n = q, .logical = -1.0, .clamp = 1 };
    uint32_t *row_of = llmem__alloc(ctx, (nc + 1) * sizeof *row_of);
    double *one = llmem__calloc(ctx, (nc + 1) * sizeof *one);
    size_t *start = llmem__alloc(ctx, (cols + 1) * sizeof *start);
    uint32_t *row = llmem__alloc(ctx, entries * sizeof *row);
    double *val = llmem__alloc(ctx, entries * sizeof *val);
    double *cost = llmem__alloc(ctx, cols * sizeof *cost);
    double *b = llmem__alloc(ctx, ((size_t)m + 1) * sizeof *b);
    int ready = llmem_simplex_alloc(ctx, &l);
    if (row_of == NULL || one == NULL || start == NULL || row == NULL || val == NULL ||
        cost == NULL || b == NULL || !ready || k == 0)
        goto done;
    l.start = start;
    l.row = row;
    l.val = val;
    l.cost = cost;
    l.b = b;
    for (uint32_t c = 0, i = 0; c < nc; c++) {
        row_of[c] = demand[c] > 0 ? i++ : UINT32_MAX;
        if (demand[c] > 0)
            b[row_of[c]] = (double)demand[c];
    }
    /* The artificials: +1 in their limit row. */
    size_t e = 0;
    for (uint32_t v = 0; v < q; v++) {
        start[v] = e;
        row[e] = k + v;
        val[e++] = 1.0;
        cost[v] = -1.0;
    }
    start[q] = e;
    for (int t = 0; t < r->ntypes; t++)
        if (lrow[t] != UINT32_MAX)
            b[lrow[t]] = -(double)room[t];
    /* Start: each class's singleton (the most of its jobs one GPU holds), on
     * a type without a limit where one holds it; the limit rows' surplus,
     * or their artificial where the singletons exceed the count. */
    double usage[PACK_MAX_TYPES] = { 0 };
    for (uint32_t c = 0; c < nc; c++) {
        if (demand[c] == 0)
            continue;
        pack_filling f, best_f;
        double most = 0;
        int best_free = 0;
        one[c] = 1.0;
        for (int t = 0; t < r->ntypes; t++) {
            int is_free = lrow[t] == UINT32_MAX;
            if ((best_free && !is_free) || (!is_free && room[t] == 0))
                continue;
            double v = llmem_pack_price(r, t, one, demand, 0, &f);
            if (v > 0 && ((is_free && !best_free) || v > most)) {
                most = v;
                best_f = f;
                best_free = is_free;
            }
        }
        one[c] = 0;
        size_t index;
        if (most == 0 || llmem_pack_column_add(r, &best_f, &index) < 0 || index == SIZE_MAX)
            goto done;
        l.basis[row_of[c]] = q + index;
        usage[best_f.type] += (double)demand[c] / most;
    }
    int artificial = 0, over[PACK_MAX_TYPES] = { 0 }, started = 0;
    for (int t = 0; t < r->ntypes; t++)
        if (lrow[t] != UINT32_MAX) {
            over[t] = usage[t] > (double)room[t];
            artificial |= over[t];
        }
    int phase = artificial ? 1 : 2;
    size_t built = 0; /* fillings with columns */
    if (phase == 2)
        drop_artificials(&l, q, val, cost);
    for (int round = 0;; round++) {
        /* Columns for the fillings added since (cost by phase), the
         * logicals renumbered after them. */
        size_t old_n = l.n;
        for (; built < r->nfill; built++) {
            const pack_filling *f = &r->fill[built];
            size_t j = q + built;
            start[j] = e;
            for (int u = 0; u < f->nunits; u++)
                if (row_of[f->unit[u].cls] != UINT32_MAX) {
                    row[e] = row_of[f->unit[u].cls];
                    val[e++] = 1.0; /* repeated rows add up (simplex.c) */
                }
            if (lrow[f->type] != UINT32_MAX) {
                row[e] = lrow[f->type];
                val[e++] = -1.0;
            }
            start[j + 1] = e;
            cost[j] = phase == 1 ? 0 : -1.0;
        }
        l.n = q + built;
        if (!started) {
            for (int t = 0; t < r->ntypes; t++)
                if (lrow[t] != UINT32_MAX)
                    l.basis[lrow[t]] = over[t] ? lrow[t] - k : l.n + lrow[t];
            started = 1;
        } else {
            for (uint32_t p = 0; p < m; p++)
                if (l.basis[p] >= old_n)
                    l.basis[p] += l.n - old_n;
        }
        if (!llmem_simplex_invert(&l) || !llmem_simplex_run(&l))
            goto done;
        if (phase == 1) {
            double left = 0, total = 0;
            for (uint32_t i = 0; i < k; i++)
                total += b[i];
            for (uint32_t p = 0; p < m; p++)
                if (l.basis[p] < q)
                    left += l.xb[p];
            if (left <= 1e-9 * (1 + total)) {
                /* Feasible: each artificial left in the basis (at 0) out,
                 * for a logical, then the artificials emptied (never to
                 * enter again) and phase 2's costs. */
                if (!llmem_simplex_drive_out(&l, 0, q))
                    goto done;
                drop_artificials(&l, q, val, cost);
                phase = 2;
                round--; /* phase 2 solves before it prices */
                continue;
            }
        }
        for (uint32_t c = 0; c < nc; c++)
            price[c] = row_of[c] != UINT32_MAX && -l.pi[row_of[c]] > 0 ? -l.pi[row_of[c]] : 0;
        if (round >= GENERATE_MAX_ROUNDS || r->nfill >= r->fill_max) {
            if (phase == 1)
                goto done;
            break;
        }
        /* Price every type: a filling F of type t improves the LP when
         * cost + price . F + (its limit row's dual) > 0. */
        int added = 0;
        for (int t = 0; t < r->ntypes; t++) {
            pack_filling f;
            if (lrow[t] != UINT32_MAX && room[t] == 0)
                continue;
            double gain = (phase == 1 ? 0 : -1.0) + llmem_pack_price(r, t, price, demand, 1, &f) +
                          (lrow[t] != UINT32_MAX ? l.pi[lrow[t]] : 0);
            size_t index;
            if (gain > 1e-9) {
                int rc = llmem_pack_column_add(r, &f, &index);
                if (rc < 0)
                    goto done;
                added += rc;
            }
        }
        if (!added) {
            if (phase == 1)
                goto done; /* the counts leave no fractional layout */
            break;
        }
    }
    memset(x, 0, r->fill_max * sizeof *x); /* later fillings too: none is used */
    for (uint32_t p = 0; p < m; p++)
        if (l.basis[p] >= q && l.basis[p] < l.n && l.xb[p] > 0)
            x[l.basis[p] - q] += l.xb[p];
    solved = 1;
done:
    llmem__free(ctx, row_of);
    llmem__free(ctx, one);
    llmem__free(ctx, start);
    llmem__free(ctx, row);
    llmem__free(ctx, val);
    llmem__free(ctx, cost);
    llmem__free(ctx, b);
    llmem_simplex_free(ctx, &l);
    return solved;
}

/* The most a filling of each type is worth at prices y (exactly, over all of
 * them), in cover[]; the largest. */
static double priced_cover(pack_run *r, const uint64_t *demand, const double *y, double *cover)
{
    double worst = 0;
    for (int t = 0; t < r->ntypes; t++) {
        pack_filling f;
        cover[t] = llmem_pack_price(r, t, y, demand, 0, &f);
        worst = cover[t] > worst ? cover[t] : worst;
    }
    return worst;
}

/* The LP of fill_complete 0 (generate): first without the counts, then,
 * should that use more GPUs of a limited type than it has, with them, as
 * llmem_pack_lp does with all the fillings; the bound from the prices. */
static int lp_generated(pack_run *r, const uint64_t *demand, const uint64_t *room,
                        uint64_t *bound, double *x)
{
    llmem_ctx *ctx = r->p->ctx;
    double cover[PACK_MAX_TYPES], value = 0;
    int solved = 0;
    double *y = llmem__alloc(ctx, (r->nclasses + 1) * sizeof *y);
    if (y == NULL || r->columns == NULL)
        goto done;
    if (generate(r, demand, NULL, y, x)) {
        double worst = priced_cover(r, demand, y, cover);
        for (uint32_t c = 0; c < r->nclasses; c++)
            value += (double)demand[c] * y[c];
        if (worst > 0) {
            value /= worst;
            value -= 1e-9 * (value > 1 ? value : 1);
            *bound = value > 0 ? (uint64_t)ceil(value) : 0;
            solved = 1;
        }
    }
    if (room != NULL) {
        double used[PACK_MAX_TYPES] = { 0 };
        int limited = 0, within = solved;
        for (int t = 0; t < r->ntypes; t++)
            limited |= room[t] != PACK_NO_LIMIT;
        for (size_t j = 0; j < r->nfill && limited && within; j++)
            used[r->fill[j].type] += x[j];
        for (int t = 0; t < r->ntypes && limited && within; t++)
            within = room[t] == PACK_NO_LIMIT || used[t] <= (double)room[t] + 1e-9;
        uint64_t counted = 0;
        if (limited && !within && generate(r, demand, room, y, x))
            solved = 1;
        if (limited && solved) {
            value = 0;
            priced_cover(r, demand, y, cover);
            for (uint32_t c = 0; c < r->nclasses; c++)
                value += (double)demand[c] * y[c];
            counted = llmem_pack_cover(r, room, cover, value);
        }
        *bound = counted > *bound ? counted : *bound;
    }
done:
    llmem__free(ctx, y);
    return solved;
}

int llmem_pack_lp(pack_run *r, const uint64_t *demand, const uint64_t *room, uint64_t *bound,
                  double *x)
{
    llmem_ctx *ctx = r->p->ctx;
    int solved = 0;
    uint32_t k = 0;
    size_t m = r->nfill;
    *bound = 0;
    for (uint32_t c = 0; c < r->nclasses; c++)
        k += demand[c] > 0;
    if (k == 0)
        return 0;
    if (!r->fill_complete)
        return lp_generated(r, demand, room, bound, x);
    if (m == 0)
        return 0;
    /* F x - s = n, s >= 0: a surplus a row; the minimum of sum x as the
     * maximum of -sum x, so the duals come out negated. */
    simplex l = { .m = k, .n = m, .logical = -1.0 };
    uint32_t *cls = llmem__alloc(ctx, k * sizeof *cls);
    double *a = llmem__calloc(ctx, m * k * sizeof *a);
    double *n = llmem__alloc(ctx, k * sizeof *n);
    size_t *start = llmem__alloc(ctx, (m + 1) * sizeof *start);
    uint32_t *row = llmem__alloc(ctx, m * k * sizeof *row);
    double *val = llmem__alloc(ctx, m * k * sizeof *val);
    double *cost = llmem__alloc(ctx, m * sizeof *cost);
    uint32_t *row_of = llmem__alloc(ctx, (r->nclasses + 1) * sizeof *row_of);
    int ready = llmem_simplex_alloc(ctx, &l);
    if (cls == NULL || a == NULL || n == NULL || start == NULL || row == NULL || val == NULL ||
        cost == NULL || row_of == NULL || !ready)
        goto done;
    for (uint32_t c = 0, i = 0; c < r->nclasses; c++) {
        row_of[c] = UINT32_MAX;
        if (demand[c] > 0) {
            row_of[c] = i;
            cls[i] = c;
            n[i] = (double)demand[c];
            i++;
        }
    }
    for (size_t j = 0; j < m; j++)
        for (int u = 0; u < r->fill[j].nunits; u++) {
            uint32_t i = row_of[r->fill[j].unit[u].cls];
            if (i != UINT32_MAX)
                a[j * k + i] += 1.0;
        }
    fill_columns(a, m, k, start, row, val, cost);
    l.start = start;
    l.row = row;
    l.val = val;
    l.cost = cost;
    l.b = n;
    /* Start: each row's singleton, the filling with the most units of its class. */
    /* l.xb, which the inversion sets, holds their counts meanwhile. */
    if (!singleton_starts(r, a, m, k, NULL, l.basis, l.xb))
        goto done;
    for (uint32_t i = 0; i < k; i++)
        if (l.basis[i] == SIZE_MAX)
            goto done; /* a class no filling holds alone: cannot happen */
    if (!llmem_simplex_invert(&l) || !llmem_simplex_run(&l))
        goto counts;
    /* The primal, for rounding. */
    memset(x, 0, m * sizeof *x);
    for (uint32_t i = 0; i < k; i++)
        if (l.basis[i] < m && l.xb[i] > 0)
            x[l.basis[i]] += l.xb[i];
    /* The bound, from a dual-feasible y: the duals of the minimum. */
    double worst = 0, value = 0;
    for (uint32_t i = 0; i < k; i++)
        l.pi[i] = -l.pi[i] > 0 ? -l.pi[i] : 0;
    for (size_t j = 0; j < m; j++) {
        double sum = 0;
        for (uint32_t i = 0; i < k; i++)
            sum += a[j * k + i] * l.pi[i];
        if (sum > worst)
            worst = sum;
    }
    if (worst <= 0)
        goto counts;
    for (uint32_t i = 0; i < k; i++)
        value += n[i] * (l.pi[i] / worst);
    value -= 1e-9 * (value > 1 ? value : 1);
    *bound = value > 0 ? (uint64_t)ceil(value) : 0;
    solved = 1;
counts:
    /* With counts: a solution within them is optimal with them too (so
     * counts that hold everything change nothing), and its duals bound the
     * fleet as it is; else the LP with them, should it solve. */
    if (room != NULL) {
        double used[PACK_MAX_TYPES] = { 0 };
        int limited = 0, within = solved;
        for (int t = 0; t < r->ntypes; t++)
            limited |= room[t] != PACK_NO_LIMIT;
        for (size_t j = 0; j < m && limited && within; j++)
            used[r->fill[j].type] += x[j];
        for (int t = 0; t < r->ntypes && limited && within; t++)
            within = room[t] == PACK_NO_LIMIT || used[t] <= (double)room[t] + 1e-9;
        uint64_t counted = 0;
        if (limited && within)
            counted = counted_bound(r, a, n, k, l.pi, room);
        else if (limited && lp_limited(r, a, n, k, room, &counted, x))
            solved = 1;
        *bound = counted > *bound ? counted : *bound;
    }
done:
    llmem__free(ctx, cls);
    llmem__free(ctx, a);
    llmem__free(ctx, n);
    llmem__free(ctx, start);
    llmem__free(ctx, row);
    llmem__free(ctx, val);
    llmem__free(ctx, cost);
    llmem__free(ctx, row_of);
    llmem_simplex_free(ctx, &l);
    return solved;
}

/*
 * The jobs LP of a limited fleet:
 *
 *     maximize sum_c y_c  subject to  y_c <= n_c,  y_c - sum_j F_jc x_j <= 0,
 *     sum_{j of type t} x_j <= L_t (limited types),  sum_j x_j <= G (a cap),
 *     x, y >= 0.
 *
 * Any layout gives a feasible point (x_j the GPUs filled as F_j, y the jobs
 * placed), so the optimum bounds the jobs placed. Every right-hand side is
 * >= 0, so the slack basis is feasible: the revised simplex (simplex.c) runs
 * from it, over a (2K + T + 1)-row basis. The bound is not its
 * objective but llmem_pack_jobs_bound() of the duals of the rows
 * y_c - F x <= 0, valid whatever they are (bounds.c).
 */
int llmem_pack_lp_jobs(pack_run *r, const uint64_t *demand, uint64_t total, uint64_t *bound,
                       double *x)
{
    llmem_ctx *ctx = r->p->ctx;
    simplex l = { .logical = 1.0, .clamp = 1 };
    int solved = 0;
    uint32_t k = 0, limited = 0;
    uint32_t type_row[PACK_MAX_TYPES];
    *bound = UINT64_MAX;
    if (!r->fill_complete || r->nfill == 0)
        return 0;
    for (uint32_t c = 0; c < r->nclasses; c++)
        k += demand[c] > 0;
    if (k == 0)
        return 0;
    /* Rows: y_c - F x (k), y_c <= n_c (k), limited types, the cap. */
    for (int t = 0; t < r->ntypes; t++)
        type_row[t] = r->types[t].limit != 0 ? 2 * k + limited++ : UINT32_MAX;
    uint32_t cap_row = 2 * k + limited;
    l.m = cap_row + (total != PACK_NO_LIMIT);
    l.n = k + r->nfill;
    size_t entries = 2 * (size_t)k;
    for (size_t j = 0; j < r->nfill; j++)
        entries += (size_t)r->fill[j].nunits + 2;
    uint32_t m = l.m;
    uint32_t *row_of = llmem__alloc(ctx, (r->nclasses + 1) * sizeof *row_of);
    uint32_t *cls = llmem__alloc(ctx, k * sizeof *cls);
    size_t *start = llmem__alloc(ctx, (l.n + 1) * sizeof *start);
    uint32_t *row = llmem__alloc(ctx, entries * sizeof *row);
    double *val = llmem__alloc(ctx, entries * sizeof *val);
    double *cost = llmem__calloc(ctx, l.n * sizeof *cost);
    double *b = llmem__alloc(ctx, (size_t)m * sizeof *b);
    int ready = llmem_simplex_alloc(ctx, &l);
    double *p = llmem__calloc(ctx, (r->nclasses + 1) * sizeof *p);
    if (row_of == NULL || cls == NULL || start == NULL || row == NULL || val == NULL ||
        cost == NULL || b == NULL || !ready || p == NULL)
        goto done;
    l.start = start;
    l.row = row;
    l.val = val;
    l.cost = cost;
    l.b = b;
    for (uint32_t c = 0, i = 0; c < r->nclasses; c++) {
        row_of[c] = UINT32_MAX;
        if (demand[c] > 0) {
            row_of[c] = i;
            cls[i++] = c;
        }
    }
    size_t e = 0;
    for (uint32_t i = 0; i < k; i++) {
        start[i] = e;
        row[e] = i;
        val[e++] = 1.0;
        row[e] = k + i;
        val[e++] = 1.0;
        cost[i] = 1.0;
        b[i] = 0;
        b[k + i] = (double)demand[cls[i]];
    }
    for (int t = 0; t < r->ntypes; t++)
        if (type_row[t] != UINT32_MAX)
            b[type_row[t]] = (double)r->types[t].limit;
    if (total != PACK_NO_LIMIT)
        b[cap_row] = (double)total;
    for (size_t j = 0; j < r->nfill; j++) {
        const pack_filling *f = &r->fill[j];
        start[k + j] = e;
        for (int u = 0; u < f->nunits; u++) {
            uint32_t i = row_of[f->unit[u].cls];
            if (i == UINT32_MAX)
                continue;
            row[e] = i;
            val[e++] = -1.0; /* repeated units add up (simplex.c) */
        }
        if (type_row[f->type] != UINT32_MAX) {
            row[e] = type_row[f->type];
            val[e++] = 1.0;
        }
        if (total != PACK_NO_LIMIT) {
            row[e] = cap_row;
            val[e++] = 1.0;
        }
    }
    start[l.n] = e;
    for (uint32_t i = 0; i < m; i++) {
        l.basis[i] = l.n + i;
        l.binv[i * m + i] = 1.0;
        l.xb[i] = b[i];
    }
    if (!llmem_simplex_run(&l) || !llmem_simplex_invert(&l))
        goto done;
    llmem_simplex_duals(&l);
    if (x != NULL) {
        memset(x, 0, r->nfill * sizeof *x);
        for (uint32_t i = 0; i < m; i++)
            if (l.basis[i] >= k && l.basis[i] < l.n && l.xb[i] > 0)
                x[l.basis[i] - k] += l.xb[i];
    }
    for (uint32_t i = 0; i < k; i++)
        p[cls[i]] = l.pi[i];
    *bound = llmem_pack_jobs_bound(r, demand, p, total);
    solved = *bound != UINT64_MAX;
done:
    llmem__free(ctx, row_of);
    llmem__free(ctx, cls);
    llmem__free(ctx, start);
    llmem__free(ctx, row);
    llmem__free(ctx, val);
    llmem__free(ctx, cost);
    llmem__free(ctx, b);
    llmem_simplex_free(ctx, &l);
    llmem__free(ctx, p);
    return solved;
}
