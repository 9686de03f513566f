//! Small inline SVG charts (line charts with axes, ticks, legend and native tooltips), so the
//! HTML report needs no script and no external resource.

use std::fmt::Write as _;

use bench_core::Interval;

use crate::views::common::esc;

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub points: Vec<(f64, f64)>,
    /// Tooltip per point (same length as `points`), e.g. the benchmark label.
    pub notes: Vec<String>,
    /// Draw the points only, not joined (probes, which are not on a rate curve).
    pub markers_only: bool,
    /// Dashed line (e.g. the p50 of a run overlaid on another's).
    pub dashed: bool,
    /// The 95% interval of each point, drawn as an error bar (same length as `points`, or
    /// empty: no bars).
    pub bars: Vec<Option<Interval>>,
    /// Drawn faded, behind what matters (the plan's sweeps under their Pareto front).
    pub faded: bool,
    /// The markers' radius, pixels, when not the default (3 on a line, 5 for markers only).
    pub radius: Option<f64>,
}

impl Series {
    /// A joined line of `points`.
    pub fn line(name: impl Into<String>, color: &'static str, points: Vec<(f64, f64)>) -> Self {
        Self {
            name: name.into(),
            color,
            points,
            notes: Vec::new(),
            markers_only: false,
            dashed: false,
            bars: Vec::new(),
            faded: false,
            radius: None,
        }
    }
}

/// A chart's size in pixels (its text is sized in the same pixels: shown at this width, the
/// chart's text is the page's size) and whether it draws its own legend.
#[derive(Debug, Clone, Copy)]
pub struct Canvas {
    pub w: f64,
    pub h: f64,
    /// The legend between the title and the plot; without it the caller lays one out (the
    /// plan page's, in HTML, where entries cannot overlap).
    pub legend: bool,
}

impl Canvas {
    /// The sweep page's charts: 560 x 330, their legend inside.
    pub const DEFAULT: Canvas = Canvas {
        w: 560.0,
        h: 330.0,
        legend: true,
    };
}

/// A reference line across the plot: vertical at an x value, or horizontal at a y value.
#[derive(Debug, Clone)]
pub struct Mark {
    /// Vertical (at x) or horizontal (at y).
    pub vertical: bool,
    pub value: f64,
    pub label: String,
    /// CSS class (`slo`, `knee`, `capacity`): tests look for it, the style colours it.
    pub class: &'static str,
}

/// A chart's axes.
#[derive(Debug, Clone)]
pub struct Axes {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Custom x ticks (value, label); `None` picks round numbers.
    pub x_ticks: Option<Vec<(f64, String)>>,
    /// Reference lines (SLO bounds, knee, capacity).
    pub marks: Vec<Mark>,
}

/// Colors of successive series (colour-blind friendly).
pub const PALETTE: [&str; 6] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
];

const L: f64 = 66.0;
const R: f64 = 24.0;
const T: f64 = 56.0;
const B: f64 = 50.0;

/// Round tick values covering `[lo, hi]` (about five).
fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::EPSILON);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(mag * 10.0);
    let mut v = (lo / step).floor() * step;
    let mut out = Vec::new();
    while v <= hi + step * 1e-9 && out.len() < 20 {
        out.push(v);
        v += step;
    }
    out
}

fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The plot's ranges (data units) and its y ticks, and the mapping to SVG coordinates.
struct Frame {
    w: f64,
    h: f64,
    x0: f64,
    x1: f64,
    ybot: f64,
    ytop: f64,
    y_ticks: Vec<f64>,
}

