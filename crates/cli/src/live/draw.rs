//! Draws the [`Board`] on one screen: the running benchmark with its TTFT and ITL sparklines,
//! the sweep so far (one row per finished benchmark: offered rate against throughput and
//! latency, with the server's and the GPUs' figures), the answer (capacity, knee, SLO-limited
//! rate) and the server's gauges as last scraped, then the notes and the keys.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row as TableRow, Sparkline, Table};
use ratatui::Frame;

use super::board::{Board, Row};

/// The whole screen.
pub fn frame(f: &mut Frame<'_>, b: &Board) {
    let [running, sparks, sweep, answer, notes] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Length(4),
        Constraint::Min(5),
        Constraint::Length(4),
        Constraint::Length(4),
    ])
    .areas(f.area());
    f.render_widget(running_block(b), running);
    sparklines(f, b, sparks);
    f.render_widget(sweep_table(b), sweep);
    f.render_widget(answer_block(b), answer);
    f.render_widget(notes_block(b), notes);
}

fn ms(seconds: Option<f64>) -> String {
    seconds.map_or("-".into(), |s| format!("{:.1} ms", s * 1e3))
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The running benchmark: which, its phase and time, its rate and counts.
fn running_block(b: &Board) -> Paragraph<'static> {
    let title = format!(" {} (live) ", b.title);
    let block = Block::default().borders(Borders::ALL).title(title);
    let Some(p) = &b.progress else {
        return Paragraph::new("starting…").block(block);
    };
    let time = match p.remaining {
        Some(r) => format!(
            "{:.1}s elapsed, {:.1}s left",
            p.elapsed.as_secs_f64(),
            r.as_secs_f64()
        ),
        None => format!("{:.1}s elapsed", p.elapsed.as_secs_f64()),
    };
    let role = b.role.map_or(String::new(), |r| format!("  ({r})"));
    let head = Line::from(vec![
        Span::raw(format!("[{}/{}] ", p.index + 1, p.total)),
        Span::styled(
            p.label.clone(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!("{role}  {}  {time}", p.phase.name())),
    ]);
    let queued = if p.queued > 0 {
        format!(" (+{} queued)", p.queued)
    } else {
        String::new()
    };
    let counts = Line::from(format!(
        "{:.2} req/s   in flight {}{queued}   completed {}   incomplete {}   errored {}",
        p.completed_rate, p.in_flight, p.completed, p.incomplete, p.errored
    ));
    Paragraph::new(vec![head, counts]).block(block)
}

/// The mean TTFT and ITL of the running benchmark at each snapshot, side by side.
fn sparklines(f: &mut Frame<'_>, b: &Board, area: Rect) {
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
    let now = b.progress.as_ref();
    let spark = |title: String, data: &std::collections::VecDeque<u64>, width: u16, color| {
        let shown = data
            .len()
            .saturating_sub(usize::from(width.saturating_sub(2)));
        let points: Vec<u64> = data.iter().skip(shown).copied().collect();
        Sparkline::default()
            .block(Block::default().borders(Borders::ALL).title(title))
            .data(points)
            .style(Style::default().fg(color))
    };
    let ttft = format!(" TTFT mean {} ", ms(now.and_then(|p| p.mean_ttft)));
    let itl = format!(" ITL mean {} ", ms(now.and_then(|p| p.mean_itl)));
    f.render_widget(spark(ttft, &b.ttft_us, left.width, Color::Cyan), left);
    f.render_widget(spark(itl, &b.itl_us, right.width, Color::Yellow), right);
}

fn table_row(r: &Row) -> TableRow<'static> {
    TableRow::new(vec![
        r.label.clone(),
        opt(r.offered, 2),
        format!("{:.2}", r.requests_per_s),
        format!("{:.1}", r.output_tokens_per_s),
        format!("{:.1}", r.ttft_p50_ms),
        format!("{:.2}", r.itl_p50_ms),
        opt(r.e2el_p99_ms, 0),
        format!("{}/{}", r.completed, r.errored),
        opt(r.running, 1),
        opt(r.waiting, 1),
        opt(r.kv_usage.map(|k| k * 100.0), 0),
        opt(r.gpu_power_w, 0),
    ])
}

/// The finished benchmarks, the latest at the bottom (the oldest scroll off the top).
fn sweep_table(b: &Board) -> Table<'static> {
    let header = TableRow::new(vec![
        "benchmark",
        "offered/s",
        "req/s",
        "out tok/s",
        "TTFT p50",
        "ITL p50",
        "E2E p99",
        "ok/err",
        "running",
        "waiting",
        "KV %",
        "GPU W",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    let widths = [
        Constraint::Length(18),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(5),
        Constraint::Length(6),
    ];
    let title = format!(
        " Sweep so far: {} finished (latencies in ms; server and GPU: means over each benchmark) ",
        b.rows.len()
    );
    Table::new(b.rows.iter().map(table_row), widths)
        .header(header)
        .block(Block::default().borders(Borders::ALL).title(title))
}

/// The sweep's answer once found, and the server's gauges as last scraped.
fn answer_block(b: &Board) -> Paragraph<'static> {
    let answer = match &b.capacity {
        Some(c) => {
            let bound = if c.max_is_lower_bound { ">= " } else { "" };
            let mut s = format!(
                "capacity {bound}{:.2} req/s ({:.1} output tok/s, {})   knee {}",
                c.max_requests_per_s,
                c.max_output_tokens_per_s,
                c.max_measured_by,
                c.knee_requests_per_s
                    .map_or("not found".into(), |k| format!("{k:.2} req/s"))
            );
            if c.slo.is_some() {
                s.push_str(&format!(
                    "   SLO-limited {}",
                    c.slo_max_requests_per_s
                        .map_or("none met".into(), |r| format!("{r:.2} req/s"))
                ));
            }
            Line::from(Span::styled(s, Style::default().fg(Color::Green)))
        }
        None => Line::from("capacity: stated once the sweep's benchmarks are done"),
    };
    let server = match &b.gauges {
        Some(g) => Line::from(format!(
            "server now: running {}  waiting {}  KV {}%   GPU power {} W",
            opt(g.running, 0),
            opt(g.waiting, 0),
            opt(g.kv_usage.map(|k| k * 100.0), 1),
            opt(g.gpu_power_w, 0)
        )),
        None => Line::from("server: no metrics scraped yet"),
    };
    Paragraph::new(vec![answer, server])
        .block(Block::default().borders(Borders::ALL).title(" Answer "))
}

/// The last notes and the keys.
fn notes_block(b: &Board) -> Paragraph<'static> {
    let keys = if b.over {
        "run finished: q to leave"
    } else if b.stopping {
        "stopping: closing the current benchmark and writing the report (q again exits at once)"
    } else {
        "q: stop (as Ctrl-C: the running benchmark is closed, the finished ones are kept)"
    };
    let mut lines: Vec<Line<'static>> = b
        .notes
        .iter()
        .rev()
        .take(1)
        .rev()
        .map(|n| Line::from(n.clone()))
        .collect();
    lines.push(Line::from(Span::styled(
        keys,
        Style::default().add_modifier(Modifier::BOLD),
    )));
    Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" Notes "))
}
