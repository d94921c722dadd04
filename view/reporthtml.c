/* A report as HTML with SVG charts (view/reporthtml.h). */
#include "view/reporthtml.h"

#include <math.h>
#include <string.h>

static const char *const COLORS[] = {"#2f5bd3", "#c2410c", "#15803d", "#a16207",
                                     "#7c3aed", "#0e7490", "#be185d", "#4d7c0f",
                                     "#94a3b8"};

/* Text for HTML: &, <, >, " escaped. */
static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++)
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}

static const char *str_of(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static double num(const json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

/* A duration for people: 45 s, 12 min, 3.5 h, 2.1 d. */
static void span(FILE *f, double s)
{
    if (s < 120)
        fprintf(f, "%.0f s", s);
    else if (s < 7200)
        fprintf(f, "%.0f min", s / 60);
    else if (s < 172800)
        fprintf(f, "%.1f h", s / 3600);
    else
        fprintf(f, "%.1f d", s / 86400);
}

static void empty(FILE *f, const char *what)
{
    fprintf(f, "<p class=\"none\">%s</p>\n", what);
}

/* Incidents per scenario per day: a bar per day, stacked by scenario. */
static void chart_days(FILE *f, const json_t *d)
{
    const json_t *days = json_object_get(d, "days"), *rows = json_object_get(d, "counts");
    size_t nd = json_array_size(days), ns = json_array_size(rows);
    double max = 1, W = 900, H = 240, L = 40, B = 40;

    if (!nd) {
        empty(f, "No incident in the period.");
        return;
    }
    for (size_t x = 0; x < nd; x++) {
        double sum = 0;
        for (size_t s = 0; s < ns; s++)
            sum += json_number_value(json_array_get(json_array_get(rows, s), x));
        max = sum > max ? sum : max;
    }
    double bw = (W - L - 10) / (double)nd;
    fprintf(f, "<svg class=\"chart\" id=\"chart-days\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n", W, H + B);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" class=\"axis\"/>\n", L, H, W, H);
    fprintf(f, "<text x=\"%.0f\" y=\"12\" class=\"lbl\">%.0f</text>\n", L - 30, max);
    for (size_t x = 0; x < nd; x++) {
        double y = H;
        for (size_t s = 0; s < ns; s++) {
            double c = json_number_value(json_array_get(json_array_get(rows, s), x));
            double h = c / max * (H - 20);
            if (c <= 0)
                continue;
            y -= h;
            fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                       "fill=\"%s\"><title>", L + x * bw + 2, y, bw - 4 > 1 ? bw - 4 : 1, h,
                    COLORS[s < 9 ? s : 8]);
            esc(f, json_string_value(json_array_get(days, x)));
            fputs(": ", f);
            esc(f, json_string_value(json_array_get(json_object_get(d, "scenarios"), s)));
            fprintf(f, " %.0f</title></rect>\n", c);
        }
        if (nd <= 16 || x % (nd / 8 + 1) == 0) {
            fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" class=\"lbl\">", L + x * bw + 2, H + 16);
            esc(f, json_string_value(json_array_get(days, x)) + 5);
            fputs("</text>\n", f);
        }
    }
    fputs("</svg>\n<div class=\"legend\">", f);
    for (size_t s = 0; s < ns; s++) {
        fprintf(f, "<span><i style=\"background:%s\"></i>", COLORS[s < 9 ? s : 8]);
        esc(f, json_string_value(json_array_get(json_object_get(d, "scenarios"), s)));
        fputs("</span>", f);
    }
    fputs("</div>\n", f);
}

/* Horizontal bars: one row per item, label at the left, value at the end;
 * with a second series (p90 beside the median) drawn lighter behind. */
