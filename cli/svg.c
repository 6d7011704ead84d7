/* SPDX-License-Identifier: MIT */
/* The step's timeline as a self-contained SVG 1.1 picture: no script, no
 * external font or link. x is progress through the step, phases banded and
 * labelled; y is bytes with GiB ticks; the four terms are stacked areas. */
#include "timeline.h"

#include "format.h"

#include <errno.h>
#include <math.h>

#define WIDTH 960
#define HEIGHT 540
#define LEFT 90.0
#define RIGHT 24.0
#define TOP 70.0
#define BOTTOM 80.0
#define GIB 1073741824.0

static const char *const colours[4] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759" };
static const struct {
    int phase;
    const char *fill;
} bands[] = {
    { LLMEM_PHASE_FORWARD, "#f4f4f4" },
    { LLMEM_PHASE_LOSS_BACKWARD, "#fff3e0" },
    { LLMEM_PHASE_BACKWARD, "#e8f0fb" },
    { LLMEM_PHASE_OPTIMIZER, "#eaf6e8" },
};

typedef struct frame {
    double plot_w, plot_h, ymax; /* ymax in bytes at the top of the plot */
    size_t n;
} frame;

static double x_of(const frame *f, double i)
{
    return LEFT + (f->n > 1 ? i / (double)(f->n - 1) : 0.5) * f->plot_w;
}

static double y_of(const frame *f, double bytes)
{
    return TOP + f->plot_h - bytes / f->ymax * f->plot_h;
}

/* Text with XML's special characters escaped. */
static void text(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*s, out);
        }
    }
}

/* A tick step of 1, 2 or 5 x 10^k GiB giving at most 8 ticks. */
static double tick_step(double top_gib)
{
    double step = pow(10.0, floor(log10(top_gib > 0 ? top_gib : 1.0)) - 1);
    static const double mult[] = { 1, 2, 5, 10, 20, 50 };
    for (size_t i = 0; i < sizeof mult / sizeof mult[0]; i++)
        if (top_gib / (step * mult[i]) <= 8)
            return step * mult[i];
    return step * 100;
}

static void phase_bands(FILE *out, const frame *f, const cli_timeline *t)
{
    size_t start = 0;
    for (size_t i = 1; i <= t->n; i++) {
        if (i < t->n && t->points[i].phase == t->points[start].phase)
            continue;
        const char *fill = "#ffffff";
        for (size_t b = 0; b < sizeof bands / sizeof bands[0]; b++)
            if (bands[b].phase == t->points[start].phase)
                fill = bands[b].fill;
        double x0 = start == 0 ? LEFT : (x_of(f, (double)start - 1) + x_of(f, (double)start)) / 2;
        double x1 = i == t->n ? LEFT + f->plot_w : (x_of(f, (double)i - 1) + x_of(f, (double)i)) / 2;
        fprintf(out, "<rect class=\"phase\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                     "fill=\"%s\"/>\n",
                x0, TOP, x1 - x0, f->plot_h, fill);
        /* centred on its band, but never past the plot's ends */
        double cx = (x0 + x1) / 2, margin = 45.0;
        cx = cx < LEFT + margin ? LEFT + margin : cx;
        cx = cx > LEFT + f->plot_w - margin ? LEFT + f->plot_w - margin : cx;
        fprintf(out, "<text class=\"phase-label\" x=\"%.2f\" y=\"%.2f\" font-size=\"12\" "
                     "text-anchor=\"middle\">%s</text>\n",
                cx, TOP - 8, llmem_phase_name(t->points[start].phase));
        start = i;
    }
}

static void axes(FILE *out, const frame *f)
{
    double step = tick_step(f->ymax / GIB);
    for (double v = 0; v <= f->ymax / GIB + 1e-9; v += step) {
        double y = y_of(f, v * GIB);
        fprintf(out, "<line class=\"tick\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
                     "stroke=\"#cccccc\" stroke-width=\"0.5\"/>\n",
                LEFT, y, LEFT + f->plot_w, y);
        fprintf(out, "<text class=\"tick-label\" x=\"%.2f\" y=\"%.2f\" font-size=\"11\" "
                     "text-anchor=\"end\">%g GiB</text>\n",
                LEFT - 6, y + 4, v);
    }
    fprintf(out, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#333333\"/>\n",
            LEFT, TOP, LEFT, TOP + f->plot_h);
    fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"12\" text-anchor=\"middle\">"
                 "progress through one training step</text>\n",
            LEFT + f->plot_w / 2, TOP + f->plot_h + 22);
}