impl Frame {
    /// Ranges covering the points `pts` (not empty), the custom x ticks and the marks, padded
    /// in x unless the ticks are given, y from 0 (or below) to a round tick.
    fn new(axes: &Axes, pts: &[(f64, f64)], c: &Canvas) -> Self {
        let (mut x0, mut x1) = pts
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.0), b.max(p.0))
            });
        let mut y1 = pts.iter().fold(f64::NEG_INFINITY, |a, p| a.max(p.1));
        let y0 = 0.0f64.min(pts.iter().fold(f64::INFINITY, |a, p| a.min(p.1)));
        if let Some(t) = &axes.x_ticks {
            for (v, _) in t {
                x0 = x0.min(*v);
                x1 = x1.max(*v);
            }
        }
        for m in axes.marks.iter().filter(|m| m.value.is_finite()) {
            if m.vertical {
                x0 = x0.min(m.value);
                x1 = x1.max(m.value);
            } else {
                y1 = y1.max(m.value);
            }
        }
        if x1 - x0 < 1e-12 {
            x0 -= 0.5_f64.max(x0.abs() * 0.1);
            x1 += 0.5_f64.max(x1.abs() * 0.1);
        } else if axes.x_ticks.is_none() {
            let pad = (x1 - x0) * 0.03;
            x0 = (x0 - pad).max(0.0_f64.min(x0));
            x1 += pad;
        }
        let y_ticks = nice_ticks(y0, if y1 > y0 { y1 } else { y0 + 1.0 });
        let ytop = y_ticks.last().copied().unwrap_or(1.0).max(y1);
        let ybot = y_ticks.first().copied().unwrap_or(0.0).min(y0);
        Self {
            w: c.w,
            h: c.h,
            x0,
            x1,
            ybot,
            ytop,
            y_ticks,
        }
    }

    fn px(&self, x: f64) -> f64 {
        L + (x - self.x0) / (self.x1 - self.x0) * (self.w - L - R)
    }

    fn py(&self, y: f64) -> f64 {
        self.h - B - (y - self.ybot) / (self.ytop - self.ybot).max(f64::EPSILON) * (self.h - T - B)
    }
}

/// Renders a line chart of the default size with its legend. Empty series are skipped; with no
/// points at all the chart says so.
pub(crate) fn line_chart(axes: &Axes, series: &[Series]) -> String {
    chart(axes, series, &Canvas::DEFAULT)
}

/// [`line_chart`] on `canvas`.
pub fn chart(axes: &Axes, series: &[Series], canvas: &Canvas) -> String {
    let (w, h) = (canvas.w, canvas.h);
    // The frame covers the points and the ends of their error bars.
    let pts: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| {
            s.points.iter().enumerate().flat_map(|(j, &(x, y))| {
                let bar = bar_of(s, j, y);
                std::iter::once((x, y))
                    .chain(bar.into_iter().flat_map(move |b| [(x, b.low), (x, b.high)]))
            })
        })
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"chart\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\">",
        esc(&axes.title)
    );
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"18\" text-anchor=\"middle\" class=\"title\">{}</text>",
        w / 2.0,
        esc(&axes.title)
    );
    if pts.is_empty() {
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"empty\">no data</text></svg>",
            w / 2.0,
            h / 2.0
        );
        return s;
    }
    let f = Frame::new(axes, &pts, canvas);
    draw_axes(&mut s, axes, &f);
    draw_marks(&mut s, &axes.marks, &f);
    // Lines, points with tooltips; the legend sits between the title and the plot.
    let mut legend = (L, 34.0);
    for se in series.iter() {
        let good: Vec<(usize, (f64, f64))> = se
            .points
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, (x, y))| x.is_finite() && y.is_finite())
            .collect();
        if good.is_empty() {
            continue;
        }
        draw_series(&mut s, se, &good, &f);
        // Probes share their curve's colour; the caption under the charts explains them.
        if !se.markers_only && canvas.legend {
            draw_legend_item(&mut s, se, &mut legend, w);
        }
    }
    s.push_str("</svg>");
    s
}

/// Draws the grid with the y ticks, the x ticks, both axes and their labels.
fn draw_axes(s: &mut String, axes: &Axes, f: &Frame) {
    for v in &f.y_ticks {
        let y = f.py(*v);
        let _ = write!(
            s,
            "<line x1=\"{L}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"grid\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" class=\"tick\">{}</text>",
            f.w - R,
            L - 6.0,
            y + 4.0,
            fmt_tick(*v)
        );
    }
    let xt: Vec<(f64, String)> = match &axes.x_ticks {
        Some(t) => t.clone(),
        None => nice_ticks(f.x0, f.x1)
            .into_iter()
            .filter(|v| *v >= f.x0 - 1e-9 && *v <= f.x1 + 1e-9)
            .map(|v| (v, fmt_tick(v)))
            .collect(),
    };
    for (v, label) in &xt {
        let x = f.px(*v);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{}\" y2=\"{}\" class=\"axis\"/><text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\" class=\"tick\">{}</text>",
            f.h - B,
            f.h - B + 4.0,
            f.h - B + 16.0,
            esc(label)
        );
    }
    let _ = write!(
        s,
        "<line x1=\"{L}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" class=\"axis\"/><line x1=\"{L}\" x2=\"{L}\" y1=\"{T}\" y2=\"{}\" class=\"axis\"/>",
        f.w - R,
        f.h - B,
        f.h - B,
        f.h - B
    );
    let _ = write!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"label\">{}</text><text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\" class=\"label\">{}</text>",
        L + (f.w - L - R) / 2.0,
        f.h - 10.0,
        esc(&axes.x_label),
        T + (f.h - T - B) / 2.0,
        esc(&axes.y_label)
    );
}