static void chart_hbars(FILE *f, const char *id, const json_t *list,
                        const char *label, const char *value, const char *back,
                        int seconds, const char *unit)
{
    size_t n = json_array_size(list);
    double max = 0, W = 900, L = 260, row = 24;
    json_t *e;
    size_t i;

    if (!n) {
        empty(f, "Nothing in the period.");
        return;
    }
    json_array_foreach(list, i, e) {
        double v = num(e, back ? back : value);
        max = v > max ? v : max;
    }
    max = max > 0 ? max : 1;
    fprintf(f, "<svg class=\"chart\" id=\"%s\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n", id,
            W, n * row + 10);
    json_array_foreach(list, i, e) {
        double y = 5 + i * row, v = num(e, value);
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"lbl\" text-anchor=\"end\">", L - 8, y + 15);
        esc(f, str_of(e, label));
        fputs("</text>\n", f);
        if (back)
            fprintf(f, "<rect class=\"bar back\" x=\"%.0f\" y=\"%.0f\" width=\"%.1f\" height=\"16\"/>\n",
                    L, y + 2, num(e, back) / max * (W - L - 120));
        fprintf(f, "<rect class=\"bar\" x=\"%.0f\" y=\"%.0f\" width=\"%.1f\" height=\"16\" "
                   "fill=\"%s\"/>\n<text x=\"%.1f\" y=\"%.0f\" class=\"val\">",
                L, y + 2, v / max * (W - L - 120), COLORS[0],
                L + (back ? num(e, back) : v) / max * (W - L - 120) + 6, y + 15);
        if (seconds) {
            span(f, v);
            if (back) {
                fputs(" / ", f);
                span(f, num(e, back));
            }
        } else {
            fprintf(f, "%.*f%s", v == floor(v) ? 0 : 1, v, unit ? unit : "");
        }
        fputs("</text>\n", f);
    }
    fputs("</svg>\n", f);
}

/* Teams by hour of day, darker where demand peaked more often. */
static void chart_heat(FILE *f, const json_t *p)
{
    const json_t *teams = json_object_get(p, "teams"), *rows = json_object_get(p, "hours");
    size_t n = json_array_size(teams);
    double max = 1, L = 160, cw = 30, ch = 24;

    if (!n) {
        empty(f, "No capacity.peak_demand incident in the period.");
        return;
    }
    for (size_t t = 0; t < n; t++)
        for (int h = 0; h < 24; h++) {
            double v = json_number_value(json_array_get(json_array_get(rows, t), h));
            max = v > max ? v : max;
        }
    fprintf(f, "<svg class=\"chart\" id=\"chart-peak\" viewBox=\"0 0 %.0f %.0f\" role=\"img\">\n",
            L + 24 * cw + 10, n * ch + 30);
    for (int h = 0; h < 24; h += 3)
        fprintf(f, "<text x=\"%.0f\" y=\"12\" class=\"lbl\">%02d:00</text>\n", L + h * cw, h);
    for (size_t t = 0; t < n; t++) {
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" class=\"lbl\" text-anchor=\"end\">", L - 8,
                20 + t * ch + 16);
        esc(f, json_string_value(json_array_get(teams, t)));
        fputs("</text>\n", f);
        for (int h = 0; h < 24; h++) {
            double v = json_number_value(json_array_get(json_array_get(rows, t), h));
            fprintf(f, "<rect class=\"cell\" x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
                       "fill=\"rgba(194,65,12,%.2f)\"><title>%02d:00 %.0f</title></rect>\n",
                    L + h * cw, 20 + t * ch, cw - 2, ch - 2, v > 0 ? 0.15 + 0.85 * v / max : 0.04,
                    h, v);
        }
    }
    fputs("</svg>\n", f);
}

static void chart_actions(FILE *f, const json_t *a)
{
    static const char *const order[] = {"requested", "run", "approved", "denied", "refused",
                                        "done", "failed", "proposed", "waiting"};
    json_t *list = json_array();

    for (size_t i = 0; i < sizeof order / sizeof *order; i++)
        json_array_append_new(list, json_pack("{s:s, s:f}", "what", order[i], "n",
                                              num(a, order[i])));
    chart_hbars(f, "chart-actions", list, "what", "n", NULL, 0, NULL);
    json_decref(list);
}