/* Term k's area between the sum of the terms below it and that sum plus it. */
static void stacked(FILE *out, const frame *f, const cli_timeline *t, int k)
{
    fprintf(out, "<path id=\"term-%s\" fill=\"%s\" fill-opacity=\"0.85\" stroke=\"none\" d=\"",
            llmem_term_name(k + 1), colours[k]);
    for (size_t i = 0; i < t->n; i++) {
        uint64_t top = 0;
        for (int j = 0; j <= k; j++)
            top += t->points[i].term[j];
        fprintf(out, "%s%.2f,%.2f ", i ? "L" : "M", x_of(f, (double)i), y_of(f, (double)top));
    }
    for (size_t i = t->n; i-- > 0;) {
        uint64_t low = 0;
        for (int j = 0; j < k; j++)
            low += t->points[i].term[j];
        fprintf(out, "L%.2f,%.2f ", x_of(f, (double)i), y_of(f, (double)low));
    }
    fputs("Z\"/>\n", out);
}

static void legend(FILE *out)
{
    for (int k = 0; k < 4; k++) {
        double x = LEFT + 150.0 * k, y = HEIGHT - 30.0;
        fprintf(out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", x,
                y - 11, colours[k]);
        fprintf(out, "<text class=\"legend\" x=\"%.2f\" y=\"%.2f\" font-size=\"12\">%s</text>\n",
                x + 20, y, llmem_term_name(k + 1));
    }
}

int cli_timeline_svg(FILE *out, const cli_timeline *t, const char *title, uint64_t capacity)
{
    char bytes[CLI_NUMBER_CAP];
    if (t->n == 0)
        return EINVAL;
    frame f = { WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM, 0, t->n };
    uint64_t peak = cli_point_total(&t->points[t->peak]);
    double top = (double)(capacity > peak ? capacity : peak) * 1.08;
    double step = tick_step(top / GIB) * GIB;
    f.ymax = ceil(top / step) * step;
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
                 "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
            WIDTH, HEIGHT, WIDTH, HEIGHT);
    fputs("<title>", out);
    text(out, title);
    fputs("</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n", out);
    fputs("<text x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"bold\">", out);
    text(out, title);
    fputs("</text>\n", out);
    phase_bands(out, &f, t);
    axes(out, &f);
    for (int k = 0; k < 4; k++)
        stacked(out, &f, t, k);
    double px = x_of(&f, (double)t->peak), py = y_of(&f, (double)peak);
    cli_format_bytes(peak, bytes, sizeof bytes);
    fprintf(out, "<circle class=\"peak\" cx=\"%.2f\" cy=\"%.2f\" r=\"4\" fill=\"#000000\"/>\n",
            px, py);
    fprintf(out, "<text class=\"peak-label\" x=\"%.2f\" y=\"%.2f\" font-size=\"12\" "
                 "text-anchor=\"%s\">peak %s (%s)</text>\n",
            px, py - 10, px > LEFT + f.plot_w * 0.6 ? "end" : "start", bytes,
            llmem_phase_name(t->points[t->peak].phase));
    if (capacity > 0) {
        double cy = y_of(&f, (double)capacity);
        cli_format_bytes(capacity, bytes, sizeof bytes);
        fprintf(out, "<line class=\"capacity\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
                     "stroke=\"#000000\" stroke-dasharray=\"6,4\"/>\n",
                LEFT, cy, LEFT + f.plot_w, cy);
        fprintf(out, "<text class=\"capacity-label\" x=\"%.2f\" y=\"%.2f\" font-size=\"11\" "
                     "text-anchor=\"end\">GPU %s</text>\n",
                LEFT + f.plot_w - 4, cy - 5, bytes);
    }
    legend(out);
    fputs("</svg>\n", out);
    return ferror(out) ? EIO : 0;
}