/// Draws one series' line (unless markers only) and its points, `good` being its finite
/// points with their indices (for the tooltips).
fn draw_series(s: &mut String, se: &Series, good: &[(usize, (f64, f64))], f: &Frame) {
    if se.faded {
        s.push_str("<g class=\"faded\" opacity=\"0.3\">");
    }
    if !se.markers_only {
        let path: Vec<String> = good
            .iter()
            .map(|(_, (x, y))| format!("{:.1},{:.1}", f.px(*x), f.py(*y)))
            .collect();
        let _ = write!(
            s,
            "<polyline class=\"curve\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>",
            path.join(" "),
            se.color,
            if se.dashed { " stroke-dasharray=\"5 3\"" } else { "" }
        );
    }
    for (j, (x, y)) in good {
        if let Some(b) = bar_of(se, *j, *y) {
            let note = se.notes.get(*j).map(String::as_str).unwrap_or("");
            draw_bar(s, se, f, *x, b, note);
        }
    }
    for (j, (x, y)) in good {
        let note = se.notes.get(*j).map(String::as_str).unwrap_or("");
        let (class, r) = if se.markers_only {
            ("probe", se.radius.unwrap_or(5.0))
        } else {
            ("point", se.radius.unwrap_or(3.0))
        };
        let _ = write!(
            s,
            "<circle class=\"{class}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r}\" fill=\"{}\"{}><title>{}: {} ({})</title></circle>",
            f.px(*x),
            f.py(*y),
            se.color,
            if se.markers_only { " fill-opacity=\"0.35\" stroke-width=\"1.5\"" } else { "" },
            esc(&se.name),
            fmt_tick(*y),
            esc(note)
        );
        if se.markers_only {
            let ring = if se.radius.is_some() { 2.5 } else { 1.5 };
            let _ = write!(s, "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{ring}\"/>", f.px(*x), f.py(*y), se.color);
        }
    }
    if se.faded {
        s.push_str("</g>");
    }
}

/// The error bar of point `j` (value `y`) of `se`; cut at 0 under a point at or above 0 (the
/// charted figures are never negative: an interval saved by an older version could be).
fn bar_of(se: &Series, j: usize, y: f64) -> Option<Interval> {
    let b = se.bars.get(j).copied().flatten()?;
    Some(Interval {
        low: if y >= 0.0 { b.low.max(0.0) } else { b.low },
        high: b.high,
    })
}

/// Half the width of an error bar's caps, pixels.
const CAP: f64 = 4.0;

/// Draws the 95% interval `b` of a point at `x` of `se` as a vertical bar with caps.
fn draw_bar(s: &mut String, se: &Series, f: &Frame, x: f64, b: Interval, note: &str) {
    if !(b.low.is_finite() && b.high.is_finite()) {
        return;
    }
    let (x, top, bottom) = (f.px(x), f.py(b.high), f.py(b.low));
    let _ = write!(
        s,
        "<g class=\"errbar\" stroke=\"{}\" stroke-width=\"1.5\"><line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top:.1}\" y2=\"{bottom:.1}\"/><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{top:.1}\" y2=\"{top:.1}\"/><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{bottom:.1}\" y2=\"{bottom:.1}\"/><title>{} 95% interval: {} to {} ({})</title></g>",
        se.color,
        x - CAP,
        x + CAP,
        x - CAP,
        x + CAP,
        esc(&se.name),
        fmt_tick(b.low),
        fmt_tick(b.high),
        esc(note)
    );
}

/// Draws the legend item of `se` at `(x, y)` (wrapping to the next row when the item would
/// pass the right edge), moving the position past it.
fn draw_legend_item(s: &mut String, se: &Series, (lx, ly): &mut (f64, f64), w: f64) {
    let item_w = 24.0 + 6.6 * se.name.chars().count() as f64;
    if *lx + item_w > w - R && *lx > L {
        *lx = L;
        *ly += 12.0;
    }
    let _ = write!(
        s,
        "<rect x=\"{lx:.1}\" y=\"{:.1}\" width=\"10\" height=\"3\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"legend\">{}</text>",
        *ly - 4.0,
        se.color,
        *lx + 14.0,
        ly,
        esc(&se.name)
    );
    *lx += item_w;
}