static const char CSS[] =
    "body{font:14px/1.45 system-ui,sans-serif;color:#1d2330;margin:24px auto;max-width:1000px;padding:0 16px}"
    "h1{font-size:22px;margin:0}h2{font-size:16px;margin:28px 0 8px}.sub{color:#667085}"
    ".cards{display:flex;gap:12px;margin:16px 0}.card{border:1px solid #d9dde5;border-radius:8px;padding:10px 14px}"
    ".card b{display:block;font-size:22px}.chart{width:100%;height:auto}.axis{stroke:#98a2b3}"
    ".lbl{font-size:11px;fill:#475467}.val{font-size:11px;fill:#1d2330}.bar.back{fill:#c7d2fe}"
    ".legend span{margin-right:12px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}"
    ".none{color:#667085}table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #d9dde5;text-align:left}";

void vw_report_html(FILE *f, const json_t *st)
{
    const json_t *nodes = json_object_get(st, "nodes"), *sh = json_object_get(st, "shadow");
    const json_t *acts = json_object_get(st, "actions"), *e;
    double cost = 0;
    size_t i;

    json_array_foreach(json_object_get(st, "idle"), i, e)
        cost += num(e, "cost_usd");
    fprintf(f, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<title>cascade report</title><style>%s</style></head><body>\n", CSS);
    fputs("<h1>cascade report</h1><p class=\"sub\">", f);
    esc(f, str_of(st, "since"));
    fputs(" to ", f);
    esc(f, str_of(st, "until"));
    fprintf(f, "</p>\n<div class=\"cards\"><div class=\"card\"><b id=\"n-incidents\">%.0f</b>incidents</div>"
               "<div class=\"card\"><b>%.0f</b>actions run</div><div class=\"card\"><b>%.0f</b>approved by people</div>"
               "<div class=\"card\"><b>$%.0f</b>idle GPUs cost</div>",
            num(st, "incidents"), num(acts, "run"), num(acts, "approved"), cost);
    if (json_is_object(sh))
        fprintf(f, "<div class=\"card\"><b id=\"shadow\">%.0f%%</b>shadow proposals matched</div>",
                100 * num(sh, "match_rate"));
    fputs("</div>\n<h2>Incidents per day, by scenario</h2>\n", f);
    chart_days(f, json_object_get(st, "per_day"));
    fputs("<h2>Time to detect per scenario (median, p90 behind)</h2>\n", f);
    chart_hbars(f, "chart-ttd", json_object_get(st, "ttd"), "scenario", "median_s", "p90_s", 1, NULL);
    fputs("<h2>Time to resolve per scenario (median, p90 behind)</h2>\n", f);
    chart_hbars(f, "chart-ttr", json_object_get(st, "ttr"), "scenario", "median_s", "p90_s", 1, NULL);
    fputs("<h2>The nodes that fail most</h2>\n", f);
    chart_hbars(f, "chart-nodes", nodes, "node", "incidents", NULL, 0, NULL);
    fputs("<table id=\"lemons\"><tr><th>node</th><th>incidents</th><th>mean time between failures</th><th></th></tr>\n", f);
    json_array_foreach(nodes, i, e) {
        fputs("<tr><td>", f);
        esc(f, str_of(e, "node"));
        fprintf(f, "</td><td>%.0f</td><td>", num(e, "incidents"));
        if (json_is_number(json_object_get(e, "mtbf_h")))
            span(f, 3600 * num(e, "mtbf_h"));
        fprintf(f, "</td><td>%s</td></tr>\n",
                json_is_true(json_object_get(e, "lemon")) ? "lemon candidate" : "");
    }
    fputs("</table>\n<h2>Idle GPU-hours and their cost, by team</h2>\n", f);
    chart_hbars(f, "chart-idle", json_object_get(st, "idle"), "team", "cost_usd", NULL, 0, " USD");
    fputs("<h2>Peak-demand hours, by team (UTC)</h2>\n", f);
    chart_heat(f, json_object_get(st, "peak"));
    fputs("<h2>Actions</h2>\n", f);
    chart_actions(f, acts);
    fputs("</body></html>\n", f);
}
