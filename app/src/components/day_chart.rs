//! A small bar chart of one value per day (stacked when there are several), drawn as SVG by this code.

use chrono::NaiveDate;
use leptos::prelude::*;

use crate::format::{day, grouped, svg_number as n};

/// Drawing area, in the SVG's own units; the SVG scales to its container.
const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 190.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 6.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 28.0;

/// One stacked part of every bar: its name (for the legend), its CSS class and a value per day.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: &'static str,
    pub class: &'static str,
    pub values: Vec<u64>,
}

/// A bar of one day: one rectangle per series, bottom up, in drawing units.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub x: f64,
    pub width: f64,
    /// (class, y, height) of each part.
    pub parts: Vec<(&'static str, f64, f64)>,
}

/// The highest stacked total, never below 1 (so an empty chart still has a scale).
pub fn top_value(series: &[Series], days: usize) -> u64 {
    (0..days)
        .map(|i| series.iter().map(|s| s.values.get(i).copied().unwrap_or(0)).sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1)
}

/// Lays out the bars of `days` days.
pub fn layout(series: &[Series], days: usize) -> Vec<Bar> {
    let top = top_value(series, days) as f64;
    let plot_height = HEIGHT - TOP - BOTTOM;
    let band = (WIDTH - LEFT - RIGHT) / days.max(1) as f64;
    (0..days)
        .map(|i| {
            let mut base = HEIGHT - BOTTOM;
            let parts = series
                .iter()
                .filter_map(|s| {
                    let value = s.values.get(i).copied().unwrap_or(0);
                    (value > 0).then(|| {
                        let height = (value as f64 / top * plot_height).max(1.0);
                        base -= height;
                        (s.class, base, height)
                    })
                })
                .collect();
            Bar { x: LEFT + band * i as f64 + band * 0.15, width: band * 0.7, parts }
        })
        .collect()
}

/// A bar chart of `series` over `days` (oldest first). `label` names it for screen readers; the numbers
/// themselves are in the table the page shows beside it.
#[component]
pub fn DayChart(label: String, days: Vec<NaiveDate>, series: Vec<Series>) -> impl IntoView {
    let bars = layout(&series, days.len());
    let top = top_value(&series, days.len());
    let first = days.first().copied().map(day).unwrap_or_default();
    let last = days.last().copied().map(day).unwrap_or_default();
    let baseline = HEIGHT - BOTTOM;
    let legend = (series.len() > 1).then(|| {
        series
            .iter()
            .map(|s| {
                view! {
                    <li><span class=format!("swatch {}", s.class) aria-hidden="true"></span>{s.name}</li>
                }
            })
            .collect_view()
    });
    view! {
        <figure class="day-chart">
            <svg
                viewBox=format!("0 0 {} {}", n(WIDTH), n(HEIGHT))
                role="img"
                aria-label=label
                preserveAspectRatio="xMidYMid meet"
            >
                <line class="grid" x1=n(LEFT) y1=n(TOP) x2=n(WIDTH - RIGHT) y2=n(TOP)></line>
                <line
                    class="grid"
                    x1=n(LEFT)
                    y1=n((TOP + baseline) / 2.0)
                    x2=n(WIDTH - RIGHT)
                    y2=n((TOP + baseline) / 2.0)
                ></line>
                <line class="axis" x1=n(LEFT) y1=n(baseline) x2=n(WIDTH - RIGHT) y2=n(baseline)></line>
                <text class="tick" x=n(LEFT - 6.0) y=n(TOP + 5.0) text-anchor="end">{grouped(top)}</text>
                <text class="tick" x=n(LEFT - 6.0) y=n(baseline + 5.0) text-anchor="end">"0"</text>
                <text class="tick" x=n(LEFT) y=n(HEIGHT - 6.0) text-anchor="start">{first}</text>
                <text class="tick" x=n(WIDTH - RIGHT) y=n(HEIGHT - 6.0) text-anchor="end">{last}</text>
                {bars
                    .into_iter()
                    .map(|bar| {
                        bar.parts
                            .into_iter()
                            .map(|(class, y, height)| view! {
                                <rect class=class x=n(bar.x) y=n(y) width=n(bar.width) height=n(height) rx="1.5"></rect>
                            })
                            .collect_view()
                    })
                    .collect_view()}
            </svg>
            {legend.map(|items| view! { <ul class="legend">{items}</ul> })}
        </figure>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_stack_and_the_tallest_fills_the_plot() {
        let series = vec![
            Series { name: "in", class: "a", values: vec![0, 30, 10] },
            Series { name: "out", class: "b", values: vec![0, 10, 0] },
        ];
        let bars = layout(&series, 3);
        assert_eq!(bars.len(), 3);
        assert!(bars[0].parts.is_empty());
        let (_, y_in, h_in) = bars[1].parts[0];
        let (_, y_out, h_out) = bars[1].parts[1];
        assert!((h_in + h_out - (HEIGHT - TOP - BOTTOM)).abs() < 1e-9);
        assert!((y_out - TOP).abs() < 1e-9);
        assert!((y_in - y_out - h_out).abs() < 1e-9);
        assert!((bars[2].parts[0].2 - h_in / 3.0).abs() < 1e-9);
        assert!(bars[0].x < bars[1].x && bars[2].x + bars[2].width <= WIDTH - RIGHT);
    }

    #[test]
    fn an_empty_chart_has_a_scale() {
        let series = vec![Series { name: "messages", class: "a", values: vec![0; 30] }];
        assert_eq!(top_value(&series, 30), 1);
        assert!(layout(&series, 30).iter().all(|b| b.parts.is_empty()));
    }
}
