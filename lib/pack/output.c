/* SPDX-License-Identifier: MIT */
/*
 * What schedulers consume. The mig-parted configuration follows the format
 * of NVIDIA mig-parted's examples: `version: v1`, `mig-configs`, a named list
 * of entries each with `devices` (indices within the node), `mig-enabled`
 * and, when enabled, `mig-devices` (profile name: count). Consecutive GPUs of
 * a node with the same type and content share an entry. No `device-filter`
 * (the PCI device IDs an entry applies to, mig-parted api/spec/v1): NVIDIA's
 * published configs list the IDs in groups that mix the catalog's types (the
 * A100 80GB's with the H100 80GB's), so they cannot be told apart from
 * there; docs/mig.md says how a scheduler pins the type instead.
 *
 * The nvidia-smi commands first destroy each GPU's compute and GPU instances
 * (the MIG User Guide's `nvidia-smi mig -dci` then `-dgi`, here with `-i` for
 * one GPU; a destroy that finds none exits nonzero, so `|| true`), set its
 * MIG mode, and create its instances with explicit placements
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
    return llmem_mig_driver_name(t->gpu, t->kind[k].profile, t->driver);
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

/* The GPU operator's MIG manager applies the config named by the node label
 * nvidia.com/mig.config (`kubectl label nodes $NODE
 * nvidia.com/mig.config=all-1g.5gb`, NVIDIA/cloud-native-docs
 * gpu-operator/gpu-operator-mig.rst), so every config name, "-node-<k>"
 * included, must be a Kubernetes label value: "63 characters or less" and
 * "begin and end with an alphanumeric character ([a-z0-9A-Z]) with dashes
 * (-), underscores (_), dots (.), and alphanumerics between"
 * (kubernetes/website, concepts/overview/working-with-objects/labels.md,
 * "Syntax and character set"). The name itself is held to the same rule
 * (the empty value the label allows names no config). */
#define LABEL_VALUE_MAX 63

static int label_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

static int alnum(unsigned char c)
{
    return label_char(c) && c != '.' && c != '_' && c != '-';
}

/* The name for a message: at most 64 bytes, other than printable ASCII as
 * \xNN (a newline or an escape would forge a line or act on a terminal). */
static void quote_name(const char *name, char *buf, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; name[i] != '\0' && n + 8 < cap; i++) {
        unsigned char c = (unsigned char)name[i];
        if (i == 64) {
            n += (size_t)snprintf(buf + n, cap - n, "...");
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
            buf[n++] = (char)c;
        else
            n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", c);
    }
    buf[n] = '\0';
}

/* The longest config name made of name: "<name>-node-<k>" for the last node
 * (no GPU used: "<name>" alone). */
static size_t longest_config(const llmem_pack *p, const char *name)
{
    size_t len = strlen(name);
    if (p->i[LLMEM_PACK_GPUS_PER_NODE] <= 0 || p->ngpus == 0)
        return len;
    uint32_t last = 0;
    for (size_t i = 0; i < p->ngpus; i++)
        if (p->gpus[i].node > last)
            last = p->gpus[i].node;
    char suffix[32];
    return len + (size_t)snprintf(suffix, sizeof suffix, "-node-%u", (unsigned)last);
}

static int check_config_name(const llmem_pack *p, const char *name)
{
    static const char rule[] = "the GPU operator selects it by the node label "
                               "nvidia.com/mig.config, whose value is a Kubernetes label value";
    char shown[64 * 4 + 8];
    size_t len = strlen(name);
    quote_name(name, shown, sizeof shown);
    if (len == 0)
        return llmem__fail(p->ctx, LLMEM_EINVAL, "config-name '': empty (%s)", rule);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!label_char(c))
            return llmem__fail(p->ctx, LLMEM_EINVAL,
                               "config-name '%s': character 0x%02x at %zu is not a letter, "
                               "digit, '.', '_' or '-' (%s)",
                               shown, c, i, rule);
    }
    if (!alnum((unsigned char)name[0]) || !alnum((unsigned char)name[len - 1]))
        return llmem__fail(p->ctx, LLMEM_EINVAL,
                           "config-name '%s': must begin and end with a letter or digit (%s)",
                           shown, rule);
    size_t longest = longest_config(p, name);
    if (longest > LABEL_VALUE_MAX)
        return llmem__fail(p->ctx, LLMEM_EINVAL,
                           "config-name '%s': %s is %zu characters, more than the %d of a label "
                           "value (%s)",
                           shown, longest > len ? "its last node's config name" : "it", longest,
                           LABEL_VALUE_MAX, rule);
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
    /* Config names quoted: a plain "null", "yes" or "123" reads as no string. */
    put(&o, "version: v1\nmig-configs:\n");
    if (p->ngpus == 0)
        put(&o, "  \"%s\": []\n", name);
    for (size_t i = 0; i < p->ngpus;) {
        uint32_t node = p->gpus[i].node;
        if (per_node)
            put(&o, "  \"%s-node-%u\":\n", name, (unsigned)node);
        else if (i == 0)
            put(&o, "  \"%s\":\n", name);
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
    if (p->ngpus > 0)
        put(&o, "# Each MIG-capable GPU: its compute and GPU instances destroyed (a destroy "
                "that finds none\n# exits nonzero: ignored), its MIG mode set, its instances "
                "created at explicit placements.\n");
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
        /* What an earlier layout left would take the placements below; a GPU
         * set whole is left without it too. */
        put(&o, "nvidia-smi mig -i %u -dci || true\nnvidia-smi mig -i %u -dgi || true\n", dev,
            dev);
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