/// Draws the reference lines, each with its label at the end.
fn draw_marks(s: &mut String, marks: &[Mark], f: &Frame) {
    let (px, py) = (|x| f.px(x), |y| f.py(y));
    let (x0, x1, y0, y1) = (f.x0, f.x1, f.ybot, f.ytop);
    for (i, m) in marks.iter().filter(|m| m.value.is_finite()).enumerate() {
        let (a, b, c, d, tx, ty, anchor) = if m.vertical {
            let x = px(m.value);
            let top = py(y1);
            let ty = top + 10.0 + 11.0 * (i % 3) as f64;
            // Labels near the right edge go to the left of their line, so they stay inside.
            let (tx, anchor) = if x > f.w * 0.7 {
                (x - 3.0, "end")
            } else {
                (x + 3.0, "start")
            };
            (x, x, top, py(y0), tx, ty, anchor)
        } else {
            let y = py(m.value);
            (px(x0), px(x1), y, y, px(x1) - 2.0, y - 3.0, "end")
        };
        let _ = write!(
            s,
            "<g class=\"mark {}\"><line x1=\"{a:.1}\" x2=\"{b:.1}\" y1=\"{c:.1}\" y2=\"{d:.1}\" stroke-dasharray=\"6 4\"/><text x=\"{tx:.1}\" y=\"{ty:.1}\" text-anchor=\"{anchor}\">{}</text><title>{}</title></g>",
            m.class,
            esc(&m.label),
            esc(&m.label)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        let t = nice_ticks(0.0, 97.0);
        assert_eq!(t.first().copied(), Some(0.0));
        assert!(t.last().copied().unwrap_or(0.0) >= 97.0 - 1e-9 || t.len() >= 5);
        assert!(nice_ticks(0.0, 0.0).len() <= 20);
        assert!(nice_ticks(3.0, 3.0000001).len() <= 20);
    }

    #[test]
    fn charts_survive_degenerate_data() {
        let axes = Axes {
            title: "t<&>".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_ticks: None,
            marks: vec![Mark {
                vertical: false,
                value: f64::NAN,
                label: "nan".into(),
                class: "slo",
            }],
        };
        let one = Series::line("a", PALETTE[0], vec![(1.0, 2.0), (f64::NAN, 1.0)]);
        let svg = line_chart(&axes, &[one]);
        assert!(svg.contains("<circle") && svg.contains("t&lt;&amp;&gt;"));
        assert!(!svg.contains("NaN"));
        assert!(line_chart(&axes, &[]).contains("no data"));
    }

    /// An error bar sits on its point's x, from its interval's high to its low, with the frame
    /// stretched to hold it: x 0..10 on 66..536 px, y 0..100 on 280..56 px (ticks of 20),
    /// so the point (5, 50) is at (301, 168) and its interval 40..60 spans 190.4..145.6.
    #[test]
    fn error_bars_are_drawn_at_their_points_interval() {
        let axes = Axes {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_ticks: Some(vec![(0.0, "0".into()), (10.0, "10".into())]),
            marks: Vec::new(),
        };
        let mut se = Series::line("p50", PALETTE[0], vec![(5.0, 50.0), (10.0, 90.0)]);
        se.notes = vec!["a".into(), "b".into()];
        se.bars = vec![
            Some(Interval {
                low: 40.0,
                high: 60.0,
            }),
            Some(Interval {
                low: 80.0,
                high: 100.0,
            }),
        ];
        let svg = line_chart(&axes, &[se]);
        assert!(
            svg.contains("<circle class=\"point\" cx=\"301.0\" cy=\"168.0\""),
            "{svg}"
        );
        assert!(
            svg.contains("<g class=\"errbar\" stroke=\"#0072b2\" stroke-width=\"1.5\"><line x1=\"301.0\" x2=\"301.0\" y1=\"145.6\" y2=\"190.4\"/><line x1=\"297.0\" x2=\"305.0\" y1=\"145.6\" y2=\"145.6\"/><line x1=\"297.0\" x2=\"305.0\" y1=\"190.4\" y2=\"190.4\"/><title>p50 95% interval: 40 to 60 (a)</title></g>"),
            "{svg}"
        );
        // The top bar's high end (100) is the top of the frame, 56 px.
        assert!(svg.contains("<line x1=\"536.0\" x2=\"536.0\" y1=\"56.0\" y2=\"100.8\"/>"));
        // Bars come before the points, which stay on top.
        assert!(svg.find("errbar").expect("bar") < svg.find("<circle").expect("point"));
    }
}
