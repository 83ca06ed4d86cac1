//! The charts, drawn by plotters into SVG strings.

use plotters::prelude::*;

/// Base side (and single-series bars).
pub const BASE: RGBColor = RGBColor(0x4C, 0x72, 0xB0);
/// New side.
pub const NEW: RGBColor = RGBColor(0xDD, 0x84, 0x52);

const WIDTH: u32 = 900;
const ROW: u32 = 26;

/// A label shown in a chart: control characters escaped, at most 40 characters.
fn label(s: &str) -> String {
    terminal_text::cell(s, 40).trim_end().to_owned()
}

fn height(rows: usize) -> u32 {
    (rows.max(1) as u32) * ROW + 70
}

/// One bar of [`bars`].
pub struct Bar {
    /// Its row label.
    pub label: String,
    /// Its value.
    pub value: f64,
    /// Its colour.
    pub color: RGBColor,
}

/// Horizontal bars, one per row, the x axis titled `unit`; negative values extend left.
pub fn bars(bars: &[Bar], unit: &str) -> String {
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (WIDTH, height(bars.len()))).into_drawing_area();
        let _ = root.fill(&WHITE);
        let lo = bars.iter().map(|b| b.value).fold(0.0_f64, f64::min);
        let hi = bars.iter().map(|b| b.value).fold(0.0_f64, f64::max);
        let pad = ((hi - lo) * 0.05).max(1e-9);
        let n = bars.len().max(1) as i32;
        let labels: Vec<String> = bars.iter().map(|b| label(&b.label)).collect();
        let Ok(mut chart) = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(330)
            .build_cartesian_2d(
                (lo - if lo < 0.0 { pad } else { 0.0 })..(hi + pad),
                (0..n).into_segmented(),
            )
        else {
            return svg_fallback();
        };
        let _ = chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc(unit)
            .y_labels(bars.len().max(1))
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .draw();
        let _ = chart.draw_series(bars.iter().enumerate().map(|(i, b)| {
            let i = i as i32;
            Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(i)),
                    (b.value, SegmentValue::Exact(i + 1)),
                ],
                b.color.filled(),
            )
        }));
        let _ = root.present();
    }
    svg
}

/// One box of [`boxes`]: [min, q1, median, q3, max].
pub struct BoxRow {
    /// Its row label.
    pub label: String,
    /// The five numbers, ns.
    pub five: [f64; 5],
    /// Its colour.
    pub color: RGBColor,
}

/// Horizontal box plots, one per row (quartiles, median, whiskers at 1.5 × IQR).
pub fn boxes(rows: &[BoxRow], unit: &str) -> String {
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (WIDTH, height(rows.len()))).into_drawing_area();
        let _ = root.fill(&WHITE);
        let quartiles: Vec<Quartiles> = rows.iter().map(|r| Quartiles::new(&r.five)).collect();
        let lo = quartiles
            .iter()
            .map(|q| f64::from(q.values()[0]))
            .fold(f64::INFINITY, f64::min);
        let hi = quartiles
            .iter()
            .map(|q| f64::from(q.values()[4]))
            .fold(0.0_f64, f64::max);
        let lo = if lo.is_finite() { lo.max(0.0) } else { 0.0 };
        let pad = ((hi - lo) * 0.05).max(1.0);
        let n = rows.len().max(1) as i32;
        let labels: Vec<String> = rows.iter().map(|r| label(&r.label)).collect();
        let Ok(mut chart) = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(330)
            .build_cartesian_2d(
                ((lo - pad).max(0.0) as f32)..((hi + pad) as f32),
                (0..n).into_segmented(),
            )
        else {
            return svg_fallback();
        };
        let _ = chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc(unit)
            .y_labels(rows.len().max(1))
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .draw();
        let _ = chart.draw_series(rows.iter().zip(&quartiles).enumerate().map(|(i, (r, q))| {
            Boxplot::new_horizontal(SegmentValue::CenterOf(i as i32), q)
                .width(ROW.saturating_sub(8))
                .style(r.color)
        }));
        let _ = root.present();
    }
    svg
}

fn svg_fallback() -> String {
    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"></svg>".to_owned()
}
