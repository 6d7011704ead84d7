/* SPDX-License-Identifier: MIT */
/*
 * What schedulers consume. The mig-parted configuration follows the format
 * of NVIDIA mig-parted's examples: `version: v1`, `mig-configs`, a named list
 * of entries each with `devices` (indices within the node), `mig-enabled`
 * and, when enabled, `mig-devices` (profile name: count). Consecutive GPUs of
 * a node with the same type and content share an entry. The nvidia-smi
 * commands create each GPU's instances with explicit placements
 * ("<profile>:<start>", `nvidia-smi mig -cgi` profile tuples), largest first.
 */
#include "pack/pack.h"

#include "core/ctx.h"
#include "gpu/gpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct out {
    char *buf;
    size_t cap, len;
} out;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    char *dst = o->buf != NULL && o->len < o->cap ? o->buf + o->len : NULL;
    size_t room = dst ? o->cap - o->len : 0;
    va_start(ap, fmt);
    int n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

static int finish(const llmem_pack *p, out *o, size_t *len_out)
{
    if (len_out)
        *len_out = o->len;
    if (o->buf == NULL)
        return LLMEM_OK;
    if (o->len + 1 > o->cap) {
        if (o->cap > 0)
            o->buf[0] = '\0';
        return llmem__fail(p->ctx, LLMEM_EBUFFER, "pack: buffer of %zu bytes, %zu needed",
                           o->cap, o->len + 1);
    }
    o->buf[o->len] = '\0'; /* also when nothing was written (no GPU used) */
    return LLMEM_OK;
}

static int same_content(const pack_gpu *a, const pack_gpu *b)
{
    if (a->type != b->type || a->node != b->node || a->state != b->state)
        return 0;
    return 1;
}

static const char *kind_name(const pack_type *t, int k)
{
    return llmem_gpu_profile(t->gpu, t->kind[k].profile)->name;
}

static void config_entry(const llmem_pack *p, out *o, size_t first, size_t last)
{
    const pack_gpu *g = &p->gpus[first];
    const pack_type *t = &p->types[g->type];
    put(o, "    # %s\n    - devices: [", llmem_gpu_row(t->gpu)->id.name);
    for (size_t i = first; i <= last; i++)
        put(o, "%s%u", i > first ? ", " : "", (unsigned)p->gpus[i].device);
    put(o, "]\n");
    int whole = g->nunits == 1 && t->kind[g->unit[0].kind].whole;
    if (whole || t->grid == 0) {
        put(o, "      mig-enabled: false\n");
        return;
    }
    put(o, "      mig-enabled: true\n      mig-devices:\n");
    /* Largest first, as the creation order. */
    for (int k = t->nkinds - 1; k >= 0; k--) {
        unsigned n = llmem_pack_count(t, g->state, k);
        if (n > 0 && !t->kind[k].whole)
            put(o, "        \"%s\": %u\n", kind_name(t, k), n);
    }
}

/* A config name is a plain YAML key: letters, digits, '.', '_' and '-', as
 * mig-parted's own configs are named ("all-1g.10gb"); anything else (':',
 * '#', a newline, nothing) would change or break the document. */
static int check_config_name(const llmem_pack *p, const char *name)
{
    static const char extra[] = "._-";
    if (name[0] == '\0')
        return llmem__fail(p->ctx, LLMEM_EINVAL, "config-name: empty");
    for (size_t i = 0; name[i] != '\0'; i++) {
        unsigned char c = (unsigned char)name[i];
        int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    (c != 0 && strchr(extra, c) != NULL);
        if (!plain)
            return llmem__fail(p->ctx, LLMEM_EINVAL,
                               "config-name: character 0x%02x at %zu is not a letter, digit, "
                               "'.', '_' or '-'",
                               c, i);
    }
    return LLMEM_OK;
}

int llmem_pack_mig_parted(const llmem_pack *p, const char *name, char *buf, size_t cap,
                          size_t *len_out)
{
    out o = { buf, cap, 0 };
    if (p == NULL)
        return LLMEM_EINVAL;
    if (!p->ran)
        return llmem__fail(p->ctx, LLMEM_EINCONSISTENT, "pack: no result (run it first)");
    if (name == NULL)
        name = "llmem";
    int rc = check_config_name(p, name);
    if (rc != LLMEM_OK)
        return rc;
    int per_node = p->i[LLMEM_PACK_GPUS_PER_NODE] > 0;
    put(&o, "version: v1\nmig-configs:\n");
    if (p->ngpus == 0)
        put(&o, "  %s: []\n", name);
    for (size_t i = 0; i < p->ngpus;) {
        uint32_t node = p->gpus[i].node;
        if (per_node)
            put(&o, "  %s-node-%u:\n", name, (unsigned)node);
        else if (i == 0)
            put(&o, "  %s:\n", name);
        while (i < p->ngpus && p->gpus[i].node == node) {
            size_t last = i;
            while (last + 1 < p->ngpus && same_content(&p->gpus[i], &p->gpus[last + 1]))
                last++;
            config_entry(p, &o, i, last);
            i = last + 1;
        }
    }
    return finish(p, &o, len_out);
}

int llmem_pack_nvidia_smi(const llmem_pack *p, char *buf, size_t cap, size_t *len_out)
{
    out o = { buf, cap, 0 };
    if (p == NULL)
        return LLMEM_EINVAL;
    if (!p->ran)
        return llmem__fail(p->ctx, LLMEM_EINCONSISTENT, "pack: no result (run it first)");
    uint32_t node = UINT32_MAX;
    for (size_t i = 0; i < p->ngpus; i++) {
        const pack_gpu *g = &p->gpus[i];
        const pack_type *t = &p->types[g->type];
        unsigned dev = (unsigned)g->device;
        if (g->node != node) {
            node = g->node;
            put(&o, "# node %u\n", (unsigned)node);
        }
        put(&o, "# GPU %u: %s\n", dev, llmem_gpu_row(t->gpu)->id.name);
        if (t->grid == 0)
            continue; /* no MIG: nothing to create */
        if (g->nunits == 1 && t->kind[g->unit[0].kind].whole) {
            put(&o, "nvidia-smi -i %u -mig 0\n", dev);
            continue;
        }
        uint8_t start[PACK_MAX_UNITS];
        int order[PACK_MAX_UNITS];
        llmem_pack_positions(t, g->state, start);
        /* Instances in kind order, then sorted: more slots first, then by start. */
        int n = 0;
        for (int k = 0; k < t->nkinds; k++)
            for (unsigned c = 0; c < llmem_pack_count(t, g->state, k); c++)
                order[n++] = k;
        int idx[PACK_MAX_UNITS];
        for (int a = 0; a < n; a++)
            idx[a] = a;
        for (int a = 1; a < n; a++)
            for (int b = a; b > 0; b--) {
                const pack_kind *x = &t->kind[order[idx[b - 1]]], *y = &t->kind[order[idx[b]]];
                int swap = y->slots > x->slots ||
                           (y->slots == x->slots && start[idx[b]] < start[idx[b - 1]]);
                if (!swap)
                    break;
                int tmp = idx[b];
                idx[b] = idx[b - 1];
                idx[b - 1] = tmp;
            }
        put(&o, "nvidia-smi -i %u -mig 1\nnvidia-smi mig -i %u -cgi ", dev, dev);
        for (int a = 0; a < n; a++)
            put(&o, "%s%s:%u", a ? "," : "", kind_name(t, order[idx[a]]),
                (unsigned)start[idx[a]]);
        put(&o, " -C\n");
    }
    return finish(p, &o, len_out);
}
